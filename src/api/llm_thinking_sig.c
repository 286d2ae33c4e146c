/*
 * Thinking-block signatures (llm_thinking_sig.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "api/llm_thinking_sig.h"
#include "core/llm_base64.h"

int
llm_thinking_key_load(llm_thinking_key *k, const char *path, char *err,
    size_t errlen)
{
    unsigned char  buf[4096];
    size_t         n;
    FILE          *f;
    llm_sha256     c;

    memset(k, 0, sizeof(*k));
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open \"%s\": %s", path, strerror(errno));
        return -1;
    }
    llm_sha256_init(&c);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (k->len + n <= sizeof(k->bytes)) {
            memcpy(k->bytes + k->len, buf, n);
        }
        k->len += n;
        llm_sha256_update(&c, buf, n);
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read \"%s\": %s", path, strerror(errno));
        fclose(f);
        return -1;
    }
    fclose(f);

    if (k->len < LLM_THINKING_KEY_MIN) {
        snprintf(err, errlen, "\"%s\" holds %zu bytes, a key needs at least "
                 "%d (e.g. head -c 32 /dev/urandom > %s)", path, k->len,
                 LLM_THINKING_KEY_MIN, path);
        return -1;
    }
    if (k->len > sizeof(k->bytes)) {
        llm_sha256_final(&c, k->bytes);
        k->len = LLM_SHA256_SIZE;
    }
    return 0;
}

int
llm_thinking_key_random(llm_thinking_key *k, char *err, size_t errlen)
{
    ssize_t  n;

    memset(k, 0, sizeof(*k));
    n = getrandom(k->bytes, 32, 0);
    if (n != 32) {
        snprintf(err, errlen, "getrandom() failed: %s",
                 n < 0 ? strerror(errno) : "short read");
        return -1;
    }
    k->len = 32;
    return 0;
}

void
llm_thinking_signer_init(llm_thinking_signer *s, const llm_thinking_key *k)
{
    s->on = k != NULL;
    if (s->on) {
        llm_hmac_sha256_init(&s->h, k->bytes, k->len);
    }
}

void
llm_thinking_signer_update(llm_thinking_signer *s, const char *text,
    size_t len)
{
    if (s->on) {
        llm_hmac_sha256_update(&s->h, text, len);
    }
}

void
llm_thinking_signer_final(llm_thinking_signer *s,
    char out[LLM_THINKING_SIG_LEN + 1])
{
    unsigned char  mac[LLM_SHA256_SIZE];

    out[0] = '\0';
    if (s->on) {
        llm_hmac_sha256_final(&s->h, mac);
        llm_base64_encode(mac, sizeof(mac), out);
    }
}

void
llm_thinking_sign(const llm_thinking_key *k, const char *text, size_t len,
    char out[LLM_THINKING_SIG_LEN + 1])
{
    llm_thinking_signer  s;

    llm_thinking_signer_init(&s, k);
    llm_thinking_signer_update(&s, text, len);
    llm_thinking_signer_final(&s, out);
}

int
llm_thinking_verify(const llm_thinking_key *k, const char *text, size_t len,
    const char *sig, size_t sig_len)
{
    char           want[LLM_THINKING_SIG_LEN + 1];
    unsigned char  diff = 0;
    size_t         i;

    if (k == NULL || sig_len != LLM_THINKING_SIG_LEN) {
        return 0;
    }
    llm_thinking_sign(k, text, len, want);
    for (i = 0; i < LLM_THINKING_SIG_LEN; i++) {
        diff |= (unsigned char) (want[i] ^ sig[i]);
    }
    return diff == 0;
}
