/*
 * The panel matmuls alone, one thread, on every kernel table this CPU runs:
 * Q8_0 / Q4_0 panels of the Qwen2.5-0.5B MLP shapes (gate: 4864 x 896, down:
 * 896 x 4864) for batch-1 decode (GB/s of weights consumed; the same matrix
 * read again and again comes from the last-level cache, so this is what the
 * kernel can take, a ceiling above the memory's rate) and for a batch of 128
 * tokens as prefill runs it (G multiply-adds per second).  Best of REPEATS,
 * so a shared machine's slow moments do not count.  Not a test: prints
 * numbers.
 *
 *   build/bench/qmatmul [REPEATS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_quant.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* deterministic bytes: block scales kept finite (a float16 of 2^-8 .. 2^-1) */
static void
fill(llm_wtype t, unsigned char *w, size_t nblocks)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    unsigned x = 12345;
    size_t i, j;

    for (i = 0; i < nblocks; i++) {
        unsigned char *b = w + i * (size_t) tr->bytes;
        for (j = 0; j < (size_t) tr->bytes; j++) {
            x = x * 1103515245u + 12345u;
            b[j] = (unsigned char) (x >> 16);
        }
        b[0] = 0; b[1] = (unsigned char) (0x1c + (i & 7));     /* f16 d first in both layouts */
    }
}

int
main(int argc, char **argv)
{
    const llm_kernels *(*const tables[])(void) = {
        llm_kernels_avx2, llm_kernels_avx512, llm_kernels_avx512vnni, llm_kernels_avx512amx
    };
    static const llm_wtype types[] = { LLM_WT_Q8_0, LLM_WT_Q4_0 };
    static const int shapes[][2] = { { 4864, 896 }, { 896, 4864 } };    /* rows, k */
    static const int tokens[] = { 1, 128 };
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    size_t ti, ki, si, ni;

    if (repeats < 1) repeats = 1;
    for (ki = 0; ki < sizeof(tables) / sizeof(tables[0]); ki++) {
        const llm_kernels *k = tables[ki]();
        if (k == NULL) continue;
        for (ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
            llm_wtype src = types[ti], pt = (llm_wtype) llm_panel_type(src);
            for (si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
                int R = shapes[si][0], K = shapes[si][1];
                size_t rb = llm_wtype_row_bytes(src, K), pb = llm_panel_bytes(pt, R, K), ldq = llm_qa_row_bytes(K);
                unsigned char *w = malloc(rb * R), *pw = malloc(pb), *xq = malloc(ldq * 128);
                float *x = malloc((size_t) K * sizeof(float)), *y = malloc((size_t) R * 128 * sizeof(float));
                int i, j;

                if (!w || !pw || !xq || !x || !y) return 1;
                fill(src, w, rb * R / (size_t) llm_wtype_info(src)->bytes);
                llm_panel_pack(pt, pw, w, R, K);
                for (j = 0; j < 128; j++) {
                    for (i = 0; i < K; i++) x[i] = (float) ((i * 7 + j * 13) % 29) / 29.0f - 0.5f;
                    k->quantize_act(xq + (size_t) j * ldq, x, K);
                }
                for (ni = 0; ni < sizeof(tokens) / sizeof(tokens[0]); ni++) {
                    int n = tokens[ni], r, inner = n == 1 ? 8 : 2;
                    double best = 1e30;
                    for (r = 0; r < repeats; r++) {
                        double t0 = now_s(), dt;
                        for (i = 0; i < inner; i++) k->matmul_q[pt](y, (size_t) R, xq, ldq, pw, K, 0, R, n, 0);
                        dt = (now_s() - t0) / inner;
                        if (dt < best) best = dt;
                    }
                    if (n == 1) {
                        printf("%-10s %-8s %4d x %-4d  1 token:  %7.3f ms  %6.2f GB/s\n", k->name,
                               llm_wtype_info(pt)->name, R, K, best * 1e3, (double) pb / best / 1e9);
                    } else {
                        printf("%-10s %-8s %4d x %-4d %d tokens: %7.3f ms  %6.1f GMAC/s\n", k->name,
                               llm_wtype_info(pt)->name, R, K, n, best * 1e3, (double) R * K * n / best / 1e9);
                    }
                }
                free(w); free(pw); free(xq); free(x); free(y);
            }
        }
    }
    return 0;
}
