/*
 * Decoder chain of tokenizer.json: a list of token strings is rewritten by
 * each step (ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip) and
 * finally joined.  In raw mode (incremental detokenizer) bytes are kept as
 * they are: no U+FFFD substitution and no strip at the start of the text.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_tokenizer_int.h"

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* "<0xNN>" -> NN, else -1 */
static int
byte_token(const char *s, size_t n)
{
    int hi, lo;

    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') {
        return -1;
    }
    hi = hexval(s[3]);
    lo = hexval(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static int
push_lossy(llm_tok_list *l, const char *s, size_t n, int raw)
{
    char  *o;
    size_t ol;
    int    rc;

    if (raw) {
        return llm_tok_list_push(l, s, n);
    }
    if (llm_utf8_lossy(s, n, &o, &ol)) {
        return -1;
    }
    rc = llm_tok_list_push(l, o, ol);
    free(o);
    return rc;
}

static int
step(const llm_tokenizer *t, const llm_tok_step *st, const llm_tok_list *in, llm_tok_list *out, int raw)
{
    size_t i, j;

    switch (st->kind) {
    case LLM_DEC_FUSE: {
        if (in->n == 0) return 0;
        return llm_tok_list_push(out, in->buf, in->len);
    }
    case LLM_DEC_REPLACE:
    case LLM_DEC_METASPACE:
        for (i = 0; i < in->n; i++) {
            const char *s = LLM_TOK_ITEM(in, i);
            size_t      n = LLM_TOK_ILEN(in, i), k = 0, ol = 0;
            const char *pat = st->kind == LLM_DEC_REPLACE ? st->pat : st->content;
            size_t      pl = st->kind == LLM_DEC_REPLACE ? st->pat_len : st->content_len;
            const char *rep = st->kind == LLM_DEC_REPLACE ? st->content : " ";
            size_t      rl = st->kind == LLM_DEC_REPLACE ? st->content_len : 1;
            char       *o = malloc(n * (rl > pl ? rl : 1) + rl + 1);
            if (o == NULL) return -1;
            while (k < n) {
                if (pl && k + pl <= n && memcmp(s + k, pat, pl) == 0) {
                    memcpy(o + ol, rep, rl);
                    ol += rl;
                    k += pl;
                } else {
                    o[ol++] = s[k++];
                }
            }
            /* Metaspace drops the prepended space of the first token */
            if (st->kind == LLM_DEC_METASPACE && i == 0 && !raw && st->flag_a != 0 && ol > 0 && o[0] == ' ') {
                memmove(o, o + 1, --ol);
            }
            if (llm_tok_list_push(out, o, ol)) { free(o); return -1; }
            free(o);
        }
        return 0;
    case LLM_DEC_BYTEFALLBACK: {
        char  *bytes = malloc(in->len + 1);
        size_t nb = 0;
        if (bytes == NULL) return -1;
        for (i = 0; i <= in->n; i++) {
            int b = i < in->n ? byte_token(LLM_TOK_ITEM(in, i), LLM_TOK_ILEN(in, i)) : -1;
            if (b >= 0) {
                bytes[nb++] = (char) b;
                continue;
            }
            if (nb) {
                if (raw || llm_utf8_valid_prefix(bytes, nb) == nb) {
                    if (llm_tok_list_push(out, bytes, nb)) { free(bytes); return -1; }
                } else {
                    for (j = 0; j < nb; j++) {   /* one U+FFFD per byte, as HF */
                        if (llm_tok_list_push(out, "\xEF\xBF\xBD", 3)) { free(bytes); return -1; }
                    }
                }
                nb = 0;
            }
            if (i < in->n && llm_tok_list_push(out, LLM_TOK_ITEM(in, i), LLM_TOK_ILEN(in, i))) {
                free(bytes);
                return -1;
            }
        }
        free(bytes);
        return 0;
    }
    case LLM_DEC_STRIP:
        for (i = 0; i < in->n; i++) {
            const char *s = LLM_TOK_ITEM(in, i);
            size_t      n = LLM_TOK_ILEN(in, i), a = 0, e = n;
            int         k;
            for (k = 0; k < st->start && !raw && a + st->content_len <= e
                        && memcmp(s + a, st->content, st->content_len) == 0; k++)
            {
                a += st->content_len;
            }
            for (k = 0; k < st->stop && e >= a + st->content_len
                        && memcmp(s + e - st->content_len, st->content, st->content_len) == 0; k++)
            {
                e -= st->content_len;
            }
            if (llm_tok_list_push(out, s + a, e - a)) return -1;
        }
        return 0;
    case LLM_DEC_BYTELEVEL: {
        char  *bytes = malloc(in->len + 1);
        size_t nb = 0;
        int    rc;
        if (bytes == NULL) return -1;
        for (i = 0; i < in->n; i++) {
            const unsigned char *s = (const unsigned char *) LLM_TOK_ITEM(in, i);
            size_t               n = LLM_TOK_ILEN(in, i), k = 0, start = nb;
            int                  ok = 1;
            while (k < n) {
                uint32_t cp;
                int      len = llm_utf8_decode(s + k, n - k, &cp), b;
                if (len == 0 || (b = llm_tok_bytelevel_byte(cp)) < 0) {
                    ok = 0;
                    break;
                }
                bytes[nb++] = (char) b;
                k += (size_t) len;
            }
            if (!ok) {   /* not byte-level text (an added token): its own bytes */
                nb = start;
                memcpy(bytes + nb, s, n);
                nb += n;
            }
        }
        rc = push_lossy(out, bytes, nb, raw);
        free(bytes);
        (void) t;
        return rc;
    }
    }
    return -1;
}

int
llm_tok_decode_chain(const llm_tokenizer *t, llm_tok_list *toks, int raw,
                     char **out, size_t *outlen)
{
    llm_tok_list  b = { 0 }, *cur = toks, *next = &b, *tmp;
    size_t        k;
    char         *o;

    if (!t->has_decoder) {
        /* no decoder: tokens joined by spaces */
        o = malloc(toks->len + toks->n + 1);
        if (o == NULL) return -1;
        *outlen = 0;
        for (k = 0; k < toks->n; k++) {
            if (k) o[(*outlen)++] = ' ';
            memcpy(o + *outlen, LLM_TOK_ITEM(toks, k), LLM_TOK_ILEN(toks, k));
            *outlen += LLM_TOK_ILEN(toks, k);
        }
        o[*outlen] = '\0';
        *out = o;
        return 0;
    }
    for (k = 0; k < t->n_dec; k++) {
        llm_tok_list_clear(next);
        if (step(t, &t->dec[k], cur, next, raw)) {
            llm_tok_list_free(&b);
            return -1;
        }
        tmp = cur; cur = next; next = tmp;
    }
    o = malloc(cur->len + 1);
    if (o == NULL) {
        llm_tok_list_free(&b);
        return -1;
    }
    if (cur->n) memcpy(o, cur->buf, cur->len);
    o[cur->n ? cur->len : 0] = '\0';
    *outlen = cur->n ? cur->len : 0;
    *out = o;
    llm_tok_list_free(&b);
    return 0;
}
