/*
 * Per-worker, per-model scheduler: sequence slots with a prefix cache, a
 * bounded wait queue, and the step loop that posts one batched forward pass
 * at a time to the thread pool.
 */
#ifndef _NGX_HTTP_LLM_SCHED_H_INCLUDED_
#define _NGX_HTTP_LLM_SCHED_H_INCLUDED_

#include "ngx_http_llm_module.h"
#include "engine/llm_admission.h"
#include "engine/llm_engine.h"


typedef struct ngx_http_llm_seq_s  ngx_http_llm_seq_t;

/* Called on the event loop after each step for sequences with output. */
typedef void (*ngx_http_llm_token_pt)(ngx_http_llm_seq_t *seq, int32_t token,
    const llm_token_logprobs *lp);
typedef void (*ngx_http_llm_done_pt)(ngx_http_llm_seq_t *seq,
    llm_finish reason, const char *error);
typedef void (*ngx_http_llm_flush_pt)(void *owner);


/*
 * A sequence belongs to the scheduler (malloc'd), not to the request: a step
 * in flight may still use it after the client went away.  The request side
 * clears `owner` in its pool cleanup; the scheduler frees the sequence at the
 * next step boundary.
 */
struct ngx_http_llm_seq_s {
    ngx_queue_t               queue;
    ngx_http_llm_sched_t     *sched;
    void                     *owner;        /* request-side state, or NULL */
    ngx_uint_t                index;        /* choice index within the request */

    int32_t                  *prompt;
    size_t                    n_prompt;
    size_t                    n_done;       /* prompt tokens in the KV cache */
    size_t                    n_cached;     /* of those, reused from the cache */

    int32_t                  *gen;          /* generated tokens */
    size_t                    n_gen;
    size_t                    max_gen;

    llm_sampler              *sampler;
    int                       n_top_logprobs;
    /* plain bytes, not bitfields: the step thread reads some of them */
    u_char                    want_logprobs;
    u_char                    embedding;    /* embeddings: no sampling */
    u_char                    cancelled;
    u_char                    finished;
    u_char                    running;      /* holds a slot */
    u_char                    queued;       /* in the wait queue */
    u_char                    placed;       /* holds an admission place */
    u_char                    paused;       /* left out of steps, keeps its KV */

    int                       slot;
    int32_t                   next;         /* sampled in the step */
    llm_token_logprobs        lp;
    float                    *embed_sum;    /* embeddings: sum of chunk means */

    ngx_http_llm_token_pt     on_token;
    ngx_http_llm_done_pt      on_done;
    ngx_http_llm_flush_pt     on_flush;
};


ngx_http_llm_seq_t *ngx_http_llm_seq_create(ngx_http_llm_sched_t *s,
    const int32_t *prompt, size_t n_prompt, size_t max_gen,
    const llm_sampler_params *sp, ngx_log_t *log);
void ngx_http_llm_seq_free(ngx_http_llm_seq_t *seq);

/*
 * Reserves admission places for between min and want sequences before any
 * work (llm_admission.h): NGX_OK with *granted; NGX_BUSY when too few are
 * free now (429, retry later); NGX_DECLINED when min exceeds parallel +
 * queue, so retrying can never help (400).
 */
ngx_int_t ngx_http_llm_sched_reserve(ngx_http_llm_sched_t *s, size_t min,
    size_t want, size_t *granted);

/* parallel + queue: the most sequences the scheduler holds at once. */
size_t ngx_http_llm_sched_capacity(ngx_http_llm_sched_t *s);

/*
 * Queues a sequence into a place reserved for it.  The place is given back
 * when the sequence ends (finished, failed, cancelled or released), before
 * its on_done callback runs, so a callback may reserve it again at once.
 */
void ngx_http_llm_sched_submit(ngx_http_llm_sched_t *s,
    ngx_http_llm_seq_t *seq);

/*
 * The request lets go of the sequence (finished, or the client went away):
 * freed now, or at the end of the step in flight that uses it.
 */
void ngx_http_llm_seq_release(ngx_http_llm_seq_t *seq);

/*
 * Backpressure: a paused sequence keeps its slot and KV cache but is left
 * out of steps until it is resumed (its client has not taken the output).
 */
void ngx_http_llm_seq_pause(ngx_http_llm_seq_t *seq, ngx_uint_t paused);

/* The request side ended the sequence (a stop sequence matched). */
void ngx_http_llm_seq_finish(ngx_http_llm_seq_t *seq);

ngx_uint_t ngx_http_llm_sched_ctx(ngx_http_llm_sched_t *s);

#endif
