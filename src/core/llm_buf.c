/* Growable byte buffer (see llm_buf.h). */
#include "core/llm_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
llm_buf_init(llm_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void
llm_buf_free(llm_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

void
llm_buf_reset(llm_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data) {
        b->data[0] = '\0';
    }
}

int
llm_buf_reserve(llm_buf *b, size_t extra)
{
    size_t  need, cap;
    char   *p;

    if (b->failed) {
        return -1;
    }
    if (extra > (size_t) -1 - b->len - 1) {
        b->failed = 1;
        return -1;
    }
    need = b->len + extra + 1;          /* + NUL */
    if (b->max && need > b->max + 1) {
        b->failed = 1;
        return -1;
    }
    if (need <= b->cap) {
        return 0;
    }
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        cap = cap > (size_t) -1 / 2 ? need : cap * 2;
    }
    p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int
llm_buf_append(llm_buf *b, const void *p, size_t n)
{
    if (llm_buf_reserve(b, n) != 0) {
        return -1;
    }
    if (n) {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int
llm_buf_puts(llm_buf *b, const char *s)
{
    return llm_buf_append(b, s, strlen(s));
}

int
llm_buf_putc(llm_buf *b, char c)
{
    return llm_buf_append(b, &c, 1);
}

int
llm_buf_vprintf(llm_buf *b, const char *fmt, va_list ap)
{
    va_list  cp;
    int      n;

    if (b->failed) {
        return -1;
    }
    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0 || llm_buf_reserve(b, (size_t) n) != 0) {
        b->failed = 1;
        return -1;
    }
    vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
    b->len += (size_t) n;
    return 0;
}

int
llm_buf_printf(llm_buf *b, const char *fmt, ...)
{
    va_list  ap;
    int      rc;

    va_start(ap, fmt);
    rc = llm_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *
llm_buf_detach(llm_buf *b, size_t *len)
{
    char *p = b->data;

    if (len) {
        *len = b->len;
    }
    if (p == NULL) {
        p = calloc(1, 1);
    }
    memset(b, 0, sizeof(*b));
    return p;
}
