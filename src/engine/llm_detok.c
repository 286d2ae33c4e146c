/*
 * Incremental detokenizer: token bytes are appended to a pending buffer and
 * only whole UTF-8 characters leave it; a truncated character at the end
 * waits for the next token, an ill-formed sequence becomes U+FFFD as the
 * full decode would make it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_detok.h"
#include "engine/llm_tokenizer_int.h"

void
llm_detok_init(llm_detok *d, const llm_tokenizer *tok, int flags)
{
    memset(d, 0, sizeof(*d));
    d->tok = tok;
    d->flags = flags;
}

static int
out_reserve(llm_detok *d, size_t n)
{
    if (n > d->out_cap) {
        char *p = realloc(d->out, n);
        if (p == NULL) {
            return -1;
        }
        d->out = p;
        d->out_cap = n;
    }
    return 0;
}

static size_t
lead_need(unsigned char c)
{
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* Move complete characters of pending to out; keep a truncated tail unless final. */
static int
drain(llm_detok *d, int final, const char **text, size_t *len)
{
    const char *p = d->pending;
    size_t      n = d->n_pending, i = 0, o = 0;

    if (out_reserve(d, n * 3 + 1)) {
        return -1;
    }
    while (i < n) {
        uint32_t cp;
        int      k = llm_utf8_decode((const unsigned char *) p + i, n - i, &cp);
        size_t   bad;

        if (k > 0) {
            memcpy(d->out + o, p + i, (size_t) k);
            o += (size_t) k;
            i += (size_t) k;
            continue;
        }
        bad = llm_utf8_bad_len(p + i, n - i);
        if (!final && i + bad == n && bad < lead_need((unsigned char) p[i])) {
            break;   /* may still complete */
        }
        memcpy(d->out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i += bad;
    }
    memmove(d->pending, d->pending + i, n - i);
    d->n_pending = n - i;
    d->out[o] = '\0';
    *text = d->out;
    *len = o;
    return 0;
}

int
llm_detok_push(llm_detok *d, int32_t id, const char **text, size_t *len)
{
    const char *piece = llm_tokenizer_piece(d->tok, id);
    size_t      cap;
    char       *p;
    int         n;

    *text = "";
    *len = 0;
    if (piece == NULL || ((d->flags & LLM_DETOK_SKIP_SPECIAL) && llm_tokenizer_is_special(d->tok, id))) {
        return 0;
    }
    cap = strlen(piece) * 4 + 16;
    p = realloc(d->pending, d->n_pending + cap);
    if (p == NULL) {
        return -1;
    }
    d->pending = p;
    n = llm_tokenizer_token_bytes(d->tok, id, d->pending + d->n_pending, cap);
    if (n < 0) {
        return 0;
    }
    if (!d->started && n > 0) {
        d->started = 1;
        /* SentencePiece decoders drop the space that starts a text */
        if (!(d->flags & LLM_DETOK_CONTINUATION) && llm_tokenizer_strips_leading_space(d->tok)
            && d->pending[d->n_pending] == ' ')
        {
            memmove(d->pending + d->n_pending, d->pending + d->n_pending + 1, (size_t) n - 1);
            n--;
        }
    }
    d->n_pending += (size_t) n;
    return drain(d, 0, text, len);
}

int
llm_detok_flush(llm_detok *d, const char **text, size_t *len)
{
    *text = "";
    *len = 0;
    if (d->n_pending == 0) {
        return 0;
    }
    return drain(d, 1, text, len);
}

void
llm_detok_free(llm_detok *d)
{
    free(d->pending);
    free(d->out);
    d->pending = NULL;
    d->out = NULL;
    d->n_pending = d->out_cap = 0;
}
