/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), streaming.  Written here
 * rather than linked from libcrypto: the library below the glue, its unit
 * tests and the CLI link nothing but jansson, PCRE2 and OpenBLAS, and
 * signing thinking blocks needs only these two functions.
 */
#ifndef LLM_SHA256_H
#define LLM_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define LLM_SHA256_SIZE   32
#define LLM_SHA256_BLOCK  64

typedef struct {
    uint32_t       h[8];
    uint64_t       bytes;                   /* hashed so far */
    unsigned char  buf[LLM_SHA256_BLOCK];   /* a block being filled */
    size_t         n_buf;
} llm_sha256;

void llm_sha256_init(llm_sha256 *c);
void llm_sha256_update(llm_sha256 *c, const void *data, size_t len);
void llm_sha256_final(llm_sha256 *c, unsigned char out[LLM_SHA256_SIZE]);

typedef struct {
    llm_sha256  inner, outer;
} llm_hmac_sha256;

/* Any key length (a key longer than a block is hashed first). */
void llm_hmac_sha256_init(llm_hmac_sha256 *h, const void *key, size_t keylen);
void llm_hmac_sha256_update(llm_hmac_sha256 *h, const void *data, size_t len);
void llm_hmac_sha256_final(llm_hmac_sha256 *h,
    unsigned char out[LLM_SHA256_SIZE]);

#endif
