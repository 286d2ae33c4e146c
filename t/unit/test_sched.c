/*
 * The engine scheduler without nginx: admission, queue order, prefix reuse
 * through the shared prefix cache, cancellation while a step is in flight, the prefill budget,
 * and embedding pooling.  Steps are driven synchronously here (prepare, run,
 * complete on one thread), which is exactly what the glue does across the
 * event loop and a thread-pool thread.
 */
#include "tap.h"

#include "engine/llm_sched.h"

#define FIX "t/fixtures/models/qwen3_f32"

typedef struct {
    int       tokens;
    int       done;
    int       flushes;
    llm_finish reason;
    const char *error;
    int       release_on_token;   /* let go from inside on_token */
    llm_seq  *seq;
} owner_t;

static void
on_token(void *o, llm_seq *seq, int32_t tok, const llm_token_logprobs *lp)
{
    owner_t *w = o;

    w->tokens++;
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

static llm_seq *
submit(llm_sched *s, const int32_t *prompt, size_t n, size_t max_gen,
    owner_t *w, size_t index)
{
    size_t              granted;
    llm_sampler_params  sp;

    static llm_logit_bias  no_eos[LLM_MAX_EOS];
    const llm_model_info  *in = llm_model_get_info(llm_sched_model(s));
    int                    i;

    /* random weights: keep end-of-sequence out so lengths are exact */
    for (i = 0; i < in->n_eos; i++) {
        no_eos[i].id = in->eos_ids[i];
        no_eos[i].bias = -1e4f;
    }
    llm_sampler_params_default(&sp);
    sp.temperature = 0;
    sp.logit_bias = no_eos;
    sp.n_logit_bias = in->n_eos;
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
    char              err[256];
    llm_sched        *s;
    llm_sched_config  cfg = { 0 };
    llm_sched_stats   st;
    int32_t           a[40], b[40];
    owner_t           wa = { 0 }, wb = { 0 };
    int               i, both = 0;

    cfg.parallel = 2;
    cfg.queue = 0;
    cfg.n_ctx = 64;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    cfg.kv_memory = 4 * llm_runtime_kv_block_bytes(m, LLM_KV_F32);
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (!ok(s != NULL, "a scheduler with 4 KV blocks for 2 slots of 64")) {
        diag(err);
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
test_budget(void)
{
    is_int(llm_prefill_budget(0, 10, 0.1), 512, "nobody decoding: 512");
    is_int(llm_prefill_budget(1, 0, 0), 512, "no timings yet: 512");
    is_int(llm_prefill_budget(1, 10, 0.1), 100, "decode 10 ms, 0.1 ms/token: 100");
    is_int(llm_prefill_budget(1, 10, 0.05), 200, "faster prefill: more tokens");
    is_int(llm_prefill_budget(1, 10, 5), 16, "slow prefill: at least 16");
    is_int(llm_prefill_budget(1, 1000, 0.1), 512, "at most 512");
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

    test_budget();
    test_admission(m);
    test_fifo(m);
    test_prefix_reuse(m);
    test_kv_budget(m);
    test_cancel_in_flight(m);
    test_abort(m);
    test_chunking(m);
    test_embedding(m);
    ok(wakes > 0, "the scheduler woke its driver on submit (%d times)", wakes);

    llm_model_free(m);
    return done_testing();
}
