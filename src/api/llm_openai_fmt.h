/* Pieces of OpenAI responses shared by the chat and completions
 * formatters: envelope, usage, logprobs.  Internal to src/api. */
#ifndef LLM_OPENAI_FMT_H
#define LLM_OPENAI_FMT_H

#include "api/llm_api_json.h"
#include "api/llm_openai.h"

/* {"id","object","created","model","system_fingerprint"} */
json_t *llm_openai_envelope_json(const llm_openai_meta *m, const char *object);

/* {"prompt_tokens","completion_tokens","total_tokens",
 *  "prompt_tokens_details":{"cached_tokens"}} */
json_t *llm_openai_usage_json(const llm_usage *u);

/* Prompt counted once, completion tokens summed over the choices. */
llm_usage llm_openai_total_usage(const llm_result *choices, size_t n);

/* {"content":[{"token","logprob","bytes","top_logprobs":[...]}],
 *  "refusal":null} */
json_t *llm_openai_chat_logprobs(const llm_openai_meta *m,
    const llm_logprobs_list *lp);

/* {"tokens","token_logprobs","top_logprobs","text_offset"}; *offset is the
 * byte offset of the first token's text and is advanced past the last. */
json_t *llm_openai_legacy_logprobs(const llm_openai_meta *m,
    const llm_logprobs_list *lp, long *offset);

/* Adds "token_ids" to a choice when the result carries them. */
void llm_openai_choice_token_ids(json_t *choice, const llm_result *r);

#endif
