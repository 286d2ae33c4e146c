/*
 * make bench: grammar engine costs on a real 150k vocabulary (Qwen3's
 * tokenizer).  Prints the vocabulary trie build, the compile time of a
 * typical tool list (JSON Schema -> grammar -> index), and the time of a
 * token mask per generated token over random generations (tokens drawn
 * uniformly among the allowed ones: a random-weight model, the worst case),
 * cold (a fresh index: the first request with this schema) and warm (the
 * index shared with earlier requests).  Not a test: nothing here asserts.
 *
 *   build/bench/grammar TOKENIZER_DIR [generations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_constrain.h"
#include "grammar/llm_grammar.h"

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
 * walked the vocabulary or reused a cut walk */
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

int
main(int argc, char **argv)
{
    char err[256];
    llm_tokenizer *tok;
    llm_gvocab *v;
    json_t *tools, *schema;
    double t0, tc[32], *tcold, *twarm;
    size_t n_vocab, ncold = 0, nwarm = 0, cap = 1 << 20;
    int gens = argc > 2 ? atoi(argv[2]) : 20, i, fin_cold = 0, fin_warm = 0;
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
    /* cold: every generation on a freshly compiled index */
    for (i = 0; i < gens; i++) {
        g = llm_grammar_from_json_schema(schema, err, sizeof(err));
        x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
        generate(x, n_vocab, bits, allowed, 400, tcold, &ncold, cap, &fin_cold);
        llm_gindex_free(x);
        llm_grammar_free(g);
    }
    /* warm: one index shared by all generations (after one to warm it) */
    g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    x = llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err));
    {
        size_t dummy = 0;
        int f = 0;
        for (i = 0; i < gens; i++) generate(x, n_vocab, bits, allowed, 400, twarm, &dummy, 0, &f);
    }
    {
        long miss0 = llm_gindex_n_masks_computed(x);
        n_miss_walk = n_miss_cut = 0;
        long walks0 = llm_gindex_n_cut_walks(x);
        for (i = 0; i < gens; i++) generate(x, n_vocab, bits, allowed, 400, twarm, &nwarm, cap, &fin_warm);
        printf("grammar: warm index: %zu states, %ld masks computed and %ld vocabulary walks during the measured generations\n",
               llm_gindex_n_states(x), llm_gindex_n_masks_computed(x) - miss0, llm_gindex_n_cut_walks(x) - walks0);
    }
    qsort(tcold, ncold, sizeof(double), cmp_d);
    qsort(twarm, nwarm, sizeof(double), cmp_d);
    printf("grammar: mask per token, cold index: %zu tokens (%d/%d calls finished), p50 %.1f us, p99 %.1f us, max %.1f us\n",
           ncold, fin_cold, gens, pct(tcold, ncold, 0.5), pct(tcold, ncold, 0.99), tcold[ncold - 1]);
    printf("grammar: mask per token, warm index: %zu tokens (%d/%d calls finished), p50 %.1f us, p90 %.1f us, p95 %.1f us, p99 %.1f us, max %.1f us\n",
           nwarm, fin_warm, gens, pct(twarm, nwarm, 0.5), pct(twarm, nwarm, 0.9), pct(twarm, nwarm, 0.95),
           pct(twarm, nwarm, 0.99), twarm[nwarm - 1]);
    qsort(miss_walk, n_miss_walk, sizeof(double), cmp_d);
    qsort(miss_cut, n_miss_cut, sizeof(double), cmp_d);
    printf("grammar: warm misses: %zu reused a cut walk (p50 %.1f us, p99 %.1f us), %zu walked the vocabulary (p50 %.1f us, p99 %.1f us)\n",
           n_miss_cut, pct(miss_cut, n_miss_cut, 0.5), pct(miss_cut, n_miss_cut, 0.99),
           n_miss_walk, pct(miss_walk, n_miss_walk, 0.5), pct(miss_walk, n_miss_walk, 0.99));
    llm_gindex_free(x);
    llm_grammar_free(g);
    sampling_cost(tok, v, schema, stop);
    free(bits); free(allowed); free(tcold); free(twarm);
    json_decref(schema);
    json_decref(tools);
    llm_gvocab_free(v);
    llm_tokenizer_free(tok);
    return 0;
}
