/*
 * The engine scheduler without nginx: admission, queue order, prefix reuse
 * through the shared prefix cache, cancellation while a step is in flight, the prefill budget,
 * and embedding pooling.  Steps are driven synchronously here (prepare, run,
 * complete on one thread), which is exactly what the glue does across the
 * event loop and a thread-pool thread.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#include "engine/llm_kv.h"
#include "engine/llm_sched.h"

#define FIX "t/fixtures/models/qwen3_f32"

typedef struct {
    int       tokens;
    int       done;
    int       flushes;
    llm_finish reason;
    const char *error;
    int       release_on_token;   /* let go from inside on_token */
    int       no_logprobs;        /* tokens that came without logprobs */
    llm_seq  *seq;
} owner_t;

static void
on_token(void *o, llm_seq *seq, int32_t tok, const llm_token_logprobs *lp)
{
    owner_t *w = o;

    w->tokens++;
    w->no_logprobs += lp == NULL;
    if (w->release_on_token) {
        llm_seq_release(seq);
        w->seq = NULL;
    }
}

static void
on_done(void *o, llm_seq *seq, llm_finish reason, const char *error)
{
    owner_t *w = o;

    w->done++;
    w->reason = reason;
    w->error = error;
}

static void
on_flush(void *o)
{
    ((owner_t *) o)->flushes++;
}

static const llm_seq_events events = { on_token, on_done, on_flush };

static int wakes;

static void
wake(void *data)
{
    wakes++;
}

/* One whole step, as the glue runs it; 0 when there was nothing to run. */
static int
step(llm_sched *s)
{
    int  files_changed;

    if (llm_sched_step_prepare(s) == 0) {
        return 0;
    }
    llm_sched_step_run(s);
    if (llm_sched_step_failure(s, &files_changed) != NULL || files_changed) {
        diag("a whole step failed");
    }
    llm_sched_step_complete(s);
    return 1;
}

static int
run_all(llm_sched *s, int max_steps)
{
    int  n = 0;

    while (n < max_steps && step(s)) {
        n++;
    }
    return n;
}

static llm_sched *
make_sched(const llm_model *m, int parallel, int queue)
{
    char              err[256];
    llm_sched        *s;
    llm_sched_config  cfg = { 0 };

    cfg.parallel = parallel;
    cfg.queue = queue;
    cfg.n_ctx = 128;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    cfg.wake = wake;
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (s == NULL) {
        diag(err);
    }
    return s;
}

/* A scheduler of `blocks` KV blocks (0: room for every slot) on one thread. */
static llm_sched *
make_sched_kv(const llm_model *m, int parallel, int queue, int n_ctx,
    size_t blocks, llm_sched_config *cfg)
{
    char  err[256];
    llm_sched *s;

    cfg->parallel = parallel;
    cfg->queue = queue;
    cfg->n_ctx = n_ctx;
    cfg->threads = 1;
    cfg->kv = LLM_KV_F32;
    cfg->kv_memory = blocks * llm_runtime_kv_block_bytes(m, LLM_KV_F32);
    s = llm_sched_create(m, cfg, err, sizeof(err));
    if (s == NULL) {
        diag(err);
    }
    return s;
}

/* Greedy, and with random weights end-of-sequence kept out so that
 * lengths are exact. */
static void
greedy_params(const llm_model *m, llm_sampler_params *sp)
{
    static llm_logit_bias  no_eos[LLM_MAX_EOS];
    const llm_model_info  *in = llm_model_get_info(m);
    int                    i;

    for (i = 0; i < in->n_eos; i++) {
        no_eos[i].id = in->eos_ids[i];
        no_eos[i].bias = -1e4f;
    }
    llm_sampler_params_default(sp);
    sp->temperature = 0;
    sp->logit_bias = no_eos;
    sp->n_logit_bias = in->n_eos;
}

static llm_seq *
submit(llm_sched *s, const int32_t *prompt, size_t n, size_t max_gen,
    owner_t *w, size_t index)
{
    size_t              granted;
    llm_sampler_params  sp;

    greedy_params(llm_sched_model(s), &sp);
    if (llm_sched_reserve(s, 1, 1, &granted) != LLM_ADMIT_OK) {
        return NULL;
    }
    w->seq = llm_seq_create(s, prompt, n, max_gen, &sp, -1, &events, w, index);
    llm_sched_submit(s, w->seq);
    return w->seq;
}

static void
test_admission(const llm_model *m)
{
    size_t      granted;
    llm_sched  *s = make_sched(m, 2, 1);
    int32_t     p[4] = { 5, 6, 7, 8 };
    owner_t     w[3] = { { 0 } };
    int         i;

    if (!ok(s != NULL, "scheduler of 2 slots + 1 queued")) {
        return;
    }
    is_int(llm_sched_capacity(s), 3, "capacity is parallel + queue");
    is_int(llm_sched_reserve(s, 4, 4, &granted), LLM_ADMIT_NEVER,
           "4 sequences can never be held at once: NEVER, not BUSY");

    for (i = 0; i < 3; i++) {
        ok(submit(s, p, 4, 3, &w[i], 0) != NULL, "sequence %d admitted", i);
    }
    is_int(llm_sched_reserve(s, 1, 1, &granted), LLM_ADMIT_BUSY,
           "a fourth while three are held: BUSY (retry later)");

    /* the first step takes the two oldest; the third waits its turn */
    ok(llm_sched_step_prepare(s) == 2, "first step runs the two oldest");
    llm_sched_stats st;
    llm_sched_get_stats(s, &st);
    is_int(st.waiting, 1, "the third waits");
    ok(llm_sched_step_prepare(s) == 0, "no second step while one is in flight");
    llm_sched_step_run(s);
    llm_sched_step_complete(s);

    run_all(s, 50);
    for (i = 0; i < 3; i++) {
        is_int(w[i].done, 1, "sequence %d ended once", i);
        is_int(w[i].reason, LLM_FINISH_LENGTH, "sequence %d hit max_gen", i);
        is_int(w[i].tokens, 3, "sequence %d got its 3 tokens", i);
        ok(w[i].flushes >= 3, "sequence %d flushed each step", i);
    }
    ok(w[2].done, "the queued one ran once a slot was free");

    /* places come back at on_done, before the owner lets go */
    is_int(llm_sched_reserve(s, 3, 3, &granted), LLM_ADMIT_OK,
           "all places free again after the three ended");
    for (i = 0; i < 3; i++) {
        llm_seq_release(w[i].seq);
    }
    llm_sched_get_stats(s, &st);
    is_int(st.live, 0, "every sequence freed");
    llm_sched_free(s);
}

static void
test_fifo(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 1, 2);
    int32_t     a[3] = { 11, 12, 13 }, b[3] = { 21, 22, 23 }, c[3] = { 31, 32, 33 };
    owner_t     wa = { 0 }, wb = { 0 }, wc = { 0 };

    if (!ok(s != NULL, "one slot, two queued")) {
        return;
    }
    submit(s, a, 3, 2, &wa, 0);
    submit(s, b, 3, 2, &wb, 0);
    submit(s, c, 3, 2, &wc, 0);

    /* A runs to the end before B starts; B before C */
    while (!wa.done && step(s)) { /* void */ }
    ok(wa.done && !wb.tokens && !wc.tokens, "A first, B and C wait");
    while (!wb.done && step(s)) { /* void */ }
    ok(wb.done && !wc.tokens, "then B, C still waits");
    run_all(s, 20);
    ok(wc.done, "then C");
    llm_seq_release(wa.seq);
    llm_seq_release(wb.seq);
    llm_seq_release(wc.seq);
    llm_sched_free(s);
}

/* One sequence on its own, to its end: how many prompt tokens it reused. */
static size_t
run_alone(llm_sched *s, const int32_t *prompt, size_t n)
{
    size_t   cached;
    owner_t  w = { 0 };

    submit(s, prompt, n, 2, &w, 0);
    run_all(s, 20);
    is_int(w.reason, LLM_FINISH_LENGTH, "a lone sequence of %zu tokens ran to "
           "max_gen", n);
    cached = llm_seq_n_cached(w.seq);
    llm_seq_release(w.seq);
    return cached;
}

static void
test_prefix_reuse(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 2, 0);
    int32_t     a[12], b[12], c[12], a2[16];
    int         i;

    if (!ok(s != NULL, "two slots")) {
        return;
    }
    for (i = 0; i < 12; i++) {
        a[i] = 10 + i;       /* ids well inside the fixture's vocabulary */
        b[i] = 40 + i;
        c[i] = 70 + i;
    }
    memcpy(a2, a, sizeof(a));
    for (i = 12; i < 16; i++) {
        a2[i] = 100 + i;
    }

    /* A, then B */
    run_alone(s, a, 12);
    is_int(run_alone(s, b, 12), 0, "B shares nothing with A");

    /* A again, longer: it finds A's blocks and skips the 12 cached tokens */
    is_int(run_alone(s, a2, 16), 12, "the longest common prefix is reused");

    /* C shares nothing; more conversations than slots stay cached in the
     * shared pool: B and C are both found again (one prompt token is
     * always computed, for its logits) */
    run_alone(s, c, 12);
    is_int(run_alone(s, b, 12), 11, "B is still cached after A2 and C");
    is_int(run_alone(s, c, 12), 11, "and C");

    llm_sched_stats st;
    llm_sched_get_stats(s, &st);
    ok(st.cached_tokens >= 12, "the counters saw the reuse (%llu cached)",
       (unsigned long long) st.cached_tokens);
    llm_sched_free(s);
}

/*
 * KV memory for less than two prompts: the second waits for the first's
 * blocks instead of failing, and both run to their end.
 */
static void
test_kv_budget(const llm_model *m)
{
    llm_sched        *s;
    llm_sched_config  cfg = { 0 };
    llm_sched_stats   st;
    int32_t           a[40], b[40];
    owner_t           wa = { 0 }, wb = { 0 };
    int               i, both = 0;

    s = make_sched_kv(m, 2, 0, 64, 4, &cfg);
    if (!ok(s != NULL, "a scheduler with 4 KV blocks for 2 slots of 64")) {
        return;
    }
    for (i = 0; i < 40; i++) {
        a[i] = 10 + i;
        b[i] = 90 + i;
    }
    submit(s, a, 40, 4, &wa, 0);
    submit(s, b, 40, 4, &wb, 0);
    while (step(s)) {
        llm_sched_get_stats(s, &st);
        if (st.running == 2) {
            both = 1;
        }
    }
    ok(!both, "never both at once: 3 blocks each do not fit 4");
    ok(wa.done && wa.reason == LLM_FINISH_LENGTH && wb.done
       && wb.reason == LLM_FINISH_LENGTH, "both ran to max_gen (%s)",
       wb.error ? wb.error : "no error");
    llm_sched_get_stats(s, &st);
    ok(st.kv.blocks == 4 && st.kv.used == 0, "blocks all given back (%zu used)",
       st.kv.used);
    llm_seq_release(wa.seq);
    llm_seq_release(wb.seq);
    llm_sched_free(s);
}

/*
 * KV memory for three prompts but not for their outputs: as they grow the
 * newest is preempted (its blocks go back, it waits, and reads its prompt
 * and output again when readmitted) instead of failing, and every output
 * equals the same request run alone with memory to spare.
 */
static void
test_preempt(const llm_model *m)
{
    llm_sched        *s, *ref;
    llm_sched_config  cfg = { 0 };
    llm_sched_stats   st;
    int32_t           p[3][20];
    owner_t           w[3], r[3];
    const int32_t    *g, *h;
    size_t            ng, nh;
    int               i, j, same = 1, fine = 1;

    memset(w, 0, sizeof(w));
    memset(r, 0, sizeof(r));
    s = make_sched_kv(m, 3, 0, 64, 6, &cfg);
    if (!ok(s != NULL, "3 slots of 64 tokens over 6 KV blocks")) {
        return;
    }
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 20; j++) {
            p[i][j] = 4 + (i * 37 + j * 11) % 120;
        }
        submit(s, p[i], 20, 40, &w[i], 0);
    }
    ok(step(s), "the first step");
    llm_sched_get_stats(s, &st);
    is_int(st.running, 3, "all three admitted: 2 blocks each");
    run_all(s, 500);
    for (i = 0; i < 3; i++) {
        if (!(w[i].done && w[i].reason == LLM_FINISH_LENGTH && w[i].tokens == 40)) {
            fine = 0;
            printf("# sequence %d: done %d reason %d tokens %d error %s\n", i, w[i].done,
                   (int) w[i].reason, w[i].tokens, w[i].error ? w[i].error : "none");
        }
    }
    ok(fine, "each grew to 60 tokens (4 blocks) and finished without error");
    llm_sched_get_stats(s, &st);
    ok(st.preempted > 0, "by preempting the newest (%llu times)",
       (unsigned long long) st.preempted);
    ok(st.kv.used == 0 && st.waiting == 0 && st.running == 0, "all given back");
    is_int(st.cached_tokens, 0, "readmission does not count as prompt reuse");
    is_int(st.prompt_tokens, 60, "nor as more prompt tokens");

    ref = make_sched(m, 1, 3);
    for (i = 0; i < 3; i++) {
        submit(ref, p[i], 20, 40, &r[i], 0);
    }
    run_all(ref, 500);
    for (i = 0; i < 3; i++) {
        g = llm_seq_generated(w[i].seq, &ng);
        h = llm_seq_generated(r[i].seq, &nh);
        if (ng != nh || memcmp(g, h, ng * sizeof(int32_t)) != 0) {
            same = 0;
            printf("# sequence %d differs from its uncontended run\n", i);
        }
    }
    ok(same, "every output equals its uncontended run token for token");

    for (i = 0; i < 3; i++) {
        llm_seq_release(w[i].seq);
        llm_seq_release(r[i].seq);
    }
    llm_sched_free(s);
    llm_sched_free(ref);
}

static double fake_now = 1000;

static double
clock_now(void)
{
    return fake_now;
}

/* A run of one prompt to its end on scheduler s; the prompt tokens it reused. */
static size_t
run_one(llm_sched *s, const int32_t *prompt, size_t n, size_t max_gen,
    size_t retain, size_t *written)
{
    owner_t  w = { 0 };
    size_t   cached;

    submit(s, prompt, n, max_gen, &w, 0);
    if (retain) {
        llm_seq_set_retention(w.seq, retain, 300);
    }
    run_all(s, 200);
    cached = llm_seq_n_cached(w.seq);
    if (written) {
        *written = llm_seq_n_cache_written(w.seq);
    }
    llm_seq_release(w.seq);
    return cached;
}

static void
fill_b(int32_t *b, int seed)
{
    int  i;

    for (i = 0; i < 40; i++) {
        b[i] = (int32_t) (110 + (i * 3 + seed * 17) % 90);
    }
}

/*
 * cache_control retention on 8 KV blocks: A's first 32 tokens are
 * retained; C is cached after it, so LRU would evict A's blocks first when
 * B needs room.  With retention C's go instead and A's head stays; once the
 * TTL has run A's blocks are evicted like any others; without retention B
 * takes part of A's head.
 */
static void
test_retention(const llm_model *m)
{
    char              err[256];
    llm_sched        *s;
    llm_sched_config  cfg = { 0 };
    int32_t           a[33], c[33], b[40];
    size_t            written = 99, i;
    int               retain;

    cfg.parallel = 1;
    cfg.queue = 2;
    cfg.n_ctx = 64;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    cfg.kv_memory = 8 * llm_runtime_kv_block_bytes(m, LLM_KV_F32);
    cfg.now = clock_now;
    for (i = 0; i < 33; i++) {
        a[i] = (int32_t) (7 + (i * 5) % 100);
        c[i] = (int32_t) (9 + (i * 7) % 100);
    }

    for (retain = 1; retain >= 0; retain--) {
        s = llm_sched_create(m, &cfg, err, sizeof(err));
        if (!ok(s != NULL, "one slot over 8 KV blocks, a fake clock")) {
            diag(err);
            return;
        }
        is_int(run_one(s, a, 33, 1, retain ? 32 : 0, &written), 0,
               "A: nothing cached yet");
        is_int(written, retain ? 32 : 0, "A wrote %s up to the breakpoint",
               retain ? "its 32 tokens" : "nothing (no breakpoint)");
        run_one(s, c, 33, 1, 0, NULL);      /* 3 blocks, cached after A's */
        fill_b(b, 1);
        run_one(s, b, 40, 20, 0, NULL);     /* 60 tokens: 4 blocks, 2 free */
        if (!retain) {
            ok(run_one(s, a, 33, 1, 0, NULL) < 32,
               "without retention B evicted part of A's head (the oldest)");
            llm_sched_free(s);
            break;
        }
        is_int(run_one(s, a, 33, 1, 32, &written), 32,
               "with it B evicted C's blocks: A's retained head is still cached");
        is_int(written, 0, "and this time nothing was written at the breakpoint");

        fake_now += 301;
        fill_b(b, 2);
        run_one(s, b, 40, 20, 0, NULL);
        fill_b(b, 3);
        run_one(s, b, 40, 20, 0, NULL);
        ok(run_one(s, a, 33, 1, 0, NULL) < 32,
           "the TTL ran out: evicted like any block");
        llm_sched_free(s);
    }
}

static void
test_cancel_in_flight(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 2, 0);
    int32_t     a[5] = { 1, 2, 3, 4, 5 };
    owner_t     w1 = { 0 }, w2 = { 0 };
    llm_sched_stats st;

    if (!ok(s != NULL, "two slots")) {
        return;
    }
    submit(s, a, 5, 10, &w1, 0);
    submit(s, a, 5, 10, &w2, 1);

    ok(llm_sched_step_prepare(s) == 2, "both in the step");
    llm_seq_release(w1.seq);            /* the client goes away mid-step */
    llm_sched_get_stats(s, &st);
    is_int(st.live, 2, "the released one lives while the step uses it");
    llm_sched_step_run(s);
    llm_sched_step_complete(s);
    is_int(w1.tokens + w1.done, 0, "no callback after release");
    is_int(w2.tokens, 1, "the other got its token");
    llm_sched_get_stats(s, &st);
    is_int(st.live, 1, "freed at the end of the step");
    is_int(st.cancelled, 1, "counted as cancelled");

    /* letting go from inside a callback is safe too */
    w2.release_on_token = 1;
    step(s);
    llm_sched_get_stats(s, &st);
    is_int(st.live, 0, "released from on_token: freed at the step's end");
    is_int(step(s), 0, "nothing left to run");
    llm_sched_free(s);
}

static void
test_abort(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 1, 0);
    int32_t     a[3] = { 1, 2, 3 };
    owner_t     w = { 0 };
    llm_sched_stats st;

    submit(s, a, 3, 4, &w, 0);
    ok(llm_sched_step_prepare(s) == 1, "prepared");
    llm_sched_step_abort(s, "the thread pool queue is full");
    is_int(w.done, 1, "an aborted step ends its sequences");
    is_int(w.reason, LLM_FINISH_ERROR, "with an error");
    is_str(w.error, "the thread pool queue is full", "and the reason");
    ok(!llm_sched_in_flight(s), "no step in flight after an abort");
    llm_seq_release(w.seq);
    llm_sched_get_stats(s, &st);
    is_int(st.live, 0, "freed");
    llm_sched_free(s);
}

static void
test_budget(const llm_model *m)
{
    llm_token_cost  c = { 1000, 10 }, mc;
    double          idle = llm_prefill_cost(&c, 0, 512);
    size_t          n;

    is_near(llm_prefill_cost(&c, 0, 1), 1010, 1e-9, "a token at 0: weights + 1 key");
    is_near(llm_prefill_cost(&c, 100, 2), 2000 + 10 * (200 + 3), 1e-9,
            "two tokens at 100: 101 and 102 keys");
    is_int(llm_prefill_fit(&c, 0, 2000, idle), 512, "the idle budget at 0: 512 tokens");
    is_int(llm_prefill_fit(&c, 0, 100, idle), 100, "never more than asked");
    n = llm_prefill_fit(&c, 4096, 2000, idle);
    ok(n > 0 && n < 128, "deep into a long prompt the same time holds fewer tokens (%zu)", n);
    ok(llm_prefill_cost(&c, 4096, n) <= idle
       && llm_prefill_cost(&c, 4096, n + 1) > idle, "the most that fits");
    is_near(llm_prefill_budget(&c, 512, 0, 10, 1e-5), idle, 1e-9, "nobody decoding: 512 tokens' time");
    is_near(llm_prefill_budget(&c, 512, 1, 0, 0), idle, 1e-9, "no timings yet: the same");
    is_near(llm_prefill_budget(&c, 512, 1, 10, 1e-5), 1e6, 1e-3,
            "decoding: the flops of one decode step's time");
    is_near(llm_prefill_budget(&c, 512, 1, 1e6, 1e-5), idle, 1e-9, "at most the idle budget");

    llm_token_cost_of(llm_model_get_info(m), &mc);
    /* 2 layers, hidden 64, 4 x 32 query and 2 x 32 key heads, MLP 128 */
    is_near(mc.weights, 2.0 * 2 * (2 * 64 * 128 + 2 * 64 * 64 + 3 * 64 * 128), 1e-6,
            "fixture: matrix flops per token");
    is_near(mc.per_key, 4.0 * 2 * 128, 1e-9, "fixture: attention flops per key");
}


/*
 * A thinking budget: the prompt opened a reasoning block; once the block
 * holds the budget, the close marker's tokens (8 byte tokens here, forced
 * whole) are appended without sampling and sampling goes on after them.
 * What comes before is the unbudgeted run's output token for token: with
 * speculation (forced tokens take the place of later proposals) and with
 * logprobs (the close is forced all the same, without logprobs) too.
 */
static void
test_thinking_budget(const llm_model *m)
{
    static const char *const how[] = { "greedy", "speculating", "with logprobs" };
    char                   err[256], *text = NULL;
    int32_t                p[12], *close = NULL;
    size_t                 n_close = 0, ng, nr, granted, tlen;
    int                    v, j, i;
    llm_sched             *s;
    llm_seq               *seqs[2];
    owner_t                w[2];
    llm_tokenizer         *tok;
    llm_sampler_params     sp;
    const int32_t         *g[2];
    llm_reasoning_budget  *b;

    tok = llm_tokenizer_load(FIX, err, sizeof(err));
    if (!ok(tok != NULL
            && llm_tokenizer_encode(tok, "</think>", 8, 0, &close, &n_close) == 0
            && n_close == 8, "the fixture writes </think> as 8 tokens")) {
        llm_tokenizer_free(tok);
        free(close);
        return;
    }
    for (j = 0; j < 12; j++) {
        p[j] = 40 + (j * 7) % 50;
    }
    greedy_params(m, &sp);

    for (v = 0; v < 3; v++) {
        s = make_sched(m, 2, 0);
        memset(w, 0, sizeof(w));
        llm_sched_reserve(s, 2, 2, &granted);
        /* [0] without a budget, [1] with 20 tokens, close included */
        for (i = 0; i < 2; i++) {
            seqs[i] = w[i].seq = llm_seq_create(s, p, 12, 40, &sp, v == 2 ? 0 : -1,
                                                &events, &w[i], 0);
            llm_seq_set_speculation(seqs[i], v == 1 ? LLM_SPEC_ON : LLM_SPEC_OFF);
        }
        b = llm_reasoning_budget_create(tok, "<think>", "</think>", "</think>", 20, 1);
        ok(b != NULL, "%s: a budget of 20", how[v]);
        llm_seq_set_reasoning_budget(seqs[1], b);
        llm_sched_submit(s, seqs[0]);
        llm_sched_submit(s, seqs[1]);
        run_all(s, 200);

        g[0] = llm_seq_generated(seqs[0], &nr);
        g[1] = llm_seq_generated(seqs[1], &ng);
        is_int(ng, 40, "%s: the budgeted sequence generated all 40 tokens", how[v]);
        ok(nr == 40 && memcmp(g[0], g[1], 12 * sizeof(int32_t)) == 0,
           "%s: its first 12 tokens are the unbudgeted run's", how[v]);
        ok(ng == 40 && memcmp(g[1] + 12, close, 8 * sizeof(int32_t)) == 0,
           "%s: then the close marker, forced at the budget", how[v]);
        tlen = 0;
        ok(ng == 40 && llm_tokenizer_decode(tok, g[1] + 12, 8, 0, &text, &tlen) == 0
           && tlen == 8 && memcmp(text, "</think>", 8) == 0, "%s: which reads </think>", how[v]);
        free(text);
        text = NULL;
        ok(memcmp(g[0] + 12, close, 8 * sizeof(int32_t)) != 0,
           "%s: the unbudgeted run did not write it there", how[v]);
        if (v == 2) {
            is_int(w[1].no_logprobs, 8, "with logprobs: only the 8 forced tokens lack them");
            is_int(w[0].no_logprobs, 0, "and the unbudgeted run has them all");
        }
        llm_seq_release(seqs[0]);
        llm_seq_release(seqs[1]);
        llm_sched_free(s);
    }

    llm_tokenizer_free(tok);
    free(close);
}


/* One whole step; the prompt tokens it read (-1: nothing to run). */
static int
step_prefill(llm_sched *s)
{
    llm_sched_stats  st;

    if (llm_sched_step_prepare(s) == 0) {
        return -1;
    }
    llm_sched_get_stats(s, &st);
    llm_sched_step_run(s);
    llm_sched_step_complete(s);
    return (int) st.step_prefill_tokens;
}


/*
 * Time-sized chunks: a long prompt is read in chunks whose flops stay
 * within the budget (fewer tokens as its attention grows), a short request
 * submitted during it gets its first token from the very next step, and
 * while it decodes the long prompt still advances every step.  Counted in
 * steps, not time.
 */
static void
test_short_during_long(const llm_model *m)
{
    char              err[256];
    llm_sched        *s, *ref;
    llm_sched_config  cfg = { 0 };
    int32_t           longp[120], shortp[5] = { 3, 1, 4, 1, 5 };
    owner_t           wl = { 0 }, ws = { 0 }, wr = { 0 };
    const int32_t    *gl, *gr;
    size_t            nl, nr;
    int               i, first, second, k, steps, interleaved = 1;

    cfg.parallel = 2;
    cfg.queue = 0;
    cfg.n_ctx = 128;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    cfg.prefill_chunk = 32;
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (!ok(s != NULL, "a scheduler whose idle chunk is 32 tokens' time")) {
        diag(err);
        return;
    }
    for (i = 0; i < 120; i++) {
        longp[i] = 5 + (i * 7) % 90;
    }
    submit(s, longp, 120, 2, &wl, 0);
    first = step_prefill(s);
    second = step_prefill(s);
    is_int(first, 32, "the first chunk: 32 tokens from position 0");
    ok(second > 0 && second < first, "the next, deeper, fewer in the same time (%d)", second);

    submit(s, shortp, 5, 3, &ws, 0);
    k = step_prefill(s);
    is_int(ws.tokens, 1, "a short prompt submitted mid-prefill: first token after one step");
    ok(k > 5, "that step read the long prompt too (%d tokens)", k);

    /* the short one decodes; the long prompt advances in every step */
    steps = 0;
    while (!ws.done) {
        k = step_prefill(s);
        steps++;
        if (!wl.done && k <= 0) {
            interleaved = 0;
        }
    }
    is_int(ws.tokens, 3, "the short one decoded a token per step (%d steps)", steps);
    ok(steps == 2 && interleaved, "while the long prompt was read alongside");
    run_all(s, 100);
    ok(wl.done && wl.reason == LLM_FINISH_LENGTH, "the long one finished too");

    /* the same prompt alone, read at once: the same output */
    ref = make_sched(m, 1, 0);
    submit(ref, longp, 120, 2, &wr, 0);
    is_int(step_prefill(ref), 120, "alone with the default chunk: one step");
    run_all(ref, 10);
    gl = llm_seq_generated(wl.seq, &nl);
    gr = llm_seq_generated(wr.seq, &nr);
    ok(nl == 2 && nr == 2 && gl[0] == gr[0] && gl[1] == gr[1],
       "chunked and interleaved, the output equals the unchunked run");

    llm_seq_release(wl.seq);
    llm_seq_release(ws.seq);
    llm_seq_release(wr.seq);
    llm_sched_free(s);
    llm_sched_free(ref);
}

static void
test_chunking(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 2, 0);
    int32_t     longp[100];
    owner_t     w = { 0 };
    llm_sched_stats st;
    int         i;

    for (i = 0; i < 100; i++) {
        longp[i] = 7 + i % 50;
    }
    submit(s, longp, 100, 1, &w, 0);
    ok(llm_sched_step_prepare(s) == 1, "one sequence");
    llm_sched_get_stats(s, &st);
    is_int(st.step_prefill_tokens, 100, "nobody decoding: the whole prompt at once");
    llm_sched_step_run(s);
    llm_sched_step_complete(s);
    is_int(w.done, 1, "max_gen 1: done after the prompt");
    llm_seq_release(w.seq);
    llm_sched_free(s);
}

static void
test_embedding(const llm_model *m)
{
    llm_sched  *s = make_sched(m, 1, 0);
    int32_t     a[6] = { 3, 4, 5, 6, 7, 8 };
    owner_t     w = { 0 };
    size_t      granted, d, h = (size_t) llm_model_get_info(m)->hidden;
    const float *v;
    double      norm = 0;

    llm_sched_reserve(s, 1, 1, &granted);
    w.seq = llm_seq_create(s, a, 6, 0, NULL, -1, &events, &w, 0);
    ok(llm_seq_embedding(w.seq) == NULL, "no embedding before it ran");
    llm_sched_submit(s, w.seq);
    run_all(s, 5);
    is_int(w.done, 1, "the embedding sequence ended");
    is_int(w.tokens, 0, "and sampled nothing");
    v = llm_seq_embedding(w.seq);
    if (ok(v != NULL, "pooled vector")) {
        for (d = 0; d < h; d++) {
            norm += v[d] * v[d];
        }
        is_near(norm, 1.0, 1e-4, "L2-normalised");
    }
    llm_seq_release(w.seq);
    llm_sched_free(s);
}

/* A one-slot scheduler of 256 positions with its disk tier in dir (64 MiB);
 * now, when not NULL, is its clock. */
static llm_sched *
disk_sched(const llm_model *m, const char *dir, double (*now)(void), char *err,
    size_t errlen)
{
    llm_sched_config  cfg = { 0 };

    cfg.parallel = 1;
    cfg.n_ctx = 256;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    cfg.kv_disk = dir;
    cfg.kv_disk_max = 64 << 20;
    cfg.now = now;
    return llm_sched_create(m, &cfg, err, errlen);
}

/* The temporary directory of a disk test, with all it holds. */
static void
remove_dir(const char *dir)
{
    char  cmd[1100];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        diag("cannot remove the temporary directory");
    }
}

/* One greedy sequence alone on a scheduler with the disk tier in dir:
 * its tokens into out[max_gen], its cached prompt tokens returned. */
static long
disk_run(const llm_model *m, const char *dir, const int32_t *prompt, size_t n,
    int32_t *out, size_t max_gen, llm_sched_stats *st, char *note, size_t notelen)
{
    char              err[256];
    const int32_t    *gen;
    size_t            n_gen;
    long              cached;
    llm_sched        *s;
    owner_t           w = { 0 };

    s = disk_sched(m, dir, NULL, err, sizeof(err));
    if (s == NULL) {
        diag(err);
        return -1;
    }
    note[0] = '\0';
    llm_sched_take_note(s, note, notelen);
    if (submit(s, prompt, n, max_gen, &w, 0) == NULL) {
        llm_sched_free(s);
        return -1;
    }
    /* the sequence, then the idle steps that write its blocks */
    run_all(s, 1000);
    if (note[0] == '\0') {
        llm_sched_take_note(s, note, notelen);
    }
    cached = (long) llm_seq_n_cached(w.seq);
    gen = llm_seq_generated(w.seq, &n_gen);
    memset(out, 0, max_gen * sizeof(int32_t));
    memcpy(out, gen, (n_gen < max_gen ? n_gen : max_gen) * sizeof(int32_t));
    llm_seq_release(w.seq);
    llm_sched_get_stats(s, st);
    llm_sched_free(s);
    return cached;
}

/* The file of the block that ends at prompt position 16 * (i + 1). */
static int
block_file(const char *dir, const int32_t *prompt, int i, char *path, size_t len)
{
    char      pat[512];
    glob_t    g;
    uint64_t  chain = LLM_KV_ROOT;
    int       j, rc;

    for (j = 0; j <= i; j++) {
        chain = llm_kv_chain(chain, prompt + j * LLM_KV_BLOCK);
    }
    snprintf(pat, sizeof(pat), "%s/*/%02x/%016llx.kv", dir, (unsigned) (chain >> 56),
             (unsigned long long) chain);
    if (glob(pat, 0, NULL, &g) != 0) {
        return -1;
    }
    rc = g.gl_pathc == 1 ? 0 : -1;
    if (rc == 0) {
        snprintf(path, len, "%s", g.gl_pathv[0]);
    }
    globfree(&g);
    return rc;
}

/*
 * The disk tier through the scheduler: a prompt's full blocks are written
 * by idle steps after it ends; a new scheduler on the same directory (a
 * reload) reads them back instead of computing them (cached tokens), with
 * the cold run's output token for token; a corrupted file is not trusted
 * (said in the note) and what follows it is computed.
 */
static void
test_disk_tier(const llm_model *m)
{
    char             dir[] = "/tmp/test_sched_kv.XXXXXX", path[1024], note[512];
    int32_t          prompt[100], cold[8], warm[8], again[8];
    long             cached;
    llm_sched_stats  st;
    FILE            *f;
    int              i, c;

    if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) {
        return;
    }
    for (i = 0; i < 100; i++) {
        prompt[i] = 10 + (i * 7) % 200;
    }

    cached = disk_run(m, dir, prompt, 100, cold, 8, &st, note, sizeof(note));
    is_int(cached, 0, "disk tier: the first run finds nothing");
    ok(st.kv_disk == 1, "disk tier: in use (%s)", note[0] ? note : "no note");
    /* 100 prompt tokens and 7 generated ones fed: 6 full blocks and a partial one of 11 */
    is_int((long) st.disk.written, 7, "disk tier: the 6 full blocks and the partial last one were written");
    is_int((long) st.disk.hits, 0, "disk tier: nothing read");

    /* the prompt's last token is computed (its logits): 99 can be read, 3 of them from the
     * partial block, whose other 8 positions hold the generated tokens */
    cached = disk_run(m, dir, prompt, 100, warm, 8, &st, note, sizeof(note));
    is_int(cached, 99, "disk tier: after a restart 99 prompt tokens are read back (6 blocks + a head of 3)");
    is_int((long) st.disk.hits, 7, "disk tier: 7 files read");
    is_int((long) st.disk_tokens, 99, "disk tier: counted as read from disk");
    ok(memcmp(cold, warm, sizeof(cold)) == 0, "disk tier: output equals the cold run token for token");
    ok(note[0] == '\0', "disk tier: nothing to log (%s)", note);

    /* a flipped byte in the third block's payload */
    ok(block_file(dir, prompt, 2, path, sizeof(path)) == 0, "disk tier: the third block's file is there");
    f = fopen(path, "r+b");
    if (f) {
        fseek(f, 4096, SEEK_SET);
        c = fgetc(f);
        fseek(f, 4096, SEEK_SET);
        fputc(c ^ 0x10, f);
        fclose(f);
    }
    cached = disk_run(m, dir, prompt, 100, again, 8, &st, note, sizeof(note));
    is_int(cached, 32, "disk tier: a corrupted file stops the read after 2 blocks");
    is_int((long) st.disk.rejected, 1, "disk tier: the file was rejected");
    ok(strstr(note, "checksum") != NULL, "disk tier: the note says why (%s)", note);
    ok(memcmp(cold, again, sizeof(cold)) == 0, "disk tier: output still equals the cold run");

    /* a directory that cannot be made: the tier is off, the model runs */
    cached = disk_run(m, "/proc/no/such/dir", prompt, 100, again, 8, &st, note, sizeof(note));
    is_int(cached, 0, "disk tier: an unusable directory");
    ok(st.kv_disk == 0 && strstr(note, "off") != NULL, "disk tier: off, and said so (%s)", note);
    ok(memcmp(cold, again, sizeof(cold)) == 0, "disk tier: the model runs without it");

    remove_dir(dir);
}

/*
 * A prefix whose memory-cached part ends inside a block (the head another
 * conversation shares) goes on from disk: the whole block and the partial
 * last block a sequence left there (here one computed by another scheduler
 * on the same directory: another worker, or before a reload), with the
 * output of a cold run.
 */
static void
test_disk_head(const llm_model *m)
{
    char              dir[] = "/tmp/test_sched_kvh.XXXXXX", err[256], note[512];
    int32_t           a[100], b[100], cold[8], warm[8];
    const int32_t    *gen;
    size_t            n_gen;
    long              cached_b, cached_a;
    llm_sched        *s;
    llm_sched_stats   st;
    owner_t           wa = { 0 }, wb = { 0 };
    int               i;

    if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) {
        return;
    }
    for (i = 0; i < 100; i++) {
        a[i] = 30 + (i * 13) % 200;
        b[i] = i < 90 ? a[i] : 7 + i;
    }
    /* A alone: its 6 full blocks and its partial last one on disk */
    (void) disk_run(m, dir, a, 100, cold, 8, &st, note, sizeof(note));
    is_int((long) st.disk.written, 7, "disk head: A's 6 full blocks and its partial last one written");

    s = disk_sched(m, dir, NULL, err, sizeof(err));
    if (!ok(s != NULL, "disk head: scheduler (%s)", s ? "" : err)) {
        return;
    }
    /* B shares A's first 90 tokens: 5 whole blocks from disk, its own sixth (A's sixth is the
     * newest block after their common prefix on disk too: that link goes, as when another
     * conversation's block replaces it, so B computes its own) */
    {
        char      pat[512];
        glob_t    g;
        uint64_t  chain = LLM_KV_ROOT;

        for (i = 0; i < 5; i++) {
            chain = llm_kv_chain(chain, a + i * LLM_KV_BLOCK);
        }
        snprintf(pat, sizeof(pat), "%s/*/%02x/%016llx.part", dir, (unsigned) (chain >> 56),
                 (unsigned long long) chain);
        ok(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1 && unlink(g.gl_pathv[0]) == 0,
           "disk head: A's sixth block is linked as the newest after its prefix (removed)");
        globfree(&g);
    }
    if (submit(s, b, 100, 8, &wb, 0) == NULL) {
        ok(0, "disk head: B submitted");
        llm_sched_free(s);
        return;
    }
    run_all(s, 1000);
    cached_b = (long) llm_seq_n_cached(wb.seq);
    llm_seq_release(wb.seq);
    is_int(cached_b, 80, "disk head: B reads A's 5 whole blocks it shares");

    /* A again: memory holds 80 tokens and B's sixth block, whose head of 10 A shares; the disk
     * has A's sixth block and then the partial one */
    if (submit(s, a, 100, 8, &wa, 0) == NULL) {
        ok(0, "disk head: A submitted");
        llm_sched_free(s);
        return;
    }
    run_all(s, 1000);
    cached_a = (long) llm_seq_n_cached(wa.seq);
    gen = llm_seq_generated(wa.seq, &n_gen);
    memset(warm, 0, sizeof(warm));
    memcpy(warm, gen, (n_gen < 8 ? n_gen : 8) * sizeof(int32_t));
    llm_seq_release(wa.seq);
    llm_sched_get_stats(s, &st);
    note[0] = '\0';
    llm_sched_take_note(s, note, sizeof(note));
    llm_sched_free(s);
    is_int(cached_a, 99, "disk head: A gets 90 from memory, then its block and a head of 3 from disk: 99");
    ok(memcmp(cold, warm, sizeof(cold)) == 0, "disk head: output equals the cold run token for token");
    ok(st.disk.rejected == 0 && note[0] == '\0', "disk head: no file rejected (%s)", note);

    remove_dir(dir);
}

/* Seconds since the file of the block ending at prompt position 16 * (i + 1) was modified. */
static double
block_file_age(const char *dir, const int32_t *prompt, int i)
{
    char         path[1024];
    struct stat  sb;

    if (block_file(dir, prompt, i, path, sizeof(path)) != 0 || stat(path, &sb) != 0) {
        return -1;
    }
    return difftime(time(NULL), sb.st_mtime);
}

/*
 * Blocks the prefix cache keeps serving from memory keep their files young:
 * the size sweep sees only the files' times, and a shared system prompt's
 * blocks are written once, then only hit in memory.  A block reused in
 * memory has its file touched, once a minute of the scheduler's clock.
 */
static void
test_disk_touch(const llm_model *m)
{
    char              dir[] = "/tmp/test_sched_kvt.XXXXXX", err[256], path[1024];
    int32_t           prompt[100];
    llm_sched        *s;
    struct timeval    old[2] = { { 0, 0 }, { 0, 0 } };
    int               i;

    if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) {
        return;
    }
    for (i = 0; i < 100; i++) {
        prompt[i] = 40 + (i * 17) % 200;
    }
    s = disk_sched(m, dir, clock_now, err, sizeof(err));
    if (!ok(s != NULL, "touch: scheduler (%s)", s ? "" : err)) {
        return;
    }
    run_one(s, prompt, 100, 4, 0, NULL);
    old[0].tv_sec = old[1].tv_sec = time(NULL) - 7200;
    ok(block_file(dir, prompt, 0, path, sizeof(path)) == 0 && utimes(path, old) == 0,
       "touch: the first block's file made two hours old");

    is_int((long) run_one(s, prompt, 100, 4, 0, NULL), 99, "touch: the prompt again, from memory");
    ok(block_file_age(dir, prompt, 0) > 3600, "touch: within the same minute its file is left alone");

    fake_now += 61;
    is_int((long) run_one(s, prompt, 100, 4, 0, NULL), 99, "touch: a minute later, from memory again");
    ok(block_file_age(dir, prompt, 0) >= 0 && block_file_age(dir, prompt, 0) < 600,
       "touch: its file is young again (%.0f s)", block_file_age(dir, prompt, 0));

    llm_sched_free(s);
    remove_dir(dir);
}

/*
 * A long sequence's full blocks reach the disk while it still runs (each as
 * it fills, written in the steps' write windows), not only when it ends.
 */
static void
test_disk_running(const llm_model *m)
{
    char              dir[] = "/tmp/test_sched_kvr.XXXXXX", err[256], path[1024];
    int32_t           prompt[100];
    size_t            n_gen = 0;
    llm_sched        *s;
    llm_sched_stats   st;
    owner_t           w = { 0 };
    int               i, steps = 0, files = 0;

    if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) {
        return;
    }
    for (i = 0; i < 100; i++) {
        prompt[i] = 20 + (i * 11) % 200;
    }
    s = disk_sched(m, dir, NULL, err, sizeof(err));
    if (!ok(s != NULL, "running sequence: scheduler (%s)", s ? "" : err)) {
        return;
    }
    if (submit(s, prompt, 100, 60, &w, 0) == NULL) {
        ok(0, "running sequence: submitted");
        llm_sched_free(s);
        return;
    }
    /* the prompt (100 tokens: 6 full blocks), then decode steps, one write at least each */
    while (steps < 10 && step(s)) {
        steps++;
    }
    (void) llm_seq_generated(w.seq, &n_gen);
    ok(!w.done && n_gen > 0 && n_gen < 60, "running sequence: still running after %d steps (%zu tokens)",
       steps, n_gen);
    llm_sched_get_stats(s, &st);
    is_int((long) st.disk.written, 6, "running sequence: its 6 full prompt blocks are already on disk");
    for (i = 0; i < 6; i++) {
        files += block_file(dir, prompt, i, path, sizeof(path)) == 0;
    }
    is_int(files, 6, "running sequence: a file per block, named by its prefix");
    run_all(s, 1000);
    llm_seq_release(w.seq);
    llm_sched_free(s);
    remove_dir(dir);
}


int
main(void)
{
    char        err[512];
    llm_model  *m;

    m = llm_model_load(FIX, err, sizeof(err));
    if (m == NULL) {
        printf("# %s\n", err);
        ok(0, "fixture model loads");
        return done_testing();
    }

    test_budget(m);
    test_admission(m);
    test_fifo(m);
    test_prefix_reuse(m);
    test_kv_budget(m);
    test_preempt(m);
    test_retention(m);
    test_cancel_in_flight(m);
    test_abort(m);
    test_chunking(m);
    test_short_during_long(m);
    test_embedding(m);
    test_thinking_budget(m);
    test_disk_tier(m);
    test_disk_running(m);
    test_disk_head(m);
    test_disk_touch(m);
    ok(wakes > 0, "the scheduler woke its driver on submit (%d times)", wakes);

    llm_model_free(m);
    return done_testing();
}
