/*
 * Server metrics for Prometheus, aggregated over all nginx workers.
 *
 * One llm_metrics block lives in memory every worker shares (the glue owns
 * the shared zone; nothing here knows nginx).  It holds no pointers, only
 * 64-bit counters that every worker updates with atomic adds:
 *
 *   - requests by endpoint and HTTP status (counted when a request ends);
 *   - per model, histograms of time to first token, inter-token latency
 *     and step duration (observed where they happen);
 *   - per model and worker, a slot that worker alone writes with the
 *     scheduler's own counters and gauges (waiting and running sequences,
 *     KV blocks (used, cached, pinned, free, evicted), preemptions, prompt /
 *     cached / generated tokens, steps, speculative proposed / accepted
 *     tokens and the draft model's share of them): rendering sums the slots, so a counter
 *     that each worker keeps monotonic stays monotonic in the sum.
 *
 * llm_metrics_render writes the Prometheus text exposition format (0.0.4):
 * names `llm_*` in base units (`_seconds`), counters ending in `_total`,
 * histograms as cumulative `_bucket{le}` series with `_sum` and `_count`.
 */
#ifndef LLM_METRICS_H
#define LLM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/llm_buf.h"
#include "core/llm_ir.h"

#define LLM_METRICS_ENDPOINTS   16      /* llm_api_kind values counted */
#define LLM_METRICS_STATUS_MIN  100
#define LLM_METRICS_STATUS_MAX  599
#define LLM_METRICS_BUCKETS     16      /* upper bounds of a histogram, +Inf aside */

/* Which histogram of a model. */
typedef enum {
    LLM_METRICS_TTFT = 0,        /* request start -> first token */
    LLM_METRICS_ITL,             /* one token -> the next, per sequence */
    LLM_METRICS_STEP,            /* one scheduler step, posted -> done */
    LLM_METRICS_N_HIST
} llm_metrics_hist_kind;

typedef struct {
    uint64_t  bucket[LLM_METRICS_BUCKETS + 1];   /* not cumulative; last: +Inf */
    uint64_t  count;
    uint64_t  sum_ns;
} llm_metrics_hist;

/* What one worker's scheduler of one model reports (its own totals). */
typedef struct {
    uint64_t  waiting;           /* gauges */
    uint64_t  running;
    uint64_t  kv_blocks_used;
    uint64_t  kv_blocks_cached;
    uint64_t  kv_blocks_free;
    uint64_t  kv_blocks_pinned;  /* of the cached, kept by cache_control */
    uint64_t  prompt_tokens;     /* counters since the worker started */
    uint64_t  cached_tokens;
    uint64_t  generated_tokens;
    uint64_t  steps;
    uint64_t  spec_proposed;
    uint64_t  spec_accepted;
    uint64_t  draft_proposed;    /* of those, the draft model's */
    uint64_t  draft_accepted;
    uint64_t  seq_steps;         /* sequences' sampling steps: generated / seq_steps
                                    is tokens per step */
    uint64_t  kv_blocks_evicted; /* cached blocks given to new content */
    uint64_t  preempted;         /* sequences preempted for KV room */
    uint64_t  state_snapshots_held;      /* recurrent models: snapshots held (gauge), */
    uint64_t  state_snapshots_made;      /* made and restored (counters) */
    uint64_t  state_snapshots_restored;
} llm_metrics_worker;

typedef struct llm_metrics  llm_metrics;

/* Bytes of a block for n_models models and n_workers workers. */
size_t llm_metrics_size(size_t n_models, size_t n_workers);

/* Lays out zeroed memory of llm_metrics_size bytes; returns it. */
llm_metrics *llm_metrics_init(void *mem, size_t n_models, size_t n_workers);

/* 1 when m was laid out for n_models and n_workers. */
int llm_metrics_has_shape(const llm_metrics *m, size_t n_models,
    size_t n_workers);

/* A request of endpoint `api` answered with `status` (others ignored). */
void llm_metrics_request(llm_metrics *m, llm_api_kind api, unsigned status);

/* One observation, in nanoseconds, of a model's histogram. */
void llm_metrics_observe(llm_metrics *m, size_t model,
    llm_metrics_hist_kind kind, uint64_t ns);

/* Worker `worker`'s report for `model` (out of range: ignored). */
void llm_metrics_publish(llm_metrics *m, size_t model, size_t worker,
    const llm_metrics_worker *w);

/*
 * The exposition text.  names[i] is model i's name (label `model`; quotes,
 * backslashes and newlines escaped).  0, or -1 when b could not grow.
 */
int llm_metrics_render(const llm_metrics *m, const char *const *names,
    llm_buf *b);

/* A monotonic clock in nanoseconds, for the observations. */
uint64_t llm_metrics_now_ns(void);

/* The `endpoint` label of an llm_api_kind ("chat", "messages", ...). */
const char *llm_metrics_endpoint_name(llm_api_kind api);

#endif
