/*
 * Suffix automaton (llm_suffix.h).  States keep the length of their longest
 * string, their suffix link and the end of the first occurrence in the
 * text; transitions live in one edge pool, each state's edges chained for
 * cloning, and are found through one open-addressing table keyed by
 * (state, token).  A separator (-1, never a query token) closes each
 * stream, so no match spans two requests.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_suffix.h"

#define SEP  (-1)

typedef struct {
    int  len, link, pos, edges;
} sx_state;

typedef struct {
    int32_t  tok;
    int      from, to, next;
} sx_edge;

struct llm_suffix {
    size_t     max;
    int32_t   *text;
    size_t     n;
    sx_state  *st;
    int        n_st, last;
    sx_edge   *ed;
    int        n_ed;
    int       *slot;       /* edge index, -1 empty */
    size_t     mask;
};


static size_t
sx_hash(const llm_suffix *sx, int from, int32_t tok)
{
    uint64_t  h = ((uint64_t) (uint32_t) from << 32) | (uint32_t) tok;

    h *= 0x9E3779B97F4A7C15ull;
    return (size_t) (h >> 29) & sx->mask;
}


/* the edge slot of (from, tok): its index in sx->slot, holding -1 if absent */
static size_t
sx_find(const llm_suffix *sx, int from, int32_t tok)
{
    size_t  h = sx_hash(sx, from, tok);
    int     e;

    while ((e = sx->slot[h]) >= 0
           && (sx->ed[e].from != from || sx->ed[e].tok != tok))
    {
        h = (h + 1) & sx->mask;
    }
    return h;
}


static int
sx_next(const llm_suffix *sx, int from, int32_t tok)
{
    int  e = sx->slot[sx_find(sx, from, tok)];

    return e < 0 ? -1 : sx->ed[e].to;
}


static void
sx_add_edge(llm_suffix *sx, int from, int32_t tok, int to)
{
    size_t    h = sx_find(sx, from, tok);
    sx_edge  *e = &sx->ed[sx->n_ed];

    e->tok = tok;
    e->from = from;
    e->to = to;
    e->next = sx->st[from].edges;
    sx->st[from].edges = sx->n_ed;
    sx->slot[h] = sx->n_ed++;
}


static int
sx_new_state(llm_suffix *sx, int len, int link, int pos)
{
    sx_state  *s = &sx->st[sx->n_st];

    s->len = len;
    s->link = link;
    s->pos = pos;
    s->edges = -1;
    return sx->n_st++;
}


static void
sx_reset(llm_suffix *sx)
{
    memset(sx->slot, 0xff, (sx->mask + 1) * sizeof(int));
    sx->n_st = 0;
    sx->n_ed = 0;
    sx->n = 0;
    sx->last = sx_new_state(sx, 0, -1, -1);
}


/* the standard online construction, one token */
static void
sx_extend(llm_suffix *sx, int32_t c)
{
    int  cur, p, q, clone, e;

    sx->text[sx->n] = c;
    cur = sx_new_state(sx, sx->st[sx->last].len + 1, 0, (int) sx->n);
    sx->n++;

    for (p = sx->last; p >= 0 && sx_next(sx, p, c) < 0; p = sx->st[p].link) {
        sx_add_edge(sx, p, c, cur);
    }

    if (p >= 0) {
        q = sx_next(sx, p, c);
        if (sx->st[p].len + 1 == sx->st[q].len) {
            sx->st[cur].link = q;

        } else {
            clone = sx_new_state(sx, sx->st[p].len + 1, sx->st[q].link,
                                 sx->st[q].pos);
            for (e = sx->st[q].edges; e >= 0; e = sx->ed[e].next) {
                sx_add_edge(sx, clone, sx->ed[e].tok, sx->ed[e].to);
            }
            for (; p >= 0 && sx_next(sx, p, c) == q; p = sx->st[p].link) {
                sx->ed[sx->slot[sx_find(sx, p, c)]].to = clone;
            }
            sx->st[q].link = clone;
            sx->st[cur].link = clone;
        }
    }

    sx->last = cur;
}


/* at most 2n states and 3n edges; the table at most half full */
static size_t
llm_suffix_table(size_t max_tokens)
{
    size_t  cap;

    for (cap = 1; cap < 6 * max_tokens; cap <<= 1) { /* void */ }
    return cap;
}


size_t
llm_suffix_memory(size_t max_tokens)
{
    return sizeof(llm_suffix) + max_tokens * sizeof(int32_t)
           + (2 * max_tokens + 1) * sizeof(sx_state)
           + 3 * max_tokens * sizeof(sx_edge)
           + llm_suffix_table(max_tokens) * sizeof(int);
}


llm_suffix *
llm_suffix_create(size_t max_tokens)
{
    size_t       cap;
    llm_suffix  *sx;

    if (max_tokens < 16 || max_tokens > (1u << 26)) {
        return NULL;
    }

    sx = calloc(1, sizeof(*sx));
    if (sx == NULL) {
        return NULL;
    }

    sx->max = max_tokens;
    cap = llm_suffix_table(max_tokens);
    sx->mask = cap - 1;

    sx->text = malloc(max_tokens * sizeof(int32_t));
    sx->st = malloc((2 * max_tokens + 1) * sizeof(sx_state));
    sx->ed = malloc(3 * max_tokens * sizeof(sx_edge));
    sx->slot = malloc(cap * sizeof(int));
    if (sx->text == NULL || sx->st == NULL || sx->ed == NULL
        || sx->slot == NULL)
    {
        llm_suffix_free(sx);
        return NULL;
    }

    sx_reset(sx);
    return sx;
}


void
llm_suffix_free(llm_suffix *sx)
{
    if (sx == NULL) {
        return;
    }
    free(sx->text);
    free(sx->st);
    free(sx->ed);
    free(sx->slot);
    free(sx);
}


size_t
llm_suffix_tokens(const llm_suffix *sx)
{
    return sx->n;
}


void
llm_suffix_add(llm_suffix *sx, const int32_t *t, size_t n)
{
    size_t    half = sx->max / 2, i, keep;
    int32_t  *old;

    /* a stream takes at most half the store, its tail */
    if (n + 1 > half) {
        t += n + 1 - half;
        n = half - 1;
    }

    if (sx->n + n + 1 > sx->max) {
        /* rebuild from the newer half, which this stream then follows */
        keep = sx->n < half ? sx->n : half;
        old = malloc(keep * sizeof(int32_t));
        if (old == NULL) {
            sx_reset(sx);
            keep = 0;
        } else {
            memcpy(old, sx->text + sx->n - keep, keep * sizeof(int32_t));
            sx_reset(sx);
            for (i = 0; i < keep; i++) {
                sx_extend(sx, old[i]);
            }
            free(old);
        }
    }

    for (i = 0; i < n; i++) {
        sx_extend(sx, t[i]);
    }
    sx_extend(sx, SEP);
}


int
llm_suffix_propose(const llm_suffix *sx, const int32_t *t, size_t n,
    int n_min, int n_max, int32_t *out, int k, int *match)
{
    size_t  i;
    int     state = 0, len = 0, next, j, pos;

    *match = 0;
    if (n == 0 || k <= 0 || n_max < 1) {
        return 0;
    }

    for (i = n > (size_t) n_max ? n - (size_t) n_max : 0; i < n; i++) {
        while (state > 0 && sx_next(sx, state, t[i]) < 0) {
            state = sx->st[state].link;
            len = sx->st[state].len;
        }
        next = t[i] < 0 ? -1 : sx_next(sx, state, t[i]);
        if (next >= 0) {
            state = next;
            len++;
        } else {
            state = 0;
            len = 0;
        }
    }

    if (len < n_min || len < 1) {
        return 0;
    }

    /* every string of the state ends where its first occurrence does */
    pos = sx->st[state].pos;
    for (j = 0; j < k && (size_t) (pos + 1 + j) < sx->n
                && sx->text[pos + 1 + j] != SEP; j++)
    {
        out[j] = sx->text[pos + 1 + j];
    }

    *match = len;
    return j;
}
