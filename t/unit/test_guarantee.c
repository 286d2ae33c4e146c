/*
 * The structured-output guarantee, end to end below the glue: for every
 * native tool-call format with a grammar and 22 real tool APIs
 * (t/fixtures/tools/real-tools.json), generations drawn from random logits
 * (a random-weight model: the worst case) at temperature 1.0 and 1.5
 * through the request path the server uses (llm_structured_prepare ->
 * llm_constraint -> sampler), decoded with the real Qwen3 tokenizer, then
 * read back by the family's own parser (llm_stream) and the arguments
 * checked against the tool's schema by an independent checker
 * (jschema_check.h).  response_format json_schema with the same schemas too.
 *
 * Every generation that ends must be valid; one cut by the token budget is
 * counted apart (any output can be cut by max_tokens).
 *
 * make test runs a sample (each format with a quarter of the tools, one
 * temperature each, rotating so every tool and both temperatures are
 * covered); LLM_GUARANTEE_RUNS=N runs every (format, tool, temperature) N
 * times, LLM_GUARANTEE_ONLY=<format|json_schema> one part (`make guarantee`
 * runs the parts in parallel).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "jschema_check.h"
#include "chat/llm_structured.h"
#include "engine/llm_constrain.h"
#include "engine/llm_engine.h"
#include "parsers/llm_stream.h"

static int MAX_TOKENS = 1500;   /* 600 in the make test sample */

static const char *formats[] = { "hermes", "llama3_json", "mistral", "deepseek_v3", "harmony",
                                 "qwen3_coder", "glm4", "pythonic", "glm4_0414", NULL };

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static void
random_logits(float *l, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        l[k] = (float) ((rng >> 40) & 0xFFFF) / 8192.0f;
    }
}

static void
no_events(void *ctx, const llm_event *ev)
{
    (void) ctx; (void) ev;
}

typedef struct {
    long finished, cut, invalid, parse_fail, tokens, generations, refused;
} tally;

/* one generation; returns the text (malloc'd) or NULL when cut */
static char *
generate(llm_structured *st, const llm_tokenizer *tok, const llm_request *req,
         const char *parser, const char *lead, float temp, uint64_t seed, float *logits, tally *t)
{
    llm_structured_plan plan;
    llm_sampler_params p;
    llm_sampler *sm;
    llm_constraint *c;
    char err[256];
    const char *param;
    size_t nv = llm_tokenizer_n_vocab(tok);
    int32_t *ids = malloc((MAX_TOKENS + 64) * sizeof(int32_t)), forced[32];
    int n = 0, k;
    char *text = NULL;
    size_t len;

    if (llm_structured_prepare(st, req, parser, NULL, 0, &plan, err, sizeof(err), &param) != 0
        || plan.index == NULL) {
        /* a 400 for the request, naming what the format cannot carry */
        printf("# refused (%s): %s\n", parser, err);
        free(ids);
        t->refused++;
        return NULL;
    }
    llm_sampler_params_default(&p);
    p.temperature = temp;
    p.has_seed = 1;
    p.seed = seed;
    sm = llm_sampler_create(&p, (int) nv);
    c = llm_constraint_create(plan.index, tok, plan.triggers, plan.n_triggers);
    t->generations++;
    if (lead) {
        /* text the model wrote first (tool_choice auto: the format's opening) */
        int32_t *enc = NULL;
        size_t n_enc = 0, e;
        llm_tokenizer_encode(tok, lead, strlen(lead), 0, &enc, &n_enc);
        for (e = 0; e < n_enc; e++) {
            if (llm_constraint_accept(c, enc[e]) < 0) t->invalid++;
            ids[n++] = enc[e];
        }
        free(enc);
        if (!llm_constraint_active(c)) {
            t->invalid++;
            printf("# %s: the grammar does not apply after '%s'\n", parser, lead);
        }
    }
    while (n < MAX_TOKENS && !llm_constraint_done(c)) {
        int32_t id;
        int nf = llm_constraint_forced(c, forced, 32);
        for (k = 0; k < nf; k++) ids[n++] = forced[k];
        random_logits(logits, nv);
        id = llm_constraint_sample(c, sm, logits, NULL, 0);
        if (id < 0 || llm_constraint_accept(c, id) < 0) {
            t->invalid++;
            printf("# %s: the grammar refused its own pick after %d tokens\n", parser, n);
            break;
        }
        if (!llm_constraint_done(c)) ids[n++] = id;
    }
    t->tokens += n;
    if (llm_constraint_done(c)) {
        t->finished++;
        llm_tokenizer_decode(tok, ids, (size_t) n, 0, &text, &len);
    } else {
        t->cut++;
    }
    llm_constraint_free(c);
    llm_sampler_free(sm);
    llm_structured_release(st, &plan);
    free(ids);
    return text;
}

/* the family's parser reads the calls back; each must be valid */
static void
check_calls(const char *text, const char *parser, const json_t *tools, const char *want,
            tally *t)
{
    llm_stream_config sc;
    llm_stream *s;
    llm_result res;
    size_t i, k;

    memset(&sc, 0, sizeof(sc));
    memset(&res, 0, sizeof(res));
    sc.tool = llm_tool_parser_find(parser);
    sc.tools = tools;
    sc.parallel_tool_calls = 1;
    s = llm_stream_create(&sc);
    llm_stream_feed(s, text, strlen(text), no_events, NULL);
    llm_stream_finish(s, LLM_FINISH_STOP, no_events, NULL, &res);
    if (res.n_tool_calls == 0) {
        if (t->parse_fail++ < 3) printf("# %s: no call parsed from: %.300s\n", parser, text);
    }
    for (i = 0; i < res.n_tool_calls; i++) {
        const json_t *params = NULL;
        json_t *args = json_loads(res.tool_calls[i].arguments, JSON_DECODE_ANY, NULL);
        for (k = 0; k < json_array_size(tools); k++) {
            const json_t *fn = json_object_get(json_array_get(tools, k), "function");
            if (strcmp(json_string_value(json_object_get(fn, "name")), res.tool_calls[i].name) == 0)
                params = json_object_get(fn, "parameters");
        }
        if (params == NULL || (want && strcmp(want, res.tool_calls[i].name) != 0)
            || args == NULL || !jsc_valid(args, params, params)) {
            if (t->invalid++ < 5)
                printf("# %s: invalid call %s(%s): %s\n#   from: %.400s\n", parser, res.tool_calls[i].name,
                       res.tool_calls[i].arguments, args ? jsc_why : "not JSON", text);
        }
        json_decref(args);
    }
    llm_result_free(&res);
    llm_stream_destroy(s);
}

int
main(void)
{
    char err[256], path[512];
    const char *dir = getenv("TEST_NGINX_TOKENIZERS"), *fix = getenv("TEST_NGINX_FIXTURES");
    const char *runs_env = getenv("LLM_GUARANTEE_RUNS");
    const char *only = getenv("LLM_GUARANTEE_ONLY");
    int full = runs_env != NULL, runs = runs_env ? atoi(runs_env) : 1, f, r, ti;
    llm_tokenizer *tok;
    llm_structured *st;
    json_t *tools;
    int32_t stop[2];
    float *logits;
    static const float temps[2] = { 1.0f, 1.5f };
    tally all = {0};

    if (!full) MAX_TOKENS = 600;
    snprintf(path, sizeof(path), "%s/qwen3", dir ? dir : "t/.cache/tokenizers");
    tok = llm_tokenizer_load(path, err, sizeof(err));
    if (tok == NULL) return skip_all("no Qwen3 tokenizer (t/fetch-tokenizers.sh)");
    snprintf(path, sizeof(path), "%s/tools/real-tools.json", fix ? fix : "t/fixtures");
    tools = json_load_file(path, 0, NULL);
    if (!ok(json_array_size(tools) >= 20, "%zu real tool schemas", json_array_size(tools))) return done_testing();
    stop[0] = llm_tokenizer_token_id(tok, "<|im_end|>");
    stop[1] = llm_tokenizer_token_id(tok, "<|endoftext|>");
    st = llm_structured_create(tok, stop, 2, err, sizeof(err));
    logits = malloc(llm_tokenizer_n_vocab(tok) * sizeof(float));

    for (f = 0; formats[f]; f++) {
        tally t = {0};
        size_t i;
        if (only && strcmp(only, formats[f]) != 0) continue;
        for (i = 0; i < json_array_size(tools); i++) {
            const json_t *fn = json_object_get(json_array_get(tools, i), "function");
            if (!full && (i + (size_t) f) % 4 != 0) continue;
            for (ti = 0; ti < 2; ti++) {
                if (!full && (int) ((i / 4 + (size_t) f) % 2) != ti) continue;
                for (r = 0; r < runs; r++) {
                    llm_request req;
                    char *text;
                    llm_request_init(&req);
                    req.tools = json_incref(tools);
                    req.tool_choice = LLM_TOOL_CHOICE_NAMED;
                    req.tool_choice_name = strdup(json_string_value(json_object_get(fn, "name")));
                    req.parallel_tool_calls = strcmp(formats[f], "harmony") != 0 && (r & 1);
                    text = generate(st, tok, &req, formats[f], NULL, temps[ti],
                                    (uint64_t) (f * 100000 + i * 1000 + ti * 100 + r), logits, &t);
                    if (text) check_calls(text, formats[f], tools, req.tool_choice_name, &t);
                    free(text);
                    llm_request_free(&req);
                }
            }
        }
        printf("# %s: %ld generations, %ld finished, %ld cut at %d tokens, %ld tokens, %ld requests refused\n",
               formats[f], t.generations, t.finished, t.cut, MAX_TOKENS, t.tokens, t.refused);
        if (f < 5) is_int(t.refused, 0, "%s: every tool's schema can be enforced", formats[f]);
        is_int(t.invalid, 0, "%s: every finished call is valid for its schema (%ld)", formats[f], t.finished);
        is_int(t.parse_fail, 0, "%s: the family's parser reads every finished output as a call", formats[f]);
        ok(t.finished > 0, "%s: generations finish", formats[f]);
        all.generations += t.generations; all.finished += t.finished; all.cut += t.cut;
        all.invalid += t.invalid; all.parse_fail += t.parse_fail;
    }
    if (only == NULL || strcmp(only, "auto") == 0) {
        /* tool_choice auto in the formats whose first call opens the output
         * (anchored triggers): once the output opens with the call's
         * opening, random sampling must finish with a valid call */
        static const char *anchored[] = { "pythonic", "glm4_0414", NULL };
        tally t = {0};
        size_t i;
        for (f = 0; anchored[f]; f++) {
            for (i = 0; i < json_array_size(tools); i++) {
                const json_t *tool = json_array_get(tools, i);
                const char *name = json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
                char lead[300];
                llm_request req;
                char *text;
                if (!full && (i + (size_t) f) % 3 != 0) continue;
                snprintf(lead, sizeof(lead), "%s", f == 0 ? "[" : name);
                if (f == 1) strncat(lead, "\n", sizeof(lead) - strlen(lead) - 1);
                llm_request_init(&req);
                req.tools = json_pack("[O]", tool);
                req.tool_choice = LLM_TOOL_CHOICE_AUTO;
                req.parallel_tool_calls = 1;
                text = generate(st, tok, &req, anchored[f], lead, temps[i % 2], (uint64_t) (f * 7 + i * 131), logits, &t);
                if (text) check_calls(text, anchored[f], req.tools, name, &t);
                free(text);
                llm_request_free(&req);
            }
        }
        printf("# auto (pythonic, glm4_0414): %ld generations, %ld finished, %ld cut, %ld refused\n",
               t.generations, t.finished, t.cut, t.refused);
        is_int(t.invalid, 0, "auto, anchored formats: every call opened is finished valid (%ld)", t.finished);
        is_int(t.parse_fail, 0, "auto, anchored formats: the parser reads every finished output as a call");
        ok(t.finished > 0, "auto, anchored formats: generations finish");
        all.generations += t.generations; all.finished += t.finished; all.cut += t.cut;
        all.invalid += t.invalid; all.parse_fail += t.parse_fail;
    }
    if (only == NULL || strcmp(only, "json_schema") == 0) {
        /* response_format json_schema with each tool's parameters */
        tally t = {0};
        size_t i;
        for (i = 0; i < json_array_size(tools); i++) {
            const json_t *params = json_object_get(json_object_get(json_array_get(tools, i), "function"), "parameters");
            if (!full && i % 4 != 1) continue;
            for (ti = 0; ti < 2; ti++) {
                if (!full && (int) ((i / 4) % 2) != ti) continue;
                for (r = 0; r < runs; r++) {
                    llm_request req;
                    char *text;
                    json_t *v;
                    llm_request_init(&req);
                    req.response_format = json_pack("{s:s, s:{s:s, s:O}}", "type", "json_schema",
                                                    "json_schema", "name", "x", "schema", params);
                    text = generate(st, tok, &req, NULL, NULL, temps[ti], (uint64_t) (i * 7919 + ti * 31 + r), logits, &t);
                    if (text) {
                        v = json_loads(text, JSON_DECODE_ANY, NULL);
                        if (v == NULL || !jsc_valid(v, params, params)) {
                            if (t.invalid++ < 5) printf("# json_schema: invalid (%s): %.300s\n", v ? jsc_why : "not JSON", text);
                        }
                        json_decref(v);
                    }
                    free(text);
                    llm_request_free(&req);
                }
            }
        }
        printf("# response_format: %ld generations, %ld finished, %ld cut\n", t.generations, t.finished, t.cut);
        is_int(t.invalid, 0, "response_format json_schema: every finished output is valid (%ld)", t.finished);
        is_int(t.refused, 0, "response_format json_schema: every schema can be enforced");
        all.generations += t.generations; all.finished += t.finished; all.cut += t.cut; all.invalid += t.invalid;
    }
    printf("# total: %ld generations, %ld finished (all valid: %s), %ld cut at %d tokens\n",
           all.generations, all.finished, all.invalid == 0 && all.parse_fail == 0 ? "yes" : "NO",
           all.cut, MAX_TOKENS);
    free(logits);
    llm_structured_free(st);
    json_decref(tools);
    llm_tokenizer_free(tok);
    return done_testing();
}
