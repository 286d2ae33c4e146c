/* Byte buffer and marker scanner used by every parser. */
#include "parsers/llm_parser_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
llm_pbuf_add(llm_pbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t  cap = b->cap ? b->cap : 64;
        char   *np;

        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        np = realloc(b->p, cap);
        if (np == NULL) {
            return -1;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n) {
        memcpy(b->p + b->len, s, n);
    }
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int
llm_pbuf_addc(llm_pbuf *b, char c)
{
    return llm_pbuf_add(b, &c, 1);
}

int
llm_pbuf_adds(llm_pbuf *b, const char *s)
{
    return llm_pbuf_add(b, s, strlen(s));
}

void
llm_pbuf_reset(llm_pbuf *b)
{
    b->len = 0;
    if (b->p) {
        b->p[0] = '\0';
    }
}

void
llm_pbuf_free(llm_pbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

const char *
llm_pbuf_str(const llm_pbuf *b)
{
    return b->p ? b->p : "";
}

void
llm_pbuf_json_escape(llm_pbuf *b, const char *s, size_t n)
{
    size_t i;
    char   tmp[8];

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];

        switch (c) {
        case '"':  llm_pbuf_add(b, "\\\"", 2); break;
        case '\\': llm_pbuf_add(b, "\\\\", 2); break;
        case '\n': llm_pbuf_add(b, "\\n", 2); break;
        case '\r': llm_pbuf_add(b, "\\r", 2); break;
        case '\t': llm_pbuf_add(b, "\\t", 2); break;
        case '\b': llm_pbuf_add(b, "\\b", 2); break;
        case '\f': llm_pbuf_add(b, "\\f", 2); break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(tmp, sizeof(tmp), "\\u%04x", c);
                llm_pbuf_add(b, tmp, 6);
            } else {
                llm_pbuf_addc(b, (char) c);
            }
        }
    }
}

/* > 0: length of the valid character at p; 0: a valid start cut off by
 * the end; < 0: invalid, minus the length of the bytes to replace (the lead
 * byte and the continuation bytes that fitted it) */
static int
utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char lo = 0x80, hi = 0xbf;
    int           need, i;

    if (p[0] < 0x80) {
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        need = 2;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        need = 3;
        if (p[0] == 0xe0) lo = 0xa0;
        if (p[0] == 0xed) hi = 0x9f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        need = 4;
        if (p[0] == 0xf0) lo = 0x90;
        if (p[0] == 0xf4) hi = 0x8f;
    } else {
        return -1;
    }
    for (i = 1; i < need; i++) {
        if ((size_t) i >= n) {
            return 0;
        }
        if (p[i] < lo || p[i] > hi) {
            return -i;
        }
        lo = 0x80;
        hi = 0xbf;
    }
    return need;
}

size_t
llm_utf8_clean(const char *p, size_t n, int final, llm_pbuf *out)
{
    const unsigned char *u = (const unsigned char *) p;
    size_t               i = 0, from = 0;

    while (i < n) {
        int k = utf8_seq(u + i, n - i);

        if (k > 0) {
            i += (size_t) k;
            continue;
        }
        llm_pbuf_add(out, p + from, i - from);
        if (k == 0 && !final) {
            return i;                    /* wait for the rest */
        }
        llm_pbuf_add(out, "\xef\xbf\xbd", 3);
        i = (k == 0) ? n : i + (size_t) -k;
        from = i;
    }
    llm_pbuf_add(out, p + from, n - from);
    return n;
}

int
llm_is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* 1 if hold[0..n) is a prefix of (or equal to) some marker; *full = index
 * of a marker it equals, else -1. */
static int
mscan_prefix(const char *hold, size_t n, const char *const *marks, int *full)
{
    int i, any = 0;

    *full = -1;
    for (i = 0; marks[i]; i++) {
        size_t ml = strlen(marks[i]);

        if (n <= ml && memcmp(marks[i], hold, n) == 0) {
            any = 1;
            if (n == ml && *full < 0) {
                *full = i;
            }
        }
    }
    return any;
}

int
llm_mscan_push(llm_mscan *m, const char *const *marks, char c, llm_pbuf *rel)
{
    int full;

    if (m->hlen == LLM_MSCAN_HOLD) {      /* markers are shorter than this */
        llm_pbuf_add(rel, m->hold, m->hlen);
        m->hlen = 0;
    }
    m->hold[m->hlen++] = c;

    while (m->hlen) {
        if (mscan_prefix(m->hold, m->hlen, marks, &full)) {
            if (full >= 0) {
                m->hlen = 0;
                return full;
            }
            return -1;
        }
        /* the first held byte cannot start a marker: release it */
        llm_pbuf_addc(rel, m->hold[0]);
        memmove(m->hold, m->hold + 1, m->hlen - 1);
        m->hlen--;
    }
    return -1;
}

void
llm_mscan_drain(llm_mscan *m, llm_pbuf *rel)
{
    llm_pbuf_add(rel, m->hold, m->hlen);
    m->hlen = 0;
}
