/*
 * Structured output (see llm_structured.h): a request's constraints become
 * one grammar, compiled once per distinct request shape and kept in a small
 * LRU cache with its index (so the masks and the automaton it grew serve
 * later requests with the same schema or tools).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_structured.h"
#include "engine/llm_constrain.h"
#include "parsers/llm_pgrammar.h"

#define CACHE_MAX 32
#define REASONING_OPEN  "<think>"
#define REASONING_CLOSE "</think>"

typedef struct {
    char        *key;
    llm_gindex  *x;              /* one reference; the index owns its grammar */
    uint64_t     used;
} entry;

struct llm_structured {
    const llm_tokenizer *tok;
    llm_gvocab          *v;
    int32_t             *stop;
    size_t               n_stop;
    int32_t             *added;      /* ids of added tokens (marker candidates) */
    size_t               n_added;
    entry                cache[CACHE_MAX];
    uint64_t             clock;
};

llm_structured *
llm_structured_create(const llm_tokenizer *tok, const int32_t *stop_ids, size_t n_stop,
                      char *err, size_t errlen)
{
    llm_structured *s = calloc(1, sizeof(*s));
    size_t n = llm_tokenizer_n_vocab(tok), i;

    if (s == NULL) goto oom;
    s->tok = tok;
    s->stop = malloc((n_stop + 1) * sizeof(int32_t));
    s->added = malloc((n + 1) * sizeof(int32_t));
    if (!s->stop || !s->added) goto oom;
    if (n_stop) memcpy(s->stop, stop_ids, n_stop * sizeof(int32_t));
    s->n_stop = n_stop;
    for (i = 0; i < n; i++) {
        if (llm_tokenizer_is_added(tok, (int32_t) i)) s->added[s->n_added++] = (int32_t) i;
    }
    s->v = llm_constrain_vocab(tok, s->stop, s->n_stop, err, errlen);
    if (s->v == NULL) {
        llm_structured_free(s);
        return NULL;
    }
    /* the JSON building blocks walked now, so that a schema's first masks
     * need no walk of the vocabulary; on failure they are walked on first
     * use instead */
    (void) llm_gvocab_prewarm(s->v, err, errlen);
    return s;
oom:
    snprintf(err, errlen, "out of memory");
    llm_structured_free(s);
    return NULL;
}

void
llm_structured_free(llm_structured *s)
{
    size_t i;
    if (s == NULL) return;
    for (i = 0; i < CACHE_MAX; i++) {
        llm_gindex_free(s->cache[i].x);
        free(s->cache[i].key);
    }
    llm_gvocab_free(s->v);
    free(s->stop);
    free(s->added);
    free(s);
}

const llm_gvocab *
llm_structured_vocab(const llm_structured *s)
{
    return s->v;
}

size_t
llm_structured_cached(const llm_structured *s)
{
    size_t i, n = 0;
    for (i = 0; i < CACHE_MAX; i++) n += s->cache[i].x != NULL;
    return n;
}

/* ---- the grammar of a request ---- */

typedef struct {
    int         kind;            /* what the grammar is for */
    const char *param;           /* request parameter blamed for errors */
    int         lazy_tools;      /* tool_choice auto: starts at the trigger */
    int         anchored;        /* (lazy) the trigger opens the output: the
                                    grammar starts at it (llm_tool_grammar_anchored) */
    int         think_prefix;    /* the model may write a reasoning block first */
    const char *parser;
} plan_shape;

enum { K_NONE = 0, K_JSON, K_GBNF, K_REGEX, K_TOOLS };

static int
build_body(llm_gbuild *b, const llm_request *req, const plan_shape *ps,
           char *err, size_t errlen)
{
    switch (ps->kind) {
    case K_JSON: {
        const json_t *js = json_object_get(req->response_format, "json_schema");
        const char *t = json_string_value(json_object_get(req->response_format, "type"));
        return llm_gbuild_json_schema(b, t && strcmp(t, "json_schema") == 0
                                      ? json_object_get(js, "schema") : NULL, err, errlen);
    }
    case K_GBNF:
        return llm_gbuild_gbnf(b, req->grammar, strlen(req->grammar), err, errlen);
    case K_REGEX:
        return llm_gbuild_regex(b, req->regex, strlen(req->regex), err, errlen);
    case K_TOOLS: {
        llm_tool_grammar_spec spec;
        int calls, root;
        llm_gseq *s;
        spec.parser_id = ps->parser;
        spec.tools = req->tools;
        spec.only = req->tool_choice == LLM_TOOL_CHOICE_NAMED ? req->tool_choice_name : NULL;
        spec.parallel = req->parallel_tool_calls;
        calls = llm_tool_grammar(b, &spec, err, errlen);
        if (calls < 0 || (ps->lazy_tools && !ps->anchored)) return calls;
        /* required / named, and an anchored auto: the opening marker first */
        s = llm_gseq_new();
        root = llm_gbuild_rule(b, "tool-calls");
        if (s == NULL || root < 0) { llm_gseq_free(s); return -1; }
        {
            const char *open = llm_tool_grammar_trigger(ps->parser);
            llm_gseq_bytes(b, s, open, strlen(open));
        }
        llm_gseq_ref(s, calls);
        if (llm_gbuild_define(b, root, s) < 0) root = -1;
        llm_gseq_free(s);
        return root;
    }
    }
    return -1;
}

/* root ::= ("<think>" text "</think>")? ws body   or   ws body */
static llm_grammar *
build(const llm_request *req, const plan_shape *ps, int after_reasoning, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    llm_gseq *s = llm_gseq_new();
    llm_grammar *g = NULL;
    int body, root, ws;
    static const uint8_t nl_sp[32] = { [1] = 0x04, [4] = 0x01 };   /* '\n', ' ' */

    if (b == NULL || s == NULL) goto out;
    body = build_body(b, req, ps, err, errlen);
    if (body < 0) goto out;
    if (ps->lazy_tools) {
        g = llm_gbuild_finish(b, body, err, errlen);
        goto out;
    }
    /* blank lines a template or the model puts before the answer */
    ws = llm_gbuild_rule(b, "blank");
    if (ws < 0 || llm_gseq_class(b, s, nl_sp) < 0 || llm_gbuild_define(b, ws, s) < 0) goto out;
    ws = llm_gbuild_repeat(b, ws, 0, after_reasoning ? 4 : 0);
    root = llm_gbuild_rule(b, "root");
    llm_gseq_clear(s);
    if (ws < 0 || root < 0) goto out;
    if (ps->think_prefix) {
        int text = llm_gbuild_text_until(b, REASONING_CLOSE, strlen(REASONING_CLOSE));
        int think = llm_gbuild_rule(b, "reasoning"), opt, ws2;
        llm_gseq *t = llm_gseq_new();
        if (t == NULL || text < 0 || think < 0) { llm_gseq_free(t); goto out; }
        ws2 = llm_gbuild_rule(b, "blank2");
        llm_gseq_class(b, t, nl_sp);
        llm_gbuild_define(b, ws2, t);
        ws2 = llm_gbuild_repeat(b, ws2, 0, 4);
        llm_gseq_clear(t);
        llm_gseq_bytes(b, t, REASONING_OPEN, strlen(REASONING_OPEN));
        llm_gseq_ref(t, text);
        llm_gseq_bytes(b, t, REASONING_CLOSE, strlen(REASONING_CLOSE));
        llm_gseq_ref(t, ws2);
        llm_gbuild_define(b, think, t);
        llm_gseq_free(t);
        opt = llm_gbuild_repeat(b, think, 0, 1);
        llm_gseq_ref(s, opt);
    }
    llm_gseq_ref(s, ws);
    llm_gseq_ref(s, body);
    if (llm_gbuild_define(b, root, s) < 0) goto out;
    g = llm_gbuild_finish(b, root, err, errlen);
out:
    if (g == NULL && err && err[0] == 0) snprintf(err, errlen, "out of memory");
    llm_gseq_free(s);
    llm_gbuild_free(b);
    return g;
}

/* added tokens whose text occurs in the format's markers (or the reasoning
 * markers): the grammar may need them as single tokens */
static size_t
marker_ids(llm_structured *s, const plan_shape *ps, int32_t *out, size_t max)
{
    const char *mk[12];
    size_t n_mk = 0, i, k, n = 0;

    if (ps->kind == K_TOOLS) n_mk = llm_tool_grammar_markers(ps->parser, mk, 10);
    if (ps->think_prefix) { mk[n_mk++] = REASONING_OPEN; mk[n_mk++] = REASONING_CLOSE; }
    for (i = 0; i < s->n_added && n < max; i++) {
        const char *piece = llm_tokenizer_piece(s->tok, s->added[i]);
        size_t j;
        int is_stop = 0;
        if (piece == NULL || piece[0] == 0) continue;
        for (j = 0; j < s->n_stop; j++) if (s->stop[j] == s->added[i]) is_stop = 1;
        if (is_stop) continue;
        for (k = 0; k < n_mk; k++) {
            if (strstr(mk[k], piece) != NULL) { out[n++] = s->added[i]; break; }
        }
    }
    return n;
}

static llm_gindex *
cache_get(llm_structured *s, const char *key)
{
    size_t i;
    for (i = 0; i < CACHE_MAX; i++) {
        if (s->cache[i].key && strcmp(s->cache[i].key, key) == 0) {
            s->cache[i].used = ++s->clock;
            return s->cache[i].x;
        }
    }
    return NULL;
}

/* Takes key; the least recently used entry makes room (requests using it
 * keep their own references). */
static void
cache_put(llm_structured *s, char *key, llm_gindex *x)
{
    size_t i, pick = 0;
    for (i = 0; i < CACHE_MAX; i++) {
        if (s->cache[i].key == NULL) { pick = i; break; }
        if (s->cache[i].used < s->cache[pick].used) pick = i;
    }
    if (s->cache[pick].key) {
        llm_gindex_free(s->cache[pick].x);
        free(s->cache[pick].key);
    }
    s->cache[pick].key = key;
    s->cache[pick].x = x;
    llm_gindex_retain(x);
    s->cache[pick].used = ++s->clock;
}

static int
add_trigger(llm_structured_plan *plan, const char *text, unsigned flags)
{
    llm_trigger *t = realloc(plan->triggers, (plan->n_triggers + 1) * sizeof(*t));
    if (t == NULL) return -1;
    plan->triggers = t;
    t[plan->n_triggers].text = strdup(text);
    t[plan->n_triggers].flags = flags;
    if (t[plan->n_triggers].text == NULL) return -1;
    plan->n_triggers++;
    return 0;
}

/*
 * The markers before the grammar applies: the close of the reasoning block
 * the prompt opened; then, for tool_choice auto, the format's trigger --
 * anywhere in the text, or for a format whose first call can only open the
 * output, that opening (each tool's name line when the format has no
 * opening marker; the grammar starts at it) or the format's reopen marker.
 */
static int
plan_triggers(llm_structured_plan *plan, const llm_request *req, const plan_shape *ps,
              int after_reasoning)
{
    size_t i, first;
    const char *re;

    if (after_reasoning && add_trigger(plan, REASONING_CLOSE, 0) < 0) return -1;
    if (!ps->lazy_tools) return 0;
    if (!ps->anchored) return add_trigger(plan, llm_tool_grammar_trigger(ps->parser), 0);
    first = plan->n_triggers;
    for (i = 0; i < json_array_size(req->tools); i++) {
        const json_t *t = json_array_get(req->tools, i), *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn ? fn : t, "name"));
        char open[256];
        size_t k;
        int dup = 0;
        if (name == NULL || llm_tool_grammar_opening(ps->parser, name, open, sizeof(open)) < 0) continue;
        for (k = first; k < plan->n_triggers; k++) dup |= strcmp(plan->triggers[k].text, open) == 0;
        if (dup) continue;
        if (add_trigger(plan, open, LLM_TRIGGER_ANCHORED | LLM_TRIGGER_KEEP
                        | (plan->n_triggers > first ? LLM_TRIGGER_OR : 0)) < 0) return -1;
    }
    re = llm_tool_grammar_reopen(ps->parser);
    if (re && add_trigger(plan, re, plan->n_triggers > first ? LLM_TRIGGER_OR : 0) < 0) return -1;
    return 0;
}

int
llm_structured_prepare(llm_structured *s, const llm_request *req,
                       const char *tool_parser, const char *reasoning_parser,
                       int starts_in_reasoning, llm_structured_plan *plan,
                       char *err, size_t errlen, const char **param)
{
    plan_shape ps;
    const char *rft = req->response_format
        ? json_string_value(json_object_get(req->response_format, "type")) : NULL;
    int think = reasoning_parser != NULL && strcmp(reasoning_parser, "think") == 0
                && req->reasoning != 0;
    char *key = NULL, *dump = NULL;
    size_t klen;
    llm_grammar *g;
    llm_gindex *x;
    int32_t extra[64];
    size_t n_extra;

    memset(plan, 0, sizeof(*plan));
    memset(&ps, 0, sizeof(ps));
    *param = NULL;
    err[0] = 0;
    ps.parser = tool_parser;
    if (req->tools && json_array_size(req->tools) > 0
        && (req->tool_choice == LLM_TOOL_CHOICE_REQUIRED || req->tool_choice == LLM_TOOL_CHOICE_NAMED))
    {
        ps.kind = K_TOOLS;
        ps.param = "tool_choice";
        if (!llm_tool_grammar_supported(tool_parser)) {
            /* no tool parser, or one without a grammar: served by the
             * prompt alone (docs/api.md) */
            return 0;
        }
    } else if (req->grammar) {
        ps.kind = K_GBNF; ps.param = "grammar";
    } else if (req->regex) {
        ps.kind = K_REGEX; ps.param = "regex";
    } else if (rft && strcmp(rft, "text") != 0) {
        ps.kind = K_JSON; ps.param = "response_format";
    } else if (req->tools && json_array_size(req->tools) > 0 && req->tool_choice == LLM_TOOL_CHOICE_AUTO
               && llm_tool_grammar_lazy(tool_parser)) {
        ps.kind = K_TOOLS; ps.param = "tools"; ps.lazy_tools = 1;
    } else {
        return 0;
    }
    /* reasoning stays free: after the prompt's open block, or a block the model opens */
    if (think && !starts_in_reasoning && !ps.lazy_tools) ps.think_prefix = 1;
    if (ps.lazy_tools) ps.anchored = llm_tool_grammar_anchored(tool_parser);
    if (plan_triggers(plan, req, &ps, think && starts_in_reasoning) < 0) goto oom;

    /* cache key: the shape and the JSON it was built from, in its order */
    dump = ps.kind == K_TOOLS ? json_dumps(req->tools, JSON_COMPACT | JSON_PRESERVE_ORDER)
         : ps.kind == K_JSON ? json_dumps(req->response_format, JSON_COMPACT | JSON_PRESERVE_ORDER)
         : strdup(ps.kind == K_GBNF ? req->grammar : req->regex);
    if (dump == NULL) goto oom;
    klen = strlen(dump) + 256;
    key = malloc(klen);
    if (key == NULL) goto oom;
    snprintf(key, klen, "%d|%s|%d|%d|%d|%d|%s|%d|%s", ps.kind, tool_parser ? tool_parser : "",
             ps.lazy_tools, ps.think_prefix, plan->n_triggers > 0 && !ps.lazy_tools,
             (int) req->tool_choice, req->tool_choice == LLM_TOOL_CHOICE_NAMED && req->tool_choice_name
             ? req->tool_choice_name : "", req->parallel_tool_calls, dump);
    free(dump);
    dump = NULL;
    x = cache_get(s, key);
    if (x != NULL) {
        free(key);
        llm_gindex_retain(x);
        plan->index = x;
        return 0;
    }
    g = build(req, &ps, think && starts_in_reasoning, err, errlen);
    if (g == NULL) {
        /* tool_choice auto too: a call the model starts must be enforced,
         * so a tool list that cannot be is refused, never served weaker */
        free(key);
        llm_structured_release(s, plan);
        *param = ps.param;
        return -1;
    }
    n_extra = marker_ids(s, &ps, extra, sizeof(extra) / sizeof(extra[0]));
    x = llm_gindex_create(g, s->v, s->stop, s->n_stop, extra, n_extra, err, errlen);
    if (x == NULL) {
        llm_grammar_free(g);
        free(key);
        llm_structured_release(s, plan);
        *param = ps.param;
        return -1;
    }
    llm_gindex_adopt(x, g);
    cache_put(s, key, x);     /* the cache's reference; the plan keeps the first */
    plan->index = x;
    return 0;
oom:
    free(dump);
    free(key);
    llm_structured_release(s, plan);
    snprintf(err, errlen, "out of memory");
    return -1;
}

void
llm_structured_release(llm_structured *s, llm_structured_plan *plan)
{
    size_t i;
    (void) s;
    if (plan->index) llm_gindex_free(plan->index);
    plan->index = NULL;
    for (i = 0; i < plan->n_triggers; i++) free((char *) plan->triggers[i].text);
    free(plan->triggers);
    plan->triggers = NULL;
    plan->n_triggers = 0;
}
