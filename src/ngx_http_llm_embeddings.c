/*
 * POST /v1/embeddings: every input becomes an embedding-only sequence in the
 * same scheduler (no sampling); the final-normed hidden states are averaged
 * over the input's tokens and L2-normalised.
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_openai_embeddings.h"


typedef struct {
    ngx_http_request_t     *r;
    ngx_http_llm_model_t   *model;
    llm_embed_request       req;
    llm_seq               **seqs;
    size_t                 *n_tokens;
    ngx_uint_t              n_done;
    size_t                  dim;
    long                    prompt_tokens;
    float                  *vectors;
    size_t                  n_submitted;
    ngx_uint_t              failed;
} ngx_http_llm_embed_t;


/*
 * Inputs go through the admission places the request got up front: when one
 * ends, its place is free again at once (the scheduler gives it back before
 * calling on_done) and the next input takes it, so a request that was
 * admitted is never refused half-way, however busy the worker gets.
 */
static ngx_int_t
ngx_http_llm_embed_next(ngx_http_llm_embed_t *e)
{
    size_t  granted;

    if (e->n_submitted == e->req.n_inputs) {
        return NGX_OK;
    }

    if (llm_sched_reserve(e->model->sched, 1, 1, &granted) != LLM_ADMIT_OK) {
        return NGX_ERROR;
    }

    llm_sched_submit(e->model->sched, e->seqs[e->n_submitted++]);

    return NGX_OK;
}


static void
ngx_http_llm_embed_cleanup(void *data)
{
    ngx_http_llm_embed_t *e = data;

    size_t  i;

    for (i = 0; e->seqs && i < e->req.n_inputs; i++) {
        if (e->seqs[i]) {
            llm_seq_release(e->seqs[i]);
        }
    }
    free(e->vectors);
    llm_embed_request_free(&e->req);
}


static void
ngx_http_llm_embed_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp)
{
}


static void
ngx_http_llm_embed_flush(void *owner)
{
}


static void ngx_http_llm_embed_done(void *owner, llm_seq *seq,
    llm_finish reason, const char *error);

static const llm_seq_events  ngx_http_llm_embed_events = {
    ngx_http_llm_embed_token, ngx_http_llm_embed_done, ngx_http_llm_embed_flush
};


static void
ngx_http_llm_embed_finish(ngx_http_llm_embed_t *e, const char *error)
{
    llm_buf              b;
    ngx_int_t            rc;
    ngx_http_request_t  *r = e->r;

    if (error) {
        ngx_http_finalize_request(r, ngx_http_llm_send_error(r,
                                  NGX_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
                                  NULL, "Embedding failed: %s", error));
        return;
    }

    llm_buf_init(&b);

    if (llm_openai_embeddings_response(&b, e->req.model
                                       ? e->req.model
                                       : (char *) e->model->alias.data,
                                       e->vectors, e->req.n_inputs, e->dim,
                                       e->req.base64, e->prompt_tokens)
        != 0)
    {
        llm_buf_free(&b);
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rc = ngx_http_llm_send_json(r, NGX_HTTP_OK, b.data, b.len);
    llm_buf_free(&b);

    ngx_http_finalize_request(r, rc);
}


static void
ngx_http_llm_embed_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error)
{
    ngx_http_llm_embed_t *e = owner;

    if (error) {
        if (!e->failed) {
            e->failed = 1;
            ngx_http_llm_embed_finish(e, error);
        }
        return;
    }

    /* pooled by the scheduler: the L2-normalised mean of the input */
    ngx_memcpy(e->vectors + llm_seq_index(seq) * e->dim,
               llm_seq_embedding(seq), e->dim * sizeof(float));

    if (++e->n_done == e->req.n_inputs) {
        ngx_http_llm_embed_finish(e, NULL);
        return;
    }

    if (ngx_http_llm_embed_next(e) != NGX_OK) {
        e->failed = 1;
        ngx_http_llm_embed_finish(e, "an input lost its admission place");
    }
}


ngx_int_t
ngx_http_llm_embeddings(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    size_t                 i, n_ids, granted;
    int32_t               *ids;
    ngx_pool_cleanup_t    *cln;
    llm_seq               *seq;
    ngx_http_llm_model_t  *m = p->model;
    ngx_http_llm_embed_t  *e;

    e = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_embed_t));
    if (e == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    e->r = r;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = ngx_http_llm_embed_cleanup;
    cln->data = e;

    /* parsed and tokenized in a thread (ngx_http_llm_prepare.c) */
    e->req = p->ereq;
    ngx_memzero(&p->ereq, sizeof(p->ereq));
    e->model = m;

    if (m->sched == NULL) {
        return ngx_http_llm_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE, NULL,
                                       NULL, NULL, "Model '%V' is not loaded "
                                       "in this worker.", &m->alias);
    }

    e->dim = (size_t) llm_model_get_info(m->model)->hidden;

    if (e->req.dimensions && (size_t) e->req.dimensions != e->dim) {
        return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       "dimensions", "invalid_value",
                                       "Model '%V' produces %uz dimensions; "
                                       "other sizes are not supported.",
                                       &m->alias, e->dim);
    }

    e->vectors = calloc(e->req.n_inputs * e->dim, sizeof(float));
    e->seqs = ngx_pcalloc(r->pool, e->req.n_inputs * sizeof(void *));
    if (e->vectors == NULL || e->seqs == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < e->req.n_inputs; i++) {
        ids = p->input_ids[i] ? p->input_ids[i] : e->req.inputs[i].ids;
        n_ids = p->input_n[i];

        if (n_ids == 0 || n_ids > llm_sched_n_ctx(m->sched)) {
            return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                           "input", "context_length_exceeded",
                                           "Input %uz has %uz tokens; the "
                                           "limit is %ui.", i, n_ids,
                                           llm_sched_n_ctx(m->sched));
        }

        seq = llm_seq_create(m->sched, ids, n_ids, 0, NULL, -1,
                             &ngx_http_llm_embed_events, e, i);
        if (seq == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        e->seqs[i] = seq;

        e->prompt_tokens += (long) n_ids;
    }

    ngx_http_llm_get_ctx(r)->prompt_tokens = e->prompt_tokens;

    /* up to parallel inputs at a time; at least one place, or 429 now */
    if (llm_sched_reserve(m->sched, 1, ngx_min(e->req.n_inputs, m->parallel),
                          &granted)
        != LLM_ADMIT_OK)
    {
        return ngx_http_llm_send_busy(r, m);
    }

    while (e->n_submitted < granted) {
        llm_sched_submit(m->sched, e->seqs[e->n_submitted++]);
    }

    r->read_event_handler = ngx_http_test_reading;

    return NGX_DONE;
}
