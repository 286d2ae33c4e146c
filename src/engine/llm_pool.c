/*
 * Compute thread pool.  One 64-bit ticket holds the job generation, its
 * number of chunks and the next unclaimed chunk, so a claim (compare and
 * swap) can only succeed for the job it was read from.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_pool.h"

#define SPIN_ROUNDS  100000     /* worker: pauses before sleeping */
#define YIELD_AFTER  2000       /* caller: pauses before yielding the core */

#define T_GEN(t)   ((t) >> 40)
#define T_N(t)     (((t) >> 20) & 0xfffff)
#define T_NEXT(t)  ((t) & 0xfffff)

typedef struct {
    llm_pool  *pool;
    int        ith;
    pthread_t  tid;
} llm_pool_worker;

struct llm_pool {
    int                 n;
    llm_pool_worker    *workers;      /* [1, n) are threads; the caller is 0 */
    int                 started;
    llm_pool_fn         fn;
    void               *arg;
    atomic_uint_fast64_t ticket;
    atomic_int          done;
    atomic_int          sleeping;
    atomic_int          quit;
    uint64_t            gen;
    pthread_mutex_t     mu;
    pthread_cond_t      cv;
    double             *wait;         /* llm_pool_time_waits */
    long               *steps, *wakes;
};

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claim and run chunks of the job whose ticket generation is gen. */
static void
work(llm_pool *p, uint64_t gen, int ith)
{
    for ( ;; ) {
        uint64_t t = atomic_load(&p->ticket);
        if (T_GEN(t) != gen || T_NEXT(t) >= T_N(t)) return;
        if (atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) {
            p->fn(p->arg, (int) T_NEXT(t), (int) T_N(t), ith);
            atomic_fetch_add(&p->done, 1);
        }
    }
}

static void *
worker_main(void *a)
{
    llm_pool_worker *w = a;
    llm_pool *p = w->pool;
    uint64_t seen = 0, g;
    int i;

    for ( ;; ) {
        for (i = 0; i < SPIN_ROUNDS; i++) {
            if (T_GEN(atomic_load(&p->ticket)) != seen || atomic_load(&p->quit)) break;
            cpu_relax();
        }
        if (T_GEN(atomic_load(&p->ticket)) == seen && !atomic_load(&p->quit)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleeping, 1);
            while (T_GEN(atomic_load(&p->ticket)) == seen && !atomic_load(&p->quit)) {
                pthread_cond_wait(&p->cv, &p->mu);
            }
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) break;
        g = T_GEN(atomic_load(&p->ticket));
        work(p, g, w->ith);
        seen = g;
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

void
llm_pool_time_waits(llm_pool *p, double *wait, long *steps, long *wakes)
{
    p->wait = wait;
    p->steps = steps;
    p->wakes = wakes;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
llm_pool_size(const llm_pool *p)
{
    return p->n;
}

void
llm_pool_run(llm_pool *p, llm_pool_fn fn, void *arg, int n_chunks)
{
    int i, woke = 0;
    double t0;

    if (n_chunks <= 0) return;
    if (n_chunks > LLM_POOL_MAX_CHUNKS) n_chunks = LLM_POOL_MAX_CHUNKS;
    if (p->n == 1 || n_chunks == 1) {
        for (i = 0; i < n_chunks; i++) fn(arg, i, n_chunks, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->gen = (p->gen + 1) & 0xffffff;
    if (p->gen == 0) p->gen = 1;          /* 0 is what idle workers have seen */
    atomic_store(&p->done, 0);
    atomic_store(&p->ticket, (p->gen << 40) | ((uint64_t) n_chunks << 20));
    if (atomic_load(&p->sleeping) > 0) {
        woke = 1;
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, p->gen, 0);
    t0 = p->wait ? now_s() : 0;
    for (i = 0; atomic_load(&p->done) < n_chunks; i++) {
        if (i < YIELD_AFTER) cpu_relax();
        else sched_yield();
    }
    if (p->wait) {
        *p->wait += now_s() - t0;
        (*p->steps)++;
        *p->wakes += woke;
    }
}
