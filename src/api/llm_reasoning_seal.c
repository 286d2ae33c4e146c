/*
 * Sealed reasoning items (llm_reasoning_seal.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/llm_reasoning_seal.h"
#include "core/llm_base64.h"

#define SEAL_HEAD  (1 + LLM_REASONING_SEAL_NONCE)

/* The two keys derived from the server's key (see the header). */
static void
seal_keys(const llm_thinking_key *k, unsigned char enc[LLM_SHA256_SIZE],
    unsigned char mac[LLM_SHA256_SIZE])
{
    static const char  enc_label[] = "ngx_llm responses reasoning: encryption";
    static const char  mac_label[] = "ngx_llm responses reasoning: tag";
    llm_hmac_sha256    h;

    llm_hmac_sha256_init(&h, k->bytes, k->len);
    llm_hmac_sha256_update(&h, enc_label, sizeof(enc_label) - 1);
    llm_hmac_sha256_final(&h, enc);
    llm_hmac_sha256_init(&h, k->bytes, k->len);
    llm_hmac_sha256_update(&h, mac_label, sizeof(mac_label) - 1);
    llm_hmac_sha256_final(&h, mac);
}

/* data[0..n) ^= the keystream of nonce under enc (both ways). */
static void
seal_xor(const unsigned char enc[LLM_SHA256_SIZE], const unsigned char *nonce,
    unsigned char *data, size_t n)
{
    unsigned char    block[LLM_SHA256_SIZE], ctr[4];
    size_t           i, j;
    uint32_t         b;
    llm_hmac_sha256  h;

    for (i = 0, b = 0; i < n; i += LLM_SHA256_SIZE, b++) {
        ctr[0] = (unsigned char) (b >> 24);
        ctr[1] = (unsigned char) (b >> 16);
        ctr[2] = (unsigned char) (b >> 8);
        ctr[3] = (unsigned char) b;
        llm_hmac_sha256_init(&h, enc, LLM_SHA256_SIZE);
        llm_hmac_sha256_update(&h, nonce, LLM_REASONING_SEAL_NONCE);
        llm_hmac_sha256_update(&h, ctr, sizeof(ctr));
        llm_hmac_sha256_final(&h, block);
        for (j = 0; j < LLM_SHA256_SIZE && i + j < n; j++) {
            data[i + j] ^= block[j];
        }
    }
}

static void
seal_tag(const unsigned char mac[LLM_SHA256_SIZE], const unsigned char *sealed,
    size_t n, unsigned char tag[LLM_SHA256_SIZE])
{
    llm_hmac_sha256  h;

    llm_hmac_sha256_init(&h, mac, LLM_SHA256_SIZE);
    llm_hmac_sha256_update(&h, sealed, n);
    llm_hmac_sha256_final(&h, tag);
}

char *
llm_reasoning_seal(const llm_thinking_key *k, const char *text, size_t len)
{
    unsigned char  enc[LLM_SHA256_SIZE], mac[LLM_SHA256_SIZE], *raw;
    size_t         n;
    char          *out;

    if (len > SIZE_MAX / 2 - SEAL_HEAD - LLM_SHA256_SIZE) {
        return NULL;
    }
    n = SEAL_HEAD + len + LLM_SHA256_SIZE;
    raw = malloc(n);
    out = malloc(LLM_BASE64_LEN(n) + 1);
    if (raw == NULL || out == NULL
        || getrandom(raw + 1, LLM_REASONING_SEAL_NONCE, 0)
           != LLM_REASONING_SEAL_NONCE)
    {
        free(raw);
        free(out);
        return NULL;
    }
    raw[0] = LLM_REASONING_SEAL_VERSION;
    if (len) {
        memcpy(raw + SEAL_HEAD, text, len);
    }
    seal_keys(k, enc, mac);
    seal_xor(enc, raw + 1, raw + SEAL_HEAD, len);
    seal_tag(mac, raw, SEAL_HEAD + len, raw + SEAL_HEAD + len);
    llm_base64_encode(raw, n, out);
    free(raw);
    return out;
}

int
llm_reasoning_open(const llm_thinking_key *k, const char *s, size_t len,
    llm_buf *out)
{
    unsigned char  enc[LLM_SHA256_SIZE], mac[LLM_SHA256_SIZE];
    unsigned char  tag[LLM_SHA256_SIZE], diff, *raw;
    long           n;
    size_t         i, text;
    int            rc;

    raw = malloc(LLM_BASE64_MAX_DECODED(len) + 1);
    if (raw == NULL) {
        out->failed = 1;
        return -1;
    }
    n = llm_base64_decode(s, len, raw);
    if (n < SEAL_HEAD + LLM_SHA256_SIZE
        || raw[0] != LLM_REASONING_SEAL_VERSION)
    {
        free(raw);
        return -1;
    }
    text = (size_t) n - SEAL_HEAD - LLM_SHA256_SIZE;

    seal_keys(k, enc, mac);
    seal_tag(mac, raw, SEAL_HEAD + text, tag);
    diff = 0;
    for (i = 0; i < LLM_SHA256_SIZE; i++) {
        diff |= (unsigned char) (tag[i] ^ raw[SEAL_HEAD + text + i]);
    }
    if (diff != 0) {
        free(raw);
        return -1;
    }

    seal_xor(enc, raw + 1, raw + SEAL_HEAD, text);
    rc = llm_buf_append(out, raw + SEAL_HEAD, text);
    free(raw);
    return rc == 0 ? 0 : -1;
}
