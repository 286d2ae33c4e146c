/* The models a server serves, and what it says about all of them (llm_served_set.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/llm_api_models.h"
#include "chat/llm_report.h"
#include "chat/llm_served_set.h"
#include "engine/llm_memory.h"

llm_served_model *
llm_served_find(llm_served_model *m, size_t n, const char *name,
    int any_model)
{
    size_t  i, len;

    /* a single model answers requests that name none */
    if (name == NULL || name[0] == '\0') {
        return n == 1 ? &m[0] : NULL;
    }

    len = strlen(name);
    for (i = 0; i < n; i++) {
        if (m[i].alias_len == len && memcmp(m[i].alias, name, len) == 0) {
            return &m[i];
        }
    }

    /*
     * llm_any_model: agents send their own model names (and some rewrite
     * one they do not know); a single-model server may answer them all
     */
    return any_model && n == 1 ? &m[0] : NULL;
}

int
llm_served_pick(llm_served_model *m, size_t n, const char *name,
    int any_model, llm_prepare_model *pm)
{
    llm_served_model  *s;

    s = llm_served_find(m, n, name, any_model);
    if (s == NULL) {
        return -1;
    }

    pm->owner = s;
    pm->alias = s->alias;
    pm->model = s->served.model;
    pm->tok = s->served.tok;
    pm->chat = s->served.chat;
    pm->reasoning_parser = s->served.reasoning_parser;
    pm->context_length = s->served.n_ctx;

    return 0;
}

int
llm_served_generation(llm_served_model *m, const llm_parser_choice *tool,
    const llm_parser_choice *reasoning, llm_generation_config *cfg,
    char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->sched = m->sched;
    cfg->tok = m->served.tok;
    cfg->info = llm_model_get_info(m->served.model);
    cfg->model = m->alias;
    cfg->tool = tool->model ? m->served.tool_def : tool->def;
    cfg->reasoning = reasoning->model ? m->served.reasoning_def
                                      : reasoning->def;

    if (m->structured == NULL) {
        m->structured = llm_served_structured(&m->served, err, errlen);
    }
    cfg->structured = m->structured;

    return cfg->structured ? 0 : -1;
}

void
llm_served_sched_config(const llm_served_model *m,
    const llm_served_disk *disk, llm_sched_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->parallel = m->opts.parallel;
    cfg->queue = m->opts.queue;
    cfg->n_ctx = m->served.n_ctx;
    cfg->kv_memory = m->served.kv_memory;
    cfg->threads = m->opts.threads;
    cfg->kv = m->opts.kv;
    cfg->draft = m->served.draft;
    cfg->kv_disk = disk->dir;
    cfg->kv_disk_max = disk->max;
}

int
llm_served_memory_check(const llm_served_model *m, size_t n,
    const llm_served_disk *disk, uint64_t workers, uint64_t limit,
    int limit_set, char *msg, size_t len)
{
    int                rc;
    size_t             i, kv;
    llm_model         *draft;
    llm_sched_config   cfg;
    llm_memory_model  *list;

    list = calloc(n + 1, sizeof(*list));
    if (list == NULL) {
        snprintf(msg, len, "llm: out of memory checking the models' memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        llm_served_sched_config(&m[i], disk, &cfg);
        draft = m[i].served.draft;
        list[i].alias = m[i].alias;
        list[i].per_worker = llm_sched_memory(m[i].served.model, &cfg, &kv);
        list[i].kv = kv;
        list[i].weights = llm_model_get_info(m[i].served.model)->weight_bytes
                          + (draft ? llm_model_get_info(draft)->weight_bytes
                                   : 0);
        list[i].parallel = m[i].opts.parallel;
        list[i].n_ctx = m[i].served.n_ctx;
        list[i].conf_file = m[i].conf_file;
        list[i].conf_line = m[i].conf_line;
    }

    rc = llm_memory_check(list, n, workers, limit, limit_set, msg, len);
    free(list);

    return rc;
}

json_t *
llm_served_models_get(const llm_served_model *m, size_t n, long max_tokens,
    const char *uri, size_t uri_len, int anthropic, llm_api_error *err)
{
    size_t               i;
    json_t              *v;
    llm_api_model_card  *cards;

    cards = calloc(n + 1, sizeof(*cards));
    if (cards == NULL) {
        err->status = 0;
        return NULL;
    }

    for (i = 0; i < n; i++) {
        llm_api_model_card_init(&cards[i], m[i].alias, m[i].alias_len,
                                m[i].created, m[i].served.n_ctx, max_tokens);
    }

    v = llm_api_models_get(cards, n, uri, uri_len, anthropic, err);
    free(cards);

    return v;
}

json_t *
llm_served_health(const llm_served_model *m, size_t n, long pid,
    int *unavailable)
{
    size_t             i;
    json_t            *root;
    llm_report_model  *list;

    *unavailable = 0;
    list = calloc(n + 1, sizeof(*list));
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < n; i++) {
        list[i].id = m[i].alias;
        list[i].id_len = m[i].alias_len;
        list[i].context_length = m[i].served.n_ctx;
        list[i].parallel = m[i].opts.parallel;
        list[i].sched = m[i].sched;
    }

    root = llm_report_health(list, n, pid, unavailable);
    free(list);

    return root;
}

void
llm_served_publish(llm_metrics *mx, const llm_served_model *m, size_t i,
    size_t worker)
{
    llm_metrics_worker  w;

    if (m[i].sched) {
        llm_report_metrics(m[i].sched, &w);
        llm_metrics_publish(mx, i, worker, &w);
    }
}

int
llm_served_metrics(llm_metrics *mx, const llm_served_model *m, size_t n,
    size_t worker, llm_buf *b)
{
    int           rc;
    size_t        i;
    const char  **names;

    names = calloc(n + 1, sizeof(*names));
    if (names == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        llm_served_publish(mx, m, i, worker);
        names[i] = m[i].alias;
    }

    rc = llm_metrics_render(mx, names, b);
    free(names);

    return rc;
}
