/* Kept responses: hash chains, an LRU list and expiry (llm_response_store.h). */
#include <stdint.h>
#include <string.h>

#include "api/llm_response_store.h"
#include "core/llm_fnv.h"

typedef struct llm_rs_entry llm_rs_entry;

struct llm_rs_entry {
    llm_rs_entry  *chain;           /* the next entry of its hash chain */
    llm_rs_entry  *newer, *older;   /* the LRU list */
    long long      expires;         /* unix seconds */
    uint64_t       hash;
    size_t         id_len;
    size_t         len;
    char           data[];          /* id, then the record */
};

struct llm_response_store {
    size_t         n_buckets;
    size_t         count;
    llm_rs_entry  *newest, *oldest;
    llm_rs_entry  *buckets[];
};

llm_response_store *
llm_response_store_create(const llm_store_mem *mem, size_t n_buckets)
{
    llm_response_store *st;

    if (n_buckets == 0) {
        n_buckets = 1;
    }
    st = mem->alloc(mem->ctx, sizeof(*st) + n_buckets * sizeof(llm_rs_entry *));
    if (st == NULL) {
        return NULL;
    }
    memset(st, 0, sizeof(*st) + n_buckets * sizeof(llm_rs_entry *));
    st->n_buckets = n_buckets;
    return st;
}

static uint64_t
id_hash(const char *id, size_t len)
{
    return llm_fnv1a(LLM_FNV_BASIS, id, len);
}

static llm_rs_entry **
chain_of(llm_response_store *st, uint64_t hash)
{
    return &st->buckets[hash % st->n_buckets];
}

/* The link that points at id's entry (in its chain), or NULL. */
static llm_rs_entry **
find(llm_response_store *st, const char *id, size_t id_len, uint64_t hash)
{
    llm_rs_entry **link;

    for (link = chain_of(st, hash); *link; link = &(*link)->chain) {
        if ((*link)->hash == hash && (*link)->id_len == id_len
            && memcmp((*link)->data, id, id_len) == 0)
        {
            return link;
        }
    }
    return NULL;
}

static void
lru_unlink(llm_response_store *st, llm_rs_entry *e)
{
    if (e->newer) {
        e->newer->older = e->older;
    } else {
        st->newest = e->older;
    }
    if (e->older) {
        e->older->newer = e->newer;
    } else {
        st->oldest = e->newer;
    }
    e->newer = e->older = NULL;
}

static void
lru_push(llm_response_store *st, llm_rs_entry *e)
{
    e->newer = NULL;
    e->older = st->newest;
    if (st->newest) {
        st->newest->newer = e;
    } else {
        st->oldest = e;
    }
    st->newest = e;
}

/* Unlinks the entry *link points at and frees it. */
static void
drop(llm_response_store *st, const llm_store_mem *mem, llm_rs_entry **link)
{
    llm_rs_entry *e = *link;

    *link = e->chain;
    lru_unlink(st, e);
    st->count--;
    mem->free(mem->ctx, e);
}

static void
drop_entry(llm_response_store *st, const llm_store_mem *mem, llm_rs_entry *e)
{
    llm_rs_entry **link;

    for (link = chain_of(st, e->hash); *link != e; link = &(*link)->chain) {
        /* the entry is in its chain */
    }
    drop(st, mem, link);
}

/* Drops every expired entry; how many. */
static size_t
drop_expired(llm_response_store *st, const llm_store_mem *mem, long long now)
{
    llm_rs_entry *e, *newer;
    size_t        n = 0;

    for (e = st->oldest; e; e = newer) {
        newer = e->newer;
        if (e->expires <= now) {
            drop_entry(st, mem, e);
            n++;
        }
    }
    return n;
}

int
llm_response_store_put(llm_response_store *st, const llm_store_mem *mem,
    const char *id, size_t id_len, const void *record, size_t len,
    long long now, long long ttl)
{
    uint64_t       hash = id_hash(id, id_len);
    llm_rs_entry **link, *e;
    size_t         size = sizeof(*e) + id_len + len;

    link = find(st, id, id_len, hash);
    if (link) {
        drop(st, mem, link);
    }

    e = mem->alloc(mem->ctx, size);
    if (e == NULL && drop_expired(st, mem, now) > 0) {
        e = mem->alloc(mem->ctx, size);
    }
    while (e == NULL && st->oldest) {
        drop_entry(st, mem, st->oldest);
        e = mem->alloc(mem->ctx, size);
    }
    if (e == NULL) {
        return -1;
    }

    e->hash = hash;
    e->expires = now + ttl;
    e->id_len = id_len;
    e->len = len;
    memcpy(e->data, id, id_len);
    memcpy(e->data + id_len, record, len);
    link = chain_of(st, hash);
    e->chain = *link;
    *link = e;
    lru_push(st, e);
    st->count++;
    return 0;
}

int
llm_response_store_get(llm_response_store *st, const llm_store_mem *mem,
    const char *id, size_t id_len, long long now, llm_buf *out)
{
    llm_rs_entry **link = find(st, id, id_len, id_hash(id, id_len));
    llm_rs_entry  *e;

    if (link == NULL) {
        return 0;
    }
    e = *link;
    if (e->expires <= now) {
        drop(st, mem, link);
        return 0;
    }
    lru_unlink(st, e);
    lru_push(st, e);
    return llm_buf_append(out, e->data + e->id_len, e->len) == 0 ? 1 : -1;
}

int
llm_response_store_delete(llm_response_store *st, const llm_store_mem *mem,
    const char *id, size_t id_len, long long now)
{
    llm_rs_entry **link = find(st, id, id_len, id_hash(id, id_len));
    int            live;

    if (link == NULL) {
        return 0;
    }
    live = (*link)->expires > now;
    drop(st, mem, link);
    return live;
}

size_t
llm_response_store_count(const llm_response_store *st)
{
    return st->count;
}
