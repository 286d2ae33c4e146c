/*
 * make bench: grammar engine costs on a real 150k vocabulary (Qwen3's
 * tokenizer).  Prints the vocabulary trie build, the compile time of a
 * typical tool list (JSON Schema -> grammar -> index), and the time of a
 * token mask per generated token over random generations (tokens drawn
 * uniformly among the allowed ones: a random-weight model, the worst case),
 * cold (a fresh index: the first request with this schema) and warm (the
 * index shared with earlier requests: after one round of generations and
 * after four; and four sequences at once, on the warm index and on a
 * fresh one).  The vocabulary gets the walks of the JSON building blocks
 * first (llm_gvocab_prewarm, as at model load; its time and memory
 * printed).  Not a test: nothing here asserts.
 *
 * With a model: decode through the engine's scheduler (llm_sched, one
 * sequence, temperature 1, the model's own tokenizer) with and without the
 * tool-list grammar -- tokens per second and time per step -- and a
 * response whose structure the grammar forces (jump-forward appends those
 * tokens without a step) against unconstrained generation of as many
 * tokens.  A random-weight model is the worst case for the grammar: its
 * picks are refused often, so masks are computed often.
 *
 *   build/bench/grammar TOKENIZER_DIR [generations [MODEL_DIR [threads]]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_constrain.h"
#include "engine/llm_sched.h"
#include "grammar/llm_grammar.h"

#include "bench_seq.h"

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double
pct(double *v, size_t n, double p)
{
    size_t i = (size_t) (p * (double) (n - 1) + 0.5);
    return n ? v[i < n ? i : n - 1] : 0;
}

/* a typical tool list: the shapes of real tool APIs */
static const char *tools_json =
"[{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\",\"description\":\"City and country\"},"
"\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"]}},\"required\":[\"location\"],\"additionalProperties\":false}},"
"{\"name\":\"web_search\",\"parameters\":{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"num_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20},"
"\"site\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"query\"]}},"
"{\"name\":\"create_event\",\"parameters\":{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\",\"maxLength\":100},\"start\":{\"type\":\"string\",\"format\":\"date-time\"},"
"\"duration_minutes\":{\"type\":\"integer\",\"minimum\":5,\"maximum\":1440},\"attendees\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"email\"},\"maxItems\":10}},"
"\"required\":[\"title\",\"start\"]}},"
"{\"name\":\"send_email\",\"parameters\":{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\",\"format\":\"email\"},\"subject\":{\"type\":\"string\"},\"body\":{\"type\":\"string\"},"
"\"cc\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"to\",\"subject\",\"body\"],\"additionalProperties\":false}},"
"{\"name\":\"edit_file\",\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"old_text\":{\"type\":\"string\"},\"new_text\":{\"type\":\"string\"},"
"\"replace_all\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"old_text\",\"new_text\"]}},"
"{\"name\":\"run_sql\",\"parameters\":{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"params\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"},{\"type\":\"null\"}]}},"
"\"timeout_s\":{\"type\":\"number\",\"minimum\":0,\"maximum\":300}},\"required\":[\"query\"]}},"
"{\"name\":\"set_thermostat\",\"parameters\":{\"type\":\"object\",\"properties\":{\"room\":{\"type\":\"string\",\"enum\":[\"living\",\"bedroom\",\"kitchen\",\"office\"]},"
"\"temperature\":{\"type\":\"number\",\"minimum\":10,\"maximum\":30},\"mode\":{\"type\":\"string\",\"enum\":[\"heat\",\"cool\",\"auto\",\"off\"]}},\"required\":[\"room\",\"temperature\"]}},"
"{\"name\":\"lookup_order\",\"parameters\":{\"type\":\"object\",\"properties\":{\"order_id\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]{6}$\"},"
"\"include\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"items\",\"shipping\",\"payments\"]}}},\"required\":[\"order_id\"]}}]";

/* {"name": <const>, "arguments": <parameters>} for any tool: the JSON a
 * hermes-style call carries */
static json_t *
call_schema(const json_t *tools)
{
    json_t *any = json_array();
    size_t i;
    for (i = 0; i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i);
        json_t *alt = json_pack("{s:s, s:{s:{s:O}, s:O}, s:[s,s], s:b}",
            "type", "object", "properties", "name", "const", json_object_get(t, "name"),
            "arguments", json_object_get(t, "parameters"), "required", "name", "arguments",
            "additionalProperties", 0);
        json_array_append_new(any, alt);
    }
    return json_pack("{s:o}", "anyOf", any);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t
rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t) (rng >> 32);
}

/* mask times of the computed masks (cache misses), split by whether they
 * made a new cut walk (a walk of the vocabulary trie from a cut stack; for
 * some stacks only a few of its branches live) or only used cached ones */
static double miss_walk[1 << 16], miss_cut[1 << 16];
static size_t n_miss_walk, n_miss_cut;

/* one random generation; mask times appended to t[] */
static size_t
generate(llm_gindex *x, size_t n_vocab, uint64_t *bits, int32_t *allowed, int max_tokens,
         double *t, size_t *nt, size_t cap, int *finished)
{
    llm_gmatcher *m = llm_gmatcher_create(x);
    size_t words = (n_vocab + 63) / 64, w, steps = 0;
    int k;
    for (k = 0; k < max_tokens && !llm_gmatcher_done(m); k++) {
        long c0 = llm_gindex_n_masks_computed(x), w0 = llm_gindex_n_cut_walks(x);
        double t0 = now_us();
        size_t n = 0;
        int rc = llm_gmatcher_mask(m, bits);
        double dt = now_us() - t0;
        if (*nt < cap) {
            t[(*nt)++] = dt;
            if (llm_gindex_n_cut_walks(x) > w0) { if (n_miss_walk < 1 << 16) miss_walk[n_miss_walk++] = dt; }
            else if (llm_gindex_n_masks_computed(x) > c0 && n_miss_cut < 1 << 16) miss_cut[n_miss_cut++] = dt;
        }
        if (rc < 0) break;
        for (w = 0; w < words; w++) {
            uint64_t b = bits[w];
            while (b) { allowed[n++] = (int32_t) (w * 64 + (size_t) __builtin_ctzll(b)); b &= b - 1; }
        }
        if (llm_gmatcher_accept(m, allowed[rnd() % n]) < 0) break;
        steps++;
    }
    *finished += llm_gmatcher_done(m);
    llm_gmatcher_free(m);
    return steps;
}

/* one of several sequences generating at once on a shared index (each with
 * its own random picks); mask times into t[] */
typedef struct {
    llm_gindex *x;
    size_t      n_vocab, nt, cap;
    int         gens;
    uint64_t    rng;
    double     *t;
} conc_seq;

static void *
conc_run(void *arg)
{
    conc_seq *q = arg;
    size_t words = (q->n_vocab + 63) / 64, w;
    uint64_t *bits = malloc(words * 8);
    int32_t *allowed = malloc(q->n_vocab * sizeof(int32_t));
    int gen, k;

    for (gen = 0; gen < q->gens; gen++) {
        llm_gmatcher *m = llm_gmatcher_create(q->x);
        for (k = 0; k < 400 && !llm_gmatcher_done(m); k++) {
            size_t n = 0;
            double t0 = now_us();
            int rc = llm_gmatcher_mask(m, bits);
            if (q->nt < q->cap) q->t[q->nt++] = now_us() - t0;
            if (rc < 0) break;
            for (w = 0; w < words; w++) {
                uint64_t b = bits[w];
                while (b) { allowed[n++] = (int32_t) (w * 64 + (size_t) __builtin_ctzll(b)); b &= b - 1; }
            }
            q->rng ^= q->rng << 13; q->rng ^= q->rng >> 7; q->rng ^= q->rng << 17;
            if (llm_gmatcher_accept(m, allowed[(q->rng >> 32) % n]) < 0) break;
        }
        llm_gmatcher_free(m);
    }
    free(bits);
    free(allowed);
    return NULL;
}

/* 4 sequences at once on index x, percentiles of all their masks */
static void
concurrent(llm_gindex *x, size_t n_vocab, int gens, const char *what)
{
    enum { NSEQ = 4 };
    conc_seq q[NSEQ];
    pthread_t th[NSEQ];
    double *all;
    size_t n = 0, i, j;

    for (i = 0; i < NSEQ; i++) {
        q[i].x = x; q[i].n_vocab = n_vocab; q[i].nt = 0; q[i].cap = 1 << 18; q[i].gens = gens;
        q[i].rng = 0x9e3779b97f4a7c15ull * (i + 7); q[i].t = malloc(q[i].cap * sizeof(double));
        pthread_create(&th[i], NULL, conc_run, &q[i]);
    }
    for (i = 0; i < NSEQ; i++) { pthread_join(th[i], NULL); n += q[i].nt; }
    all = malloc((n + 1) * sizeof(double));
    for (i = 0, n = 0; i < NSEQ; i++) {
        for (j = 0; j < q[i].nt; j++) all[n++] = q[i].t[j];
        free(q[i].t);
    }
    qsort(all, n, sizeof(double), cmp_d);
    printf("grammar: mask per token, %d sequences at once (threads) on the %s index, %d generations each: "
           "%zu tokens, p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
           NSEQ, what, gens, n, pct(all, n, 0.5), pct(all, n, 0.9), pct(all, n, 0.99), n ? all[n - 1] : 0);
    free(all);
}

/*
 * What a grammar adds to a decode step: the sampler's pick with the grammar
 * (llm_constraint_sample + accept: the pick checked, a mask on refusals)
 * against the sampler alone, on the same random logits (temperature 1), and
 * how many tokens jump-forward appends without a step.  The decode step of
 * the model itself is `llm bench`'s number; the ratio is in the notes.
 */
static void
sampling_cost(const llm_tokenizer *tok, llm_gvocab *v, const json_t *schema, int32_t stop)
{
    char err[256];
    size_t nv = llm_tokenizer_n_vocab(tok), k;
    float *logits = malloc(nv * sizeof(float));
    llm_grammar *g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    llm_gindex *x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
    double free_us = 0, con_us = 0;
    long steps = 0, forced = 0, masks = 0;
    int run;

    for (run = 0; run < 8; run++) {
        llm_sampler_params p;
        llm_sampler *sf, *sc;
        llm_constraint *c = llm_constraint_create(x, tok, NULL, 0);
        int32_t ids[64];
        int n;
        llm_sampler_params_default(&p);
        p.temperature = 1.0f;
        p.has_seed = 1;
        p.seed = (uint64_t) run;
        sf = llm_sampler_create(&p, (int) nv);
        sc = llm_sampler_create(&p, (int) nv);
        for (n = 0; n < 400 && !llm_constraint_done(c); n++) {
            double t0, t1, t2;
            int32_t t;
            forced += llm_constraint_forced(c, ids, 64);
            if (llm_constraint_done(c)) break;
            for (k = 0; k < nv; k++) logits[k] = (float) (rnd() & 0xFFFF) / 4096.0f;
            t0 = now_us();
            (void) llm_sampler_sample(sf, logits, NULL, 0);
            t1 = now_us();
            t = llm_constraint_sample(c, sc, logits, NULL, 0);
            if (t < 0 || llm_constraint_accept(c, t) < 0) break;
            t2 = now_us();
            free_us += t1 - t0;
            con_us += t2 - t1;
            steps++;
        }
        masks += llm_constraint_n_masks(c);
        llm_constraint_free(c);
        llm_sampler_free(sf);
        llm_sampler_free(sc);
    }
    printf("grammar: sampling per step over %ld steps: free %.1f us, with the grammar %.1f us "
           "(+%.1f us; %ld masks); jump-forward appended %ld tokens without a step\n",
           steps, free_us / (double) steps, con_us / (double) steps,
           (con_us - free_us) / (double) steps, masks, forced);
    llm_gindex_free(x);
    llm_grammar_free(g);
    free(logits);
}


/* ---- decode through the engine ---- */


typedef struct {
    long   tokens, steps;       /* after the first token (which comes with the prompt) */
    double decode_us, total_us; /* first to last token; submit to done */
} dec_sum;

/* One sequence on a fresh scheduler; x NULL: unconstrained. */
static int
dec_run(const llm_model *m, const llm_tokenizer *tok, llm_gindex *x, const int32_t *ids, size_t n,
        size_t max_gen, int threads, uint64_t seed, dec_sum *sum)
{
    char err[256];
    llm_sched_config cfg;
    llm_sched_stats st;
    llm_sampler_params sp;
    llm_sched *s;
    llm_seq *seq;
    static bench_out o;
    size_t granted;
    double t0;
    int fc;

    memset(&cfg, 0, sizeof(cfg));
    cfg.parallel = 1;
    cfg.queue = 1;
    cfg.n_ctx = 1024;
    cfg.threads = threads;
    cfg.kv = LLM_KV_F32;
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (s == NULL) { fprintf(stderr, "sched: %s\n", err); return -1; }
    llm_sampler_params_default(&sp);
    sp.temperature = 1.0f;
    sp.has_seed = 1;
    sp.seed = seed;
    llm_sched_reserve(s, 1, 1, &granted);
    memset(&o, 0, sizeof(o));
    seq = llm_seq_create(s, ids, n, max_gen, &sp, -1, &bench_events, &o, 0);
    if (x != NULL) llm_seq_set_constraint(seq, llm_constraint_create(x, tok, NULL, 0));
    t0 = now_us();
    llm_sched_submit(s, seq);
    while (llm_sched_step_prepare(s) > 0) {
        llm_sched_step_run(s);
        if (llm_sched_step_failure(s, &fc)) fprintf(stderr, "step failed\n");
        llm_sched_step_complete(s);
    }
    sum->total_us += now_us() - t0;
    llm_sched_get_stats(s, &st);
    if (o.n > 1) {
        sum->tokens += o.n - 1;
        sum->steps += (long) st.seq_steps - 1;
        sum->decode_us += (o.t_last - o.t_first) * 1e3;
    }
    llm_seq_release(seq);
    llm_sched_free(s);
    return o.n;
}

static llm_gindex *
dec_index(const json_t *schema, llm_gvocab *v, const int32_t *stop, size_t n_stop)
{
    char err[256];
    llm_grammar *g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    llm_gindex *x = g ? llm_gindex_create(g, v, stop, n_stop, NULL, 0, err, sizeof(err)) : NULL;
    if (x == NULL) { fprintf(stderr, "grammar: %s\n", err); llm_grammar_free(g); return NULL; }
    llm_gindex_adopt(x, g);
    return x;
}

static void
decode_bench(const char *dir, int threads, const json_t *tool_schema)
{
    char err[256];
    llm_model *m = llm_model_load(dir, err, sizeof(err));
    llm_tokenizer *tok = m ? llm_tokenizer_load(dir, err, sizeof(err)) : NULL;
    const char *prompt = "<|im_start|>user\nWhat is the weather in Lisbon for the next three days?<|im_end|>\n"
                         "<|im_start|>assistant\n";
    /* a response the grammar mostly forces: fixed keys, enums, a const */
    const char *forced_src = "{\"type\":\"object\",\"properties\":{"
        "\"action\":{\"const\":\"get_forecast\"},\"location\":{\"enum\":[\"Lisbon, Portugal\",\"Porto, Portugal\"]},"
        "\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]},\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":7},"
        "\"include_hourly_breakdown\":{\"type\":\"boolean\"},\"include_precipitation_probability\":{\"type\":\"boolean\"},"
        "\"language\":{\"enum\":[\"english\",\"portuguese\"]}},"
        "\"required\":[\"action\",\"location\",\"unit\",\"days\",\"include_hourly_breakdown\","
        "\"include_precipitation_probability\",\"language\"],\"additionalProperties\":false}";
    json_t *forced_schema = json_loads(forced_src, 0, NULL);
    int32_t *ids = NULL, stop[8];
    size_t n_ids = 0, n_stop = 0;
    llm_gvocab *v;
    llm_gindex *xt, *xf;
    dec_sum fr = { 0 }, gr = { 0 }, ff = { 0 }, fg = { 0 };
    long forced_tokens = 0;
    int r, seeds = 4;
    const size_t max_gen = 96;

    if (tok == NULL) { fprintf(stderr, "model: %s\n", err); llm_model_free(m); return; }
    /* the grammar ends on the model's own end-of-sequence ids */
    for (r = 0; (size_t) r < llm_tokenizer_n_vocab(tok) && n_stop < 8; r++)
        if (llm_model_is_eos(m, r)) stop[n_stop++] = r;
    v = llm_constrain_vocab(tok, stop, n_stop, err, sizeof(err));
    llm_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids, &n_ids);
    xt = v ? dec_index(tool_schema, v, stop, n_stop) : NULL;
    xf = v ? dec_index(forced_schema, v, stop, n_stop) : NULL;
    if (xt == NULL || xf == NULL) goto out;

    /* the tool-list grammar's index warm (a schema served before), then
     * free vs constrained, same seeds */
    dec_run(m, tok, xt, ids, n_ids, max_gen, threads, 99, &(dec_sum){ 0 });
    for (r = 0; r < seeds; r++) {
        dec_run(m, tok, NULL, ids, n_ids, max_gen, threads, (uint64_t) r, &fr);
        dec_run(m, tok, xt, ids, n_ids, max_gen, threads, (uint64_t) r, &gr);
    }
    printf("grammar: decode, %d thread(s), %d x up to %zu tokens, temperature 1: free %.1f tokens/s "
           "(%.2f ms/step), tool-list grammar %.1f tokens/s (%.2f ms/step, %.2f tokens/step) = %.1f%% of free "
           "per step, %.1f%% in tokens/s\n",
           threads, seeds, max_gen, fr.tokens / (fr.decode_us / 1e6), fr.decode_us / 1e3 / (double) fr.steps,
           gr.tokens / (gr.decode_us / 1e6), gr.decode_us / 1e3 / (double) gr.steps,
           (double) gr.tokens / (double) gr.steps,
           100.0 * (fr.decode_us / (double) fr.steps) / (gr.decode_us / (double) gr.steps),
           100.0 * (gr.tokens / gr.decode_us) / (fr.tokens / fr.decode_us));

    /* forced structure: the constrained response, then free generation of
     * as many tokens (wall time from submit to the last token) */
    dec_run(m, tok, xf, ids, n_ids, 256, threads, 99, &(dec_sum){ 0 });
    for (r = 0; r < seeds; r++) {
        dec_sum one = { 0 };
        int n = dec_run(m, tok, xf, ids, n_ids, 256, threads, (uint64_t) r, &one);
        fg.tokens += one.tokens; fg.steps += one.steps; fg.decode_us += one.decode_us; fg.total_us += one.total_us;
        forced_tokens += one.tokens - one.steps;
        if (n > 0) dec_run(m, tok, NULL, ids, n_ids, (size_t) n, threads, (uint64_t) r, &ff);
    }
    printf("grammar: forced-structure response (%ld tokens in %d responses, %ld appended by jump-forward): "
           "%.1f ms per response with the grammar (%ld steps) vs %.1f ms unconstrained for as many tokens "
           "(%ld steps): %.2fx\n",
           fg.tokens + seeds, seeds, forced_tokens, fg.total_us / 1e3 / seeds, fg.steps + seeds,
           ff.total_us / 1e3 / seeds, ff.steps + seeds, ff.total_us / fg.total_us);
out:
    llm_gindex_free(xt);
    llm_gindex_free(xf);
    llm_gvocab_free(v);
    free(ids);
    json_decref(forced_schema);
    llm_tokenizer_free(tok);
    llm_model_free(m);
}

int
main(int argc, char **argv)
{
    char err[256];
    llm_tokenizer *tok;
    llm_gvocab *v;
    json_t *tools, *schema;
    double t0, tc[32], *tcold, *twarm;
    size_t n_vocab, ncold = 0, nwarm = 0, cap = 1 << 20;
    int gens = argc > 2 ? atoi(argv[2]) : 20, i, round, fin_cold = 0, fin_warm = 0;
    uint64_t *bits;
    int32_t *allowed, stop;
    llm_grammar *g;
    llm_gindex *x;

    if (argc < 2) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR [generations]\n", argv[0]);
        return 2;
    }
    tok = llm_tokenizer_load(argv[1], err, sizeof(err));
    if (tok == NULL) { fprintf(stderr, "tokenizer: %s\n", err); return 1; }
    n_vocab = llm_tokenizer_n_vocab(tok);
    stop = llm_tokenizer_token_id(tok, "<|im_end|>");
    t0 = now_us();
    v = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
    if (v == NULL) { fprintf(stderr, "vocab: %s\n", err); return 1; }
    printf("grammar: vocabulary %zu tokens, trie %zu nodes, built in %.1f ms (once per model)\n",
           n_vocab, llm_gvocab_n_nodes(v), (now_us() - t0) / 1e3);
    t0 = now_us();
    if (llm_gvocab_prewarm(v, err, sizeof(err)) != 0) { fprintf(stderr, "prewarm: %s\n", err); return 1; }
    printf("grammar: walks of the JSON building blocks made at load in %.1f ms, %.1f MiB (once per model)\n",
           (now_us() - t0) / 1e3, (double) llm_gvocab_walk_bytes(v) / (1 << 20));

    tools = json_loads(tools_json, 0, NULL);
    schema = call_schema(tools);
    for (i = 0; i < 20; i++) {
        t0 = now_us();
        g = llm_grammar_from_json_schema(schema, err, sizeof(err));
        x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
        tc[i] = (now_us() - t0) / 1e3;
        if (x == NULL) { fprintf(stderr, "compile: %s\n", err); return 1; }
        if (i == 0) printf("grammar: tool list of %zu tools -> %zu rules\n", json_array_size(tools), llm_grammar_n_rules(g));
        llm_gindex_free(x);
        llm_grammar_free(g);
    }
    qsort(tc, 20, sizeof(double), cmp_d);
    printf("grammar: compile (schema -> grammar -> index) median %.3f ms, max %.3f ms over 20\n", tc[10], tc[19]);

    bits = malloc((n_vocab + 63) / 64 * 8);
    allowed = malloc(n_vocab * sizeof(int32_t));
    tcold = malloc(cap * sizeof(double));
    twarm = malloc(cap * sizeof(double));
    /* cold: every generation on a freshly compiled index over a freshly
     * built vocabulary (nothing from an earlier request: the first request
     * after the model loaded); its first generation also apart */
    for (i = 0; i < gens; i++) {
        llm_gvocab *fresh = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
        size_t n0 = ncold;
        llm_gvocab_prewarm(fresh, err, sizeof(err));
        g = llm_grammar_from_json_schema(schema, err, sizeof(err));
        x = llm_gindex_create(g, fresh, &stop, 1, NULL, 0, err, sizeof(err));
        generate(x, n_vocab, bits, allowed, 400, tcold, &ncold, cap, &fin_cold);
        llm_gindex_free(x);
        llm_grammar_free(g);
        llm_gvocab_free(fresh);
        if (i == 0) {
            size_t n1 = ncold - n0;
            double *one = malloc(n1 * sizeof(double));
            memcpy(one, tcold + n0, n1 * sizeof(double));
            qsort(one, n1, sizeof(double), cmp_d);
            printf("grammar: mask per token, first generation after the model loaded: %zu tokens, p50 %.1f us, "
                   "p99 %.1f us, max %.1f us\n", n1, pct(one, n1, 0.5), pct(one, n1, 0.99), one[n1 - 1]);
            free(one);
        }
    }
    qsort(tcold, ncold, sizeof(double), cmp_d);
    printf("grammar: mask per token, cold (fresh vocabulary and index per generation): %zu tokens (%d/%d calls "
           "finished), p50 %.1f us, p99 %.1f us, max %.1f us\n",
           ncold, fin_cold, gens, pct(tcold, ncold, 0.5), pct(tcold, ncold, 0.99), tcold[ncold - 1]);
    /* a fresh index per generation on the model's vocabulary (a schema whose
     * index was evicted, or a new schema made of parts served before) */
    ncold = 0;
    fin_cold = 0;
    for (i = 0; i < gens; i++) {
        g = llm_grammar_from_json_schema(schema, err, sizeof(err));
        x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
        generate(x, n_vocab, bits, allowed, 400, tcold, &ncold, cap, &fin_cold);
        llm_gindex_free(x);
        llm_grammar_free(g);
    }
    qsort(tcold, ncold, sizeof(double), cmp_d);
    printf("grammar: mask per token, fresh index per generation, shared vocabulary: %zu tokens (%d/%d calls "
           "finished), p50 %.1f us, p99 %.1f us, max %.1f us\n",
           ncold, fin_cold, gens, pct(tcold, ncold, 0.5), pct(tcold, ncold, 0.99), tcold[ncold - 1]);
    /* warm: one index shared by all generations; measured after one round
     * of generations warmed it, and again after four (a schema served for
     * a while: the per-count walks of short counted repetitions are made) */
    g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
    for (round = 1; round <= 5; round++) {
        long miss0 = llm_gindex_n_masks_computed(x), walks0 = llm_gindex_n_cut_walks(x);
        size_t dummy = 0;
        int f = 0;
        if (round != 2 && round != 5) {
            for (i = 0; i < gens; i++) generate(x, n_vocab, bits, allowed, 400, twarm, &dummy, 0, &f);
            continue;
        }
        nwarm = 0;
        fin_warm = 0;
        n_miss_walk = n_miss_cut = 0;
        for (i = 0; i < gens; i++) generate(x, n_vocab, bits, allowed, 400, twarm, &nwarm, cap, &fin_warm);
        qsort(twarm, nwarm, sizeof(double), cmp_d);
        qsort(miss_walk, n_miss_walk, sizeof(double), cmp_d);
        qsort(miss_cut, n_miss_cut, sizeof(double), cmp_d);
        printf("grammar: mask per token, warm index after %d x %d generations: %zu tokens (%d/%d calls finished), "
               "p50 %.1f us, p90 %.1f us, p95 %.1f us, p99 %.1f us, max %.1f us\n",
               round - 1, gens, nwarm, fin_warm, gens, pct(twarm, nwarm, 0.5), pct(twarm, nwarm, 0.9),
               pct(twarm, nwarm, 0.95), pct(twarm, nwarm, 0.99), twarm[nwarm - 1]);
        printf("grammar:   %zu states; %ld masks computed: %zu from cached walks (p50 %.1f us, p99 %.1f us), "
               "%zu made new cut walks (%ld walks; p50 %.1f us, p99 %.1f us)\n",
               llm_gindex_n_states(x), llm_gindex_n_masks_computed(x) - miss0,
               n_miss_cut, pct(miss_cut, n_miss_cut, 0.5), pct(miss_cut, n_miss_cut, 0.99),
               n_miss_walk, llm_gindex_n_cut_walks(x) - walks0,
               pct(miss_walk, n_miss_walk, 0.5), pct(miss_walk, n_miss_walk, 0.99));
    }
    concurrent(x, n_vocab, gens, "warm");
    llm_gindex_free(x);
    llm_grammar_free(g);
    /* the same on a fresh index of the schema (the model's vocabulary) */
    g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
    concurrent(x, n_vocab, gens, "fresh");
    llm_gindex_free(x);
    llm_grammar_free(g);
    sampling_cost(tok, v, schema, stop);
    if (argc > 3) decode_bench(argv[3], argc > 4 ? atoi(argv[4]) : 1, schema);
    free(bits); free(allowed); free(tcold); free(twarm);
    json_decref(schema);
    json_decref(tools);
    llm_gvocab_free(v);
    llm_tokenizer_free(tok);
    return 0;
}
