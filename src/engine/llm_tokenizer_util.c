/* Small helpers of the tokenizer: hashing, string lists, UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_tokenizer_int.h"

uint64_t
llm_tok_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    size_t   i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char) s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

int32_t
llm_tok_strmap_get(const llm_tokenizer *t, const llm_tok_strmap *m, const char *s, size_t n)
{
    size_t  i;
    int32_t id;

    if (m->slot == NULL) {
        return -1;
    }
    for (i = llm_tok_hash(s, n) & m->mask; (id = m->slot[i]) >= 0; i = (i + 1) & m->mask) {
        if (t->piece_len[id] == n && memcmp(t->piece[id], s, n) == 0) {
            return id;
        }
    }
    return -1;
}

int
llm_tok_list_push(llm_tok_list *l, const char *s, size_t n)
{
    if (l->n + 2 > l->ncap) {
        size_t  nc = l->ncap ? l->ncap * 2 : 16;
        size_t *o = realloc(l->off, nc * sizeof(*o));
        if (o == NULL) {
            return -1;
        }
        l->off = o;
        l->ncap = nc;
    }
    if (l->len + n + 1 > l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        char  *b;
        while (nc < l->len + n + 1) {
            nc *= 2;
        }
        b = realloc(l->buf, nc);
        if (b == NULL) {
            return -1;
        }
        l->buf = b;
        l->cap = nc;
    }
    if (l->n == 0) {
        l->off[0] = 0;
    }
    if (n) {
        memcpy(l->buf + l->len, s, n);
    }
    l->len += n;
    l->n++;
    l->off[l->n] = l->len;
    return 0;
}

void
llm_tok_list_clear(llm_tok_list *l)
{
    l->n = 0;
    l->len = 0;
}

void
llm_tok_list_free(llm_tok_list *l)
{
    free(l->buf);
    free(l->off);
    memset(l, 0, sizeof(*l));
}

int
llm_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    uint32_t c;
    int      len, i;

    if (n == 0) {
        return 0;
    }
    c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2; c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t) len > n) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        c = (c << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (len == 4 && (c < 0x10000 || c > 0x10FFFF))) {
        return 0;
    }
    *cp = c;
    return len;
}

size_t
llm_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *) out;

    if (cp < 0x80) {
        o[0] = (unsigned char) cp;
        return 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char) (0xC0 | (cp >> 6));
        o[1] = (unsigned char) (0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char) (0xE0 | (cp >> 12));
        o[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char) (0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char) (0xF0 | (cp >> 18));
    o[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char) (0x80 | (cp & 0x3F));
    return 4;
}

/*
 * Length of the valid prefix of an ill-formed sequence starting at s (the
 * "maximal subpart" that Rust's from_utf8_lossy replaces by one U+FFFD).
 */
size_t
llm_utf8_bad_len(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *) str;
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t        need, i;

    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 1;
    }
    for (i = 1; i < need && i < n; i++) {
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (s[i] < l || s[i] > h) {
            break;
        }
    }
    return i;
}

size_t
llm_utf8_valid_prefix(const char *s, size_t n)
{
    size_t   i = 0;
    uint32_t cp;
    int      k;

    while (i < n) {
        k = llm_utf8_decode((const unsigned char *) s + i, n - i, &cp);
        if (k == 0) {
            break;
        }
        i += (size_t) k;
    }
    return i;
}

int
llm_utf8_lossy(const char *s, size_t n, char **out, size_t *outlen)
{
    return llm_utf8_lossy_map(s, n, out, outlen, NULL, 0);
}

int
llm_utf8_lossy_map(const char *s, size_t n, char **out, size_t *outlen, size_t *offs, size_t n_offs)
{
    const unsigned char *u = (const unsigned char *) s;
    char                *o;
    size_t               i = 0, j = 0, m = 0, step;
    uint32_t             cp;
    int                  k;

    o = malloc(n * 3 + 1);   /* each bad byte may become 3 bytes */
    if (o == NULL) {
        return -1;
    }
    while (i < n) {
        k = llm_utf8_decode(u + i, n - i, &cp);
        step = k > 0 ? (size_t) k : llm_utf8_bad_len(s + i, n - i);
        /* offsets inside this character or bad sequence move to its start */
        while (m < n_offs && offs[m] < i + step) offs[m++] = j;
        if (k > 0) {
            memcpy(o + j, s + i, (size_t) k);
            j += (size_t) k;
        } else {
            memcpy(o + j, "\xEF\xBF\xBD", 3);
            j += 3;
        }
        i += step;
    }
    while (m < n_offs) offs[m++] = j;
    o[j] = '\0';
    *out = o;
    *outlen = j;
    return 0;
}
