/* Base64 (RFC 4648, the standard alphabet, padded). */
#ifndef LLM_BASE64_H
#define LLM_BASE64_H

#include <stddef.h>

/* Characters of n bytes encoded, without the NUL. */
#define LLM_BASE64_LEN(n)  (((n) + 2) / 3 * 4)

/* Writes LLM_BASE64_LEN(n) characters and a NUL to dst; returns their count. */
size_t llm_base64_encode(const void *src, size_t n, char *dst);

/* Bytes that n characters decode to, at most. */
#define LLM_BASE64_MAX_DECODED(n)  ((n) / 4 * 3)

/*
 * Decodes the padded encoding of src[0..n) into dst (room for
 * LLM_BASE64_MAX_DECODED(n) bytes); returns the bytes written, or -1 when
 * src is not one (a length that is not a multiple of 4, a character outside
 * the alphabet, padding elsewhere than at the end).
 */
long llm_base64_decode(const char *src, size_t n, void *dst);

#endif
