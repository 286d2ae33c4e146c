/*
 * llm_responses_store zone=NAME:SIZE [ttl=TIME]: the Responses API's kept
 * responses in a shared memory zone, so that previous_response_id, GET and
 * DELETE /v1/responses/{id} find a response whichever worker made it.
 * What is kept, and how it is bounded and expired, is
 * api/llm_response_store.h (the zone's slab allocator is its memory, the
 * zone's mutex serialises it) and api/llm_responses.h (the record).
 */
#include "ngx_http_llm_generate.h"

#include "api/llm_response_store.h"
#include "api/llm_responses.h"


/* One hash chain per this many bytes of the zone. */
#define NGX_HTTP_LLM_RESPONSES_BUCKET_BYTES  4096

/* Without ttl=: an hour. */
#define NGX_HTTP_LLM_RESPONSES_TTL  3600


struct ngx_http_llm_responses_s {
    ngx_slab_pool_t     *shpool;
    llm_response_store  *store;
    time_t               ttl;
    llm_response_lookup  lookup;     /* for the parser (a prepare thread) */
};


static void *
ngx_http_llm_responses_alloc(void *ctx, size_t size)
{
    return ngx_slab_alloc_locked(ctx, size);
}


static void
ngx_http_llm_responses_free(void *ctx, void *p)
{
    ngx_slab_free_locked(ctx, p);
}


static void
ngx_http_llm_responses_mem(ngx_http_llm_responses_t *rs, llm_store_mem *mem)
{
    mem->alloc = ngx_http_llm_responses_alloc;
    mem->free = ngx_http_llm_responses_free;
    mem->ctx = rs->shpool;
}


/* previous_response_id, from a prepare thread: the record is copied out. */
static int
ngx_http_llm_responses_get(void *data, const char *id, size_t id_len,
    llm_buf *out)
{
    ngx_http_llm_responses_t *rs = data;

    int            rc;
    llm_store_mem  mem;

    ngx_http_llm_responses_mem(rs, &mem);

    ngx_shmtx_lock(&rs->shpool->mutex);
    rc = llm_response_store_get(rs->store, &mem, id, id_len, ngx_time(), out);
    ngx_shmtx_unlock(&rs->shpool->mutex);

    return rc;
}


static ngx_int_t
ngx_http_llm_responses_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_llm_responses_t *ors = data;

    size_t                     n;
    llm_store_mem              mem;
    ngx_http_llm_responses_t  *rs;

    rs = shm_zone->data;

    if (ors) {
        /* a reload: the kept responses stay */
        rs->shpool = ors->shpool;
        rs->store = ors->store;
        return NGX_OK;
    }

    rs->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        rs->store = rs->shpool->data;
        return NGX_OK;
    }

    /* a full zone evicts; that is no failure worth a log line each time */
    rs->shpool->log_nomem = 0;

    ngx_http_llm_responses_mem(rs, &mem);
    n = shm_zone->shm.size / NGX_HTTP_LLM_RESPONSES_BUCKET_BYTES;
    rs->store = llm_response_store_create(&mem, n);
    if (rs->store == NULL) {
        return NGX_ERROR;
    }
    rs->shpool->data = rs->store;

    return NGX_OK;
}


char *
ngx_http_llm_responses_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_llm_main_conf_t *mcf = conf;

    u_char                    *p;
    time_t                     ttl;
    ssize_t                    size;
    ngx_str_t                 *value, name, s;
    ngx_uint_t                 i;
    ngx_shm_zone_t            *zone;
    ngx_http_llm_responses_t  *rs;

    if (mcf->responses) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name.len = 0;
    size = 0;
    ttl = NGX_HTTP_LLM_RESPONSES_TTL;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            name.data = value[i].data + 5;
            p = (u_char *) ngx_strchr(name.data, ':');
            if (p == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            name.len = p - name.data;
            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;
            size = ngx_parse_size(&s);
            if (size == NGX_ERROR || size < (ssize_t) (8 * ngx_pagesize)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\" (at least %uz)",
                                   &value[i], 8 * ngx_pagesize);
                return NGX_CONF_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "ttl=", 4) == 0) {
            s.data = value[i].data + 4;
            s.len = value[i].len - 4;
            ttl = ngx_parse_time(&s, 1);
            if (ttl == (time_t) NGX_ERROR || ttl <= 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid ttl \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    rs = ngx_pcalloc(cf->pool, sizeof(ngx_http_llm_responses_t));
    if (rs == NULL) {
        return NGX_CONF_ERROR;
    }
    rs->ttl = ttl;
    rs->lookup.get = ngx_http_llm_responses_get;
    rs->lookup.ctx = rs;

    zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_llm_module);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }
    if (zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is already used", &name);
        return NGX_CONF_ERROR;
    }
    zone->init = ngx_http_llm_responses_init_zone;
    zone->data = rs;

    mcf->responses = rs;

    return NGX_CONF_OK;
}


const llm_response_lookup *
ngx_http_llm_responses_lookup(ngx_http_llm_main_conf_t *mcf)
{
    return mcf->responses ? &mcf->responses->lookup : NULL;
}


void
ngx_http_llm_responses_keep(ngx_http_request_t *r, llm_reply *reply)
{
    int                        rc;
    llm_buf                    rec;
    const char                *id;
    llm_store_mem              mem;
    ngx_http_llm_responses_t  *rs;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    rs = mcf->responses;
    if (rs == NULL) {
        return;
    }

    llm_buf_init(&rec);
    rc = llm_reply_record(reply, &rec);
    if (rc == 1) {
        id = llm_reply_id(reply);
        ngx_http_llm_responses_mem(rs, &mem);

        ngx_shmtx_lock(&rs->shpool->mutex);
        rc = llm_response_store_put(rs->store, &mem, id, ngx_strlen(id),
                                    rec.data, rec.len, ngx_time(), rs->ttl);
        ngx_shmtx_unlock(&rs->shpool->mutex);

        if (rc != 0) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "llm: response %s (%uz bytes) is larger than the "
                          "llm_responses_store zone and is not kept",
                          id, rec.len);
        }

    } else if (rc < 0) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "llm: out of memory keeping a response");
    }
    llm_buf_free(&rec);
}


/* GET (HEAD) and DELETE /v1/responses/{id}. */
ngx_int_t
ngx_http_llm_responses_handler(ngx_http_request_t *r, const char *id,
    size_t id_len)
{
    int                        rc;
    llm_buf                    rec, body;
    ngx_int_t                  status;
    llm_api_error              err;
    llm_store_mem              mem;
    ngx_http_llm_responses_t  *rs;
    ngx_http_llm_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_llm_module);
    rs = mcf->responses;

    rc = 0;
    llm_buf_init(&rec);
    llm_buf_init(&body);

    if (rs) {
        ngx_http_llm_responses_mem(rs, &mem);

        ngx_shmtx_lock(&rs->shpool->mutex);
        if (r->method == NGX_HTTP_DELETE) {
            rc = llm_response_store_delete(rs->store, &mem, id, id_len,
                                           ngx_time());
        } else {
            rc = llm_response_store_get(rs->store, &mem, id, id_len,
                                        ngx_time(), &rec);
        }
        ngx_shmtx_unlock(&rs->shpool->mutex);
    }

    if (rc == 0) {
        llm_responses_error_not_found(&err, NULL, id, id_len);
        status = ngx_http_llm_send_api_error(r, &err);

    } else if (rc < 0
               || (r->method == NGX_HTTP_DELETE
                   ? llm_responses_deleted(&body, id, id_len)
                   : llm_responses_record_response(&body, rec.data, rec.len))
                  != 0)
    {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;

    } else {
        status = ngx_http_llm_send_json(r, NGX_HTTP_OK, body.data, body.len);
    }

    llm_buf_free(&rec);
    llm_buf_free(&body);

    return status;
}
