/*
 * /health's body and a worker's /metrics numbers from the schedulers'
 * stats (llm_report.h).
 */
#include "chat/llm_report.h"

#include <string.h>

#include "engine/llm_kv.h"


/* x cut (not rounded) to 1/scale: /health's averages stay short */
static json_t *
llm_report_real(double x, double scale)
{
    return json_real((double) (long) (x * scale) / scale);
}


/* part / whole cut to thousandths; 0 when whole is 0 */
static json_t *
llm_report_ratio(uint64_t part, uint64_t whole)
{
    return json_real(whole ? (double) (long) (1000.0 * part / whole) / 1000
                           : 0.0);
}


/* speculative decoding: kept / proposed tokens, tokens per sequence step */
static json_t *
llm_report_speculation(const llm_sched_stats *st)
{
    json_t  *sp;

    sp = json_object();
    if (sp == NULL) {
        return NULL;
    }

    json_object_set_new(sp, "steps", json_integer(st->spec_steps));
    json_object_set_new(sp, "proposed_tokens", json_integer(st->spec_proposed));
    json_object_set_new(sp, "accepted_tokens", json_integer(st->spec_accepted));
    json_object_set_new(sp, "acceptance_rate",
                        llm_report_ratio(st->spec_accepted, st->spec_proposed));
    json_object_set_new(sp, "tokens_per_step",
                        llm_report_ratio(st->generated_tokens, st->seq_steps));
    json_object_set_new(sp, "draft_proposed_tokens",
                        json_integer(st->draft_proposed));
    json_object_set_new(sp, "draft_accepted_tokens",
                        json_integer(st->draft_accepted));
    return sp;
}


/* The scheduler's numbers into a model's /health object. */
static void
llm_report_sched(const llm_sched *s, json_t *out)
{
    llm_sched_stats  st;

    llm_sched_get_stats(s, &st);

    json_object_set_new(out, "running", json_integer(st.running));
    json_object_set_new(out, "waiting", json_integer(st.waiting));
    json_object_set_new(out, "live_sequences", json_integer(st.live));
    json_object_set_new(out, "paused", json_integer(st.paused));
    json_object_set_new(out, "requests", json_integer(st.requests));
    json_object_set_new(out, "cancelled", json_integer(st.cancelled));
    json_object_set_new(out, "rejected", json_integer(st.rejected));
    json_object_set_new(out, "prompt_tokens", json_integer(st.prompt_tokens));
    json_object_set_new(out, "cached_tokens", json_integer(st.cached_tokens));
    json_object_set_new(out, "generated_tokens",
                        json_integer(st.generated_tokens));
    json_object_set_new(out, "steps", json_integer(st.steps));
    json_object_set_new(out, "decode_step_ms",
                        llm_report_real(st.decode_step_ms, 100));
    json_object_set_new(out, "prefill_token_ms",
                        llm_report_real(st.prefill_token_ms, 1000));
    json_object_set_new(out, "prefill_gflops",
                        llm_report_real(st.prefill_gflops, 100));
    json_object_set_new(out, "speculation", llm_report_speculation(&st));
    json_object_set_new(out, "kv_cache_bytes",
                        json_integer(st.kv_cache_bytes));
    json_object_set_new(out, "kv_type", json_string(llm_kv_type_name(st.kv_type)));
    json_object_set_new(out, "kv_block_tokens", json_integer(LLM_KV_BLOCK));
    json_object_set_new(out, "kv_blocks", json_integer(st.kv.blocks));
    json_object_set_new(out, "kv_blocks_used", json_integer(st.kv.used));
    json_object_set_new(out, "kv_blocks_cached", json_integer(st.kv.cached));
    json_object_set_new(out, "kv_blocks_pinned", json_integer(st.kv.pinned));
    json_object_set_new(out, "kv_blocks_free", json_integer(st.kv.free));
    json_object_set_new(out, "kv_blocks_evicted",
                        json_integer(st.kv.evicted));
    json_object_set_new(out, "kv_preempted", json_integer(st.preempted));
    if (st.state.capacity > 0) {
        /* recurrent models: the state snapshots that stand in for cached KV blocks */
        json_t  *ss = json_object();

        json_object_set_new(ss, "bytes", json_integer(st.state_bytes));
        json_object_set_new(ss, "capacity", json_integer(st.state.capacity));
        json_object_set_new(ss, "held", json_integer(st.state.held));
        json_object_set_new(ss, "made", json_integer(st.state.made));
        json_object_set_new(ss, "restored", json_integer(st.state.restored));
        json_object_set_new(out, "state_snapshots", ss);
    }
    if (st.kv_disk) {
        json_t  *sp = json_object();

        json_object_set_new(sp, "blocks_read", json_integer(st.disk.hits));
        json_object_set_new(sp, "blocks_written",
                            json_integer(st.disk.written));
        json_object_set_new(sp, "files_rejected",
                            json_integer(st.disk.rejected));
        json_object_set_new(sp, "files_removed",
                            json_integer(st.disk.removed));
        json_object_set_new(sp, "bytes", json_integer(st.disk.bytes));
        json_object_set_new(sp, "tokens_read", json_integer(st.disk_tokens));
        json_object_set_new(out, "kv_disk", sp);
    }
    json_object_set_new(out, "prefix_hit_ratio",
                        llm_report_real(st.prompt_tokens
                                        ? (double) st.cached_tokens
                                          / st.prompt_tokens
                                        : 0.0, 1000));
}


json_t *
llm_report_health(const llm_report_model *models, size_t n, long pid,
    int *unavailable)
{
    size_t   i;
    json_t  *root, *list, *o;

    *unavailable = 0;

    root = json_object();
    list = json_array();
    if (root == NULL || list == NULL) {
        json_decref(root);
        json_decref(list);
        return NULL;
    }

    json_object_set_new(root, "status", json_string("ok"));
    json_object_set_new(root, "models", list);

    for (i = 0; i < n; i++) {
        o = json_object();
        if (o == NULL) {
            json_decref(root);
            return NULL;
        }
        json_object_set_new(o, "id", json_stringn(models[i].id,
                                                  models[i].id_len));
        json_object_set_new(o, "context_length",
                            json_integer(models[i].context_length));
        json_object_set_new(o, "parallel", json_integer(models[i].parallel));

        if (models[i].sched == NULL) {
            /* not served by this worker (its error log says why) */
            json_object_set_new(o, "status", json_string("unavailable"));
            json_object_set_new(root, "status", json_string("unavailable"));
            *unavailable = 1;
        } else {
            llm_report_sched(models[i].sched, o);
        }

        json_array_append_new(list, o);
    }

    json_object_set_new(root, "pid", json_integer(pid));

    return root;
}


void
llm_report_metrics(const llm_sched *s, llm_metrics_worker *w)
{
    llm_sched_stats  st;

    llm_sched_get_stats(s, &st);

    memset(w, 0, sizeof(*w));
    w->waiting = st.waiting;
    w->running = st.running;
    w->kv_blocks_used = st.kv.used;
    w->kv_blocks_cached = st.kv.cached;
    w->kv_blocks_free = st.kv.free;
    w->kv_blocks_pinned = st.kv.pinned;
    w->kv_blocks_evicted = st.kv.evicted;
    w->preempted = st.preempted;
    w->state_snapshots_held = st.state.held;
    w->state_snapshots_made = st.state.made;
    w->state_snapshots_restored = st.state.restored;
    w->prompt_tokens = st.prompt_tokens;
    w->cached_tokens = st.cached_tokens;
    w->generated_tokens = st.generated_tokens;
    w->steps = st.steps;
    w->spec_proposed = st.spec_proposed;
    w->spec_accepted = st.spec_accepted;
    w->draft_proposed = st.draft_proposed;
    w->draft_accepted = st.draft_accepted;
    w->seq_steps = st.seq_steps;
}
