/*
 * Normalizers and pre-tokenizers of tokenizer.json: text segment ->
 * normalized text -> list of words handed to the BPE model.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_tokenizer_int.h"

/* ---- byte-level alphabet (GPT-2): printable bytes stand for themselves ---- */

static int
bytelevel_printable(unsigned b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

static uint32_t
bytelevel_cp(unsigned char b)
{
    unsigned i, n = 0;

    if (bytelevel_printable(b)) {
        return b;
    }
    for (i = 0; i < b; i++) {
        if (!bytelevel_printable(i)) {
            n++;
        }
    }
    return 256 + n;
}

void
llm_tok_bytelevel_char(unsigned char b, char out[3], size_t *len)
{
    *len = llm_utf8_encode(bytelevel_cp(b), out);
}

int
llm_tok_bytelevel_byte(uint32_t cp)
{
    unsigned i, n = 0;

    if (cp < 256) {
        return bytelevel_printable(cp) ? (int) cp : -1;
    }
    if (cp >= 256 + 68) {
        return -1;
    }
    for (i = 0; i < 256; i++) {
        if (!bytelevel_printable(i)) {
            if (256 + n == cp) {
                return (int) i;
            }
            n++;
        }
    }
    return -1;
}

/* ---- growable byte buffer ---- */

typedef struct {
    char  *p;
    size_t n, cap;
} sbuf;

static int
sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        char  *p;
        while (nc < b->n + n + 1) {
            nc *= 2;
        }
        p = realloc(b->p, nc);
        if (p == NULL) {
            return -1;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int
replace_all(const char *s, size_t n, const char *pat, size_t plen,
            const char *rep, size_t rlen, sbuf *out)
{
    size_t i = 0, start = 0;

    if (plen == 0) {
        return sb_add(out, s, n);
    }
    while (i + plen <= n) {
        if (memcmp(s + i, pat, plen) == 0) {
            if (sb_add(out, s + start, i - start) || sb_add(out, rep, rlen)) {
                return -1;
            }
            i += plen;
            start = i;
        } else {
            i++;
        }
    }
    return sb_add(out, s + start, n - start);
}

/* ---- normalizers ---- */

int
llm_tok_normalize(const llm_tokenizer *t, const char *s, size_t n, int first,
                  char **out, size_t *outlen)
{
    sbuf   cur = { 0 }, next;
    size_t k;

    (void) first;
    if (sb_add(&cur, s, n)) {
        return -1;
    }
    for (k = 0; k < t->n_norm; k++) {
        const llm_tok_step *st = &t->norm[k];
        memset(&next, 0, sizeof(next));

        switch (st->kind) {
        case LLM_NORM_NFC: {
            char  *o;
            size_t ol;
            if (llm_tok_nfc(cur.p, cur.n, &o, &ol)) {
                goto fail;
            }
            next.p = o;
            next.n = next.cap = ol;
            next.cap++;
            break;
        }
        case LLM_NORM_PREPEND:
            if (cur.n > 0 && (sb_add(&next, st->content, st->content_len) || sb_add(&next, cur.p, cur.n))) {
                goto fail;
            }
            if (cur.n == 0 && sb_add(&next, "", 0)) {
                goto fail;
            }
            break;
        case LLM_NORM_REPLACE:
            if (replace_all(cur.p, cur.n, st->pat, st->pat_len, st->content, st->content_len, &next)) {
                goto fail;
            }
            break;
        case LLM_NORM_REPLACE_RE: {
            PCRE2_SIZE olen = cur.n * 2 + 64;
            int        rc;
            for (;;) {
                next.p = malloc(olen + 1);
                if (next.p == NULL) {
                    goto fail;
                }
                rc = pcre2_substitute(st->re, (PCRE2_SPTR) cur.p, cur.n, 0,
                                      PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_LITERAL
                                      | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                                      NULL, NULL, (PCRE2_SPTR) st->content, st->content_len,
                                      (PCRE2_UCHAR *) next.p, &olen);
                if (rc == PCRE2_ERROR_NOMEMORY) {
                    free(next.p);
                    continue;   /* olen now holds the needed size */
                }
                if (rc < 0) {
                    free(next.p);
                    goto fail;
                }
                break;
            }
            next.n = olen;
            next.cap = olen + 1;
            next.p[olen] = '\0';
            break;
        }
        case LLM_NORM_STRIP: {
            size_t a = 0, b = cur.n;
            if (st->flag_a) while (a < b && (cur.p[a] == ' ' || cur.p[a] == '\t' || cur.p[a] == '\n' || cur.p[a] == '\r')) a++;
            if (st->flag_b) while (b > a && (cur.p[b - 1] == ' ' || cur.p[b - 1] == '\t' || cur.p[b - 1] == '\n' || cur.p[b - 1] == '\r')) b--;
            if (sb_add(&next, cur.p + a, b - a)) {
                goto fail;
            }
            break;
        }
        case LLM_NORM_LOWERCASE: {
            size_t i;
            if (sb_add(&next, cur.p, cur.n)) {
                goto fail;
            }
            for (i = 0; i < next.n; i++) {   /* ASCII only; checked at load */
                if (next.p[i] >= 'A' && next.p[i] <= 'Z') next.p[i] = (char) (next.p[i] + 32);
            }
            break;
        }
        }
        free(cur.p);
        cur = next;
    }
    if (cur.p == NULL && sb_add(&cur, "", 0)) {
        return -1;
    }
    *out = cur.p;
    *outlen = cur.n;
    return 0;
fail:
    free(cur.p);
    free(next.p);
    return -1;
}

/* ---- pre-tokenizers: each step splits every word of the list further ---- */

/* Split one word by matches [ms[i], me[i]) according to behavior. */
static int
split_emit(llm_tok_list *out, const char *w, size_t n, const size_t *ms, const size_t *me,
           size_t nm, int behavior, int invert)
{
    size_t i, pos = 0;
    /* pieces: alternating gap / match, each marked matched or not */
    size_t pend_s = 0, pend_e = 0;
    int    have_pend = 0;

#define EMIT(a, b) do { if ((b) > (a) && llm_tok_list_push(out, w + (a), (b) - (a))) return -1; } while (0)

    for (i = 0; i <= nm; i++) {
        size_t gs = pos, ge = i < nm ? ms[i] : n;
        int    piece;
        for (piece = 0; piece < 2; piece++) {
            size_t a, b;
            int    is_match;
            if (piece == 0) {
                a = gs; b = ge; is_match = 0;
            } else {
                if (i == nm) break;
                a = ms[i]; b = me[i]; is_match = 1;
            }
            if (invert) is_match = !is_match;
            if (b == a) continue;
            switch (behavior) {
            case LLM_SPLIT_REMOVED:
                if (!is_match) EMIT(a, b);
                break;
            case LLM_SPLIT_ISOLATED:
                EMIT(a, b);
                break;
            case LLM_SPLIT_MERGED_PREV:
                if (is_match) {
                    if (have_pend) { pend_e = b; EMIT(pend_s, pend_e); have_pend = 0; }
                    else EMIT(a, b);
                } else {
                    if (have_pend) EMIT(pend_s, pend_e);
                    pend_s = a; pend_e = b; have_pend = 1;
                }
                break;
            case LLM_SPLIT_MERGED_NEXT:
                if (is_match) {
                    if (have_pend) EMIT(pend_s, pend_e);
                    pend_s = a; pend_e = b; have_pend = 1;
                } else {
                    if (have_pend) { EMIT(pend_s, b); have_pend = 0; }
                    else EMIT(a, b);
                }
                break;
            case LLM_SPLIT_CONTIGUOUS:
                if (is_match) {
                    if (have_pend) pend_e = b;
                    else { pend_s = a; pend_e = b; have_pend = 1; }
                } else {
                    if (have_pend) { EMIT(pend_s, pend_e); have_pend = 0; }
                    EMIT(a, b);
                }
                break;
            }
        }
        if (i < nm) pos = me[i];
    }
    if (have_pend) EMIT(pend_s, pend_e);
#undef EMIT
    return 0;
}

typedef struct {
    size_t *s, *e;
    size_t  n, cap;
} matches;

static int
m_push(matches *m, size_t s, size_t e)
{
    if (m->n == m->cap) {
        size_t  nc = m->cap ? m->cap * 2 : 32;
        size_t *a = realloc(m->s, nc * sizeof(size_t)), *b;
        if (a == NULL) return -1;
        m->s = a;
        b = realloc(m->e, nc * sizeof(size_t));
        if (b == NULL) return -1;
        m->e = b;
        m->cap = nc;
    }
    m->s[m->n] = s;
    m->e[m->n] = e;
    m->n++;
    return 0;
}

static int
find_regex(const llm_tok_step *st, const char *w, size_t n, matches *m, pcre2_match_data *md)
{
    PCRE2_SIZE off = 0;

    while (off <= n) {
        int         rc = pcre2_match(st->re, (PCRE2_SPTR) w, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        PCRE2_SIZE *ov;
        if (rc == PCRE2_ERROR_NOMATCH) {
            break;
        }
        if (rc < 0) {
            return -1;
        }
        ov = pcre2_get_ovector_pointer(md);
        if (ov[1] == ov[0]) {   /* empty match: step one character */
            size_t k = ov[0] + 1;
            while (k < n && ((unsigned char) w[k] & 0xC0) == 0x80) k++;
            off = k;
            continue;
        }
        if (m_push(m, ov[0], ov[1])) {
            return -1;
        }
        off = ov[1];
    }
    return 0;
}

static int
find_string(const llm_tok_step *st, const char *w, size_t n, matches *m)
{
    size_t i = 0;

    if (st->pat_len == 0) {
        return 0;
    }
    while (i + st->pat_len <= n) {
        if (memcmp(w + i, st->pat, st->pat_len) == 0) {
            if (m_push(m, i, i + st->pat_len)) return -1;
            i += st->pat_len;
        } else {
            i++;
        }
    }
    return 0;
}

static int
is_ws_byte(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int
llm_tok_pretokenize(const llm_tokenizer *t, const char *s, size_t n, int first,
                    llm_tok_list *words)
{
    llm_tok_list      a = { 0 }, b = { 0 };
    llm_tok_list     *cur = &a, *next = &b, *tmp;
    matches           m = { 0 };
    pcre2_match_data *md = NULL;
    size_t            k, i;
    int               rc = -1;

    if (llm_tok_list_push(cur, s, n)) {
        goto done;
    }
    for (k = 0; k < t->n_pre; k++) {
        const llm_tok_step *st = &t->pre[k];

        llm_tok_list_clear(next);
        for (i = 0; i < cur->n; i++) {
            const char *w = LLM_TOK_ITEM(cur, i);
            size_t      wl = LLM_TOK_ILEN(cur, i);

            m.n = 0;
            switch (st->kind) {
            case LLM_PRE_SPLIT_RE:
                if (md == NULL && (md = pcre2_match_data_create(4, NULL)) == NULL) goto done;
                if (find_regex(st, w, wl, &m, md)) goto done;
                if (split_emit(next, w, wl, m.s, m.e, m.n, st->behavior, st->invert)) goto done;
                break;
            case LLM_PRE_SPLIT_STR:
                if (find_string(st, w, wl, &m)) goto done;
                if (split_emit(next, w, wl, m.s, m.e, m.n, st->behavior, st->invert)) goto done;
                break;
            case LLM_PRE_DIGITS: {
                size_t j = 0;
                while (j < wl) {
                    size_t e = j;
                    int    dig = w[j] >= '0' && w[j] <= '9';
                    if (dig) {
                        e = j + 1;
                        if (!st->flag_a) while (e < wl && w[e] >= '0' && w[e] <= '9') e++;
                    } else {
                        while (e < wl && !(w[e] >= '0' && w[e] <= '9')) e++;
                    }
                    if (llm_tok_list_push(next, w + j, e - j)) goto done;
                    j = e;
                }
                break;
            }
            case LLM_PRE_WHITESPACE_SPLIT: {
                size_t j = 0;
                while (j < wl) {
                    size_t e;
                    while (j < wl && is_ws_byte((unsigned char) w[j])) j++;
                    e = j;
                    while (e < wl && !is_ws_byte((unsigned char) w[e])) e++;
                    if (e > j && llm_tok_list_push(next, w + j, e - j)) goto done;
                    j = e;
                }
                break;
            }
            case LLM_PRE_BYTELEVEL: {
                char   *buf, *o;
                size_t  j;
                int     pre = st->flag_a && wl > 0 && w[0] != ' ';   /* every split, as HF does */
                llm_tok_list parts = { 0 };

                buf = malloc(wl + 2);
                if (buf == NULL) goto done;
                if (pre) buf[0] = ' ';
                memcpy(buf + pre, w, wl);
                if (st->flag_b) {   /* use_regex: GPT-2 split first */
                    if (md == NULL && (md = pcre2_match_data_create(4, NULL)) == NULL) { free(buf); goto done; }
                    if (find_regex(st, buf, wl + pre, &m, md)
                        || split_emit(&parts, buf, wl + pre, m.s, m.e, m.n, LLM_SPLIT_ISOLATED, 0))
                    {
                        free(buf); llm_tok_list_free(&parts); goto done;
                    }
                } else if (llm_tok_list_push(&parts, buf, wl + pre)) {
                    free(buf); goto done;
                }
                free(buf);
                for (j = 0; j < parts.n; j++) {
                    const unsigned char *p = (const unsigned char *) LLM_TOK_ITEM(&parts, j);
                    size_t               pl = LLM_TOK_ILEN(&parts, j), q, ol = 0;
                    o = malloc(pl * 2 + 1);
                    if (o == NULL) { llm_tok_list_free(&parts); goto done; }
                    for (q = 0; q < pl; q++) {
                        size_t cl;
                        llm_tok_bytelevel_char(p[q], o + ol, &cl);
                        ol += cl;
                    }
                    if (llm_tok_list_push(next, o, ol)) { free(o); llm_tok_list_free(&parts); goto done; }
                    free(o);
                }
                llm_tok_list_free(&parts);
                break;
            }
            case LLM_PRE_METASPACE: {
                sbuf r = { 0 };
                int  pre = wl > 0 && (st->flag_a == 2 || (st->flag_a == 1 && first && i == 0));
                if (pre && !(wl >= st->content_len && memcmp(w, st->content, st->content_len) == 0)) {
                    if (sb_add(&r, st->content, st->content_len)) goto done;
                }
                if (replace_all(w, wl, " ", 1, st->content, st->content_len, &r)) { free(r.p); goto done; }
                if (r.p == NULL && sb_add(&r, "", 0)) goto done;
                if (st->flag_b) {   /* split: each replacement char starts a word */
                    llm_tok_step sp = *st;
                    sp.pat = st->content;
                    sp.pat_len = st->content_len;
                    if (find_string(&sp, r.p, r.n, &m)
                        || split_emit(next, r.p, r.n, m.s, m.e, m.n, LLM_SPLIT_MERGED_NEXT, 0))
                    {
                        free(r.p); goto done;
                    }
                } else if (r.n && llm_tok_list_push(next, r.p, r.n)) {
                    free(r.p); goto done;
                }
                free(r.p);
                break;
            }
            }
        }
        tmp = cur; cur = next; next = tmp;
    }
    for (i = 0; i < cur->n; i++) {
        if (LLM_TOK_ILEN(cur, i) && llm_tok_list_push(words, LLM_TOK_ITEM(cur, i), LLM_TOK_ILEN(cur, i))) {
            goto done;
        }
    }
    rc = 0;
done:
    if (md) pcre2_match_data_free(md);
    free(m.s);
    free(m.e);
    llm_tok_list_free(&a);
    llm_tok_list_free(&b);
    return rc;
}
