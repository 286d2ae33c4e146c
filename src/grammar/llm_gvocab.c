/*
 * A vocabulary's token bytes as a trie stored in preorder: node i has one
 * byte (the edge from its parent), its depth, the index just past its
 * subtree (so a dead byte skips the whole subtree in O(1)) and the tokens
 * that end there.  Built once per model from sorted token byte strings.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_gvocab_int.h"

#define SHARED_CUT_BUDGET ((size_t) 96 << 20)

typedef struct {
    const char *s;
    uint32_t    n;
    int32_t     id;
} tok_ref;

static int
cmp_tok(const void *x, const void *y)
{
    const tok_ref *a = x, *b = y;
    size_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->s, b->s, n);
    if (c) return c;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

void
llm_gcut_free(llm_gcut *c)
{
    if (c == NULL) return;
    free(c->acc); free(c->acc_bits); free(c->dep); free(c->by_count);
    free(c);
}

void
llm_gvocab_free(llm_gvocab *v)
{
    size_t i;
    if (v == NULL) return;
    for (i = 0; i < v->cut_cap; i++) {
        if (v->cut_tab[i].cut == NULL) continue;
        llm_gcut_free(v->cut_tab[i].cut);
        free(v->cut_tab[i].key);
    }
    free(v->cut_tab);
    pthread_mutex_destroy(&v->cut_mu);
    free(v->arena); free(v->off); free(v->len);
    free(v->byte); free(v->depth); free(v->skip); free(v->first_tok); free(v->next_tok);
    free(v->long_tok);
    free(v);
}

llm_gvocab *
llm_gvocab_create(size_t n_vocab, llm_gvocab_bytes_fn bytes_of, void *ctx,
                  const int32_t *excluded, size_t n_excluded, char *err, size_t errlen)
{
    llm_gvocab *v;
    tok_ref *refs = NULL;
    char buf[1024];
    size_t i, n_refs = 0, arena_len = 0, cap = 1 << 20, nodes_cap;
    uint32_t *path = NULL;   /* node index per depth on the current path */
    size_t path_n = 0, max_len = 0;

    if (n_vocab == 0 || n_vocab > INT32_MAX) {
        llm_gerr(err, errlen, "empty vocabulary");
        return NULL;
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL) goto oom;
    pthread_mutex_init(&v->cut_mu, NULL);
    v->n_vocab = n_vocab;
    v->off = malloc(n_vocab * sizeof(uint32_t));
    v->len = malloc(n_vocab * sizeof(int32_t));
    v->next_tok = malloc(n_vocab * sizeof(int32_t));
    v->arena = malloc(cap);
    if (!v->off || !v->len || !v->next_tok || !v->arena) goto oom;
    for (i = 0; i < n_vocab; i++) {
        int n = bytes_of(ctx, (int32_t) i, buf, sizeof(buf));
        size_t k;
        v->next_tok[i] = -1;
        v->off[i] = (uint32_t) arena_len;
        v->len[i] = -1;
        if (n < 0) continue;
        if ((size_t) n > sizeof(buf)) n = sizeof(buf);
        for (k = 0; k < n_excluded; k++) if (excluded[k] == (int32_t) i) break;
        if (arena_len + (size_t) n > cap) {
            char *a;
            cap *= 2;
            a = realloc(v->arena, cap);
            if (a == NULL) goto oom;
            v->arena = a;
        }
        memcpy(v->arena + arena_len, buf, (size_t) n);
        arena_len += (size_t) n;
        /* excluded ids keep their bytes (the matcher may check them as extras) */
        v->len[i] = k < n_excluded ? -2 - n : n;
    }
    refs = malloc(n_vocab * sizeof(*refs));
    if (refs == NULL) goto oom;
    for (i = 0; i < n_vocab; i++) {
        if (v->len[i] <= 0) continue;       /* excluded, unknown, or empty */
        refs[n_refs].s = v->arena + v->off[i];
        refs[n_refs].n = (uint32_t) v->len[i];
        refs[n_refs].id = (int32_t) i;
        if ((size_t) v->len[i] > max_len) max_len = (size_t) v->len[i];
        n_refs++;
    }
    qsort(refs, n_refs, sizeof(*refs), cmp_tok);

    nodes_cap = 1024;
    v->byte = malloc(nodes_cap);
    v->depth = malloc(nodes_cap * sizeof(uint16_t));
    v->skip = malloc(nodes_cap * sizeof(uint32_t));
    v->first_tok = malloc(nodes_cap * sizeof(int32_t));
    path = malloc((max_len + 2) * sizeof(uint32_t));
    if (!v->byte || !v->depth || !v->skip || !v->first_tok || !path) goto oom;
    /* root */
    v->byte[0] = 0; v->depth[0] = 0; v->first_tok[0] = -1;
    v->n_nodes = 1;
    path[0] = 0;
    path_n = 1;
    for (i = 0; i < n_refs; i++) {
        const tok_ref *t = &refs[i];
        size_t common = 0, d;
        int32_t *last;
        if (i > 0) {
            const tok_ref *p = &refs[i - 1];
            while (common < p->n && common < t->n && p->s[common] == t->s[common]) common++;
        }
        /* close the nodes deeper than the common prefix */
        while (path_n > common + 1) {
            path_n--;
            v->skip[path[path_n]] = (uint32_t) v->n_nodes;
        }
        for (d = common; d < t->n; d++) {
            if (v->n_nodes == nodes_cap) {
                nodes_cap *= 2;
                if (!(v->byte = realloc(v->byte, nodes_cap))
                    || !(v->depth = realloc(v->depth, nodes_cap * sizeof(uint16_t)))
                    || !(v->skip = realloc(v->skip, nodes_cap * sizeof(uint32_t)))
                    || !(v->first_tok = realloc(v->first_tok, nodes_cap * sizeof(int32_t))))
                    goto oom;
            }
            v->byte[v->n_nodes] = (uint8_t) t->s[d];
            v->depth[v->n_nodes] = (uint16_t) (d + 1);
            v->first_tok[v->n_nodes] = -1;
            path[path_n++] = (uint32_t) v->n_nodes;
            v->n_nodes++;
        }
        /* token ends at the path's last node; chain equal strings */
        last = &v->first_tok[path[path_n - 1]];
        while (*last >= 0) last = &v->next_tok[*last];
        *last = t->id;
    }
    while (path_n > 0) {
        path_n--;
        v->skip[path[path_n]] = (uint32_t) v->n_nodes;
    }
    if (max_len >= 65535) {
        llm_gerr(err, errlen, "token longer than 65535 bytes");
        goto fail;
    }
    v->max_depth = max_len;
    for (i = 0; i < n_refs; i++) v->n_long += refs[i].n > LLM_GVOCAB_LONG;
    v->long_tok = malloc((v->n_long + 1) * sizeof(int32_t));
    if (v->long_tok == NULL) goto oom;
    v->n_long = 0;
    for (i = 0; i < n_refs; i++)
        if (refs[i].n > LLM_GVOCAB_LONG) v->long_tok[v->n_long++] = refs[i].id;
    free(refs);
    free(path);
    return v;
oom:
    llm_gerr(err, errlen, "out of memory");
fail:
    free(refs);
    free(path);
    llm_gvocab_free(v);
    return NULL;
}

size_t
llm_gvocab_n_vocab(const llm_gvocab *v)
{
    return v->n_vocab;
}

size_t
llm_gvocab_n_nodes(const llm_gvocab *v)
{
    return v->n_nodes;
}

size_t
llm_gvocab_walk_bytes(const llm_gvocab *v)
{
    size_t n;
    pthread_mutex_lock((pthread_mutex_t *) &v->cut_mu);
    n = v->cut_bytes;
    pthread_mutex_unlock((pthread_mutex_t *) &v->cut_mu);
    return n;
}

const char *
llm_gvocab_token(const llm_gvocab *v, int32_t id, size_t *len)
{
    if (id < 0 || (size_t) id >= v->n_vocab || v->len[id] <= 0) return NULL;
    *len = (size_t) v->len[id];
    return v->arena + v->off[id];
}

static int
key_eq(const llm_gcut_entry *e, uint64_t hash, const int32_t *key, size_t n)
{
    return e->hash == hash && e->n_key == n && memcmp(e->key, key, n * sizeof(int32_t)) == 0;
}

/* e's FOLLOW set holds every byte of f */
static int
follow_holds(const llm_gcut_entry *e, const uint8_t f[32])
{
    int k;
    for (k = 0; k < 32; k++) if (f[k] & ~e->follow[k]) return 0;
    return 1;
}

llm_gcut *
llm_gvocab_cut_find(llm_gvocab *v, uint64_t hash, const int32_t *key, size_t n, const uint8_t follow[32])
{
    llm_gcut *c = NULL;
    size_t i;
    int best = 257;

    /* of the walks that serve, the one with the fewest bytes let past the
     * cut (the fewest tokens to check from the state) */
    pthread_mutex_lock(&v->cut_mu);
    for (i = v->cut_cap ? hash & (v->cut_cap - 1) : 0; v->cut_cap && v->cut_tab[i].cut != NULL;
         i = (i + 1) & (v->cut_cap - 1)) {
        if (key_eq(&v->cut_tab[i], hash, key, n) && follow_holds(&v->cut_tab[i], follow)) {
            int k, bits = 0;
            for (k = 0; k < 32; k++) bits += __builtin_popcount(v->cut_tab[i].follow[k]);
            if (bits < best) { best = bits; c = v->cut_tab[i].cut; }
        }
    }
    pthread_mutex_unlock(&v->cut_mu);
    return c;
}

llm_gcut *
llm_gvocab_cut_put(llm_gvocab *v, uint64_t hash, const int32_t *key, size_t n, const uint8_t follow[32],
                   llm_gcut *c)
{
    llm_gcut_entry *e;
    size_t i;

    pthread_mutex_lock(&v->cut_mu);
    if (v->cut_bytes + c->bytes > SHARED_CUT_BUDGET) goto keep;
    if ((v->cut_n + 1) * 2 > v->cut_cap) {
        size_t cap = v->cut_cap ? v->cut_cap * 2 : 256, k;
        llm_gcut_entry *t = calloc(cap, sizeof(*t));
        if (t == NULL) goto keep;
        for (k = 0; k < v->cut_cap; k++) {
            if (v->cut_tab[k].cut == NULL) continue;
            for (i = v->cut_tab[k].hash & (cap - 1); t[i].cut != NULL; i = (i + 1) & (cap - 1)) {}
            t[i] = v->cut_tab[k];
        }
        free(v->cut_tab);
        v->cut_tab = t;
        v->cut_cap = cap;
    }
    for (i = hash & (v->cut_cap - 1); v->cut_tab[i].cut != NULL; i = (i + 1) & (v->cut_cap - 1)) {
        if (key_eq(&v->cut_tab[i], hash, key, n) && follow_holds(&v->cut_tab[i], follow)) {
            llm_gcut *old = v->cut_tab[i].cut;
            pthread_mutex_unlock(&v->cut_mu);
            llm_gcut_free(c);
            return old;
        }
    }
    e = &v->cut_tab[i];
    e->key = malloc((n + 1) * sizeof(int32_t));
    if (e->key == NULL) goto keep;
    memcpy(e->key, key, n * sizeof(int32_t));
    e->n_key = n;
    e->hash = hash;
    memcpy(e->follow, follow, 32);
    e->cut = c;
    c->shared = 1;
    v->cut_n++;
    v->cut_bytes += c->bytes + n * sizeof(int32_t);
keep:
    pthread_mutex_unlock(&v->cut_mu);
    return c;
}
