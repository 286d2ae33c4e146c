/* Compute thread pool: generation counter + spin, then condition variable. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/llm_pool.h"

#define SPIN_ROUNDS 200000

typedef struct {
    llm_pool  *pool;
    int        ith;
    pthread_t  tid;
} llm_pool_worker;

struct llm_pool {
    int                n;
    llm_pool_worker   *workers;       /* n - 1 threads; the caller is thread 0 */
    int                started;
    llm_pool_fn        fn;
    void              *arg;
    atomic_uint_fast64_t gen;         /* bumped once per run */
    atomic_int         done;          /* workers finished with this run */
    atomic_int         sleeping;
    atomic_int         quit;
    pthread_mutex_t    mu;
    pthread_cond_t     cv;
};

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *
worker_main(void *a)
{
    llm_pool_worker *w = a;
    llm_pool *p = w->pool;
    uint64_t seen = 0;
    int i;

    for ( ;; ) {
        for (i = 0; i < SPIN_ROUNDS; i++) {
            if (atomic_load(&p->gen) != seen || atomic_load(&p->quit)) break;
            cpu_relax();
        }
        if (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleeping, 1);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) {
                pthread_cond_wait(&p->cv, &p->mu);
            }
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) break;
        seen = atomic_load(&p->gen);
        p->fn(p->arg, w->ith, p->n);
        atomic_fetch_add(&p->done, 1);
    }
    return NULL;
}

llm_pool *
llm_pool_create(int n_threads, char *err, size_t errlen)
{
    llm_pool *p;
    int i, rc;

    if (n_threads < 1) n_threads = 1;
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->workers = calloc((size_t) n_threads, sizeof(*p->workers));
    if (p->workers == NULL) {
        snprintf(err, errlen, "out of memory");
        llm_pool_free(p);
        return NULL;
    }
    for (i = 1; i < n_threads; i++) {
        p->workers[i].pool = p;
        p->workers[i].ith = i;
        rc = pthread_create(&p->workers[i].tid, NULL, worker_main, &p->workers[i]);
        if (rc != 0) {
            snprintf(err, errlen, "cannot start compute thread: %s", strerror(rc));
            llm_pool_free(p);
            return NULL;
        }
        p->started = i;
    }
    return p;
}

void
llm_pool_free(llm_pool *p)
{
    int i;

    if (p == NULL) return;
    atomic_store(&p->quit, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (i = 1; i <= p->started; i++) {
        pthread_join(p->workers[i].tid, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->workers);
    free(p);
}

int
llm_pool_size(const llm_pool *p)
{
    return p->n;
}

void
llm_pool_run(llm_pool *p, llm_pool_fn fn, void *arg)
{
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->done, 0);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    while (atomic_load(&p->done) < p->n - 1) {
        cpu_relax();
    }
}
