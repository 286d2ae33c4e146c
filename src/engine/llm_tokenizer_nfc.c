/*
 * Unicode NFC: canonical decomposition, canonical ordering by combining
 * class, canonical composition (UAX #15), Hangul done arithmetically.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_tokenizer_int.h"
#include "engine/llm_tokenizer_nfc.h"

#define SBASE 0xAC00
#define LBASE 0x1100
#define VBASE 0x1161
#define TBASE 0x11A7
#define LCOUNT 19
#define VCOUNT 21
#define TCOUNT 28
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

static int
ccc_of(uint32_t cp)
{
    size_t lo = 0, hi = llm_nfc_n_ccc;

    if (cp < 0x300) {
        return 0;
    }
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (llm_nfc_ccc_table[mid].cp == cp) {
            return llm_nfc_ccc_table[mid].ccc;
        }
        if (llm_nfc_ccc_table[mid].cp < cp) lo = mid + 1; else hi = mid;
    }
    return 0;
}

static const llm_nfc_dec *
dec_of(uint32_t cp)
{
    size_t lo = 0, hi = llm_nfc_n_dec;

    if (cp < 0xC0) {
        return NULL;
    }
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (llm_nfc_dec_table[mid].cp == cp) {
            return &llm_nfc_dec_table[mid];
        }
        if (llm_nfc_dec_table[mid].cp < cp) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

static uint32_t
compose(uint32_t a, uint32_t b)
{
    size_t lo = 0, hi = llm_nfc_n_comp;

    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT) {
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    }
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0
        && b > TBASE && b < TBASE + TCOUNT)
    {
        return a + (b - TBASE);
    }
    while (lo < hi) {
        size_t              mid = (lo + hi) / 2;
        const llm_nfc_comp *c = &llm_nfc_comp_table[mid];
        if (c->first == a && c->second == b) {
            return c->composite;
        }
        if (c->first < a || (c->first == a && c->second < b)) lo = mid + 1; else hi = mid;
    }
    return 0;
}

static int
is_second(uint32_t cp)
{
    size_t i;

    if ((cp >= VBASE && cp < VBASE + VCOUNT) || (cp > TBASE && cp < TBASE + TCOUNT)) {
        return 1;
    }
    for (i = 0; i < llm_nfc_n_seconds0; i++) {
        if (llm_nfc_seconds0[i] == cp) return 1;
    }
    return 0;
}

/*
 * Quick check: text whose code points below U+0300 are all we see, or whose
 * other code points have no combining class, no decomposition and cannot
 * combine with a predecessor, is already NFC.
 */
static int
maybe_not_nfc(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *) s;
    size_t               i = 0;

    while (i < n) {
        uint32_t cp;
        int      len;

        if (u[i] < 0xCC) {   /* below U+0300 (or a continuation byte) */
            i++;
            continue;
        }
        len = llm_utf8_decode(u + i, n - i, &cp);
        if (len == 0) {
            i++;
            continue;
        }
        i += (size_t) len;
        if (cp >= 0x4E00 && cp <= 0x9FFF) {   /* CJK ideographs: always NFC */
            continue;
        }
        if (ccc_of(cp) || dec_of(cp) || is_second(cp)) {   /* combining marks are caught by ccc */
            return 1;
        }
    }
    return 0;
}

static int
nfc_full(const char *s, size_t n, char **out, size_t *outlen)
{
    uint32_t *cps;
    size_t    ncp = 0, i, j, k, cap;
    char     *o;

    cap = n * 4 + 4;   /* full decomposition expands at most 4 code points per byte here */
    cps = malloc(cap * sizeof(uint32_t));
    if (cps == NULL) {
        return -1;
    }
    /* decompose; invalid bytes pass through as U+FFFD-free raw marker: keep them as is */
    for (i = 0; i < n; ) {
        uint32_t cp;
        int      len = llm_utf8_decode((const unsigned char *) s + i, n - i, &cp);
        const llm_nfc_dec *d;

        if (len == 0) {
            cp = 0x80000000u | (unsigned char) s[i];   /* raw byte, re-emitted untouched */
            len = 1;
        }
        i += (size_t) len;
        if (cp >= SBASE && cp < SBASE + SCOUNT) {
            uint32_t si = cp - SBASE;
            cps[ncp++] = LBASE + si / NCOUNT;
            cps[ncp++] = VBASE + (si % NCOUNT) / TCOUNT;
            if (si % TCOUNT) {
                cps[ncp++] = TBASE + si % TCOUNT;
            }
        } else if ((d = dec_of(cp)) != NULL) {
            for (k = 0; k < d->len; k++) {
                cps[ncp++] = llm_nfc_dec_pool[d->off + k];
            }
        } else {
            cps[ncp++] = cp;
        }
    }
    /* canonical ordering: stable insertion sort of each run of non-starters */
    for (i = 1; i < ncp; i++) {
        int c = ccc_of(cps[i]);
        if (c == 0) {
            continue;
        }
        for (j = i; j > 0; j--) {
            int p = ccc_of(cps[j - 1]);
            if (p <= c) {
                break;
            }
            uint32_t tmp = cps[j - 1];
            cps[j - 1] = cps[j];
            cps[j] = tmp;
        }
    }
    /* canonical composition */
    if (ncp > 0) {
        size_t starter = 0, w = 1;
        int    last_ccc = ccc_of(cps[0]) ? 256 : 0;

        if (last_ccc) {
            starter = (size_t) -1;
        }
        for (i = 1; i < ncp; i++) {
            uint32_t cp = cps[i];
            int      c = ccc_of(cp);
            uint32_t comp = 0;

            if (starter != (size_t) -1 && (last_ccc < c || (last_ccc == 0 && w == starter + 1))) {
                comp = compose(cps[starter], cp);
            }
            if (comp) {
                cps[starter] = comp;
                continue;
            }
            if (c == 0) {
                starter = w;
                last_ccc = 0;
            } else {
                last_ccc = c;
            }
            cps[w++] = cp;
        }
        ncp = w;
    }
    o = malloc(ncp * 4 + 1);
    if (o == NULL) {
        free(cps);
        return -1;
    }
    for (i = 0, j = 0; i < ncp; i++) {
        if (cps[i] & 0x80000000u) {
            o[j++] = (char) (cps[i] & 0xFF);
        } else {
            j += llm_utf8_encode(cps[i], o + j);
        }
    }
    o[j] = '\0';
    free(cps);
    *out = o;
    *outlen = j;
    return 0;
}

/*
 * NFC of s.  ASCII characters never combine with what precedes them, so the
 * text is cut before each one; only pieces that may change go through the
 * full algorithm.
 */
int
llm_tok_nfc(const char *s, size_t n, char **out, size_t *outlen)
{
    const unsigned char *u = (const unsigned char *) s;
    char                *o = malloc(n + 1), *piece;
    size_t               i = 0, j = 0, cap = n + 1, pl;

    if (o == NULL) {
        return -1;
    }
    while (i < n) {
        size_t start = i, end;

        /* one piece: an optional ASCII character, then the non-ASCII run after it */
        if (u[i] < 0x80) i++;
        while (i < n && u[i] >= 0x80) i++;
        end = i;
        if (end - start > 1 && maybe_not_nfc(s + start, end - start)) {
            if (nfc_full(s + start, end - start, &piece, &pl)) {
                free(o);
                return -1;
            }
            if (j + pl + (n - end) + 1 > cap) {
                char *p;
                cap = j + pl + (n - end) + 1;
                p = realloc(o, cap);
                if (p == NULL) {
                    free(piece);
                    free(o);
                    return -1;
                }
                o = p;
            }
            memcpy(o + j, piece, pl);
            j += pl;
            free(piece);
        } else {
            memcpy(o + j, s + start, end - start);
            j += end - start;
        }
    }
    o[j] = '\0';
    *out = o;
    *outlen = j;
    return 0;
}
