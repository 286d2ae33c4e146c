/*
 * Volatile prompt lines: text that clients write into prompts but change on
 * every request without it meaning anything to the model.  The one known
 * today is Claude Code's first system block,
 *
 *   x-anthropic-billing-header: cc_version=2.1.177.01c; cc_entrypoint=cli; cch=36ee5;
 *
 * whose cc_version suffix and cch value are recomputed per request.  Left in,
 * such a line ends every prefix match at its position, so the whole
 * conversation after it is read again on every turn.
 *
 * Everything that compares prompts by prefix (the front end's routing key,
 * llm_prefix_key.h; the KV prefix cache, through the prompt itself: the
 * system messages lose these lines before the template renders them) uses
 * these functions, so they agree on what "the same prefix" is.  The default
 * list is here; llm_prompt_strip replaces it for a node's prompts.
 */
#ifndef LLM_VOLATILE_H
#define LLM_VOLATILE_H

#include <stddef.h>

#include <jansson.h>

/* Line prefixes (compared without case) that mark a volatile line. */
typedef struct llm_volatile_set {
    const char *const  *prefixes;
    size_t              n;
} llm_volatile_set;

/* The default list: Claude Code's billing header line. */
const llm_volatile_set *llm_volatile_default(void);

/* Whether the line [s, s + len) (no newline in it) is volatile; set NULL = the default. */
int llm_volatile_line(const llm_volatile_set *set, const char *s, size_t len);

/*
 * Copy text into out without its volatile lines (each is removed with its
 * newline).  out must have room for len bytes; it may be the same buffer as
 * text (the copy only moves bytes backwards).  Returns the new length.
 */
size_t llm_volatile_strip(const llm_volatile_set *set, const char *text, size_t len, char *out);

/*
 * The same on a conversation before it is rendered (llm_request.messages):
 * the string content of every "system" message, in place.  Returns the
 * number of lines removed, -1 when out of memory (the messages unchanged).
 */
int llm_volatile_strip_messages(const llm_volatile_set *set, json_t *messages);

#endif
