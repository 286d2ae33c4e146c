/* Streaming read bandwidth over the runtime's compute threads. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_hugepages.h"
#include "engine/llm_runtime_impl.h"

typedef struct {
    const llm_kernels *k;
    const char        *buf;
    size_t             bytes;
    uint64_t           sink[256];
} bw_job;

static void
bw_task(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    bw_job *j = arg;
    size_t per = j->bytes / (size_t) nth / 4096 * 4096;
    j->sink[ith & 255] ^= j->k->read_stream(j->buf + per * (size_t) ith, per);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

double
llm_runtime_read_bandwidth(llm_runtime *rt, size_t bytes)
{
    bw_job j;
    double best = 0, t0, dt;
    size_t per;
    int rep;

    memset(&j, 0, sizeof(j));
    j.k = rt->k;
    j.bytes = bytes;
    per = bytes / (size_t) rt->n_threads / 4096 * 4096;
    if (per == 0) return -1;
    j.buf = llm_alloc_streamed(bytes / 4096 * 4096 + 4096);   /* the pages the weights made at load get */
    if (j.buf == NULL) return -1;
    {
        /* distinct contents on every page, so no layer below can share pages */
        uint64_t *w = (uint64_t *) j.buf;
        size_t i, nw = bytes / 4096 * 4096 / 8;
        for (i = 0; i < nw; i++) w[i] = (uint64_t) i * 0x9e3779b97f4a7c15ull;
    }
    for (rep = 0; rep < 5; rep++) {
        t0 = now_s();
        llm_pool_run(rt->pool, bw_task, &j, rt->n_threads);
        dt = now_s() - t0;
        if (dt > 0 && per * rt->n_threads / dt > best) best = per * rt->n_threads / dt;
    }
    free((void *) j.buf);
    return best;
}

/* One pass over every byte of the model's mapped weight files, as decode reads them. */
double
llm_runtime_weight_read_bandwidth(llm_runtime *rt)
{
    const llm_model *m = rt->m;
    bw_job j;
    double best = 0, t0, dt;
    size_t total;
    int rep, f;

    for (rep = 0; rep < 3; rep++) {
        total = 0;
        t0 = now_s();
        for (f = 0; f < m->n_files; f++) {
            size_t n = m->files[f].size / 64 * 64;
            memset(&j, 0, sizeof(j));
            j.k = rt->k;
            j.buf = m->files[f].map;
            j.bytes = n;
            if (n / (size_t) (rt->n_threads * 4) / 4096 == 0) continue;
            llm_pool_run(rt->pool, bw_task, &j, rt->n_threads * 4);
            total += n / (size_t) (rt->n_threads * 4) / 4096 * 4096 * (size_t) (rt->n_threads * 4);
        }
        dt = now_s() - t0;
        if (dt > 0 && total / dt > best) best = total / dt;
    }
    return best;
}
