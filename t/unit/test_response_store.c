/*
 * The kept responses (api/llm_response_store.h): put / get / delete by id,
 * replacement, expiry at the TTL, LRU eviction when the memory is full
 * (a get makes a record recent), a record larger than the memory refused,
 * and every byte given back (the budget allocator counts them).
 */
#include <stdlib.h>

#include "tap.h"

#include "api/llm_response_store.h"

/* malloc with a byte budget: the "zone" is full when it is spent. */
typedef struct {
    size_t  budget, used;
    size_t  allocs, frees;
} budget;

typedef struct {
    size_t  size;
    double  align;
} hdr;

static void *
b_alloc(void *ctx, size_t size)
{
    budget *b = ctx;
    hdr    *h;

    if (b->used + size > b->budget) {
        return NULL;
    }
    h = malloc(sizeof(hdr) + size);
    if (h == NULL) {
        return NULL;
    }
    h->size = size;
    b->used += size;
    b->allocs++;
    return h + 1;
}

static void
b_free(void *ctx, void *p)
{
    budget *b = ctx;
    hdr    *h = (hdr *) p - 1;

    b->used -= h->size;
    b->frees++;
    free(h);
}

static int
get_is(llm_response_store *st, const llm_store_mem *mem, const char *id,
    long long now, const char *want)
{
    llm_buf out;
    int     rc, same;

    llm_buf_init(&out);
    rc = llm_response_store_get(st, mem, id, strlen(id), now, &out);
    same = want ? rc == 1 && out.len == strlen(want)
                  && memcmp(out.data, want, out.len) == 0
                : rc == 0 && out.len == 0;
    llm_buf_free(&out);
    return same;
}

static int
put(llm_response_store *st, const llm_store_mem *mem, const char *id,
    const char *rec, long long now, long long ttl)
{
    return llm_response_store_put(st, mem, id, strlen(id), rec, strlen(rec),
                                  now, ttl);
}

int
main(void)
{
    budget              b = { 100000, 0, 0, 0 };
    llm_store_mem       mem = { b_alloc, b_free, &b };
    llm_response_store *st;
    char                big[600], id[32];
    size_t              base, i, n;

    /* ---- put, get, replace, delete ---- */
    st = llm_response_store_create(&mem, 64);
    ok(st != NULL, "a store in the budget");
    base = b.used;
    is_int(put(st, &mem, "resp_a", "{\"a\":1}", 1000, 60), 0, "put a");
    is_int(put(st, &mem, "resp_b", "{\"b\":2}", 1000, 60), 0, "put b");
    is_int(llm_response_store_count(st), 2, "two records");
    ok(get_is(st, &mem, "resp_a", 1001, "{\"a\":1}"), "get a: its record");
    ok(get_is(st, &mem, "resp_b", 1001, "{\"b\":2}"), "get b: its record");
    ok(get_is(st, &mem, "resp_c", 1001, NULL), "an unknown id: 0");
    ok(get_is(st, &mem, "resp_", 1001, NULL), "a prefix of an id: 0");
    is_int(put(st, &mem, "resp_a", "{\"a\":3}", 1002, 60), 0, "put a again");
    ok(get_is(st, &mem, "resp_a", 1003, "{\"a\":3}"), "the newer record wins");
    is_int(llm_response_store_count(st), 2, "still two records");
    is_int(llm_response_store_delete(st, &mem, "resp_a", 6, 1003), 1,
           "delete a: 1");
    ok(get_is(st, &mem, "resp_a", 1003, NULL), "a is gone");
    is_int(llm_response_store_delete(st, &mem, "resp_a", 6, 1003), 0,
           "delete a again: 0");
    ok(get_is(st, &mem, "resp_b", 1003, "{\"b\":2}"), "b is still there");

    /* ---- expiry ---- */
    ok(get_is(st, &mem, "resp_b", 1059, "{\"b\":2}"), "b just before its TTL");
    ok(get_is(st, &mem, "resp_b", 1060, NULL), "b at its TTL: expired");
    is_int(llm_response_store_count(st), 0, "the expired record was dropped");
    is_int(b.used, base, "its memory was given back");
    is_int(put(st, &mem, "resp_d", "x", 2000, 5), 0, "put d (ttl 5)");
    is_int(llm_response_store_delete(st, &mem, "resp_d", 6, 2005), 0,
           "deleting an expired record: 0");
    is_int(b.used, base, "and it is freed");

    /* ---- LRU eviction when full ---- */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    b.budget = base + 4 * (sizeof(big) + 100);    /* room for 4 records */
    for (i = 0; i < 4; i++) {
        snprintf(id, sizeof(id), "resp_%zu", i);
        is_int(put(st, &mem, id, big, 3000, 600), 0, "fill: %s", id);
    }
    is_int(llm_response_store_count(st), 4, "four records fill it");
    ok(get_is(st, &mem, "resp_0", 3001, big), "resp_0 read: now the newest");
    is_int(put(st, &mem, "resp_4", big, 3002, 600), 0, "a fifth record fits");
    is_int(llm_response_store_count(st), 4, "by evicting one");
    ok(get_is(st, &mem, "resp_1", 3003, NULL),
       "the least recently used (resp_1) was evicted");
    ok(get_is(st, &mem, "resp_0", 3003, big), "the recently read resp_0 kept");
    ok(get_is(st, &mem, "resp_4", 3003, big), "the new one is there");

    /* expired records go before live ones */
    is_int(put(st, &mem, "resp_short", "s", 3004, 1), 0,
           "a small short-lived record");
    n = llm_response_store_count(st);
    ok(get_is(st, &mem, "resp_2", 3005, big), "resp_2 read (so not oldest)");
    is_int(put(st, &mem, "resp_5", big, 3010, 600), 0, "another big record");
    ok(get_is(st, &mem, "resp_short", 3010, NULL), "the expired one dropped");
    ok(get_is(st, &mem, "resp_2", 3010, big), "the live read one kept");
    ok(llm_response_store_count(st) <= n, "no growth past the budget");
    ok(b.used <= b.budget, "used %zu <= budget %zu", b.used, b.budget);

    /* a record larger than the whole memory */
    {
        char *huge = malloc(b.budget + 1);

        memset(huge, 'y', b.budget);
        huge[b.budget] = '\0';
        is_int(put(st, &mem, "resp_huge", huge, 3020, 600), -1,
               "a record larger than the memory: -1");
        ok(get_is(st, &mem, "resp_huge", 3020, NULL), "and not kept");
        free(huge);
    }
    is_int(put(st, &mem, "resp_6", "small", 3021, 600), 0,
           "the store still works after");
    ok(get_is(st, &mem, "resp_6", 3021, "small"), "resp_6 read back");

    /* ids that share a hash chain (1 bucket) */
    {
        budget              b1 = { 100000, 0, 0, 0 };
        llm_store_mem       m1 = { b_alloc, b_free, &b1 };
        llm_response_store *s1 = llm_response_store_create(&m1, 1);

        for (i = 0; i < 20; i++) {
            snprintf(id, sizeof(id), "r%zu", i);
            put(s1, &m1, id, id, 10, 100);
        }
        for (i = 0, n = 0; i < 20; i++) {
            snprintf(id, sizeof(id), "r%zu", i);
            n += get_is(s1, &m1, id, 11, id);
        }
        is_int(n, 20, "20 ids in one chain all read back");
        for (i = 0; i < 20; i += 2) {
            snprintf(id, sizeof(id), "r%zu", i);
            llm_response_store_delete(s1, &m1, id, strlen(id), 11);
        }
        for (i = 0, n = 0; i < 20; i++) {
            snprintf(id, sizeof(id), "r%zu", i);
            n += get_is(s1, &m1, id, 11, i % 2 ? id : NULL);
        }
        is_int(n, 20, "after deleting the even ones: odd kept, even gone");
        for (i = 1; i < 20; i += 2) {
            snprintf(id, sizeof(id), "r%zu", i);
            llm_response_store_delete(s1, &m1, id, strlen(id), 11);
        }
        is_int(b1.allocs - b1.frees, 1, "only the store itself is left");
        m1.free(m1.ctx, s1);
    }

    /* everything given back */
    while (llm_response_store_count(st)) {
        for (i = 0; i < 8; i++) {
            snprintf(id, sizeof(id), "resp_%zu", i);
            llm_response_store_delete(st, &mem, id, strlen(id), 3021);
        }
        llm_response_store_delete(st, &mem, "resp_short", 10, 3021);
    }
    is_int(b.used, base, "every record's memory given back");
    mem.free(mem.ctx, st);
    is_int(b.allocs, b.frees, "allocs %zu = frees %zu", b.allocs, b.frees);

    return done_testing();
}
