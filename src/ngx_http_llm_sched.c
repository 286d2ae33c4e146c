/*
 * Per-worker step loops, one per model (created after fork).
 *
 * The policy (slots, admission, prefix reuse, prefill budget, batches,
 * retirement) is the engine's llm_sched; this file only runs it the nginx
 * way: llm_sched_step_prepare on the event loop, llm_sched_step_run as a
 * task of llm_thread_pool, llm_sched_step_complete in the task's event
 * handler, then the next step while any sequence is runnable.  Only one step
 * per model is in flight, so the event loop never runs model math.
 */
#include "ngx_http_llm_module.h"

#include "core/llm_metrics.h"


typedef struct {
    llm_served_model         *model;
    llm_sched                *sched;
    ngx_thread_pool_t        *tp;
    ngx_thread_task_t        *task;
    ngx_log_t                *log;
    ngx_uint_t                exiting;
    ngx_uint_t                files_logged;
    uint64_t                  posted_ns;    /* the step in flight, for /metrics */
} ngx_http_llm_stepper_t;


static void ngx_http_llm_step_post(void *data);
static void ngx_http_llm_step_thread(void *data, ngx_log_t *log);
static void ngx_http_llm_step_done(ngx_event_t *ev);
static void ngx_http_llm_step_note(ngx_http_llm_stepper_t *st);


/* ---- worker start and exit ---- */

static ngx_int_t
ngx_http_llm_stepper_create(ngx_cycle_t *cycle, llm_served_model *m,
    ngx_thread_pool_t *tp)
{
    char                       err[512];
    llm_sched_stats            stats;
    llm_sched_config           cfg;
    ngx_http_llm_stepper_t    *st;
    ngx_http_llm_main_conf_t  *mcf;

    st = ngx_pcalloc(cycle->pool, sizeof(ngx_http_llm_stepper_t));
    if (st == NULL) {
        return NGX_ERROR;
    }

    st->model = m;
    st->tp = tp;
    st->log = cycle->log;

    st->task = ngx_thread_task_alloc(cycle->pool, 0);
    if (st->task == NULL) {
        return NGX_ERROR;
    }

    st->task->ctx = st;
    st->task->handler = ngx_http_llm_step_thread;
    st->task->event.handler = ngx_http_llm_step_done;
    st->task->event.data = st;
    st->task->event.log = cycle->log;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    llm_served_sched_config(m, &mcf->kv_cache, &cfg);
    cfg.wake = ngx_http_llm_step_post;
    cfg.wake_data = st;

    st->sched = llm_sched_create(m->served.model, &cfg, err, sizeof(err));
    if (st->sched == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm_model \"%s\": %s", m->alias, err);
        return NGX_ERROR;
    }

    m->sched = st->sched;
    m->runner = st;

    ngx_http_llm_step_note(st);

    llm_sched_get_stats(st->sched, &stats);
    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "llm_model \"%s\": worker runtime ready: %d slots of up "
                  "to %uz tokens sharing %uz MiB of KV blocks, %d threads",
                  m->alias, m->opts.parallel, llm_sched_n_ctx(st->sched),
                  stats.kv_cache_bytes >> 20, m->opts.threads);

    return NGX_OK;
}


ngx_int_t
ngx_http_llm_workers_init(ngx_cycle_t *cycle)
{
    char                       err[512];
    ngx_uint_t                 i;
    llm_served_model      *m;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL || mcf->models.nelts == 0) {
        return NGX_OK;
    }

    mcf->thread_pool = ngx_thread_pool_get(cycle, &mcf->thread_pool_name);
    mcf->prepare_pool = ngx_thread_pool_get(cycle, &mcf->prepare_pool_name);

    if (mcf->thread_pool == NULL || mcf->prepare_pool == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "llm: thread pool \"%V\" not found",
                      mcf->thread_pool ? &mcf->prepare_pool_name
                                       : &mcf->thread_pool_name);
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
        if (llm_model_files_changed(m[i].served.model, err, sizeof(err))) {
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "llm_model \"%s\": %s; the model is not served "
                          "until nginx is reloaded (docs/operations.md, "
                          "\"Updating a model\")", m[i].alias, err);
            continue;
        }

        /*
         * A worker that exits here is not respawned: the master would keep
         * the port with nobody to answer.  The configuration check has
         * counted this memory, so this is rare (the machine lost memory since);
         * the model answers 503 in this worker and /health says so.
         */
        if (ngx_http_llm_stepper_create(cycle, &m[i], mcf->thread_pool)
            != NGX_OK)
        {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "llm_model \"%s\" cannot run in this worker: "
                          "its requests get 503", m[i].alias);
            continue;
        }

        /*
         * The grammar side of the model (its vocabulary as a trie and the
         * walks of the JSON building blocks) built at load, so that the
         * first constrained request pays none of it; a failure here is
         * retried on first use (ngx_http_llm_generate.c).
         */
        if (m[i].structured == NULL) {
            m[i].structured = llm_served_structured(&m[i].served, err,
                                                    sizeof(err));
            if (m[i].structured == NULL) {
                ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                              "llm_model \"%s\": structured output state: "
                              "%s; built on first use", m[i].alias, err);
            }
        }
    }

    return NGX_OK;
}


void
ngx_http_llm_workers_exit(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i;
    llm_served_model      *m;
    ngx_http_llm_stepper_t    *st;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_llm_module);
    if (mcf == NULL) {
        return;
    }

    /* the thread pool has been drained by its own exit handler already */

    m = mcf->models.elts;
    for (i = 0; i < mcf->models.nelts; i++) {
        st = m[i].runner;
        if (st == NULL || llm_sched_in_flight(st->sched)) {
            continue;
        }
        st->exiting = 1;
        llm_sched_free(st->sched);
        /* after the sequences: their constraints read its vocabulary */
        llm_structured_free(m[i].structured);
        m[i].structured = NULL;
        m[i].sched = NULL;
        m[i].runner = NULL;
    }
}


/* ---- the step loop ---- */

/* The scheduler's wake: post a step unless one is in flight or none runs. */
static void
ngx_http_llm_step_post(void *data)
{
    ngx_http_llm_stepper_t *st = data;

    if (st->exiting || llm_sched_step_prepare(st->sched) == 0) {
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, st->log, 0,
                   "llm step post: model \"%s\"", st->model->alias);

    st->posted_ns = llm_metrics_now_ns();

    if (ngx_thread_task_post(st->tp, st->task) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, st->log, 0,
                      "llm: cannot post a step to the thread pool");
        llm_sched_step_abort(st->sched, "the thread pool queue is full");
    }
}


/* Runs in a thread-pool thread: the model math and sampling of one step. */
static void
ngx_http_llm_step_thread(void *data, ngx_log_t *log)
{
    ngx_http_llm_stepper_t *st = data;

    llm_sched_step_run(st->sched);
}


/* Runs on the event loop when the step's thread task has completed. */
static void
ngx_http_llm_step_done(ngx_event_t *ev)
{
    ngx_http_llm_stepper_t *st = ev->data;

    int          files_changed;
    const char  *failure;

    if (st->exiting) {
        return;
    }

    /* logged before any request hears of the failure */
    failure = llm_sched_step_failure(st->sched, &files_changed);

    if (files_changed) {
        if (!st->files_logged) {
            st->files_logged = 1;
            ngx_log_error(NGX_LOG_ALERT, st->log, 0,
                          "llm_model \"%s\": %s; every request for the model "
                          "fails until nginx is reloaded (docs/operations.md, "
                          "\"Updating a model\")", st->model->alias, failure);
        }

    } else if (failure) {
        ngx_log_error(NGX_LOG_ERR, st->log, 0, "llm_model \"%s\": %s",
                      st->model->alias, failure);
    }

    llm_sched_step_complete(st->sched);
    ngx_http_llm_step_note(st);

    ngx_http_llm_metrics_observe(st->model, LLM_METRICS_STEP,
                                 llm_metrics_now_ns() - st->posted_ns);
    ngx_http_llm_metrics_publish(st->model);

    ngx_http_llm_step_post(st);
}


/* The disk tier's news (a file not trusted, a write that failed). */
static void
ngx_http_llm_step_note(ngx_http_llm_stepper_t *st)
{
    char  note[512];

    if (llm_sched_take_note(st->sched, note, sizeof(note))) {
        ngx_log_error(NGX_LOG_WARN, st->log, 0, "llm_model \"%s\": %s",
                      st->model->alias, note);
    }
}
