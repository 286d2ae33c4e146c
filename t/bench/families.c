/*
 * Batch-1 decode of several models interleaved step by step in one process:
 * every round decodes one token in each model in turn (starting one model
 * later each round), so slow drifts of the
 * machine (memory bandwidth on a shared host moves by tens of percent within
 * a minute) reach every model alike.  Per model: the median step time and the
 * bandwidth that implies (bytes read per token / median step), and its ratio
 * to the first model's.  1.00 = the same share of the memory bound as the
 * first model (Llama in t/bench/families.sh).  Not a test: prints numbers.
 *
 *   build/bench/families THREADS STEPS MODEL_DIR...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_engine.h"

#define MAX_MODELS 32

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    llm_model *m[MAX_MODELS];
    llm_runtime *rt[MAX_MODELS];
    int slot[MAX_MODELS], n, i, s, threads, steps, P = 16;
    int32_t next[MAX_MODELS], prompt[16];
    double *t[MAX_MODELS], med[MAX_MODELS];
    char err[512];

    if (argc < 4 || argc - 3 > MAX_MODELS) {
        fprintf(stderr, "usage: %s THREADS STEPS MODEL_DIR... (at most %d)\n", argv[0], MAX_MODELS);
        return 2;
    }
    threads = atoi(argv[1]);
    steps = atoi(argv[2]);
    n = argc - 3;
    if (steps <= 0) return 2;
    for (i = 0; i < n; i++) {
        m[i] = llm_model_load(argv[3 + i], err, sizeof(err));
        rt[i] = m[i] ? llm_runtime_create(m[i], threads, P + steps + 1, 1, err, sizeof(err)) : NULL;
        t[i] = malloc((size_t) steps * sizeof(double));
        if (rt[i] == NULL || t[i] == NULL) {
            fprintf(stderr, "%s: %s\n", argv[3 + i], err);
            return 1;
        }
        for (s = 0; s < P; s++) prompt[s] = (int32_t) ((s * 7919 + 17) % llm_model_get_info(m[i])->n_vocab);
        slot[i] = llm_seq_open(rt[i]);
        {
            llm_batch_item it = { slot[i], prompt, P, 1, 0 };
            if (llm_forward(rt[i], &it, 1, err, sizeof(err)) != 0) {
                fprintf(stderr, "%s: %s\n", argv[3 + i], err);
                return 1;
            }
        }
        next[i] = 1;
    }
    for (s = 0; s < steps; s++) {
        int r;
        /* each round starts one model later, so no model always follows the same one */
        for (r = 0; r < n; r++) {
            llm_batch_item it;
            const float *lg;
            int j, best = 0, V;
            double t0;

            i = (s + r) % n;
            it = (llm_batch_item) { slot[i], &next[i], 1, 1, 0 };
            V = llm_model_get_info(m[i])->n_vocab;
            t0 = now_s();
            if (llm_forward(rt[i], &it, 1, err, sizeof(err)) != 0) {
                fprintf(stderr, "%s: %s\n", argv[3 + i], err);
                return 1;
            }
            lg = llm_forward_logits(rt[i], 0);
            for (j = 1; j < V; j++) if (lg[j] > lg[best]) best = j;
            next[i] = best;
            t[i][s] = now_s() - t0;
        }
    }
    printf("%-40s %9s %10s %9s %8s\n", "model", "MB/token", "median ms", "GB/s", "ratio");
    for (i = 0; i < n; i++) {
        double mb = llm_model_get_info(m[i])->active_bytes / 1e6, gbs, gbs0;
        qsort(t[i], (size_t) steps, sizeof(double), cmp_double);
        med[i] = t[i][steps / 2];
        gbs = mb / 1e3 / med[i];
        gbs0 = llm_model_get_info(m[0])->active_bytes / 1e9 / med[0];
        printf("%-40s %9.1f %10.3f %9.1f %8.3f\n", argv[3 + i], mb, med[i] * 1e3, gbs, gbs / gbs0);
    }
    for (i = 0; i < n; i++) {
        llm_runtime_free(rt[i]);
        llm_model_free(m[i]);
        free(t[i]);
    }
    return 0;
}
