/*
 * The models a server serves (chat/llm_served_set.h), without nginx: the
 * model a request names (llm_any_model included), what the request
 * preparation gets of it, GET /v1/models and /health over every model, what
 * a model gives a generation (the parsers, the grammars built once), a
 * model's scheduler configuration with the disk tier, and the memory check
 * naming the llm_model line that takes a configuration over its limit.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "chat/llm_served_set.h"

#define FIX "t/fixtures/models/qwen3_f32"

#define GETS(o, k)  json_string_value(json_object_get((o), (k)))
#define GETI(o, k)  json_integer_value(json_object_get((o), (k)))

static void
test_find(llm_served_model *m)
{
    llm_prepare_model  pm;

    ok(llm_served_find(m, 2, "big", 0) == &m[1], "the model named");
    ok(llm_served_find(m, 2, "bi", 0) == NULL, "a prefix of an alias names none");
    ok(llm_served_find(m, 2, "tiny-x", 0) == NULL, "nor does a longer name");
    ok(llm_served_find(m, 2, "", 0) == NULL && llm_served_find(m, 2, NULL, 0) == NULL,
       "two models: naming none finds none");
    ok(llm_served_find(m, 1, "", 0) == &m[0] && llm_served_find(m, 1, NULL, 0) == &m[0],
       "one model answers requests that name none");
    ok(llm_served_find(m, 1, "gpt-4o", 0) == NULL, "an unknown name: none");
    ok(llm_served_find(m, 1, "gpt-4o", 1) == &m[0], "llm_any_model: the only model answers it");
    ok(llm_served_find(m, 2, "gpt-4o", 1) == NULL, "llm_any_model with two models: none");
    ok(llm_served_find(m, 2, "tiny", 1) == &m[0], "llm_any_model: a known name is still that model");

    memset(&pm, 0, sizeof(pm));
    ok(llm_served_pick(m, 2, "big", 0, &pm) == 0 && pm.owner == &m[1]
       && strcmp(pm.alias, "big") == 0 && pm.model == m[1].served.model
       && pm.tok == m[1].served.tok && pm.context_length == 8192,
       "picked for the preparation: owner, alias, model, tokenizer, context");
    ok(llm_served_pick(m, 2, "nope", 0, &pm) == -1, "picking an unknown name fails");
}

static void
test_answers(llm_served_model *m)
{
    int             unavailable;
    json_t         *v, *d;
    llm_api_error   err;

    v = llm_served_models_get(m, 2, 1000, "/v1/models", 10, 0, &err);
    d = json_object_get(v, "data");
    ok(json_array_size(d) == 2 && strcmp(GETS(json_array_get(d, 0), "id"), "tiny") == 0
       && strcmp(GETS(json_array_get(d, 1), "id"), "big") == 0, "the list: every model, in order");
    is_int(GETI(json_array_get(d, 0), "max_output_tokens"), 64,
           "llm_max_tokens above a context: that context");
    is_int(GETI(json_array_get(d, 1), "max_output_tokens"), 1000,
           "llm_max_tokens below a context: llm_max_tokens");
    is_int(GETI(json_array_get(d, 1), "created"), 86400, "created as configured");
    json_decref(v);
    v = llm_served_models_get(m, 2, 0, "/v1/models", 10, 0, &err);
    is_int(GETI(json_array_get(json_object_get(v, "data"), 1), "max_output_tokens"), 8192,
           "no llm_max_tokens: the context");
    json_decref(v);
    v = llm_served_models_get(m, 2, 0, "/v1/models/big", 14, 1, &err);
    ok(v && strcmp(GETS(v, "id"), "big") == 0 && strcmp(GETS(v, "type"), "model") == 0,
       "one model by id, in Anthropic's shape");
    json_decref(v);
    v = llm_served_models_get(m, 2, 0, "/v1/models/nope", 15, 0, &err);
    ok(v == NULL && err.status == 404, "an unknown id: 404");

    v = llm_served_health(m, 2, 42, &unavailable);
    d = json_object_get(v, "models");
    ok(v && unavailable && json_array_size(d) == 2 && GETI(v, "pid") == 42,
       "/health: every model; one without a scheduler makes it unavailable");
    is_int(GETI(json_array_get(d, 1), "parallel"), 3, "a model's parallel");
    is_int(GETI(json_array_get(d, 1), "context_length"), 8192, "a model's context");
    json_decref(v);
}

/* What a model gives a generation: its parts, the parsers, the grammars. */
static void
test_generation(llm_served_model *m)
{
    char                   err[512] = "";
    llm_parser_choice      tool_auto, tool_none, tool_id, reasoning_auto;
    llm_structured        *built;
    llm_generation_config  cfg;

    llm_parser_choose(LLM_PARSER_TOOL, "auto", 4, &tool_auto);
    llm_parser_choose(LLM_PARSER_TOOL, "none", 4, &tool_none);
    llm_parser_choose(LLM_PARSER_TOOL, "hermes", 6, &tool_id);
    llm_parser_choose(LLM_PARSER_REASONING, "auto", 4, &reasoning_auto);
    /* the model's own tool parser, then the location's */
    llm_parser_choose(LLM_PARSER_TOOL, "llama3_json", 11, &tool_id);
    m->served.tool_def = tool_id.def;
    llm_parser_choose(LLM_PARSER_TOOL, "hermes", 6, &tool_id);

    memset(&cfg, 0x5a, sizeof(cfg));
    ok(m->structured == NULL
       && llm_served_generation(m, &tool_auto, &reasoning_auto, &cfg, err, sizeof(err)) == 0,
       "a generation's configuration (%s)", err);
    ok(cfg.structured != NULL && cfg.structured == m->structured,
       "the structured-output state built on first use, kept in the model");
    ok(cfg.tok == m->served.tok && cfg.info == llm_model_get_info(m->served.model)
       && cfg.sched == m->sched && strcmp(cfg.model, m->alias) == 0,
       "the model's tokenizer, info, scheduler and alias");
    ok(cfg.tool == m->served.tool_def && cfg.reasoning == m->served.reasoning_def,
       "auto: the model's parsers");
    ok(cfg.max_tokens == 0 && cfg.max_response_size == 0 && cfg.fingerprint == NULL
       && cfg.thinking_key == NULL, "the server's own fields are cleared for the caller");
    built = m->structured;
    ok(llm_served_generation(m, &tool_none, &reasoning_auto, &cfg, err, sizeof(err)) == 0
       && cfg.structured == built, "a second request: the same state, not built again");
    ok(cfg.tool == NULL, "none: no tool parser");
    ok(llm_served_generation(m, &tool_id, &reasoning_auto, &cfg, err, sizeof(err)) == 0
       && cfg.tool == tool_id.def && cfg.tool != m->served.tool_def && strcmp(cfg.tool->id, "hermes") == 0,
       "a location's parser over the model's");
}

int
main(void)
{
    char              err[1024], msg[1024];
    llm_model        *model;
    llm_sched_config  cfg;
    llm_served_disk   disk = { NULL, 0 }, tier = { "/var/cache/kv", 1u << 20 };
    llm_served_model  m[2];

    model = llm_model_load(FIX, err, sizeof(err));
    if (!ok(model != NULL, "fixture model loads")) {
        printf("# %s\n", err);
        return done_testing();
    }

    memset(m, 0, sizeof(m));
    m[0].alias = "tiny";
    m[0].alias_len = 4;
    m[0].served.model = model;
    m[0].served.n_ctx = 64;
    m[0].opts.parallel = 2;
    m[0].opts.queue = 8;
    m[0].opts.threads = 1;
    m[0].opts.kv = LLM_KV_F32;
    m[0].conf_file = "/etc/nginx/nginx.conf";
    m[0].conf_line = 12;
    m[1] = m[0];
    m[1].alias = "big";
    m[1].alias_len = 3;
    m[1].served.n_ctx = 8192;
    m[1].opts.parallel = 3;
    m[1].created = 86400;
    m[1].conf_line = 13;

    test_find(m);
    test_answers(m);

    m[0].served.tok = llm_tokenizer_load(FIX, err, sizeof(err));
    if (ok(m[0].served.tok != NULL, "the fixture's tokenizer (%s)", err)) {
        test_generation(&m[0]);
        llm_structured_free(m[0].structured);
        llm_tokenizer_free(m[0].served.tok);
    }
    m[0].served.tok = NULL;
    m[0].structured = NULL;

    /* /metrics: every model by its alias; a model without a scheduler
     * publishes nothing */
    {
        llm_buf       b;
        void         *mem = calloc(1, llm_metrics_size(2, 1));
        llm_metrics  *mx = llm_metrics_init(mem, 2, 1);

        llm_buf_init(&b);
        ok(llm_served_metrics(mx, m, 2, 0, &b) == 0 && b.len > 0
           && strstr(b.data, "model=\"tiny\"") && strstr(b.data, "model=\"big\""),
           "the /metrics text names every model");
        llm_buf_free(&b);
        free(mem);
    }

    /* a model's scheduler: its line's options, its context, the disk tier */
    llm_served_sched_config(&m[1], &tier, &cfg);
    ok(cfg.parallel == 3 && cfg.queue == 8 && cfg.n_ctx == 8192 && cfg.threads == 1
       && cfg.kv == LLM_KV_F32 && cfg.wake == NULL, "the scheduler configuration of a line");
    ok(cfg.kv_disk && strcmp(cfg.kv_disk, "/var/cache/kv") == 0 && cfg.kv_disk_max == 1u << 20,
       "with the disk tier");
    llm_served_sched_config(&m[1], &disk, &cfg);
    ok(cfg.kv_disk == NULL, "without one");

    /* the memory check counts what each scheduler would allocate */
    ok(llm_served_memory_check(m, 2, &disk, 1, 1ULL << 40, 1, msg, sizeof(msg)) == 0,
       "two small models fit in 1 TiB (%s)", msg);
    ok(llm_served_memory_check(m, 2, &disk, 4, 1, 1, msg, sizeof(msg)) == -1
       && strstr(msg, "\"tiny\"") && strstr(msg, "/etc/nginx/nginx.conf:12"),
       "over the limit: the first line that takes it over, where it is (%s)", msg);

    llm_model_free(model);
    return done_testing();
}
