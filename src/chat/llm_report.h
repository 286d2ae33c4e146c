/*
 * What the server reports about the models it serves, from each one's
 * scheduler: GET /health's body (in this worker: slots, queue, tokens,
 * step times, speculation, KV blocks) and one worker's numbers for the
 * /metrics zone (core/llm_metrics.h adds the workers up and renders them).
 * The glue only gathers its models and sends the result.  No nginx.
 */
#ifndef LLM_REPORT_H
#define LLM_REPORT_H

#include <stddef.h>

#include <jansson.h>

#include "core/llm_metrics.h"
#include "engine/llm_sched.h"

/* One served model as /health lists it. */
typedef struct {
    const char       *id;              /* the alias requests name */
    size_t            id_len;
    long              context_length;
    long              parallel;
    const llm_sched  *sched;           /* NULL: not served by this worker */
} llm_report_model;

/*
 * /health's body: {"status", "models": [{"id", "context_length",
 * "parallel", then the scheduler's numbers}], "pid"}.  A model without a
 * scheduler is "unavailable", and so is the whole answer: *unavailable is
 * set then (the server answers 503).  NULL when out of memory.
 */
json_t *llm_report_health(const llm_report_model *models, size_t n, long pid,
    int *unavailable);

/* One worker's numbers for the /metrics zone, from its scheduler. */
void llm_report_metrics(const llm_sched *s, llm_metrics_worker *w);

#endif
