/* KV block pool: states, references, the prefix index and LRU eviction (llm_kv.h). */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_kv.h"

typedef struct {
    int32_t        tokens[LLM_KV_BLOCK];
    uint64_t       parent;       /* index key, when indexed */
    int            refs;
    int            hnext;        /* next in the index bucket */
    int            prev, next;   /* LRU or pinned list (cached), free list (next only) */
    float          pin_until;    /* retention: kept from eviction until then (the pool's
                                    clock; float keeps a block at 96 bytes, the memory
                                    check counts them) */
    unsigned char  n;            /* tokens held, when indexed */
    unsigned char  indexed;
    unsigned char  pinned;       /* cached, on the pinned list */
} llm_kv_block;

struct llm_kv_pool {
    llm_kv_block  *b;
    int            n_blocks;
    int           *bucket;       /* heads, -1 = empty */
    uint64_t       mask;
    int            free_head;
    int            lru_head, lru_tail;    /* oldest first */
    int            pin_head, pin_tail;    /* cached blocks whose retention runs */
    size_t         n_free, n_cached, n_used, n_pinned;
    uint64_t       evicted;
    double         now;                   /* llm_kv_set_now */
};

static uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

uint64_t
llm_kv_chain(uint64_t parent, const int32_t *tokens)
{
    uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ULL);
    int      i;

    for (i = 0; i < LLM_KV_BLOCK; i++) {
        h = mix64(h + (uint32_t) tokens[i] + ((uint64_t) i << 32));
    }
    return h;
}

static size_t
n_buckets(int n_blocks)
{
    size_t nb = 1;

    while (nb < (size_t) n_blocks) nb <<= 1;
    return nb;
}

size_t
llm_kv_pool_bytes(int n_blocks)
{
    if (n_blocks <= 0) return 0;
    return sizeof(llm_kv_pool) + (size_t) n_blocks * sizeof(llm_kv_block)
           + n_buckets(n_blocks) * sizeof(int);
}

llm_kv_pool *
llm_kv_pool_create(int n_blocks)
{
    llm_kv_pool *p;
    size_t       nb;
    int          i;

    if (n_blocks <= 0) return NULL;
    p = calloc(1, sizeof(*p));
    if (p == NULL) return NULL;
    nb = n_buckets(n_blocks);
    p->b = calloc((size_t) n_blocks, sizeof(*p->b));
    p->bucket = malloc(nb * sizeof(int));
    if (p->b == NULL || p->bucket == NULL) {
        llm_kv_pool_free(p);
        return NULL;
    }
    p->mask = nb - 1;
    for (i = 0; i < (int) nb; i++) p->bucket[i] = -1;
    p->n_blocks = n_blocks;
    for (i = 0; i < n_blocks; i++) {
        p->b[i].next = i + 1 < n_blocks ? i + 1 : -1;
        p->b[i].prev = -1;
        p->b[i].hnext = -1;
    }
    p->free_head = 0;
    p->lru_head = p->lru_tail = -1;
    p->pin_head = p->pin_tail = -1;
    p->n_free = (size_t) n_blocks;
    return p;
}

void
llm_kv_pool_free(llm_kv_pool *p)
{
    if (p == NULL) return;
    free(p->b);
    free(p->bucket);
    free(p);
}

int llm_kv_pool_blocks(const llm_kv_pool *p) { return p->n_blocks; }
int llm_kv_available(const llm_kv_pool *p) { return (int) (p->n_free + p->n_cached - p->n_pinned); }
int llm_kv_refs(const llm_kv_pool *p, int b) { return p->b[b].refs; }
int32_t *llm_kv_tokens(llm_kv_pool *p, int b) { return p->b[b].tokens; }

int
llm_kv_readonly(const llm_kv_pool *p, int b)
{
    return p->b[b].refs > 1 || p->b[b].indexed;
}

void
llm_kv_pool_get_stats(const llm_kv_pool *p, llm_kv_stats *st)
{
    st->blocks = (size_t) p->n_blocks;
    st->used = p->n_used;
    st->cached = p->n_cached;
    st->pinned = p->n_pinned;
    st->free = p->n_free;
    st->evicted = p->evicted;
}

static void
list_remove(llm_kv_pool *p, int *head, int *tail, int b)
{
    llm_kv_block *k = &p->b[b];

    if (k->prev >= 0) p->b[k->prev].next = k->next; else *head = k->next;
    if (k->next >= 0) p->b[k->next].prev = k->prev; else *tail = k->prev;
    k->prev = k->next = -1;
}

static void
list_append(llm_kv_pool *p, int *head, int *tail, int b)
{
    llm_kv_block *k = &p->b[b];

    k->prev = *tail;
    k->next = -1;
    if (*tail >= 0) p->b[*tail].next = b; else *head = b;
    *tail = b;
}

/* A cached block leaves its list (LRU or pinned). */
static void
lru_remove(llm_kv_pool *p, int b)
{
    if (p->b[b].pinned) {
        list_remove(p, &p->pin_head, &p->pin_tail, b);
        p->b[b].pinned = 0;
        p->n_pinned--;
    } else {
        list_remove(p, &p->lru_head, &p->lru_tail, b);
    }
    p->n_cached--;
}

/*
 * A block becomes cached: on the pinned list while its retention runs (at
 * most half the pool is held so), else last on the LRU list.
 */
static void
lru_append(llm_kv_pool *p, int b)
{
    if (p->b[b].pin_until > p->now
        && p->n_pinned < (size_t) p->n_blocks / 2)
    {
        list_append(p, &p->pin_head, &p->pin_tail, b);
        p->b[b].pinned = 1;
        p->n_pinned++;
    } else {
        list_append(p, &p->lru_head, &p->lru_tail, b);
    }
    p->n_cached++;
}

static void
free_push(llm_kv_pool *p, int b)
{
    p->b[b].next = p->free_head;
    p->b[b].prev = -1;
    p->free_head = b;
    p->n_free++;
}

static void
index_remove(llm_kv_pool *p, int b)
{
    int *at = &p->bucket[p->b[b].parent & p->mask];

    while (*at != b) at = &p->b[*at].hnext;
    *at = p->b[b].hnext;
    p->b[b].hnext = -1;
    p->b[b].indexed = 0;
}

/* Takes a cached block out of the index and the LRU list into the free list. */
static void
drop_cached(llm_kv_pool *p, int b)
{
    index_remove(p, b);
    lru_remove(p, b);
    free_push(p, b);
}

int
llm_kv_alloc(llm_kv_pool *p)
{
    int b;

    if (p->free_head >= 0) {
        b = p->free_head;
        p->free_head = p->b[b].next;
        p->n_free--;
    } else if (p->lru_head >= 0 || p->pin_head >= 0) {
        /* retention is a hint: a pinned block goes when nothing else can */
        b = p->lru_head >= 0 ? p->lru_head : p->pin_head;
        index_remove(p, b);
        lru_remove(p, b);
        p->evicted++;
    } else {
        return -1;
    }
    p->b[b].refs = 1;
    p->b[b].pin_until = 0;
    p->b[b].next = p->b[b].prev = -1;
    p->n_used++;
    return b;
}

void
llm_kv_ref(llm_kv_pool *p, int b)
{
    if (p->b[b].refs++ == 0) {
        lru_remove(p, b);
        p->n_used++;
    }
}

void
llm_kv_unref(llm_kv_pool *p, int b)
{
    if (p->b[b].refs <= 0 || --p->b[b].refs > 0) return;
    p->n_used--;
    if (p->b[b].indexed) {
        lru_append(p, b);     /* the most recently released is evicted last */
    } else {
        free_push(p, b);
    }
}

static int
head_len(const int32_t *a, int na, const int32_t *b, int nb)
{
    int i, n = na < nb ? na : nb;

    for (i = 0; i < n && a[i] == b[i]; i++) { /* void */ }
    return i;
}

int
llm_kv_lookup(const llm_kv_pool *p, uint64_t parent, const int32_t *tokens, int n, int *common)
{
    int b, best = -1, best_len = 0, len;

    for (b = p->bucket[parent & p->mask]; b >= 0; b = p->b[b].hnext) {
        const llm_kv_block *k = &p->b[b];
        if (k->parent != parent) continue;
        len = head_len(k->tokens, k->n, tokens, n);
        if (len > best_len) {
            best = b;
            best_len = len;
            if (len == LLM_KV_BLOCK) break;
        }
    }
    *common = best_len;
    return best;
}

void
llm_kv_publish(llm_kv_pool *p, int b, uint64_t parent, int n)
{
    llm_kv_block *k = &p->b[b];
    int           s, next, len;

    if (k->indexed || n <= 0 || n > LLM_KV_BLOCK) return;
    for (s = p->bucket[parent & p->mask]; s >= 0; s = next) {
        llm_kv_block *sib = &p->b[s];
        next = sib->hnext;
        if (sib->parent != parent) continue;
        len = head_len(sib->tokens, sib->n, k->tokens, n);
        if (len == n) return;                   /* held already */
        if (len == sib->n && sib->refs == 0) {
            drop_cached(p, s);                  /* a partial head of this one */
        }
    }
    k->parent = parent;
    k->n = (unsigned char) n;
    k->indexed = 1;
    k->hnext = p->bucket[parent & p->mask];
    p->bucket[parent & p->mask] = b;
}

void
llm_kv_pin(llm_kv_pool *p, int b, double until)
{
    llm_kv_block *k = &p->b[b];

    if ((float) until <= k->pin_until) return;
    k->pin_until = (float) until;
    if (k->refs == 0 && k->indexed && !k->pinned) {
        lru_remove(p, b);
        lru_append(p, b);
    }
}

void
llm_kv_set_now(llm_kv_pool *p, double now)
{
    int b, next;

    p->now = now;
    for (b = p->pin_head; b >= 0; b = next) {
        next = p->b[b].next;
        if (p->b[b].pin_until <= now) {
            lru_remove(p, b);
            lru_append(p, b);     /* expired: evictable, most recent last */
        }
    }
}
