/*
 * Per-worker schedulers, one per model (created after fork).
 *
 * The event loop owns all scheduler state.  A step is one llm_forward over
 * every running sequence (prefill chunks of newly admitted ones, one decode
 * token of the others) plus sampling, run in the llm_thread_pool; its
 * completion handler hands tokens to the requests, retires finished and
 * cancelled sequences, admits waiting ones and posts the next step.  Only one
 * step per scheduler is in flight, so continuous batching falls out of the
 * loop: every step serves every active sequence of the worker.
 *
 * Slots keep their KV cache after a sequence ends; a new sequence takes the
 * free slot sharing the longest token prefix with its prompt and skips that
 * prefix (prompt_tokens_details.cached_tokens).
 */
#include "ngx_http_llm_sched.h"

#include <time.h>


/*
 * Prefill tokens per step across all sequences.  With nobody decoding, a
 * prompt goes in large chunks (big GEMMs are efficient).  While sequences
 * decode, the chunk is sized from measured step times so that a step with
 * prefill takes about twice a decode-only step: running streams keep a
 * steady pace while new prompts are read.
 */
#define NGX_HTTP_LLM_PREFILL_MAX   512
#define NGX_HTTP_LLM_PREFILL_MIN   16


struct ngx_http_llm_sched_s {
    ngx_http_llm_model_t     *model;
    const llm_model          *engine;
    llm_runtime              *rt;
    ngx_thread_pool_t        *tp;
    ngx_thread_task_t        *task;
    ngx_log_t                *log;
    ngx_uint_t                in_flight;
    ngx_uint_t                exiting;

    ngx_queue_t               waiting;
    ngx_uint_t                n_waiting;
    llm_admission             admission;     /* places of parallel + queue */

    ngx_uint_t                n_slots;
    size_t                    n_ctx;
    ngx_http_llm_seq_t      **slot_seq;      /* running sequence, or NULL */
    int32_t                 **slot_tokens;   /* tokens whose KV the slot holds */
    size_t                   *slot_len;
    ngx_uint_t               *slot_used;     /* admission tick, for LRU ties */
    ngx_uint_t                tick;
    ngx_uint_t                rr;            /* round-robin start for prefill */

    /* the step in flight */
    llm_batch_item           *items;
    ngx_http_llm_seq_t      **item_seq;
    int                       n_items;
    int                       n_decode;      /* items that are decode tokens */
    int                       n_prefill;     /* prompt tokens in the step */
    int                       rc;
    char                      err[512];
    u_char                    files_changed; /* set by the step thread */
    ngx_uint_t                files_logged;
    double                    step_ms;       /* measured in the thread */

    /* moving averages for sizing prefill chunks */
    double                    decode_ms;     /* a decode-only step */
    double                    prefill_token_ms;

    /* counters for /health */
    ngx_uint_t                live;          /* sequences allocated */
    uint64_t                  requests;
    uint64_t                  cancelled;
    uint64_t                  rejected;
    uint64_t                  prompt_tokens;
    uint64_t                  cached_tokens;
    uint64_t                  generated_tokens;
    uint64_t                  steps;
};


static void ngx_http_llm_sched_kick(ngx_http_llm_sched_t *s);
static void ngx_http_llm_seq_end(ngx_http_llm_seq_t *seq);
static void ngx_http_llm_step_thread(void *data, ngx_log_t *log);
static void ngx_http_llm_step_done(ngx_event_t *ev);


/* ---- worker start and exit ---- */

static ngx_http_llm_sched_t *
ngx_http_llm_sched_create(ngx_cycle_t *cycle, ngx_http_llm_model_t *m,
    ngx_thread_pool_t *tp)
{
    int                    slot;
    char                   err[256];
    ngx_uint_t             i;
    ngx_http_llm_sched_t  *s;

    s = ngx_pcalloc(cycle->pool, sizeof(ngx_http_llm_sched_t));
    if (s == NULL) {
        return NULL;
    }

    s->model = m;
    s->engine = m->model;
    s->tp = tp;
    s->log = cycle->log;
    s->n_slots = m->parallel;
    s->n_ctx = m->context_length;
    llm_admission_init(&s->admission, m->parallel, m->queue);
    ngx_queue_init(&s->waiting);

    s->rt = llm_runtime_create_kv(m->model, (int) m->threads, (int) s->n_ctx,
                                  (int) s->n_slots,
                                  m->kv_f16 ? LLM_KV_F16 : LLM_KV_F32,
                                  err, sizeof(err));
    if (s->rt == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm_model \"%V\": %s", &m->alias, err);
        return NULL;
    }

    s->slot_seq = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(void *));
    s->slot_tokens = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(int32_t *));
    s->slot_len = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(size_t));
    s->slot_used = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(ngx_uint_t));
    s->items = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(llm_batch_item));
    s->item_seq = ngx_pcalloc(cycle->pool, s->n_slots * sizeof(void *));
    if (s->slot_seq == NULL || s->slot_tokens == NULL || s->slot_len == NULL
        || s->slot_used == NULL || s->items == NULL || s->item_seq == NULL)
    {
        goto failed;
    }

    for (i = 0; i < s->n_slots; i++) {
        /* the scheduler owns every slot for the worker's lifetime */
        slot = llm_seq_open(s->rt);
        if (slot != (int) i) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "llm_model \"%V\": cannot open sequence slot %ui",
                          &m->alias, i);
            goto failed;
        }

        /* zeroed: committed now, as the configuration check counted it */
        s->slot_tokens[i] = ngx_pcalloc(cycle->pool,
                                        s->n_ctx * sizeof(int32_t));
        if (s->slot_tokens[i] == NULL) {
            goto failed;
        }
    }

    s->task = ngx_thread_task_alloc(cycle->pool, 0);
    if (s->task == NULL) {
        goto failed;
    }

    s->task->ctx = s;
    s->task->handler = ngx_http_llm_step_thread;
    s->task->event.handler = ngx_http_llm_step_done;
    s->task->event.data = s;
    s->task->event.log = cycle->log;

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "llm_model \"%V\": worker runtime ready: %ui slots of %uz "
                  "tokens, KV cache %uz MiB, %ui threads",
                  &m->alias, s->n_slots, s->n_ctx,
                  llm_runtime_kv_bytes(s->rt) >> 20, m->threads);

    return s;

failed:

    llm_runtime_free(s->rt);
    return NULL;
}


ngx_int_t
ngx_http_llm_workers_init(ngx_cycle_t *cycle)
{
    char                       err[512];
    ngx_uint_t                 i;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL || mcf->models.nelts == 0) {
        return NGX_OK;
    }

    mcf->thread_pool = ngx_thread_pool_get(cycle, &mcf->thread_pool_name);
    if (mcf->thread_pool == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm: thread pool \"%V\" not found",
                      &mcf->thread_pool_name);
        return NGX_ERROR;
    }

    m = mcf->models.elts;
    for (i = 0; i < mcf->models.nelts; i++) {

        /*
         * A weight file rewritten in place since the configuration was
         * loaded (a worker respawned after such a rewrite crashed the last
         * one): this worker serves 503 for the model instead of faulting
         * on its mapping again; a reload maps the files anew.
         */
        if (llm_model_files_changed(m[i].model, err, sizeof(err))) {
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "llm_model \"%V\": %s; the model is not served "
                          "until nginx is reloaded (docs/operations.md, "
                          "\"Updating a model\")", &m[i].alias, err);
            continue;
        }

        /*
         * A worker that exits here is not respawned: the master would keep
         * the port with nobody to answer.  The configuration check has
         * counted this memory, so this is rare (the machine lost memory since);
         * the model answers 503 in this worker and /health says so.
         */
        m[i].sched = ngx_http_llm_sched_create(cycle, &m[i],
                                               mcf->thread_pool);
        if (m[i].sched == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "llm_model \"%V\" cannot run in this worker: "
                          "its requests get 503", &m[i].alias);
        }
    }

    return NGX_OK;
}


void
ngx_http_llm_workers_exit(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i;
    ngx_http_llm_model_t      *m;
    ngx_http_llm_sched_t      *s;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL) {
        return;
    }

    /* the thread pool has been drained by its own exit handler already */

    m = mcf->models.elts;
    for (i = 0; i < mcf->models.nelts; i++) {
        s = m[i].sched;
        if (s == NULL || s->in_flight) {
            continue;
        }
        s->exiting = 1;
        llm_runtime_free(s->rt);
        s->rt = NULL;
        m[i].sched = NULL;
    }
}


/* ---- sequences ---- */

ngx_http_llm_seq_t *
ngx_http_llm_seq_create(ngx_http_llm_sched_t *s, const int32_t *prompt,
    size_t n_prompt, size_t max_gen, const llm_sampler_params *sp,
    ngx_log_t *log)
{
    ngx_http_llm_seq_t  *seq;

    seq = ngx_calloc(sizeof(ngx_http_llm_seq_t), log);
    if (seq == NULL) {
        return NULL;
    }

    seq->sched = s;
    seq->slot = -1;
    seq->max_gen = max_gen;
    s->live++;

    seq->prompt = ngx_alloc((n_prompt ? n_prompt : 1) * sizeof(int32_t), log);
    seq->gen = ngx_alloc((max_gen ? max_gen : 1) * sizeof(int32_t), log);
    if (seq->prompt == NULL || seq->gen == NULL) {
        ngx_http_llm_seq_free(seq);
        return NULL;
    }

    ngx_memcpy(seq->prompt, prompt, n_prompt * sizeof(int32_t));
    seq->n_prompt = n_prompt;

    if (sp) {
        seq->sampler = llm_sampler_create(sp,
                               llm_model_get_info(s->engine)->n_vocab);
        if (seq->sampler == NULL) {
            ngx_http_llm_seq_free(seq);
            return NULL;
        }
        llm_sampler_accept_prompt(seq->sampler, prompt, (int) n_prompt);
    }

    return seq;
}


void
ngx_http_llm_seq_free(ngx_http_llm_seq_t *seq)
{
    ngx_http_llm_seq_end(seq);

    if (seq->sampler) {
        llm_sampler_free(seq->sampler);
    }
    ngx_free(seq->prompt);
    ngx_free(seq->gen);
    ngx_free(seq->embed_sum);
    seq->sched->live--;
    ngx_free(seq);
}


ngx_int_t
ngx_http_llm_sched_reserve(ngx_http_llm_sched_t *s, size_t min, size_t want,
    size_t *granted)
{
    switch (llm_admission_reserve(&s->admission, min, want, granted)) {

    case LLM_ADMIT_OK:
        return NGX_OK;

    case LLM_ADMIT_NEVER:
        s->rejected++;
        return NGX_DECLINED;

    default:
        s->rejected++;
        return NGX_BUSY;
    }
}


size_t
ngx_http_llm_sched_capacity(ngx_http_llm_sched_t *s)
{
    return llm_admission_capacity(&s->admission);
}


void
ngx_http_llm_sched_submit(ngx_http_llm_sched_t *s, ngx_http_llm_seq_t *seq)
{
    seq->placed = 1;

    ngx_queue_insert_tail(&s->waiting, &seq->queue);
    seq->queued = 1;
    s->n_waiting++;
    s->requests++;

    ngx_http_llm_sched_kick(s);
}


/* The sequence has ended: its admission place is free for another. */
static void
ngx_http_llm_seq_end(ngx_http_llm_seq_t *seq)
{
    seq->finished = 1;

    if (seq->placed) {
        seq->placed = 0;
        llm_admission_release(&seq->sched->admission, 1);
    }
}


static void
ngx_http_llm_slot_release(ngx_http_llm_sched_t *s, ngx_http_llm_seq_t *seq)
{
    if (seq->running) {
        s->slot_seq[seq->slot] = NULL;
        seq->running = 0;
    }
}


void
ngx_http_llm_seq_release(ngx_http_llm_seq_t *seq)
{
    ngx_http_llm_sched_t  *s = seq->sched;

    seq->owner = NULL;

    if (!seq->finished && (seq->queued || seq->running)) {
        seq->cancelled = 1;
        s->cancelled++;
    }

    ngx_http_llm_seq_end(seq);

    if (seq->queued) {
        ngx_queue_remove(&seq->queue);
        seq->queued = 0;
        s->n_waiting--;
    }

    if (seq->running && s->in_flight) {
        return;    /* the step in flight uses it: retired when it completes */
    }

    ngx_http_llm_slot_release(s, seq);
    ngx_http_llm_seq_free(seq);

    ngx_http_llm_sched_kick(s);
}


void
ngx_http_llm_seq_pause(ngx_http_llm_seq_t *seq, ngx_uint_t paused)
{
    if (seq->paused == paused) {
        return;
    }

    seq->paused = (u_char) paused;

    if (!paused) {
        ngx_http_llm_sched_kick(seq->sched);
    }
}


void
ngx_http_llm_seq_finish(ngx_http_llm_seq_t *seq)
{
    /* the slot is given back when the scheduler next retires sequences */
    ngx_http_llm_seq_end(seq);
}


ngx_uint_t
ngx_http_llm_sched_ctx(ngx_http_llm_sched_t *s)
{
    return s->n_ctx;
}


/* ---- the step loop ---- */

static size_t
ngx_http_llm_common_prefix(const int32_t *a, size_t na, const int32_t *b,
    size_t nb)
{
    size_t  i, n;

    n = na < nb ? na : nb;
    for (i = 0; i < n && a[i] == b[i]; i++) { /* void */ }

    return i;
}


static void
ngx_http_llm_admit(ngx_http_llm_sched_t *s)
{
    size_t               common, best_common, limit;
    ngx_uint_t           i, best;
    ngx_queue_t         *q;
    ngx_http_llm_seq_t  *seq;

    while (!ngx_queue_empty(&s->waiting)) {

        q = ngx_queue_head(&s->waiting);
        seq = ngx_queue_data(q, ngx_http_llm_seq_t, queue);

        /* the slot sharing the longest prefix; ties: least recently used */
        best = s->n_slots;
        best_common = 0;

        /* at least one prompt token is computed, for its logits */
        limit = seq->embedding ? 0 : seq->n_prompt - 1;

        for (i = 0; i < s->n_slots; i++) {
            if (s->slot_seq[i]) {
                continue;
            }

            common = ngx_http_llm_common_prefix(s->slot_tokens[i],
                                                s->slot_len[i], seq->prompt,
                                                limit);
            if (best == s->n_slots || common > best_common
                || (common == best_common
                    && s->slot_used[i] < s->slot_used[best]))
            {
                best = i;
                best_common = common;
            }
        }

        if (best == s->n_slots) {
            return;    /* every slot is busy */
        }

        ngx_queue_remove(q);
        seq->queued = 0;
        s->n_waiting--;

        llm_seq_truncate(s->rt, (int) best, (int) best_common);
        s->slot_len[best] = best_common;
        s->slot_seq[best] = seq;
        s->slot_used[best] = ++s->tick;

        seq->slot = (int) best;
        seq->running = 1;
        seq->n_done = best_common;
        seq->n_cached = best_common;

        s->prompt_tokens += seq->n_prompt;
        s->cached_tokens += best_common;
    }
}


static size_t
ngx_http_llm_prefill_budget(ngx_http_llm_sched_t *s)
{
    double               room;
    ngx_uint_t           i, decoding;
    ngx_http_llm_seq_t  *seq;

    decoding = 0;
    for (i = 0; i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        if (seq && seq->n_done == seq->n_prompt) {
            decoding = 1;
            break;
        }
    }

    if (!decoding || s->decode_ms <= 0 || s->prefill_token_ms <= 0) {
        return NGX_HTTP_LLM_PREFILL_MAX;
    }

    /* a step with prefill may take about two decode-only steps */
    room = s->decode_ms / s->prefill_token_ms;

    if (room < NGX_HTTP_LLM_PREFILL_MIN) {
        return NGX_HTTP_LLM_PREFILL_MIN;
    }

    return room > NGX_HTTP_LLM_PREFILL_MAX ? NGX_HTTP_LLM_PREFILL_MAX
                                           : (size_t) room;
}


/* Updates the step-time averages from the step that just completed. */
static void
ngx_http_llm_step_timing(ngx_http_llm_sched_t *s)
{
    double  per_token;

    if (s->n_prefill == 0) {
        s->decode_ms = s->decode_ms > 0 ? 0.8 * s->decode_ms + 0.2 * s->step_ms
                                        : s->step_ms;
        return;
    }

    /* the prompt tokens' share of the step, beyond its decode tokens */
    per_token = (s->step_ms - (s->n_decode ? s->decode_ms : 0)) / s->n_prefill;
    if (per_token <= 0) {
        return;
    }

    s->prefill_token_ms = s->prefill_token_ms > 0
                          ? 0.8 * s->prefill_token_ms + 0.2 * per_token
                          : per_token;
}


static void
ngx_http_llm_sched_kick(ngx_http_llm_sched_t *s)
{
    size_t               n, budget;
    ngx_uint_t           i, k;
    llm_batch_item      *it;
    ngx_http_llm_seq_t  *seq;

    if (s->in_flight || s->exiting) {
        return;
    }

    /* retire sequences that ended while no step was in flight */
    for (i = 0; i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        if (seq && (seq->finished || seq->cancelled)) {
            ngx_http_llm_slot_release(s, seq);
            if (seq->owner == NULL) {
                ngx_http_llm_seq_free(seq);
            }
        }
    }

    ngx_http_llm_admit(s);

    s->n_items = 0;
    s->n_decode = 0;
    s->n_prefill = 0;
    budget = ngx_http_llm_prefill_budget(s);

    for (k = 0; k < s->n_slots; k++) {
        i = (s->rr + k) % s->n_slots;
        seq = s->slot_seq[i];
        if (seq == NULL || seq->paused) {
            continue;
        }

        it = &s->items[s->n_items];
        it->slot = (int) i;
        it->want_embedding = 0;

        if (seq->n_done < seq->n_prompt) {
            n = seq->n_prompt - seq->n_done;
            if (n > budget) {
                n = budget;
            }
            if (n == 0) {
                continue;
            }
            budget -= n;

            it->tokens = seq->prompt + seq->n_done;
            it->n_tokens = (int) n;
            s->n_prefill += (int) n;
            it->want_logits = !seq->embedding
                              && seq->n_done + n == seq->n_prompt;
            it->want_embedding = seq->embedding;

        } else {
            /* decode: feed the last sampled token */
            it->tokens = &seq->gen[seq->n_gen - 1];
            it->n_tokens = 1;
            it->want_logits = 1;
            s->n_decode++;
        }

        s->item_seq[s->n_items++] = seq;
    }

    s->rr++;

    if (s->n_items == 0) {
        return;
    }

    if (ngx_thread_task_post(s->tp, s->task) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, s->log, 0,
                      "llm: cannot post a step to the thread pool");
        s->in_flight = 1;     /* keeps the sequences alive in callbacks */
        for (i = 0; i < (ngx_uint_t) s->n_items; i++) {
            seq = s->item_seq[i];
            ngx_http_llm_seq_end(seq);
            if (seq->owner) {
                seq->on_done(seq, LLM_FINISH_ERROR,
                             "the thread pool queue is full");
            }
        }
        for (i = 0; i < (ngx_uint_t) s->n_items; i++) {
            seq = s->item_seq[i];
            if (seq->owner == NULL) {
                ngx_http_llm_slot_release(s, seq);
                ngx_http_llm_seq_free(seq);
            }
        }
        s->in_flight = 0;
        return;
    }

    s->in_flight = 1;
    s->steps++;
}


/* Runs in a thread-pool thread: the model math and sampling of one step. */
static void
ngx_http_llm_step_thread(void *data, ngx_log_t *log)
{
    ngx_http_llm_sched_t *s = data;

    int                  i;
    size_t               h, d;
    const float         *logits, *emb;
    ngx_http_llm_seq_t  *seq;
    struct timespec      t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* weights rewritten in place: their mapping must not be read (SIGBUS) */
    if (llm_model_files_changed(s->engine, s->err, sizeof(s->err))) {
        s->rc = -1;
        s->files_changed = 1;
        return;
    }

    /* rc > 0: some items failed on their own; the others ran */
    s->rc = llm_forward(s->rt, s->items, s->n_items, s->err, sizeof(s->err));
    if (s->rc < 0) {
        return;
    }

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];

        if (llm_forward_item_error(s->rt, i)) {
            continue;
        }

        if (s->items[i].want_embedding) {
            emb = llm_forward_embedding(s->rt, i);
            h = llm_model_get_info(s->engine)->hidden;
            if (emb && seq->embed_sum) {
                /* the engine averages per chunk: weight by chunk size */
                for (d = 0; d < h; d++) {
                    seq->embed_sum[d] += emb[d] * s->items[i].n_tokens;
                }
            }
        }

        if (!s->items[i].want_logits || seq->sampler == NULL) {
            continue;
        }

        logits = llm_forward_logits(s->rt, i);
        seq->next = llm_sampler_sample(seq->sampler, logits,
                                       seq->want_logprobs ? &seq->lp : NULL,
                                       seq->n_top_logprobs);
        llm_sampler_accept(seq->sampler, seq->next);
    }

    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->step_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}


/* Runs on the event loop when the step's thread task has completed. */
static void
ngx_http_llm_step_done(ngx_event_t *ev)
{
    ngx_http_llm_sched_t *s = ev->data;

    int                  i;
    size_t               n;
    int32_t              tok;
    const char          *error;
    llm_batch_item      *it;
    ngx_http_llm_seq_t  *seq;

    /*
     * in_flight stays set while tokens are delivered: callbacks may finish
     * or release sequences of this step, which must outlive the loops below.
     */

    if (s->exiting) {
        s->in_flight = 0;
        return;
    }

    if (s->rc == 0) {
        ngx_http_llm_step_timing(s);

    } else if (!s->files_changed) {
        ngx_log_error(NGX_LOG_ERR, s->log, 0, "llm_model \"%V\": %s",
                      &s->model->alias, s->err);
    }

    if (s->files_changed && !s->files_logged) {
        s->files_logged = 1;
        ngx_log_error(NGX_LOG_ALERT, s->log, 0,
                      "llm_model \"%V\": %s; every request for the model "
                      "fails until nginx is reloaded (docs/operations.md, "
                      "\"Updating a model\")", &s->model->alias, s->err);
    }

    for (i = 0; i < s->n_items; i++) {
        it = &s->items[i];
        seq = s->item_seq[i];

        /* a failed step, or only this item of it */
        error = s->rc < 0 ? s->err : llm_forward_item_error(s->rt, i);

        if (error) {
            ngx_http_llm_seq_end(seq);
            if (seq->owner) {
                seq->on_done(seq, LLM_FINISH_ERROR, error);
            }
            continue;
        }

        /* the slot's cache now holds these tokens too */
        n = it->n_tokens;
        ngx_memcpy(s->slot_tokens[it->slot] + s->slot_len[it->slot],
                   it->tokens, n * sizeof(int32_t));
        s->slot_len[it->slot] += n;

        if (seq->n_done < seq->n_prompt) {
            seq->n_done += n;
        }

        if (seq->owner == NULL || seq->finished) {
            continue;
        }

        if (seq->embedding) {
            if (seq->n_done == seq->n_prompt) {
                ngx_http_llm_seq_end(seq);
                seq->on_done(seq, LLM_FINISH_STOP, NULL);
            }
            continue;
        }

        if (!it->want_logits) {
            continue;    /* a prefill chunk that is not the last */
        }

        tok = seq->next;

        if (llm_model_is_eos(s->engine, tok)) {
            ngx_http_llm_seq_end(seq);
            seq->on_done(seq, LLM_FINISH_STOP, NULL);
            continue;
        }

        seq->gen[seq->n_gen++] = tok;
        s->generated_tokens++;

        seq->on_token(seq, tok, seq->want_logprobs ? &seq->lp : NULL);

        if (seq->finished || seq->owner == NULL) {
            continue;    /* a stop sequence matched, or the client went away */
        }

        if (seq->n_gen >= seq->max_gen
            || s->slot_len[it->slot] + 1 >= s->n_ctx)
        {
            ngx_http_llm_seq_end(seq);
            seq->on_done(seq, LLM_FINISH_LENGTH, NULL);
        }
    }

    /* one write per request per step */
    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        if (seq->owner) {
            seq->on_flush(seq->owner);
        }
    }

    /* sequences whose request went away during the step */
    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        if (seq->owner == NULL && seq->running) {
            ngx_http_llm_slot_release(s, seq);
            ngx_http_llm_seq_free(seq);
        }
    }

    s->in_flight = 0;

    ngx_http_llm_sched_kick(s);
}


void
ngx_http_llm_sched_health(ngx_http_llm_sched_t *s, json_t *out)
{
    ngx_uint_t  i, running, paused;

    if (s == NULL) {
        return;
    }

    running = 0;
    paused = 0;
    for (i = 0; i < s->n_slots; i++) {
        if (s->slot_seq[i]) {
            running++;
            paused += s->slot_seq[i]->paused;
        }
    }

    json_object_set_new(out, "running", json_integer(running));
    json_object_set_new(out, "waiting", json_integer(s->n_waiting));
    json_object_set_new(out, "live_sequences", json_integer(s->live));
    json_object_set_new(out, "paused", json_integer(paused));
    json_object_set_new(out, "requests", json_integer(s->requests));
    json_object_set_new(out, "cancelled", json_integer(s->cancelled));
    json_object_set_new(out, "rejected", json_integer(s->rejected));
    json_object_set_new(out, "prompt_tokens", json_integer(s->prompt_tokens));
    json_object_set_new(out, "cached_tokens", json_integer(s->cached_tokens));
    json_object_set_new(out, "generated_tokens",
                        json_integer(s->generated_tokens));
    json_object_set_new(out, "steps", json_integer(s->steps));
    json_object_set_new(out, "decode_step_ms",
                        json_real((double) (long) (s->decode_ms * 100) / 100));
    json_object_set_new(out, "prefill_token_ms",
                        json_real((double) (long) (s->prefill_token_ms * 1000)
                                  / 1000));
    json_object_set_new(out, "kv_cache_bytes",
                        json_integer(llm_runtime_kv_bytes(s->rt)));
}
