/*
 * Memory a configuration needs, for the check at configuration time
 * (nginx -t, reload): weights once, plus per worker the KV caches, scratch
 * and slot state of every model (llm_runtime_memory gives a runtime's share).
 * A configuration that needs more than the machine has is refused there,
 * instead of workers failing to start or being killed later.  No nginx.
 */
#ifndef LLM_MEMORY_H
#define LLM_MEMORY_H

#include <stdint.h>

typedef struct {
    uint64_t shared;       /* mapped weights: once, whatever the worker count */
    uint64_t per_worker;   /* KV caches, scratch and slot state in one worker */
} llm_memory_need;

/* Adds one model: its weights and what each worker allocates for it. */
void llm_memory_add(llm_memory_need *need, uint64_t weights, uint64_t per_worker);

/* shared + workers x per_worker, saturating at UINT64_MAX. */
uint64_t llm_memory_total(const llm_memory_need *need, uint64_t workers);

/*
 * Memory this process may use: physical memory, or the memory limit of its
 * cgroup (v2 memory.max, v1 memory.limit_in_bytes) when that is lower.
 * 0 when neither can be read.
 */
uint64_t llm_memory_available(void);

#endif
