/* OpenAI logprobs objects, chat and legacy completions shapes.  Internal. */
#ifndef LLM_OPENAI_LOGPROBS_H
#define LLM_OPENAI_LOGPROBS_H

#include "api/llm_api_json.h"
#include "api/llm_openai.h"

/* {"content":[{"token","logprob","bytes","top_logprobs":[...]}],
 *  "refusal":null} */
json_t *llm_openai_chat_logprobs(const llm_openai_meta *m,
    const llm_logprobs_list *lp);

/* {"tokens","token_logprobs","top_logprobs","text_offset"}; *offset is the
 * byte offset of the first token's text and is advanced past the last. */
json_t *llm_openai_legacy_logprobs(const llm_openai_meta *m,
    const llm_logprobs_list *lp, long *offset);

#endif
