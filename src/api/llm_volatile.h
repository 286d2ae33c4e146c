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
 * llm_prefix_key.h; a KV prefix cache) normalises text with these functions,
 * so they agree on what "the same prefix" is.  Add new patterns here only.
 */
#ifndef LLM_VOLATILE_H
#define LLM_VOLATILE_H

#include <stddef.h>

/* Whether the line [s, s + len) (no newline in it) is volatile. */
int llm_volatile_line(const char *s, size_t len);

/*
 * Copy text into out without its volatile lines (each is removed with its
 * newline).  out must have room for len bytes; it may be the same buffer as
 * text (the copy only moves bytes backwards).  Returns the new length.
 */
size_t llm_volatile_strip(const char *text, size_t len, char *out);

#endif
