/*
 * Recurrent state (LFM2's short-convolution tails, Qwen3-Next's Gated
 * DeltaNet convolution tails and state matrices) beside the KV cache: the
 * snapshot store on its own, the runtime's accounting of the state in the
 * KV budget, and prefix reuse through snapshots — a sequence that restores
 * a snapshot and skips its prefix produces the same tokens and logits as
 * one that reads the whole prompt (cache hit = cache miss).  The models are
 * the transformers fixtures t/fixtures/models/lfm2_f32 and qwen3next_f32
 * (test_engine checks them against transformers).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "logits_check.h"
#include "engine/llm_engine.h"
#include "engine/llm_kv.h"
#include "engine/llm_model_impl.h"
#include "engine/llm_state.h"

#define MODEL "t/fixtures/models/lfm2_f32"
#define MODEL_DN "t/fixtures/models/qwen3next_f32"
#define GEN 12

static long long
held(const llm_state_snaps *s)
{
    llm_state_stats st;
    llm_state_snaps_get_stats(s, &st);
    return (long long) st.held;
}

static void
test_store(void)
{
    llm_state_snaps *s = llm_state_snaps_create(2, 3);
    int32_t toks[40];
    uint64_t chain[2];
    float a[3] = { 1, 2, 3 }, b[3] = { 4, 5, 6 }, c[3] = { 7, 8, 9 }, got[3] = { 0, 0, 0 };
    int i;

    for (i = 0; i < 40; i++) toks[i] = 100 + i;
    chain[0] = llm_kv_chain(LLM_KV_ROOT, toks);
    chain[1] = llm_kv_chain(chain[0], toks + 16);
    ok(s != NULL, "store of 2 snapshots");
    is_int(llm_state_snaps_take(s, chain, toks, 40, got), 0, "empty store: no snapshot");
    llm_state_snaps_put(s, LLM_KV_ROOT, 5, toks, a);            /* after 5 tokens */
    llm_state_snaps_put(s, chain[0], 20, toks + 16, b);         /* after 20: one full block + 4 */
    is_int(held(s), 2, "two held");
    is_int(llm_state_snaps_take(s, chain, toks, 40, got), 20, "the longest prefix is taken");
    ok(got[0] == 4 && got[2] == 6, "its state copied");
    is_int(llm_state_snaps_take(s, chain, toks, 19, got), 5, "at most max_len tokens");
    ok(got[0] == 1, "that one's state");
    toks[18] = 7;      /* a different token in the partial block */
    is_int(llm_state_snaps_take(s, chain, toks, 40, got), 5, "the tail's tokens are compared");
    toks[18] = 118;
    {
        uint64_t other[2] = { chain[0] ^ 1, chain[1] };
        is_int(llm_state_snaps_take(s, other, toks, 40, got), 5, "the chain before the tail is compared");
    }
    /* the 5-token entry was taken last: the 20-token one is the least recently used */
    llm_state_snaps_put(s, chain[1], 32, toks + 32, c);
    is_int(held(s), 2, "still two held");
    is_int(llm_state_snaps_take(s, chain, toks, 40, got), 32, "a block boundary entry (no tail)");
    is_int(llm_state_snaps_take(s, chain, toks, 31, got), 5, "the least recently used entry was replaced");
    llm_state_snaps_put(s, LLM_KV_ROOT, 5, toks, c);
    is_int(held(s), 2, "the same key is replaced in place");
    llm_state_snaps_take(s, chain, toks, 31, got);
    ok(got[0] == 7, "with the new state");
    {
        llm_state_stats st;
        llm_state_snaps_get_stats(s, &st);
        ok(st.capacity == 2 && st.made == 4 && st.restored == 7,
           "counted: 2 entries, 4 states kept, 7 takes that found one (the empty store's not)");
    }
    llm_state_snaps_free(s);
}

static void
test_budget(const llm_model *m)
{
    llm_runtime_opts o = { 1, 64, 3, LLM_KV_F32, 0, NULL };
    size_t block = llm_runtime_kv_block_bytes(m, LLM_KV_F32), state, kvb = 0, total;
    size_t per_seq = m->state_floats * sizeof(float);
    llm_runtime *rt;
    char err[256];

    is_int((long long) m->n_kv_layers, 2, "lfm2: 2 of its 6 layers hold KV");
    is_int((long long) m->state_floats, 4LL * 2 * 32, "lfm2: state of 4 conv layers x (kernel 3 - 1) x hidden 32");
    is_int((long long) block, 2LL * 2 * LLM_KV_BLOCK * 2 * 8 * 4, "a KV block holds the attention layers only");
    state = 3 * per_seq + llm_state_snaps_bytes(3 * LLM_STATE_SNAPS_PER_SLOT, m->state_floats);
    o.kv_memory = state + 10 * block + block / 2;
    rt = llm_runtime_create_opts(m, &o, err, sizeof(err));
    if (!ok(rt != NULL, "runtime in a KV budget")) {
        diag(err);
        return;
    }
    is_int((long long) llm_runtime_state_bytes(rt), (long long) state,
           "state of 3 slots and their snapshots accounted");
    is_int(llm_runtime_kv_blocks(rt), 10, "the state comes out of kv_memory before the blocks");
    total = llm_runtime_memory(m, &o, &kvb);
    is_int((long long) kvb, (long long) (state + 10 * block), "llm_runtime_memory's KV share includes the state");
    ok(total > kvb, "and its total the rest");
    llm_runtime_free(rt);
    o.kv_memory = state;
    rt = llm_runtime_create_opts(m, &o, err, sizeof(err));
    ok(rt == NULL && strstr(err, "recurrent state") != NULL, "a budget the state fills is refused: %s", err);
    llm_runtime_free(rt);
    o.kv_memory = 0;
    ok(llm_runtime_kv_default(m, LLM_KV_F32, 3, 64, 0) >= state + 3 * 4 * block,
       "the default budget has room for the state too");
}

/*
 * Greedy: feed prompt[from..n) to the slot (in chunks of `chunk`), then GEN
 * tokens; the tokens and each step's logits.
 */
static int
run(llm_runtime *rt, int slot, const int32_t *prompt, int from, int n, int chunk, int32_t *out, float *logits)
{
    char err[256];
    int V = llm_model_get_info(llm_runtime_model(rt))->n_vocab, i, at = from;
    int32_t cur;

    while (at < n) {
        int k = n - at < chunk ? n - at : chunk;
        llm_batch_item it = { slot, prompt + at, k, at + k == n, 0 };
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
            diag(err);
            return -1;
        }
        at += k;
    }
    for (i = 0; i < GEN; i++) {
        const float *lg = llm_forward_logits(rt, 0);
        llm_batch_item it = { slot, &cur, 1, 1, 0 };
        memcpy(logits + (size_t) i * V, lg, (size_t) V * sizeof(float));
        out[i] = cur = argmax(lg, V);
        if (i + 1 < GEN && llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
            diag(err);
            return -1;
        }
    }
    return 0;
}

static void
test_reuse(const llm_model *m, const char *name)
{
    int V = m->info.n_vocab, i, slot, got;
    int32_t a[100], b[200], hit[GEN], miss[GEN], first[GEN];
    float *lh = malloc((size_t) GEN * V * sizeof(float)), *lm = malloc((size_t) GEN * V * sizeof(float));
    char err[256];
    llm_runtime *rt = llm_runtime_create(m, 2, 256, 2, err, sizeof(err));
    llm_runtime *cold = llm_runtime_create(m, 2, 256, 2, err, sizeof(err));

    if (!ok(rt && cold && lh && lm, "runtimes")) {
        diag(err);
        goto done;
    }
    ok(llm_runtime_has_state(rt), "%s: the runtime has recurrent state", name);
    for (i = 0; i < 100; i++) a[i] = (i * 37 + 11) % V;

    /* a first turn: 70 prompt tokens, GEN generated; closing snapshots the state after them */
    slot = llm_seq_open(rt);
    run(rt, slot, a, 0, 70, 32, first, lh);
    is_int(llm_seq_len(rt, slot), 70 + GEN - 1, "first turn: prompt and all but the last token cached");
    llm_seq_close(rt, slot);
    {
        llm_state_stats ss;
        llm_runtime_state_stats(rt, &ss);
        ok(ss.held == 1 && ss.made == 1 && ss.restored == 0 && ss.capacity == 2 * LLM_STATE_SNAPS_PER_SLOT,
           "%s: closing kept a snapshot (held %llu, made %llu, restored %llu of %llu entries)", name,
           (unsigned long long) ss.held, (unsigned long long) ss.made, (unsigned long long) ss.restored,
           (unsigned long long) ss.capacity);
    }

    /* the next turn: what the first read and wrote, then 30 more tokens */
    memcpy(b, a, 70 * sizeof(int32_t));
    memcpy(b + 70, first, GEN * sizeof(int32_t));
    for (i = 0; i < 30; i++) b[70 + GEN + i] = (i * 53 + 5) % V;
    slot = llm_seq_open(rt);
    got = llm_seq_reuse(rt, slot, b, 70 + GEN + 30 - 1);
    is_int(got, 70 + GEN - 1, "%s: a prompt continuing the closed sequence restores its snapshot (%d tokens "
           "skipped)", name, got);
    run(rt, slot, b, got, 70 + GEN + 30, 16, hit, lh);
    llm_seq_close(rt, slot);
    {
        llm_state_stats ss;
        llm_runtime_state_stats(rt, &ss);
        ok(ss.restored == 1 && ss.made == 2 && ss.held == 2, "%s: one snapshot restored, two made", name);
    }

    /* the same prompt read from the start in a runtime that never saw it */
    slot = llm_seq_open(cold);
    run(cold, slot, b, 0, 70 + GEN + 30, 64, miss, lm);
    llm_seq_close(cold, slot);
    ok(memcmp(hit, miss, sizeof(hit)) == 0, "%s: cache hit = cache miss: %d greedy tokens identical", name, GEN);
    {
        double d = max_abs(lh, lm, GEN * V);
        ok(d < 1e-4, "%s: and their logits at every step (max abs %.2g)", name, d);
    }

    /* a prompt that leaves the cached one inside the first block: no snapshot of a prefix of it */
    memcpy(b, a, 70 * sizeof(int32_t));
    b[10] = (b[10] + 1) % V;
    slot = llm_seq_open(rt);
    is_int(llm_seq_reuse(rt, slot, b, 69), 0, "%s: a different prefix restores nothing", name);
    llm_seq_close(rt, slot);

    /* a prompt that shares KV blocks (the first 64 tokens) but no snapshot's whole prefix */
    memcpy(b, a, 70 * sizeof(int32_t));
    b[66] = (b[66] + 1) % V;
    slot = llm_seq_open(rt);
    is_int(llm_seq_reuse(rt, slot, b, 69), 0, "%s: shared KV blocks without a snapshot of their prefix are not used",
           name);
    is_int(llm_seq_len(rt, slot), 0, "%s: the slot starts empty", name);
    /* recurrent state cannot be cut back: truncation empties the slot */
    run(rt, slot, b, 0, 40, 40, miss, lm);
    llm_seq_truncate(rt, slot, 30);
    is_int(llm_seq_len(rt, slot), 0, "%s: truncating a recurrent slot empties it", name);
    run(rt, slot, b, 0, 40, 40, hit, lh);
    ok(memcmp(hit, miss, sizeof(hit)) == 0, "%s: and it reads its prompt again to the same tokens", name);
    llm_seq_close(rt, slot);

done:
    llm_runtime_free(rt);
    llm_runtime_free(cold);
    free(lh);
    free(lm);
}

int
main(void)
{
    char err[512];
    llm_model *m;

    test_store();
    m = llm_model_load(MODEL, err, sizeof(err));
    if (!ok(m != NULL, "lfm2_f32 loads")) {
        diag(err);
        return done_testing();
    }
    test_budget(m);
    test_reuse(m, "lfm2_f32");
    llm_model_free(m);
    m = llm_model_load(MODEL_DN, err, sizeof(err));
    if (!ok(m != NULL, "qwen3next_f32 loads")) {
        diag(err);
        return done_testing();
    }
    /* 6 layers: DeltaNet, DeltaNet, attention, twice; conv_dim = 2 key heads x 16 x 2 + 4 value heads x 8 */
    is_int((long long) m->n_kv_layers, 2, "qwen3next: 2 of its 6 layers hold KV");
    is_int((long long) m->state_floats, 4LL * ((4 - 1) * 96 + 4 * 16 * 8),
           "qwen3next: state of 4 DeltaNet layers x (conv tail 3 x 96 + 4 heads x 16 x 8)");
    test_reuse(m, "qwen3next_f32");
    llm_model_free(m);
    return done_testing();
}
