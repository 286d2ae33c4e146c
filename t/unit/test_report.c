/*
 * What the server reports without nginx (chat/llm_report.h): /health's
 * body for a served model and for one this worker does not serve, and a
 * worker's /metrics numbers, from a scheduler that has run a request; and
 * what a configuration check counts per worker (llm_sched_memory) against
 * what the scheduler then has.
 */
#include <string.h>

#include "tap.h"

#include "chat/llm_report.h"

#define FIX "t/fixtures/models/qwen3_f32"

static int  finished;

static void
on_token(void *o, llm_seq *seq, int32_t tok, const llm_token_logprobs *lp)
{
}

static void
on_done(void *o, llm_seq *seq, llm_finish reason, const char *error)
{
    finished++;
}

static void
on_flush(void *o)
{
}

static const llm_seq_events  events = { on_token, on_done, on_flush };

#define GETI(o, k)  json_integer_value(json_object_get((o), (k)))

int
main(void)
{
    char                err[512];
    int                 unavailable;
    size_t              granted, kv, bytes, guard;
    json_t             *h, *list, *o, *sp;
    int32_t             prompt[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    llm_seq            *seq;
    llm_model          *m;
    llm_sched          *s;
    llm_sched_stats     st;
    llm_sched_config    cfg;
    llm_report_model    models[2];
    llm_sampler_params  sp_params;
    llm_metrics_worker  w;

    m = llm_model_load(FIX, err, sizeof(err));
    if (!ok(m != NULL, "fixture model loads")) {
        printf("# %s\n", err);
        return done_testing();
    }

    memset(&cfg, 0, sizeof(cfg));
    cfg.parallel = 2;
    cfg.queue = 1;
    cfg.n_ctx = 64;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;

    /* the configuration check's count is what the scheduler then holds */
    bytes = llm_sched_memory(m, &cfg, &kv);
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (!ok(s != NULL, "scheduler")) {
        printf("# %s\n", err);
        return done_testing();
    }
    llm_sched_get_stats(s, &st);
    is_int(kv, st.kv_cache_bytes, "counted KV bytes = the scheduler's KV cache");
    ok(bytes > kv + 2 * 64 * sizeof(int32_t),
       "the count adds scratch and the slots' token copies to the KV bytes");

    /* one request of 8 prompt tokens and 3 generated ones */
    llm_sampler_params_default(&sp_params);
    sp_params.temperature = 0;
    ok(llm_sched_reserve(s, 1, 1, &granted) == LLM_ADMIT_OK, "admitted");
    seq = llm_seq_create(s, prompt, 8, 3, &sp_params, -1, &events, &finished, 0);   /* an owner: NULL is none */
    llm_sched_submit(s, seq);
    for (guard = 0; !finished && guard < 100
                    && llm_sched_step_prepare(s) > 0; guard++)
    {
        llm_sched_step_run(s);
        llm_sched_step_complete(s);
    }
    ok(finished == 1, "the request ran");
    llm_seq_release(seq);
    llm_sched_get_stats(s, &st);

    models[0].id = "tiny-x";      /* the id is its first id_len bytes */
    models[0].id_len = 4;
    models[0].context_length = 64;
    models[0].parallel = 2;
    models[0].sched = s;
    models[1] = models[0];
    models[1].id = "other";
    models[1].id_len = 5;
    models[1].sched = NULL;

    /* every model served: ok */
    h = llm_report_health(models, 1, 4242, &unavailable);
    list = json_object_get(h, "models");
    o = json_array_get(list, 0);
    ok(h && unavailable == 0
       && strcmp(json_string_value(json_object_get(h, "status")), "ok") == 0
       && GETI(h, "pid") == 4242 && json_array_size(list) == 1,
       "/health: status ok, pid, one model");
    is_str(json_string_value(json_object_get(o, "id")), "tiny",
           "the model's id is its alias");
    ok(GETI(o, "context_length") == 64 && GETI(o, "parallel") == 2
       && json_object_get(o, "status") == NULL,
       "context_length, parallel, no status of its own");
    is_int(GETI(o, "prompt_tokens"), (long long) st.prompt_tokens,
           "prompt_tokens from the scheduler");
    ok(GETI(o, "prompt_tokens") >= 8, "the request's prompt was counted");
    is_int(GETI(o, "generated_tokens"), (long long) st.generated_tokens,
           "generated_tokens from the scheduler");
    ok(GETI(o, "requests") == 1 && GETI(o, "running") == 0
       && GETI(o, "waiting") == 0 && GETI(o, "steps") >= 3,
       "one request, none running or waiting, a step per token");
    is_int(GETI(o, "kv_block_tokens"), LLM_KV_BLOCK, "kv_block_tokens");
    is_str(json_string_value(json_object_get(o, "kv_type")), "f32", "kv_type");
    is_int(GETI(o, "kv_blocks"), (long long) st.kv.blocks, "kv_blocks");
    is_int(GETI(o, "kv_cache_bytes"), (long long) st.kv_cache_bytes,
           "kv_cache_bytes");
    ok(json_is_real(json_object_get(o, "prefix_hit_ratio"))
       && json_real_value(json_object_get(o, "prefix_hit_ratio")) == 0.0,
       "no prefix reused: ratio 0");
    sp = json_object_get(o, "speculation");
    ok(json_is_object(sp) && GETI(sp, "proposed_tokens") == 0
       && json_real_value(json_object_get(sp, "acceptance_rate")) == 0.0,
       "speculation: nothing proposed, acceptance 0 (not a division by 0)");
    is_near(json_real_value(json_object_get(sp, "tokens_per_step")),
            st.seq_steps ? (double) (long) (1000.0 * st.generated_tokens
                                            / st.seq_steps) / 1000 : 0,
            1e-12, "tokens_per_step cut to thousandths");
    json_decref(h);

    /* a model this worker does not serve: unavailable, and so is the whole */
    h = llm_report_health(models, 2, 1, &unavailable);
    o = json_array_get(json_object_get(h, "models"), 1);
    ok(unavailable == 1
       && strcmp(json_string_value(json_object_get(h, "status")),
                 "unavailable") == 0, "/health: unavailable with one model down");
    ok(strcmp(json_string_value(json_object_get(o, "status")), "unavailable") == 0
       && json_object_get(o, "running") == NULL
       && GETI(o, "context_length") == 64,
       "that model: unavailable, its configuration, no scheduler numbers");
    ok(json_object_get(json_array_get(json_object_get(h, "models"), 0),
                       "running") != NULL, "the served one keeps its numbers");
    json_decref(h);

    /* /metrics: this worker's numbers */
    memset(&w, 0xff, sizeof(w));
    llm_report_metrics(s, &w);
    ok(w.prompt_tokens == st.prompt_tokens
       && w.generated_tokens == st.generated_tokens && w.steps == st.steps
       && w.seq_steps == st.seq_steps,
       "metrics: token and step counters");
    ok(w.running == 0 && w.waiting == 0 && w.kv_blocks_free == st.kv.free
       && w.kv_blocks_cached == st.kv.cached && w.kv_blocks_used == st.kv.used,
       "metrics: gauges");

    llm_sched_free(s);
    llm_model_free(m);
    return done_testing();
}
