/*
 * A request's prefix key and prompt-size estimate, read from its JSON body
 * without a tokenizer or a model.  A front nginx uses them to send every
 * turn of a conversation to the node whose KV cache already holds its prompt
 * (`hash $llm_prefix_key consistent`) and to send long prompts to another
 * upstream (llm_route); see docs/deployment.md.
 *
 * The key covers what every turn of one conversation repeats at the start
 * of its prompt:
 *   - a body with "messages" (OpenAI chat, Anthropic messages): "model", the
 *     Anthropic "system", "tools", and the messages up to and including the
 *     first user message (OpenAI system/developer messages come first there);
 *   - a body with "input" (OpenAI Responses): the same, with "instructions"
 *     as the system prompt and the input items as the messages (an input
 *     string is one user message, so it keys as the same text in an item);
 *   - a body with "prompt" (OpenAI completions): "model" and the first
 *     prompt_bytes bytes of the prompt (of its compact JSON text when the
 *     prompt is token ids).
 * Text is normalised with llm_volatile_strip (llm_volatile.h); cache_control
 * markers, which clients move from turn to turn, are left out; JSON objects
 * are compared by content, not by key order or spacing.  Turn N+1 of a
 * conversation therefore has the key of turn N, and two conversations that
 * differ in their first user message have different keys.
 *
 * The body is read in one pass that checks its JSON syntax and nesting and
 * counts the estimate; only the key's own fields (and the messages up to
 * the first user message) are decoded, so the cost stays near a memory scan
 * however long the conversation has grown.
 *
 * The estimate is for routing by size, not for billing: ASCII bytes / 4
 * (rounded up), plus one token per other character and per JSON number,
 * boolean or null, over "messages", "system", "tools", "prompt", "input" and
 * "instructions" (keys
 * and values; cache_control left out; a repeated key counts each time).  A
 * prompt of token ids therefore counts exactly.
 */
#ifndef LLM_PREFIX_KEY_H
#define LLM_PREFIX_KEY_H

#include <stddef.h>

#define LLM_PREFIX_KEY_LEN             16     /* hex digits of a 64-bit hash */
#define LLM_PREFIX_DEFAULT_PROMPT_BYTES 1024

typedef struct {
    size_t  prompt_bytes;    /* completions prompt bytes in the key; 0 = 1024 */
    int     max_depth;       /* deeper JSON is refused; 0 = 64 */
} llm_prefix_opts;

typedef struct {
    char    key[LLM_PREFIX_KEY_LEN + 1];   /* lowercase hex, NUL-terminated */
    long    prompt_tokens_estimate;
} llm_prefix_info;

/*
 * Fill info from body.  Returns 0, or -1 when the body is not one JSON
 * object (or nests deeper than max_depth) or has no "messages" array,
 * "input" or "prompt"; then info->key is "" and the estimate -1.  A repeated key
 * takes its last value, as in a decoder.  opts may be NULL.
 */
int llm_prefix_key(const char *body, size_t len, const llm_prefix_opts *opts,
    llm_prefix_info *info);

/*
 * llm_route's condition, "if_prompt_tokens>N" (N decimal): 0 with *min = N
 * (a request goes there when its estimate is above N), or -1.
 */
int llm_route_condition(const char *s, size_t len, long *min);

#endif
