/* Base64 (RFC 4648, the standard alphabet, padded). */
#ifndef LLM_BASE64_H
#define LLM_BASE64_H

#include <stddef.h>

/* Characters of n bytes encoded, without the NUL. */
#define LLM_BASE64_LEN(n)  (((n) + 2) / 3 * 4)

/* Writes LLM_BASE64_LEN(n) characters and a NUL to dst; returns their count. */
size_t llm_base64_encode(const void *src, size_t n, char *dst);

#endif
