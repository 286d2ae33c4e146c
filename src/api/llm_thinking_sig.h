/*
 * Signatures of Anthropic thinking blocks: base64 of HMAC-SHA256 over the
 * block's thinking text with the server's key.  A client sends a block back
 * unchanged with its signature (a tool loop); the signature shows this
 * server wrote that text, so what a model is told it thought earlier is
 * what it did think.
 *
 * The key is the file of llm_thinking_key, or made at random once by the
 * master (before the workers fork, so every worker signs and verifies
 * alike; the glue keeps it across reloads, a restart makes a new one and
 * old signatures no longer verify).  No nginx.
 */
#ifndef LLM_THINKING_SIG_H
#define LLM_THINKING_SIG_H

#include <stddef.h>

#include "core/llm_sha256.h"

#define LLM_THINKING_KEY_MIN  16    /* bytes of a key file, at least */
#define LLM_THINKING_SIG_LEN  44    /* base64 of 32 bytes */

typedef struct llm_thinking_key {
    unsigned char  bytes[LLM_SHA256_BLOCK];   /* a longer key is hashed, as
                                                 HMAC does with it */
    size_t         len;
} llm_thinking_key;

/* The key from a file's bytes (at least LLM_THINKING_KEY_MIN), or 32
 * random bytes from the kernel.  0, or -1 with err. */
int llm_thinking_key_load(llm_thinking_key *k, const char *path, char *err,
    size_t errlen);
int llm_thinking_key_random(llm_thinking_key *k, char *err, size_t errlen);

/* A signature computed over text that arrives in pieces (a stream). */
typedef struct {
    llm_hmac_sha256  h;
    int              on;       /* 0: no key, the signature is "" */
} llm_thinking_signer;

/* k NULL: no key (the CLI): the signature is "". */
void llm_thinking_signer_init(llm_thinking_signer *s, const llm_thinking_key *k);
void llm_thinking_signer_update(llm_thinking_signer *s, const char *text,
    size_t len);
void llm_thinking_signer_final(llm_thinking_signer *s,
    char out[LLM_THINKING_SIG_LEN + 1]);

/* The same for a whole text. */
void llm_thinking_sign(const llm_thinking_key *k, const char *text,
    size_t len, char out[LLM_THINKING_SIG_LEN + 1]);

/* 1 when sig is text's signature under k (compared in constant time). */
int llm_thinking_verify(const llm_thinking_key *k, const char *text,
    size_t len, const char *sig, size_t sig_len);

#endif
