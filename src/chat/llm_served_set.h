/*
 * The models a server serves (every llm_model line, in order), and what the
 * server answers or checks about all of them: the model a request names,
 * GET /v1/models, /health, /metrics, the configuration's memory check, and
 * each model's scheduler and generation configuration.  The nginx glue
 * keeps the array (in its main configuration) and runs the schedulers; the
 * rules live here, tested without nginx.  No nginx.
 */
#ifndef LLM_SERVED_SET_H
#define LLM_SERVED_SET_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/llm_api.h"
#include "chat/llm_generation.h"
#include "chat/llm_prepare.h"
#include "chat/llm_served.h"
#include "chat/llm_structured.h"
#include "core/llm_metrics.h"
#include "engine/llm_sched.h"

/* One llm_model line: loaded once (in nginx's master), and per worker its
 * scheduler. */
typedef struct {
    const char       *alias;        /* NUL-terminated: what requests name */
    size_t            alias_len;
    llm_served_opts   opts;         /* the line's options (llm_served_line) */
    llm_served        served;       /* weights, tokenizer, template, parsers */
    long long         created;      /* Unix seconds: when it was configured */
    const char       *conf_file;    /* where the line is, for messages */
    unsigned long     conf_line;

    /* per worker */
    llm_sched        *sched;        /* NULL: not served by this worker */
    llm_structured   *structured;   /* compiled grammars; NULL until built */
    void             *runner;       /* the server's own (its step loop) */
} llm_served_model;

/* The prefix caches' disk tier (llm_kv_cache_path): dir NULL for none. */
typedef struct {
    const char       *dir;
    uint64_t          max;          /* bytes the directory may hold */
} llm_served_disk;

/*
 * The model called name, NULL or "" naming none: the only model when
 * there is one.  any_model (llm_any_model): a name no model has goes to
 * the only model too.  NULL when there is no such model.
 */
llm_served_model *llm_served_find(llm_served_model *m, size_t n,
    const char *name, int any_model);

/* llm_served_find for the request preparation (chat/llm_prepare.h): 0
 * with *pm (its owner the model), or -1. */
int llm_served_pick(llm_served_model *m, size_t n, const char *name,
    int any_model, llm_prepare_model *pm);

/*
 * What a model gives every generation request (chat/llm_generation.h): cfg
 * cleared, then its scheduler, tokenizer, model info and alias, the parsers
 * (the location's choice, or the model's where the location leaves it to
 * the model) and its structured-output state, built here when it was not
 * (at worker start): -1 with err when it cannot be.  The server's own
 * fields (fingerprint, created, limits, speculation, key) are the caller's.
 */
int llm_served_generation(llm_served_model *m, const llm_parser_choice *tool,
    const llm_parser_choice *reasoning, llm_generation_config *cfg,
    char *err, size_t errlen);

/* The scheduler configuration of a model (without its wake). */
void llm_served_sched_config(const llm_served_model *m,
    const llm_served_disk *disk, llm_sched_config *cfg);

/*
 * The configuration's memory check (engine/llm_memory.h) of every model
 * with workers workers, limit and limit_set as llm_memory_check takes them:
 * 0 with msg the summary, or -1 with msg the configuration's error.
 */
int llm_served_memory_check(const llm_served_model *m, size_t n,
    const llm_served_disk *disk, uint64_t workers, uint64_t limit,
    int limit_set, char *msg, size_t len);

/* GET /v1/models[/{id}] (api/llm_api_models.h) of every model; max_tokens:
 * the location's llm_max_tokens (<= 0: none). */
json_t *llm_served_models_get(const llm_served_model *m, size_t n,
    long max_tokens, const char *uri, size_t uri_len, int anthropic,
    llm_api_error *err);

/* /health's body (chat/llm_report.h) of every model; *unavailable set when
 * one is not served by this worker. */
json_t *llm_served_health(const llm_served_model *m, size_t n, long pid,
    int *unavailable);

/* This worker's numbers of model i (m[i]: none without a scheduler) into
 * its slot of the /metrics block (core/llm_metrics.h). */
void llm_served_publish(llm_metrics *mx, const llm_served_model *m, size_t i,
    size_t worker);

/* The /metrics text of every model, this worker's numbers published first
 * (as fresh as the scrape).  0, or -1 out of memory. */
int llm_served_metrics(llm_metrics *mx, const llm_served_model *m, size_t n,
    size_t worker, llm_buf *b);

#endif
