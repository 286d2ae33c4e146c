/*
 * Fixed pool of compute threads for one runtime.  llm_pool_run calls
 * fn(arg, ith, nth) on every thread (the caller is thread 0) and returns when
 * all are done.  Workers spin briefly between runs (a forward pass issues a
 * few hundred runs back to back), then sleep on a condition variable.
 */
#ifndef LLM_POOL_H
#define LLM_POOL_H

#include <stddef.h>

typedef struct llm_pool llm_pool;
typedef void (*llm_pool_fn)(void *arg, int ith, int nth);

llm_pool *llm_pool_create(int n_threads, char *err, size_t errlen);
void llm_pool_free(llm_pool *p);
int llm_pool_size(const llm_pool *p);
void llm_pool_run(llm_pool *p, llm_pool_fn fn, void *arg);

#endif
