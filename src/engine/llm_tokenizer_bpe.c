/*
 * BPE model: one pre-token word -> ids.  Symbols start as the word's
 * characters (byte fallback / unk for characters outside the vocabulary);
 * the pair of lowest merge rank is merged first, leftmost on ties, with a
 * binary heap of candidate pairs, so a word of n symbols costs O(n log n).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_tokenizer_int.h"

typedef struct {
    int32_t id;
    int32_t prev, next;   /* -1 at the ends */
    int     alive;
} sym;

/* a candidate merge: rank in the high half, left symbol position in the low half,
   so ordering the keys orders by rank, then leftmost; validity is re-checked when popped */
typedef uint64_t cand;

static void
heap_push(cand *h, size_t *n, cand c)
{
    size_t i = (*n)++;

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (c >= h[p]) {
            break;
        }
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static cand
heap_pop(cand *h, size_t *n)
{
    cand   top = h[0], last = h[--(*n)];
    size_t i = 0;

    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = l;
        if (l >= *n) {
            break;
        }
        if (r < *n && h[r] < h[l]) m = r;
        if (h[m] >= last) {
            break;
        }
        h[i] = h[m];
        i = m;
    }
    if (*n > 0) {
        h[i] = last;
    }
    return top;
}

static const llm_tok_merge *
merge_get(const llm_tokenizer *t, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t) (uint32_t) a << 32) | (uint32_t) b;
    size_t   i;

    if (t->merges == NULL) {
        return NULL;
    }
    for (i = llm_tok_hash((const char *) &key, sizeof(key)) & t->merges_mask;
         t->merges[i].key != UINT64_MAX; i = (i + 1) & t->merges_mask)
    {
        if (t->merges[i].key == key) {
            return &t->merges[i];
        }
    }
    return NULL;
}

static int
push_id(int32_t **ids, size_t *n, size_t *cap, int32_t id)
{
    if (*n == *cap) {
        size_t   nc = *cap ? *cap * 2 : 64;
        int32_t *p = realloc(*ids, nc * sizeof(int32_t));
        if (p == NULL) {
            return -1;
        }
        *ids = p;
        *cap = nc;
    }
    (*ids)[(*n)++] = id;
    return 0;
}

static void
try_queue(const llm_tokenizer *t, sym *s, int32_t pos, cand *h, size_t *hn)
{
    int32_t              nx = s[pos].next;
    const llm_tok_merge *m;

    if (nx < 0) {
        return;
    }
    m = merge_get(t, s[pos].id, s[nx].id);
    if (m != NULL) {
        heap_push(h, hn, ((uint64_t) m->rank << 32) | (uint32_t) pos);
    }
}

int
llm_tok_bpe_word(const llm_tokenizer *t, const char *w, size_t n,
                 int32_t **ids, size_t *n_ids, size_t *cap)
{
    sym    *s, s_small[64];
    cand   *h, h_small[3 * 64 + 1];
    size_t  ns = 0, hn = 0, i;
    int32_t id, last;
    int     prev_unk = 0;

    if (n == 0) {
        return 0;
    }
    if (t->ignore_merges && (id = llm_tok_strmap_get(t, &t->vocab, w, n)) >= 0) {
        return push_id(ids, n_ids, cap, id);
    }
    /* at most one symbol per byte; each merge queues at most two candidates */
    if (n <= 64) {
        s = s_small;
        h = h_small;
    } else {
        s = malloc(n * sizeof(sym));
        h = malloc(n * 3 * sizeof(cand) + sizeof(cand));
        if (s == NULL || h == NULL) {
            free(s);
            free(h);
            return -1;
        }
    }
    for (i = 0; i < n; ) {
        uint32_t cp;
        int      len = llm_utf8_decode((const unsigned char *) w + i, n - i, &cp);
        if (len == 0) {
            len = 1;
        }
        id = llm_tok_strmap_get(t, &t->vocab, w + i, (size_t) len);
        if (id >= 0) {
            s[ns++].id = id;
            prev_unk = 0;
        } else if (t->byte_fallback && t->byte_id[(unsigned char) w[i]] >= 0) {
            int k;
            for (k = 0; k < len; k++) {
                s[ns++].id = t->byte_id[(unsigned char) w[i + k]];
            }
            prev_unk = 0;
        } else if (t->unk_id >= 0) {
            if (!(t->fuse_unk && prev_unk)) {
                s[ns++].id = t->unk_id;
            }
            prev_unk = 1;
        }
        i += (size_t) len;
    }
    for (i = 0; i < ns; i++) {
        s[i].prev = (int32_t) i - 1;
        s[i].next = i + 1 < ns ? (int32_t) i + 1 : -1;
        s[i].alive = 1;
    }
    for (i = 0; i + 1 < ns; i++) {
        try_queue(t, s, (int32_t) i, h, &hn);
    }
    while (hn > 0) {
        cand                 c = heap_pop(h, &hn);
        int32_t              pos = (int32_t) (uint32_t) c, nx;
        const llm_tok_merge *m;

        if (!s[pos].alive || (nx = s[pos].next) < 0) {
            continue;
        }
        m = merge_get(t, s[pos].id, s[nx].id);
        if (m == NULL || m->rank != (uint32_t) (c >> 32)) {
            continue;   /* stale: a neighbour changed since it was queued */
        }
        s[pos].id = m->id;
        s[nx].alive = 0;
        s[pos].next = s[nx].next;
        if (s[nx].next >= 0) {
            s[s[nx].next].prev = pos;
        }
        if (s[pos].prev >= 0) {
            try_queue(t, s, s[pos].prev, h, &hn);
        }
        try_queue(t, s, pos, h, &hn);
    }
    last = 0;
    for (i = 0; i < ns; i = (size_t) s[i].next) {
        if (push_id(ids, n_ids, cap, s[i].id)) {
            last = -1;
            break;
        }
        if (s[i].next < 0) {
            break;
        }
    }
    if (s != s_small) {
        free(s);
        free(h);
    }
    return last;
}
