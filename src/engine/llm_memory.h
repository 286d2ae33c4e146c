/*
 * Memory a configuration needs, for the check at configuration time
 * (nginx -t, reload): weights once, plus per worker the KV caches, scratch
 * and slot state of every model (llm_runtime_memory gives a runtime's share).
 * A configuration that needs more than the machine has is refused there,
 * instead of workers failing to start or being killed later.  No nginx.
 */
#ifndef LLM_MEMORY_H
#define LLM_MEMORY_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t shared;       /* mapped weights: once, whatever the worker count */
    uint64_t per_worker;   /* KV caches, scratch and slot state in one worker */
} llm_memory_need;

/* Adds one model: its weights and what each worker allocates for it. */
void llm_memory_add(llm_memory_need *need, uint64_t weights, uint64_t per_worker);

/* shared + workers x per_worker, saturating at UINT64_MAX. */
uint64_t llm_memory_total(const llm_memory_need *need, uint64_t workers);

/* One llm_model line as the configuration check reads it. */
typedef struct {
    const char     *alias;
    uint64_t        weights;      /* its weights and its draft's: mapped, shared */
    uint64_t        per_worker;   /* what each worker allocates for it (llm_sched_memory) */
    uint64_t        kv;           /* of which its KV blocks */
    int             parallel;
    int             n_ctx;
    const char     *conf_file;    /* where the line is, for the message */
    unsigned long   conf_line;
} llm_memory_model;

/*
 * The configuration's check: the models added in order against limit
 * bytes (limit_set: llm_memory_limit's, else the machine's).  0 with msg
 * the summary the server logs at notice level, or -1 with msg naming the
 * first model that takes the total over the limit, what it needs, where it
 * is configured and what to change (the configuration's error).
 */
int llm_memory_check(const llm_memory_model *models, size_t n, uint64_t workers, uint64_t limit,
    int limit_set, char *msg, size_t len);

/*
 * Memory this process may use: physical memory, or the memory limit of its
 * cgroup (v2 memory.max, v1 memory.limit_in_bytes) when that is lower.
 * 0 when neither can be read.
 */
uint64_t llm_memory_available(void);

#endif
