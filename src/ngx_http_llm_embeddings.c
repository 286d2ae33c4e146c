/*
 * POST /v1/embeddings the nginx way: the prepared inputs become an
 * embeddings request below the glue (chat/llm_embedding.h: an
 * embedding-only sequence per input, pooled by the scheduler); this file
 * answers the request when it is done.
 */
#include "ngx_http_llm_generate.h"

#include "chat/llm_embedding.h"


typedef struct {
    ngx_http_request_t     *r;
    llm_embedding          *emb;
} ngx_http_llm_embed_t;


static void
ngx_http_llm_embed_cleanup(void *data)
{
    ngx_http_llm_embed_t *e = data;

    llm_embedding_free(e->emb);
    e->emb = NULL;
}


static void
ngx_http_llm_embed_done(void *data, llm_embedding_end end, const char *error)
{
    ngx_http_llm_embed_t *e = data;

    llm_buf             *out;
    llm_api_error        err;
    ngx_http_request_t  *r = e->r;

    switch (end) {

    case LLM_EMBEDDING_FAILED:
        llm_api_error_internal(&err, "Embedding failed: %s", error);
        ngx_http_finalize_request(r, ngx_http_llm_send_api_error(r, &err));
        return;

    case LLM_EMBEDDING_BROKEN:
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;

    default:
        out = llm_embedding_out(e->emb);
        ngx_http_finalize_request(r, ngx_http_llm_send_json(r, NGX_HTTP_OK,
                                                            out->data,
                                                            out->len));
    }
}


static const llm_embedding_events  ngx_http_llm_embed_events = {
    ngx_http_llm_embed_done
};


ngx_int_t
ngx_http_llm_embeddings(ngx_http_request_t *r, ngx_http_llm_prep_t *p)
{
    llm_api_error          err;
    ngx_pool_cleanup_t    *cln;
    llm_served_model      *m = p->model;
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
    if (llm_embedding_create(m->sched, m->alias, &p->pr.ereq,
                             p->pr.input_ids, p->pr.input_n,
                             &ngx_http_llm_embed_events, e, &e->emb, &err)
        != 0)
    {
        return err.status ? ngx_http_llm_send_api_error(r, &err)
                          : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_llm_get_ctx(r)->prompt_tokens =
                                        llm_embedding_prompt_tokens(e->emb);

    /* up to parallel inputs at a time; at least one place, or 429 now */
    if (llm_embedding_submit(e->emb, (size_t) m->opts.parallel) != LLM_ADMIT_OK) {
        return ngx_http_llm_send_busy(r, m);
    }

    r->read_event_handler = ngx_http_test_reading;

    return NGX_DONE;
}
