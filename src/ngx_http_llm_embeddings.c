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
ngx_http_llm_embeddings(ngx_http_request_t *r, u_char *body, size_t len)
{
    long                   bad;
    size_t                 i, n_ids, granted;
    int32_t               *ids;
    llm_api_error          err;
    llm_api_limits         lim;
    llm_embed_input       *in;
    ngx_pool_cleanup_t    *cln;
    llm_seq               *seq;
    ngx_http_llm_model_t  *m;
    ngx_http_llm_embed_t  *e;
    ngx_http_llm_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_llm_module);

    e = ngx_pcalloc(r->pool, sizeof(ngx_http_llm_embed_t));
    if (e == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    e->r = r;

    llm_api_limits_default(&lim);
    ngx_memzero(&err, sizeof(err));

    if (llm_openai_parse_embeddings((char *) body, len, &lim, &e->req, &err)
        != 0)
    {
        return ngx_http_llm_send_error(r, err.status ? err.status : 400,
                                       err.type,
                                       err.param[0] ? err.param : NULL,
                                       err.code, "%s", err.message);
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        llm_embed_request_free(&e->req);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = ngx_http_llm_embed_cleanup;
    cln->data = e;

    m = ngx_http_llm_find_model(r, e->req.model);
    if (m == NULL) {
        return ngx_http_llm_send_error(r, NGX_HTTP_NOT_FOUND, NULL, "model",
                                       "model_not_found",
                                       "The model '%s' does not exist.",
                                       e->req.model ? e->req.model : "");
    }

    e->model = m;
    ngx_http_llm_get_ctx(r)->model = m;

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
        in = &e->req.inputs[i];

        if (in->text) {
            if (llm_tokenizer_encode(m->tokenizer, in->text, in->text_len, 1,
                                     &ids, &n_ids) != 0)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
        } else {
            ids = in->ids;
            n_ids = in->n_ids;

            /* the engine would refuse it in the middle of a batch */
            bad = llm_model_find_bad_token(m->model, ids, n_ids);
            if (bad >= 0) {
                return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                  "input", "invalid_value",
                                  "input token %D is outside the "
                                  "vocabulary (0..%d).", ids[bad],
                                  llm_model_get_info(m->model)->n_vocab - 1);
            }
        }

        /* the whole request is work for this worker: bounded in total */
        if (e->prompt_tokens + n_ids > (size_t) lcf->embeddings_max_tokens) {
            if (in->text) {
                free(ids);
            }
            return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                           "input", "too_many_tokens",
                                           "The inputs hold more than %i "
                                           "tokens in all (the limit per "
                                           "request, llm_embeddings_max_"
                                           "tokens); send fewer or shorter "
                                           "inputs per request.",
                                           lcf->embeddings_max_tokens);
        }

        if (n_ids == 0 || n_ids > llm_sched_n_ctx(m->sched)) {
            if (in->text) {
                free(ids);
            }
            return ngx_http_llm_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                           "input", "context_length_exceeded",
                                           "Input %uz has %uz tokens; the "
                                           "limit is %ui.", i, n_ids,
                                           llm_sched_n_ctx(m->sched));
        }

        seq = llm_seq_create(m->sched, ids, n_ids, 0, NULL, -1,
                             &ngx_http_llm_embed_events, e, i);
        if (in->text) {
            free(ids);
        }
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
