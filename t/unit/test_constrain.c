/*
 * The sampler hook: masked sampling (llm_sampler_sample_allowed) and the
 * per-sequence constraint (llm_constraint_*) over Qwen3's real tokenizer
 * with random logits (a random-weight model): every generation, at
 * temperature 1.0 and 1.5, with and without jump-forward, decodes to JSON
 * valid against its schema.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "jschema_check.h"
#include "engine/llm_constrain.h"

static void
test_sampler_mask(void)
{
    float logits[130];
    uint64_t allowed[3] = {0};
    llm_sampler_params p;
    llm_sampler *s;
    llm_token_logprobs lp;
    int i, bad = 0;
    int32_t t;

    for (i = 0; i < 130; i++) logits[i] = (float) (i % 7);
    /* allow 3, 64, 129 */
    allowed[0] = 1ull << 3; allowed[1] = 1ull; allowed[2] = 1ull << 1;
    llm_sampler_params_default(&p);
    p.temperature = 0;
    s = llm_sampler_create(&p, 130);
    /* logits: 3 -> 3, 64 -> 1, 129 -> 3; unmasked best ids are 6, 13, ... (6) */
    t = llm_sampler_sample_allowed(s, logits, allowed, &lp, 5);
    is_int(t, 3, "greedy picks the best allowed id, the first of a tie");
    is_int(lp.n_top, 3, "top logprobs list only the 3 allowed ids");
    llm_sampler_free(s);
    p.temperature = 1.5f;
    p.top_k = 2;
    p.has_seed = 1;
    p.seed = 7;
    s = llm_sampler_create(&p, 130);
    for (i = 0; i < 2000; i++) {
        t = llm_sampler_sample_allowed(s, logits, allowed, &lp, 5);
        if (t != 3 && t != 64 && t != 129) bad++;
        if (lp.n_top != 3) bad++;
    }
    is_int(bad, 0, "sampling at temperature 1.5 never leaves the mask; logprobs list only allowed ids");
    memset(allowed, 0, sizeof(allowed));
    is_int(llm_sampler_sample_allowed(s, logits, allowed, NULL, 0), -1, "an empty mask gives -1");
    llm_sampler_free(s);
}

static const char *schemas[] = {
    "{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\",\"maxLength\":30},\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"]}},\"required\":[\"location\",\"unit\"],\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":-3,\"maximum\":250},\"x\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},\"ok\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},\"maxItems\":3}},\"required\":[\"n\",\"x\",\"ok\",\"tags\"]}",
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"}},\"required\":[\"id\"]},{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9},\"minItems\":1,\"maxItems\":3}]}",
    NULL
};

static void
test_generations(const llm_tokenizer *tok, llm_gvocab *v)
{
    size_t nv = llm_tokenizer_n_vocab(tok);
    float *logits = malloc(nv * sizeof(float));
    int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>"), ids[4096], forced[64];
    uint64_t r = 0x1234567ull;
    int si;

    for (si = 0; schemas[si]; si++) {
        char err[256];
        json_t *s = json_loads(schemas[si], 0, NULL);
        llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
        llm_gindex *x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
        int run, invalid = 0, finished = 0, refused = 0, jumped = 0, peek_differs = 0;
        if (!ok(x != NULL, "schema %d compiles", si)) continue;
        for (run = 0; run < 24; run++) {
            llm_sampler_params p;
            llm_sampler *sm;
            llm_constraint *c = llm_constraint_create(x, tok, NULL, 0);
            int n = 0, k, use_jump = run & 1;
            llm_sampler_params_default(&p);
            p.temperature = run % 4 < 2 ? 1.0f : 1.5f;
            p.has_seed = 1;
            p.seed = (uint64_t) run * 977 + (uint64_t) si;
            sm = llm_sampler_create(&p, (int) nv);
            while (n < 600 && !llm_constraint_done(c)) {
                int32_t t;
                if (use_jump) {
                    int32_t peeked[64];
                    int np = llm_constraint_peek_forced(c, peeked, 64), nf;
                    /* peeking twice changes nothing; forcing takes the same tokens */
                    if (llm_constraint_peek_forced(c, peeked, 64) != np) peek_differs++;
                    nf = llm_constraint_forced(c, forced, 64);
                    if (np != nf || memcmp(peeked, forced, (size_t) nf * sizeof(int32_t)) != 0) peek_differs++;
                    for (k = 0; k < nf && n < 4096; k++) ids[n++] = forced[k];
                    jumped += nf;
                    if (llm_constraint_done(c)) break;
                }
                /* random logits: a random-weight model */
                for (k = 0; k < (int) nv; k++) {
                    r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                    logits[k] = (float) ((r >> 40) & 0xFFFF) / 4096.0f;
                }
                t = llm_constraint_sample(c, sm, logits, NULL, 0);
                if (t < 0 || llm_constraint_accept(c, t) < 0) { refused++; break; }
                if (t != stop) ids[n++] = t;
            }
            if (llm_constraint_done(c)) {
                char *text = NULL;
                size_t len = 0;
                json_t *val;
                finished++;
                llm_tokenizer_decode(tok, ids, (size_t) n, 0, &text, &len);
                val = json_loadb(text, len, JSON_DECODE_ANY, NULL);
                if (val == NULL || !jsc_valid(val, s, s)) {
                    if (invalid++ < 3) printf("# invalid (%s): %s\n", val ? jsc_why : "not JSON", text);
                }
                json_decref(val);
                free(text);
            }
            llm_sampler_free(sm);
            llm_constraint_free(c);
        }
        is_int(invalid, 0, "schema %d: every finished generation is valid (%d of 24 finished)", si, finished);
        is_int(refused, 0, "schema %d: the grammar never refuses the constrained pick", si);
        ok(finished >= 12, "schema %d: generations finish within 600 tokens (%d)", si, finished);
        ok(jumped > 0, "schema %d: jump-forward appended %d forced tokens", si, jumped);
        is_int(peek_differs, 0, "schema %d: peeked forced tokens are the ones forced, the constraint unchanged", si);
        llm_gindex_free(x);
        llm_grammar_free(g);
        json_decref(s);
    }
    free(logits);
}

/* runs random walks of up to steps tokens (xorshift from seed) over schema
 * src on vocabulary v, the fast mask compared with the reference at every
 * step; the live trie nodes the index's walks visited into *nodes.  Returns
 * the steps that differ (-1: no index). */
static int
walk_compare(const llm_tokenizer *tok, llm_gvocab *v, const char *src, int runs, int steps, uint64_t seed,
    int *compared, long *nodes)
{
    size_t nv = llm_tokenizer_n_vocab(tok), words = (nv + 63) / 64, w;
    uint64_t *bits = malloc(words * 8), *ref = malloc(words * 8), r = seed;
    int32_t *allowed = malloc(nv * sizeof(int32_t)), stop = llm_tokenizer_token_id(tok, "<|im_end|>");
    json_t *s = json_loads(src, 0, NULL);
    char err[256];
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    llm_gindex *x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    int run, step, differ = 0;

    *compared = 0;
    *nodes = 0;
    for (run = 0; x != NULL && run < runs; run++) {
        llm_gmatcher *m = llm_gmatcher_create(x);
        for (step = 0; step < steps && !llm_gmatcher_done(m); step++) {
            size_t n = 0;
            if (llm_gmatcher_mask(m, bits) < 0) break;
            llm_gmatcher_mask_reference(m, ref);
            (*compared)++;
            if (memcmp(bits, ref, words * 8) != 0) differ++;
            for (w = 0; w < words; w++) {
                uint64_t b = bits[w];
                while (b) { allowed[n++] = (int32_t) (w * 64 + (size_t) __builtin_ctzll(b)); b &= b - 1; }
            }
            r ^= r << 13; r ^= r >> 7; r ^= r << 17;
            if (n == 0 || llm_gmatcher_accept(m, allowed[(r >> 33) % n]) < 0) break;
        }
        llm_gmatcher_free(m);
    }
    if (x != NULL) *nodes = llm_gindex_n_walk_nodes(x);
    else differ = -1;
    llm_gindex_free(x);
    llm_grammar_free(g);
    json_decref(s);
    free(bits); free(ref); free(allowed);
    return differ;
}

/* On the real vocabulary (tokens that run across several rules' ends): the
 * fast mask (cut walks, caches) equals the plain walk at every step of
 * random walks, the second index warm from the first walks. */
static void
test_fast_masks(const llm_tokenizer *tok, llm_gvocab *v)
{
    const char *src = "{\"type\":\"object\",\"properties\":{\"note\":{\"type\":\"string\",\"maxLength\":40},\"q\":{\"type\":\"string\"},"
        "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\",\"maxLength\":12},"
        "\"v\":{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"k\",\"v\"]}}},"
        "\"required\":[\"note\",\"q\",\"items\"]}";
    int compared, differ;
    long nodes;

    differ = walk_compare(tok, v, src, 6, 60, 0x9e3779b97f4a7c15ull, &compared, &nodes);
    if (!ok(differ >= 0, "fast-mask schema compiles")) return;
    is_int(differ, 0, "Qwen3 vocabulary: fast mask equals the reference walk at %d states", compared);
    ok(compared >= 100, "fast masks compared at %d states", compared);
}

/* The walks of the JSON building blocks made at load (llm_gvocab_prewarm)
 * serve a schema never seen before: its random walks visit a small part of
 * what the same paths visit on a vocabulary without them, and the masks
 * from the prewarmed walks (and from the deeper cuts of an email's dotted
 * parts, whose shallow walks hand thousands of tokens below the cut) equal
 * the reference walk. */
static void
test_prewarmed(const llm_tokenizer *tok)
{
    const char *src = "{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\",\"format\":\"email\"},"
        "\"cc\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"email\"},\"maxItems\":4},"
        "\"title\":{\"type\":\"string\",\"maxLength\":60},\"when\":{\"type\":\"string\",\"format\":\"date-time\"},"
        "\"n\":{\"type\":\"integer\"},\"body\":{\"type\":\"string\"}},\"required\":[\"to\",\"cc\",\"title\"]}";
    int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>");
    char err[256];
    llm_gvocab *plain = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
    llm_gvocab *warm = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
    int compared[2] = { 0, 0 }, differ[2] = { -1, -1 };
    long nodes[2] = { 0, 0 };

    if (!ok(plain != NULL && warm != NULL, "two vocabularies of the Qwen3 tokenizer")) goto out;
    ok(llm_gvocab_prewarm(warm, err, sizeof(err)) == 0 && llm_gvocab_walk_bytes(warm) > 0,
       "building-block walks made at load");
    differ[0] = walk_compare(tok, plain, src, 8, 120, 0x2545f4914f6cdd1dull, &compared[0], &nodes[0]);
    differ[1] = walk_compare(tok, warm, src, 8, 120, 0x2545f4914f6cdd1dull, &compared[1], &nodes[1]);
    is_int(differ[0], 0, "without them: fast mask equals the reference walk at %d states", compared[0]);
    is_int(differ[1], 0, "with them: fast mask equals the reference walk at %d states", compared[1]);
    ok(compared[1] >= 200, "compared at %d states", compared[1]);
    ok(compared[0] == compared[1], "the same random paths on both");
    ok(nodes[1] * 10 < nodes[0], "a new schema's walks visit %ld trie nodes with them, %ld without",
       nodes[1], nodes[0]);
out:
    llm_gvocab_free(plain);
    llm_gvocab_free(warm);
}

/* A model whose logits pad past the tokenizer's ids (Qwen: 151936 rows for
 * 151669 ids): the mask covers the sampler's whole vocabulary and the padded
 * ids, favoured here by far, are never picked. */
static void
test_padded_vocab(const llm_tokenizer *tok, llm_gvocab *v)
{
    const char *src = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}";
    size_t nt = llm_tokenizer_n_vocab(tok), nv = nt + 267, k;
    float *logits = malloc(nv * sizeof(float));
    int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>");
    json_t *s = json_loads(src, 0, NULL);
    char err[256];
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    llm_gindex *x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    llm_sampler_params p;
    llm_sampler *sm;
    llm_constraint *c;
    int step, padded = 0, refused = 0;

    if (!ok(x != NULL, "padded-vocabulary schema compiles")) return;
    llm_sampler_params_default(&p);
    p.temperature = 1.0f;
    p.has_seed = 1;
    p.seed = 5;
    sm = llm_sampler_create(&p, (int) nv);
    c = llm_constraint_create(x, tok, NULL, 0);
    for (k = 0; k < nv; k++) logits[k] = k < nt ? (float) (k % 7) : 50.0f;
    for (step = 0; step < 40 && !llm_constraint_done(c); step++) {
        int32_t ids[64], t;
        llm_constraint_forced(c, ids, 64);
        if (llm_constraint_done(c)) break;
        t = llm_constraint_sample(c, sm, logits, NULL, 0);
        if (t < 0 || (size_t) t >= nt) { padded++; break; }
        if (llm_constraint_accept(c, t) < 0) { refused++; break; }
    }
    is_int(padded, 0, "ids past the tokenizer's are never picked (sampler of %zu, tokenizer of %zu)", nv, nt);
    is_int(refused, 0, "every pick is accepted");
    llm_constraint_free(c);
    llm_sampler_free(sm);
    llm_gindex_free(x);
    llm_grammar_free(g);
    json_decref(s);
    free(logits);
}

/* A lazy grammar (tool_choice auto; a reasoning block before the answer):
 * text before the markers is free, after the last one the grammar applies
 * and random-logit sampling finishes with a value valid for the schema. */
static void
test_triggers(const llm_tokenizer *tok, llm_gvocab *v)
{
    static const llm_trigger trig[2] = { { "<think>", 0 }, { "</think>", 0 } };
    const char *src = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}},"
                      "\"required\":[\"a\"],\"additionalProperties\":false}";
    const char *free_text = "<think>Any text at all: ] } \" { not JSON", *close = "</think>";
    size_t nv = llm_tokenizer_n_vocab(tok), k;
    float *logits = malloc(nv * sizeof(float));
    int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>"), *ids = NULL, out[256], bad;
    size_t n_ids = 0, n_out = 0;
    char err[256];
    json_t *s = json_loads(src, 0, NULL);
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    llm_gindex *x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    llm_constraint *c = x ? llm_constraint_create(x, tok, trig, 2) : NULL;
    const uint64_t *bits = NULL;
    int refused = 0, run_ok = 1;
    uint64_t r = 0x9e3779b9ull;

    if (!ok(c != NULL, "lazy constraint created")) goto out;
    llm_tokenizer_encode(tok, free_text, strlen(free_text), 0, &ids, &n_ids);
    for (k = 0; k < n_ids; k++) refused += llm_constraint_accept(c, ids[k]) < 0;
    is_int(refused, 0, "before the markers any text is accepted (%zu tokens)", n_ids);
    ok(!llm_constraint_active(c), "the grammar does not apply before the last marker");
    ok(llm_constraint_mask(c, (int) nv, &bits) == 0 && bits == NULL, "no mask before the last marker");
    free(ids); ids = NULL; n_ids = 0;
    llm_tokenizer_encode(tok, close, strlen(close), 0, &ids, &n_ids);
    for (k = 0; k < n_ids; k++) run_ok &= llm_constraint_accept(c, ids[k]) == 0;
    ok(run_ok && llm_constraint_active(c), "after '</think>' the grammar applies");
    bad = llm_tokenizer_token_id(tok, "Hello");
    ok(bad >= 0 && llm_constraint_mask(c, (int) nv, &bits) == 0 && bits != NULL
       && !((bits[bad >> 6] >> (bad & 63)) & 1), "a token the grammar cannot start with is masked");
    is_int(llm_constraint_accept(c, bad), -1, "and refused");
    {
        llm_sampler_params p;
        llm_sampler *sm;
        llm_sampler_params_default(&p);
        p.temperature = 1.5f;
        p.has_seed = 1;
        p.seed = 7;
        sm = llm_sampler_create(&p, (int) nv);
        while (n_out < 200 && !llm_constraint_done(c)) {
            int32_t t;
            for (k = 0; k < nv; k++) {
                r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                logits[k] = (float) ((r >> 40) & 0xFFFF) / 4096.0f;
            }
            t = llm_constraint_sample(c, sm, logits, NULL, 0);
            if (t < 0 || llm_constraint_accept(c, t) < 0) break;
            if (t != stop) out[n_out++] = t;
        }
        llm_sampler_free(sm);
    }
    {
        char *text = NULL;
        size_t len = 0;
        json_t *val;
        llm_tokenizer_decode(tok, out, n_out, 0, &text, &len);
        val = json_loadb(text, len, JSON_DECODE_ANY, NULL);
        ok(llm_constraint_done(c) && val != NULL && jsc_valid(val, s, s),
           "the text after the marker is valid for the schema: %s", text ? text : "");
        json_decref(val);
        free(text);
    }
out:
    free(ids);
    llm_constraint_free(c);
    llm_gindex_free(x);
    llm_grammar_free(g);
    json_decref(s);
    free(logits);
}

/* feed text as the model would write it; the count of tokens refused */
static int
feed(llm_constraint *c, const llm_tokenizer *tok, const char *text)
{
    int32_t *ids = NULL;
    size_t n = 0, k;
    int refused = 0;
    llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n);
    for (k = 0; k < n; k++) refused += llm_constraint_accept(c, ids[k]) < 0;
    free(ids);
    return refused;
}

/*
 * Anchored triggers (tool_choice auto for pythonic / glm4_0414, whose first
 * call can only open the output): the grammar applies when the output opens
 * with the marker (blanks skipped; KEEP: the marker is the grammar's first
 * text), or after an alternative marker anywhere; an output that opens
 * otherwise stays free for good when no alternative can appear.
 */
static void
test_anchored(const llm_tokenizer *tok, llm_gvocab *v)
{
    static const llm_trigger both[2] = {
        { "[", LLM_TRIGGER_ANCHORED | LLM_TRIGGER_KEEP }, { "<|python_start|>", LLM_TRIGGER_OR } };
    static const llm_trigger names[3] = {
        { "</think>", 0 },
        { "get\n", LLM_TRIGGER_ANCHORED | LLM_TRIGGER_KEEP },
        { "get_time\n", LLM_TRIGGER_ANCHORED | LLM_TRIGGER_KEEP | LLM_TRIGGER_OR } };
    const char *re = "\\[[a-z]{1,8}\\(\\)\\]", *re2 = "get(_time)?\n\\{\\}";
    size_t nv = llm_tokenizer_n_vocab(tok);
    int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>"), hello = llm_tokenizer_token_id(tok, "Hello");
    int32_t brace = llm_tokenizer_token_id(tok, "{");
    char err[256];
    llm_grammar *g = llm_grammar_from_regex(re, strlen(re), err, sizeof(err));
    llm_grammar *g2 = llm_grammar_from_regex(re2, strlen(re2), err, sizeof(err));
    llm_gindex *x = g ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    llm_gindex *x2 = g2 ? llm_gindex_create(g2, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    llm_constraint *c;
    const uint64_t *bits = NULL;

    if (!ok(x != NULL && x2 != NULL && hello >= 0 && brace >= 0, "anchored: grammars indexed")) goto out;
    /* the output opens with the marker, after blanks: the grammar applies from it */
    c = llm_constraint_create(x, tok, both, 2);
    is_int(feed(c, tok, " \n"), 0, "anchored: leading blanks are free");
    ok(!llm_constraint_active(c), "anchored: not yet active after blanks");
    is_int(feed(c, tok, "[get"), 0, "anchored: '[' opening the output starts the grammar (kept as its text)");
    ok(llm_constraint_active(c) && llm_constraint_mask(c, (int) nv, &bits) == 0 && bits != NULL
       && !((bits[hello >> 6] >> (hello & 63)) & 1), "anchored: then a token off the grammar is masked");
    is_int(feed(c, tok, "_x()]"), 1, "anchored: text the grammar refuses is refused ('_')");
    llm_constraint_free(c);
    /* the output opens otherwise: free, but the alternative marker still counts anywhere */
    c = llm_constraint_create(x, tok, both, 2);
    is_int(feed(c, tok, "Sure: [not, a] call"), 0, "anchored: an output opening with text stays free");
    ok(!llm_constraint_active(c) && llm_constraint_mask(c, (int) nv, &bits) == 0 && bits == NULL,
       "anchored: no mask while free");
    is_int(feed(c, tok, " then <|python_start|>"), 0, "anchored: the alternative marker anywhere");
    ok(llm_constraint_active(c), "anchored: the grammar applies after the alternative");
    is_int(feed(c, tok, "[ab()]"), 0, "anchored: a valid call after it");
    ok(llm_constraint_complete(c), "anchored: and the grammar is complete");
    llm_constraint_free(c);
    /* only anchored markers (after a reasoning block): once past them, free for good */
    c = llm_constraint_create(x2, tok, names, 3);
    is_int(feed(c, tok, "<think>get\n</think>\nge"), 0, "anchored: a prefix of a name line is still pending");
    ok(!llm_constraint_active(c), "anchored: pending is not active");
    is_int(feed(c, tok, "t_weather\n"), 0, "anchored: a line that is no trigger");
    ok(!llm_constraint_active(c) && llm_constraint_mask(c, (int) nv, &bits) == 0 && bits == NULL
       && feed(c, tok, "get\n{") == 0 && !llm_constraint_active(c), "anchored: free for good after it");
    llm_constraint_free(c);
    c = llm_constraint_create(x2, tok, names, 3);
    is_int(feed(c, tok, "</think>\n\nget_time\n"), 0, "anchored: the longer name line after the block");
    ok(llm_constraint_active(c) && llm_constraint_mask(c, (int) nv, &bits) == 0 && bits != NULL
       && ((bits[brace >> 6] >> (brace & 63)) & 1) && !((bits[hello >> 6] >> (hello & 63)) & 1),
       "anchored: the grammar applies from the name (only '{' may follow)");
    llm_constraint_free(c);
out:
    llm_gindex_free(x);
    llm_gindex_free(x2);
    llm_grammar_free(g);
    llm_grammar_free(g2);
}

int
main(void)
{
    char err[256];
    const char *dir = getenv("TEST_NGINX_TOKENIZERS");
    char path[512];
    llm_tokenizer *tok;
    llm_gvocab *v;

    test_sampler_mask();
    snprintf(path, sizeof(path), "%s/qwen3", dir ? dir : "t/.cache/tokenizers");
    tok = llm_tokenizer_load(path, err, sizeof(err));
    if (tok == NULL) {
        diag("no Qwen3 tokenizer (run t/fetch-tokenizers.sh); generation tests skipped");
        return done_testing();
    }
    {
        int32_t stop = llm_tokenizer_token_id(tok, "<|im_end|>");
        v = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
    }
    ok(v != NULL, "vocabulary of the Qwen3 tokenizer");
    {
        size_t len;
        ok(llm_gvocab_token(v, llm_tokenizer_token_id(tok, "<|im_end|>"), &len) == NULL,
           "special tokens are not in the trie");
        ok(llm_gvocab_token(v, llm_tokenizer_token_id(tok, "<tool_call>"), &len) == NULL,
           "added tokens are not in the trie");
    }
    if (v) test_fast_masks(tok, v);
    test_prewarmed(tok);
    if (v) test_generations(tok, v);
    if (v) test_padded_vocab(tok, v);
    if (v) test_triggers(tok, v);
    if (v) test_anchored(tok, v);
    llm_gvocab_free(v);
    llm_tokenizer_free(tok);
    return done_testing();
}
