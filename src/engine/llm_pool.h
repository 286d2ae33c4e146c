/*
 * Fixed pool of compute threads for one runtime.  llm_pool_run splits a job
 * into n_chunks pieces that the threads (the caller included) claim one at a
 * time, so a thread that the OS descheduled (other processes on the same
 * cores) delays the job by at most one chunk.  Workers spin briefly between
 * jobs (a forward pass issues a few hundred back to back), then sleep.
 */
#ifndef LLM_POOL_H
#define LLM_POOL_H

#include <stddef.h>

typedef struct llm_pool llm_pool;
/* chunk in [0, n_chunks); thread in [0, pool size) indexes per-thread scratch */
typedef void (*llm_pool_fn)(void *arg, int chunk, int n_chunks, int thread);

#define LLM_POOL_MAX_CHUNKS 4096

llm_pool *llm_pool_create(int n_threads, char *err, size_t errlen);
void llm_pool_free(llm_pool *p);
int llm_pool_size(const llm_pool *p);
void llm_pool_run(llm_pool *p, llm_pool_fn fn, void *arg, int n_chunks);
/*
 * While wait is not NULL, each step on more than one thread adds the seconds
 * the caller waited for the others after its last chunk to *wait, counts
 * itself in *steps and, when it had to wake a sleeping thread, in *wakes.
 */
void llm_pool_time_waits(llm_pool *p, double *wait, long *steps, long *wakes);

#endif
