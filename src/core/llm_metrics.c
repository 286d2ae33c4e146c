/* Prometheus metrics in shared memory (llm_metrics.h). */
#include <string.h>
#include <time.h>

#include "core/llm_metrics.h"

#define LLM_METRICS_STATUSES  (LLM_METRICS_STATUS_MAX - LLM_METRICS_STATUS_MIN + 1)

typedef struct {
    llm_metrics_hist  hist[LLM_METRICS_N_HIST];
} llm_metrics_model;

struct llm_metrics {
    uint64_t            n_models;
    uint64_t            n_workers;
    uint64_t            requests[LLM_METRICS_ENDPOINTS][LLM_METRICS_STATUSES];
    /* then n_models llm_metrics_model, then n_models x n_workers
       llm_metrics_worker (model-major) */
};

/* Histogram upper bounds in seconds, ascending; 0 ends a shorter list. */
static const double  llm_metrics_bounds[LLM_METRICS_N_HIST][LLM_METRICS_BUCKETS] = {
    /* time to first token: a short prompt on a small model .. a long queue */
    { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80,
      160, 320 },
    /* inter-token latency */
    { 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
      0.75, 1, 2.5, 5, 10 },
    /* step duration */
    { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
      0.5, 1, 2.5, 5, 10 },
};

static const struct {
    const char  *name;
    const char  *help;
} llm_metrics_hist_info[LLM_METRICS_N_HIST] = {
    { "llm_time_to_first_token_seconds",
      "Time from the request's arrival to its first generated token." },
    { "llm_inter_token_latency_seconds",
      "Time between two consecutive tokens delivered to a sequence." },
    { "llm_step_duration_seconds",
      "Duration of one scheduler step (posted to done)." },
};


static llm_metrics_model *
models_of(const llm_metrics *m)
{
    return (llm_metrics_model *) ((char *) m + sizeof(llm_metrics));
}


static llm_metrics_worker *
slot(const llm_metrics *m, size_t model, size_t worker)
{
    llm_metrics_worker *w;

    w = (llm_metrics_worker *) (models_of(m) + m->n_models);
    return &w[model * m->n_workers + worker];
}


size_t
llm_metrics_size(size_t n_models, size_t n_workers)
{
    return sizeof(llm_metrics) + n_models * sizeof(llm_metrics_model)
           + n_models * n_workers * sizeof(llm_metrics_worker);
}


llm_metrics *
llm_metrics_init(void *mem, size_t n_models, size_t n_workers)
{
    llm_metrics *m = mem;

    memset(m, 0, llm_metrics_size(n_models, n_workers));
    m->n_models = n_models;
    m->n_workers = n_workers;
    return m;
}


int
llm_metrics_has_shape(const llm_metrics *m, size_t n_models,
    size_t n_workers)
{
    return m->n_models == n_models && m->n_workers == n_workers;
}


static void
add(uint64_t *c, uint64_t v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}


static uint64_t
get(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}


void
llm_metrics_request(llm_metrics *m, llm_api_kind api, unsigned status)
{
    if ((unsigned) api >= LLM_METRICS_ENDPOINTS
        || status < LLM_METRICS_STATUS_MIN || status > LLM_METRICS_STATUS_MAX)
    {
        return;
    }
    add(&m->requests[api][status - LLM_METRICS_STATUS_MIN], 1);
}


void
llm_metrics_observe(llm_metrics *m, size_t model,
    llm_metrics_hist_kind kind, uint64_t ns)
{
    size_t             i;
    double             s = (double) ns / 1e9;
    llm_metrics_hist  *h;

    if (model >= m->n_models || (unsigned) kind >= LLM_METRICS_N_HIST) {
        return;
    }
    h = &models_of(m)[model].hist[kind];

    for (i = 0; i < LLM_METRICS_BUCKETS && llm_metrics_bounds[kind][i] > 0
                && s > llm_metrics_bounds[kind][i]; i++)
    {
        /* the first bound at or above s */
    }
    if (i < LLM_METRICS_BUCKETS && llm_metrics_bounds[kind][i] <= 0) {
        i = LLM_METRICS_BUCKETS;
    }
    add(&h->bucket[i], 1);
    add(&h->sum_ns, ns);
    add(&h->count, 1);
}


void
llm_metrics_publish(llm_metrics *m, size_t model, size_t worker,
    const llm_metrics_worker *w)
{
    size_t     i, n = sizeof(*w) / sizeof(uint64_t);
    uint64_t  *dst;

    if (model >= m->n_models || worker >= m->n_workers) {
        return;
    }
    dst = (uint64_t *) slot(m, model, worker);
    for (i = 0; i < n; i++) {
        __atomic_store_n(&dst[i], ((const uint64_t *) w)[i], __ATOMIC_RELAXED);
    }
}


uint64_t
llm_metrics_now_ns(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}


const char *
llm_metrics_endpoint_name(llm_api_kind api)
{
    switch (api) {
    case LLM_API_CHAT:          return "chat";
    case LLM_API_COMPLETIONS:   return "completions";
    case LLM_API_MESSAGES:      return "messages";
    case LLM_API_COUNT_TOKENS:  return "count_tokens";
    case LLM_API_EMBEDDINGS:    return "embeddings";
    case LLM_API_MODELS:        return "models";
    case LLM_API_HEALTH:        return "health";
    case LLM_API_TOKENIZE:      return "tokenize";
    case LLM_API_DETOKENIZE:    return "detokenize";
    case LLM_API_RESPONSES:     return "responses";
    case LLM_API_METRICS:       return "metrics";
    case LLM_API_PAGE:          return "page";
    default:                    return "other";
    }
}


/* A label value: \ " and newline escaped as the format requires. */
static void
label(llm_buf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\' || *s == '"') {
            llm_buf_putc(b, '\\');
            llm_buf_putc(b, *s);
        } else if (*s == '\n') {
            llm_buf_puts(b, "\\n");
        } else {
            llm_buf_putc(b, *s);
        }
    }
}


static void
header(llm_buf *b, const char *name, const char *type, const char *help)
{
    llm_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}


/* A %g that Prometheus reads back exactly enough for bucket bounds. */
static void
bound(llm_buf *b, double v)
{
    llm_buf_printf(b, "%.6g", v);
}


static void
render_hist(const llm_metrics *m, const char *const *names,
    llm_metrics_hist_kind kind, llm_buf *b)
{
    size_t                   i, k;
    uint64_t                 cum, sum_ns;
    const char              *name = llm_metrics_hist_info[kind].name;
    const llm_metrics_hist  *h;

    header(b, name, "histogram", llm_metrics_hist_info[kind].help);

    for (i = 0; i < m->n_models; i++) {
        h = &models_of(m)[i].hist[kind];
        cum = 0;
        for (k = 0; k < LLM_METRICS_BUCKETS && llm_metrics_bounds[kind][k] > 0;
             k++)
        {
            cum += get(&h->bucket[k]);
            llm_buf_printf(b, "%s_bucket{model=\"", name);
            label(b, names[i]);
            llm_buf_puts(b, "\",le=\"");
            bound(b, llm_metrics_bounds[kind][k]);
            llm_buf_printf(b, "\"} %llu\n", (unsigned long long) cum);
        }
        cum += get(&h->bucket[LLM_METRICS_BUCKETS]);
        llm_buf_printf(b, "%s_bucket{model=\"", name);
        label(b, names[i]);
        llm_buf_printf(b, "\",le=\"+Inf\"} %llu\n", (unsigned long long) cum);

        sum_ns = get(&h->sum_ns);
        llm_buf_printf(b, "%s_sum{model=\"", name);
        label(b, names[i]);
        llm_buf_printf(b, "\"} %llu.%09llu\n",
                       (unsigned long long) (sum_ns / 1000000000ull),
                       (unsigned long long) (sum_ns % 1000000000ull));
        /* _count equals the +Inf bucket: observations land in both */
        llm_buf_printf(b, "%s_count{model=\"", name);
        label(b, names[i]);
        llm_buf_printf(b, "\"} %llu\n", (unsigned long long) cum);
    }
}


/* Per model: the sum over workers of one field of llm_metrics_worker. */
static void
render_worker_field(const llm_metrics *m, const char *const *names,
    const char *name, const char *type, const char *help, size_t offset,
    llm_buf *b)
{
    size_t    i, w;
    uint64_t  sum;

    header(b, name, type, help);
    for (i = 0; i < m->n_models; i++) {
        sum = 0;
        for (w = 0; w < m->n_workers; w++) {
            sum += get((const uint64_t *) ((const char *) slot(m, i, w)
                                           + offset));
        }
        llm_buf_printf(b, "%s{model=\"", name);
        label(b, names[i]);
        llm_buf_printf(b, "\"} %llu\n", (unsigned long long) sum);
    }
}


int
llm_metrics_render(const llm_metrics *m, const char *const *names,
    llm_buf *b)
{
    size_t    a, s, k;
    uint64_t  v;

    static const struct {
        const char  *name;
        const char  *type;
        const char  *help;
        size_t       offset;
    } fields[] = {
        { "llm_sequences_waiting", "gauge",
          "Sequences waiting for a slot.",
          offsetof(llm_metrics_worker, waiting) },
        { "llm_sequences_running", "gauge",
          "Sequences holding a slot.",
          offsetof(llm_metrics_worker, running) },
        { "llm_kv_blocks_used", "gauge",
          "KV cache blocks held by sequences.",
          offsetof(llm_metrics_worker, kv_blocks_used) },
        { "llm_kv_blocks_cached", "gauge",
          "KV cache blocks kept only for prefix reuse.",
          offsetof(llm_metrics_worker, kv_blocks_cached) },
        { "llm_kv_blocks_free", "gauge",
          "KV cache blocks free.",
          offsetof(llm_metrics_worker, kv_blocks_free) },
        { "llm_kv_blocks_pinned", "gauge",
          "Cached KV blocks kept from eviction by a cache_control retention.",
          offsetof(llm_metrics_worker, kv_blocks_pinned) },
        { "llm_kv_blocks_evicted_total", "counter",
          "Cached KV blocks given to new content.",
          offsetof(llm_metrics_worker, kv_blocks_evicted) },
        { "llm_preemptions_total", "counter",
          "Sequences that gave their KV blocks back for others to grow "
          "(read their tokens again when readmitted).",
          offsetof(llm_metrics_worker, preempted) },
        { "llm_state_snapshots_held", "gauge",
          "Recurrent models: snapshots of a sequence's state held for prefix "
          "reuse.",
          offsetof(llm_metrics_worker, state_snapshots_held) },
        { "llm_state_snapshots_made_total", "counter",
          "Recurrent models: state snapshots made.",
          offsetof(llm_metrics_worker, state_snapshots_made) },
        { "llm_state_snapshots_restored_total", "counter",
          "Recurrent models: state snapshots restored (their prefix skipped).",
          offsetof(llm_metrics_worker, state_snapshots_restored) },
        { "llm_prompt_tokens_total", "counter",
          "Prompt tokens of admitted sequences.",
          offsetof(llm_metrics_worker, prompt_tokens) },
        { "llm_prompt_tokens_cached_total", "counter",
          "Prompt tokens served from the prefix cache.",
          offsetof(llm_metrics_worker, cached_tokens) },
        { "llm_generation_tokens_total", "counter",
          "Tokens generated.",
          offsetof(llm_metrics_worker, generated_tokens) },
        { "llm_steps_total", "counter",
          "Scheduler steps run.",
          offsetof(llm_metrics_worker, steps) },
        { "llm_spec_draft_tokens_total", "counter",
          "Speculative decoding: draft tokens proposed.",
          offsetof(llm_metrics_worker, spec_proposed) },
        { "llm_spec_accepted_tokens_total", "counter",
          "Speculative decoding: draft tokens accepted.",
          offsetof(llm_metrics_worker, spec_accepted) },
        { "llm_spec_draft_model_tokens_total", "counter",
          "Speculative decoding: tokens the draft model proposed.",
          offsetof(llm_metrics_worker, draft_proposed) },
        { "llm_spec_draft_model_accepted_tokens_total", "counter",
          "Speculative decoding: tokens the draft model proposed and the "
          "model kept.",
          offsetof(llm_metrics_worker, draft_accepted) },
        { "llm_sequence_steps_total", "counter",
          "Sampling steps of sequences (generated tokens / this = tokens "
          "per step).",
          offsetof(llm_metrics_worker, seq_steps) },
    };

    header(b, "llm_requests_total", "counter",
           "Requests answered, by endpoint and HTTP status.");
    for (a = 0; a < LLM_METRICS_ENDPOINTS; a++) {
        for (s = 0; s < LLM_METRICS_STATUSES; s++) {
            v = get(&m->requests[a][s]);
            if (v) {
                llm_buf_printf(b, "llm_requests_total{endpoint=\"%s\","
                               "code=\"%zu\"} %llu\n",
                               llm_metrics_endpoint_name((llm_api_kind) a),
                               s + LLM_METRICS_STATUS_MIN,
                               (unsigned long long) v);
            }
        }
    }

    for (k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
        render_worker_field(m, names, fields[k].name, fields[k].type,
                            fields[k].help, fields[k].offset, b);
    }

    for (k = 0; k < LLM_METRICS_N_HIST; k++) {
        render_hist(m, names, (llm_metrics_hist_kind) k, b);
    }

    return b->failed ? -1 : 0;
}
