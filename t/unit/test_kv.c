/*
 * Paged KV memory: the block pool's states, references, prefix index and
 * LRU eviction (no model), then a runtime on a tiny budget: block tables,
 * prefix reuse across sequences (whole blocks and partial heads shared; a
 * head is copied when the sequence writes after it), copy-on-write after
 * truncation, and eviction that never touches a running
 * sequence (its logits stay those of a runtime that never evicted).
 */
#include "tap.h"

#include "engine/llm_engine.h"
#include "engine/llm_kv.h"

#define FIX "t/fixtures/models"

static void
fill_tokens(int32_t *t, int n, int seed)
{
    int i;
    for (i = 0; i < n; i++) t[i] = (int32_t) ((i * 37 + seed * 11 + 5) % 250) + 3;
}

static void
test_pool(void)
{
    llm_kv_pool *p = llm_kv_pool_create(3);
    llm_kv_stats st;
    int32_t a[LLM_KV_BLOCK], b[LLM_KV_BLOCK];
    int x, y, z, w, common;
    uint64_t ha;

    if (!ok(p != NULL, "a pool of 3 blocks")) return;
    fill_tokens(a, LLM_KV_BLOCK, 1);
    fill_tokens(b, LLM_KV_BLOCK, 2);

    x = llm_kv_alloc(p);
    y = llm_kv_alloc(p);
    z = llm_kv_alloc(p);
    ok(x >= 0 && y >= 0 && z >= 0 && x != y && y != z && x != z, "three distinct blocks");
    is_int(llm_kv_alloc(p), -1, "a fourth: none, every block is used");
    llm_kv_pool_get_stats(p, &st);
    ok(st.used == 3 && st.free == 0 && st.cached == 0, "3 used");

    /* x holds a full block after the root, y a partial continuation of it */
    memcpy(llm_kv_tokens(p, x), a, sizeof(a));
    llm_kv_publish(p, x, LLM_KV_ROOT, LLM_KV_BLOCK);
    ha = llm_kv_chain(LLM_KV_ROOT, a);
    memcpy(llm_kv_tokens(p, y), b, sizeof(b));
    llm_kv_publish(p, y, ha, 5);
    ok(llm_kv_readonly(p, x) && llm_kv_readonly(p, y) && !llm_kv_readonly(p, z),
       "indexed blocks are read-only, a private one is not");

    is_int(llm_kv_lookup(p, LLM_KV_ROOT, a, LLM_KV_BLOCK, &common), x, "lookup by parent finds the block");
    is_int(common, LLM_KV_BLOCK, "all its tokens");
    is_int(llm_kv_lookup(p, ha, b, 3, &common), y, "a partial child");
    is_int(common, 3, "as far as asked");
    is_int(llm_kv_lookup(p, ha, b, LLM_KV_BLOCK, &common), y, "a longer ask");
    is_int(common, 5, "as far as it holds");
    is_int(llm_kv_lookup(p, LLM_KV_ROOT, b, LLM_KV_BLOCK, &common), -1, "other tokens: no block");
    is_int(llm_kv_lookup(p, ha + 1, b, LLM_KV_BLOCK, &common), -1, "another prefix: no block");
    ok(llm_kv_chain(LLM_KV_ROOT, a) != llm_kv_chain(LLM_KV_ROOT, b)
       && llm_kv_chain(LLM_KV_ROOT, a) != llm_kv_chain(ha, a), "chain hashes depend on tokens and parent");

    /* release: indexed blocks are cached, the private one is free */
    llm_kv_unref(p, x);
    llm_kv_unref(p, y);
    llm_kv_unref(p, z);
    llm_kv_pool_get_stats(p, &st);
    ok(st.used == 0 && st.cached == 2 && st.free == 1, "released: 2 cached, 1 free (%zu %zu %zu)",
       st.used, st.cached, st.free);
    is_int(llm_kv_available(p), 3, "all three available");

    /* a hit takes a cached block back; it is not evicted while used */
    llm_kv_ref(p, x);
    is_int(llm_kv_refs(p, x), 1, "x used again");
    w = llm_kv_alloc(p);
    is_int(w, z, "the free block first");
    w = llm_kv_alloc(p);
    is_int(w, y, "then the least recently released cached one");
    is_int(llm_kv_lookup(p, ha, b, LLM_KV_BLOCK, &common), -1, "evicted: no longer found");
    is_int(llm_kv_alloc(p), -1, "x is used: never evicted");
    is_int(llm_kv_lookup(p, LLM_KV_ROOT, a, LLM_KV_BLOCK, &common), x, "x still holds its tokens");
    llm_kv_pool_get_stats(p, &st);
    is_int((long long) st.evicted, 1, "one eviction counted");

    /* duplicates are not indexed twice; a partial head is replaced by a longer sibling */
    memcpy(llm_kv_tokens(p, z), a, sizeof(a));
    llm_kv_publish(p, z, LLM_KV_ROOT, LLM_KV_BLOCK);
    ok(!llm_kv_readonly(p, z), "the same content again stays private");
    memcpy(llm_kv_tokens(p, y), b, sizeof(b));
    llm_kv_publish(p, y, ha, 4);
    llm_kv_unref(p, y);
    memcpy(llm_kv_tokens(p, z), b, sizeof(b));
    llm_kv_publish(p, z, ha, 9);
    llm_kv_pool_get_stats(p, &st);
    is_int(llm_kv_lookup(p, ha, b, LLM_KV_BLOCK, &common), z, "the longer partial block");
    ok(common == 9 && st.free == 1, "the 4-token head was dropped to the free list (%d, %zu free)",
       common, st.free);
    llm_kv_unref(p, x);
    llm_kv_unref(p, z);
    llm_kv_pool_free(p);
}

/* Greedy next token and logits of one forward item. */
static int
run(llm_runtime *rt, int slot, const int32_t *t, int n, float *logits, int V)
{
    char err[256];
    llm_batch_item it = { slot, t, n, 1, 0 };
    const float *l;
    int i, best = 0;

    if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
        diag(err);
        return -1;
    }
    l = llm_forward_logits(rt, 0);
    for (i = 1; i < V; i++) if (l[i] > l[best]) best = i;
    if (logits) memcpy(logits, l, (size_t) V * sizeof(float));
    return best;
}

/*
 * Retention: a pinned cached block outlives unpinned ones under pressure
 * while its time runs, goes only when nothing else is left, and is
 * evictable again once the clock passes it.
 */
static void
test_pin(void)
{
    llm_kv_pool *p = llm_kv_pool_create(4);
    llm_kv_stats st;
    int32_t t[4][LLM_KV_BLOCK];
    int b[4], i, x, y, common;

    if (!ok(p != NULL, "a pool of 4 blocks")) return;
    for (i = 0; i < 4; i++) {
        fill_tokens(t[i], LLM_KV_BLOCK, 10 + i);
        b[i] = llm_kv_alloc(p);
        memcpy(llm_kv_tokens(p, b[i]), t[i], sizeof(t[i]));
        llm_kv_publish(p, b[i], LLM_KV_ROOT, LLM_KV_BLOCK);
    }
    llm_kv_set_now(p, 100);
    llm_kv_pin(p, b[0], 400);       /* the oldest released: LRU would take it first */
    for (i = 0; i < 4; i++) llm_kv_unref(p, b[i]);
    llm_kv_pool_get_stats(p, &st);
    ok(st.cached == 4 && st.pinned == 1, "4 cached, 1 pinned (%zu)", st.pinned);
    is_int(llm_kv_available(p), 3, "a pinned block is not counted available");

    x = llm_kv_alloc(p);
    y = llm_kv_alloc(p);
    ok(x == b[1] && y == b[2], "eviction passes over the pinned block (%d %d)", x, y);
    is_int(llm_kv_lookup(p, LLM_KV_ROOT, t[0], LLM_KV_BLOCK, &common), b[0],
           "the pinned prefix is still found");
    llm_kv_unref(p, x);
    llm_kv_unref(p, y);     /* private now: free */

    llm_kv_set_now(p, 399);
    llm_kv_pool_get_stats(p, &st);
    is_int(st.pinned, 1, "still pinned before its time");
    llm_kv_set_now(p, 400);
    llm_kv_pool_get_stats(p, &st);
    is_int(st.pinned, 0, "its time ran out: evictable");
    is_int(llm_kv_available(p), 4, "and available");

    /* a pin extends while the block is cached; the cap is half the pool */
    llm_kv_pin(p, b[0], 500);
    llm_kv_pin(p, b[3], 500);
    llm_kv_pool_get_stats(p, &st);
    is_int(st.pinned, 2, "two pinned again");
    x = llm_kv_alloc(p);
    y = llm_kv_alloc(p);
    ok(x != b[0] && y != b[0] && x != b[3] && y != b[3], "the free ones go first");
    i = llm_kv_alloc(p);
    ok(i == b[0], "then, nothing else left, a pinned block (a hint, not a reservation)");
    llm_kv_pool_free(p);
}


static void
test_runtime(void)
{
    char err[512];
    llm_model *m = llm_model_load(FIX "/llama_f32", err, sizeof(err));
    size_t bb;
    llm_runtime *ref, *rt;
    int32_t p[80], q[80];
    float l0[256], l1[256];
    int s, r, n, i, V = 256, same;
    llm_kv_stats st;

    if (m == NULL) { ok(0, "%s", err); return; }
    bb = llm_runtime_kv_block_bytes(m, LLM_KV_F32);
    is_int(bb, 2 * 2 * LLM_KV_BLOCK * 32 * 4, "a block: K,V x 2 layers x 16 positions x 32 x f32");

    {
        /* a reference that holds everything, and a runtime of 6 blocks for 2 sequences of 64 */
        llm_runtime_opts big = { 1, 80, 2, LLM_KV_F32, 0, NULL }, tiny = { 1, 64, 2, LLM_KV_F32, 6 * bb, NULL };
        ref = llm_runtime_create_opts(m, &big, err, sizeof(err));
        rt = llm_runtime_create_opts(m, &tiny, err, sizeof(err));
        if (!ok(ref && rt, "runtimes")) { diag(err); return; }
        is_int(llm_runtime_kv_blocks(rt), 6, "6 blocks: less than 2 x 64 positions");
    }
    fill_tokens(p, 80, 1);
    fill_tokens(q, 80, 2);

    /* 1. one sequence, block by block and at once: same logits as the reference */
    s = llm_seq_open(ref);
    run(ref, s, p, 40, l0, V);
    llm_seq_close(ref, s);
    r = llm_seq_open(rt);
    run(rt, r, p, 40, l1, V);
    ok(memcmp(l0, l1, sizeof(l0)) == 0, "40 tokens through a block table: logits equal the reference");
    llm_runtime_kv_stats(rt, &st);
    ok(st.used == 3 && st.free == 3, "3 blocks used (%zu), 3 free", st.used);

    /* 2. closed: 2 full blocks and the partial third stay cached */
    llm_seq_close(rt, r);
    llm_runtime_kv_stats(rt, &st);
    ok(st.used == 0 && st.cached == 3, "closed: 3 blocks cached (%zu)", st.cached);

    /* 3. a new sequence sharing 37 tokens reuses them all: 2 whole blocks + the head of 5 of the
     * third, shared too until the sequence writes after it (copy-on-write) */
    memcpy(q, p, 37 * sizeof(int32_t));
    r = llm_seq_open(rt);
    is_int(llm_seq_reuse(rt, r, q, 39), 37, "37 of 39 tokens reused from another sequence's blocks");
    llm_runtime_kv_stats(rt, &st);
    ok(st.used == 3 && st.cached == 0 && st.free == 3,
       "the 2 whole blocks and the partial one shared, nothing copied yet (used %zu, cached %zu, free %zu)",
       st.used, st.cached, st.free);
    is_int(llm_seq_blocks_to_grow(rt, r, 10), 1, "10 more positions take 1 block: the copy of the shared head");
    run(rt, r, q + 37, 10, l1, V);
    llm_runtime_kv_stats(rt, &st);
    ok(st.used == 3 && st.cached == 1,
       "after the write: the head was copied, the other sequence's block stays cached (used %zu, cached %zu)",
       st.used, st.cached);
    s = llm_seq_open(ref);
    run(ref, s, q, 47, l0, V);
    llm_seq_close(ref, s);
    {
        double d = 0;
        for (i = 0; i < V; i++) d = fmax(d, fabs(l0[i] - l1[i]));
        ok(d < 1e-5, "logits after reuse equal a full prefill (%.2g)", d);
    }

    /* 4. truncate into a shared block, write: the other sequence's view is unchanged */
    {
        int r2 = llm_seq_open(rt), tok0, tok1;
        int32_t alt[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };

        is_int(llm_seq_reuse(rt, r2, p, 20), 20, "a second sequence shares the first block and 4 of the next");
        llm_seq_truncate(rt, r2, 10);
        is_int(llm_seq_len(rt, r2), 10, "truncated to 10 inside the shared block");
        run(rt, r2, alt, 8, NULL, V);     /* copy-on-write, then writes positions 10..17 */
        tok0 = run(rt, r, q + 47, 1, l1, V);
        s = llm_seq_open(ref);
        tok1 = run(ref, s, q, 48, l0, V);
        llm_seq_close(ref, s);
        {
            double d = 0;
            for (i = 0; i < V; i++) d = fmax(d, fabs(l0[i] - l1[i]));
            ok(tok0 == tok1 && d < 1e-5, "the sharer's next logits are untouched by the writer (%.2g)", d);
        }
        llm_seq_close(rt, r2);
    }
    llm_seq_close(rt, r);

    /* 5. eviction under the budget: a running sequence keeps its blocks */
    {
        int a = llm_seq_open(rt), b, k;
        int32_t tok;
        float la[256];

        run(rt, a, p, 30, NULL, V);        /* 2 blocks used */
        s = llm_seq_open(ref);
        run(ref, s, p, 30, NULL, V);
        b = llm_seq_open(rt);
        /* 64 more positions need 4 blocks: everything cached is evicted, a's never */
        n = run(rt, b, q + 10, 64, NULL, V);
        ok(n >= 0, "a second sequence gets 4 blocks by evicting cached ones");
        llm_runtime_kv_stats(rt, &st);
        ok(st.used == 6 && st.cached == 0 && st.free == 0, "all 6 used (%zu %zu %zu)",
           st.used, st.cached, st.free);
        same = 1;
        tok = p[29];
        for (k = 0; k < 2; k++) {
            /* a decodes 2 more positions inside its own blocks */
            int t1 = run(rt, a, &tok, 1, la, V), t0 = run(ref, s, &tok, 1, l0, V);
            if (t1 != t0 || memcmp(la, l0, sizeof(la)) != 0) same = 0;
            tok = t1;
        }
        ok(same, "the running sequence's logits equal the reference after the eviction");
        {
            /* a needs a third block at position 32: none left, it fails on its own */
            char e2[256];
            int32_t two[2] = { 1, 2 };
            llm_batch_item it = { a, two, 2, 1, 0 };
            is_int(llm_forward(rt, &it, 1, e2, sizeof(e2)), 1, "no block left: the item fails");
            ok(strstr(e2, "KV memory is full") != NULL, "with a clear error (%s)", e2);
            is_int(llm_seq_len(rt, a), 32, "and its length is unchanged");
        }
        llm_seq_close(rt, b);
        {
            int32_t two[2] = { 1, 2 };
            ok(run(rt, a, two, 2, NULL, V) >= 0, "blocks given back: it runs");
        }
        llm_seq_close(rt, a);
        llm_seq_close(ref, s);
    }
    llm_runtime_free(rt);
    llm_runtime_free(ref);
    llm_model_free(m);
}

int
main(void)
{
    test_pool();
    test_pin();
    test_runtime();
    return done_testing();
}
