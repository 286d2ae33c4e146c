/*
 * Quantized formats: dequantization equals each ggml block layout's
 * definition (hand-made blocks with values worked out from the layout),
 * quantizers round-trip representable values and stay within their step,
 * int8 activation rows are the same bytes in every kernel table, and every
 * SIMD quantized matmul equals the scalar reference on odd shapes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_quant.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

static float
frand(void)
{
    return (float) ((next() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

#define F16(x) llm_f32_to_f16(x)

/* dequantize one block and compare chosen values */
static void
check_values(llm_wtype t, const void *blk, const int *idx, const float *want, int n, const char *what)
{
    float y[LLM_QK];
    int i, bad = 0;
    llm_dequant_row(t, blk, y, llm_wtype_info(t)->block);
    for (i = 0; i < n; i++) {
        if (y[idx[i]] != want[i]) {
            printf("#   %s value %d: got %.9g, want %.9g\n", what, idx[i], y[idx[i]], want[i]);
            bad++;
        }
    }
    ok(bad == 0, "%s: dequantized values match the block layout", what);
}

static void
test_vectors(void)
{
    {
        llm_block_q4_0 b; memset(&b, 0, sizeof(b));
        b.d = F16(0.5f); b.qs[0] = 0x1F; b.qs[1] = 0x80;
        /* value j: low nibble of byte j minus 8; value j+16: high nibble minus 8 */
        int idx[] = { 0, 16, 1, 17, 2 }; float want[] = { 3.5f, -3.5f, -4.0f, 0.0f, -4.0f };
        check_values(LLM_WT_Q4_0, &b, idx, want, 5, "Q4_0");
    }
    {
        llm_block_q4_1 b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f); b.m = F16(-1.0f); b.qs[0] = 0x2F;
        int idx[] = { 0, 16, 5 }; float want[] = { 14.0f, 1.0f, -1.0f };
        check_values(LLM_WT_Q4_1, &b, idx, want, 3, "Q4_1");
    }
    {
        llm_block_q5_0 b; memset(&b, 0, sizeof(b));
        uint32_t qh = 1u | (1u << 16) | (1u << 31);
        b.d = F16(1.0f); memcpy(b.qh, &qh, 4); b.qs[15] = 0xFF;
        /* bit j of qh is the fifth bit of value j */
        int idx[] = { 0, 16, 15, 31, 1 }; float want[] = { 0.0f, 0.0f, -1.0f, 15.0f, -16.0f };
        check_values(LLM_WT_Q5_0, &b, idx, want, 5, "Q5_0");
    }
    {
        llm_block_q5_1 b; memset(&b, 0, sizeof(b));
        uint32_t qh = 1u << 1;
        b.d = F16(0.5f); b.m = F16(2.0f); memcpy(b.qh, &qh, 4); b.qs[1] = 0x03;
        int idx[] = { 1, 17 }; float want[] = { 11.5f, 2.0f };
        check_values(LLM_WT_Q5_1, &b, idx, want, 2, "Q5_1");
    }
    {
        llm_block_q8_0 b; memset(&b, 0, sizeof(b));
        b.d = F16(0.5f); b.qs[0] = -128; b.qs[31] = 127;
        int idx[] = { 0, 31, 7 }; float want[] = { -64.0f, 63.5f, 0.0f };
        check_values(LLM_WT_Q8_0, &b, idx, want, 3, "Q8_0");
    }
    {
        llm_block_q2_k b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f); b.dmin = F16(0.5f);
        b.scales[0] = 0x32; b.scales[2] = 0x01; b.scales[4] = 0x13; b.scales[8] = 0xF4;
        b.qs[0] = 0xE4; b.qs[16] = 3; b.qs[32] = 1;
        /* value 32j+l of each 128: bits 2j of byte l; scale byte per 16 values: low nibble scale, high min */
        int idx[] = { 0, 16, 32, 64, 128 }; float want[] = { -1.5f, 0.0f, 1.0f, 5.5f, -3.5f };
        check_values(LLM_WT_Q2_K, &b, idx, want, 5, "Q2_K");
    }
    {
        llm_block_q3_k b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f);
        b.scales[0] = 0x21; b.scales[8] = 0x93;   /* scales 0, 8, 12 = 17, -14, 0; scale 4 = -32 */
        b.qs[0] = 0x03; b.hmask[0] = 0x01; b.qs[32] = 0x02; b.qs[1] = 0;
        int idx[] = { 0, 1, 128, 192, 64 }; float want[] = { 51.0f, -68.0f, 28.0f, 0.0f, 128.0f };
        check_values(LLM_WT_Q3_K, &b, idx, want, 5, "Q3_K");
    }
    {
        llm_block_q4_k b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f); b.dmin = F16(0.5f);
        b.scales[0] = 0x43; b.scales[4] = 0x82; b.scales[8] = 0x51;   /* chunk 0: 3, 2; chunk 4: 17, 37 */
        b.qs[0] = 0x7A; b.qs[64] = 0x0C;
        int idx[] = { 0, 32, 128 }; float want[] = { 29.0f, 0.0f, 185.5f };
        check_values(LLM_WT_Q4_K, &b, idx, want, 3, "Q4_K");
    }
    {
        llm_block_q5_k b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f); b.dmin = F16(0.5f);
        b.scales[0] = 0x43; b.scales[4] = 0x82; b.scales[8] = 0x51;
        b.qs[0] = 0x7A; b.qs[64] = 0x0C; b.qh[0] = 0x13;   /* bit c of qh[l]: fifth bit of chunk c */
        int idx[] = { 0, 32, 128 }; float want[] = { 77.0f, 0.0f, 457.5f };
        check_values(LLM_WT_Q5_K, &b, idx, want, 3, "Q5_K");
    }
    {
        llm_block_q6_k b; memset(&b, 0, sizeof(b));
        b.d = F16(0.5f); b.scales[0] = 2; b.scales[2] = -3; b.scales[4] = 1; b.scales[8] = 4;
        b.ql[0] = 0x21; b.qh[0] = 0x06; b.ql[32] = 0x05; b.ql[64] = 0x0F; b.qh[32] = 0x03;
        int idx[] = { 0, 32, 64, 128 }; float want[] = { 1.0f, 16.5f, -15.0f, 62.0f };
        check_values(LLM_WT_Q6_K, &b, idx, want, 4, "Q6_K");
    }
    {
        llm_block_iq4_nl b; memset(&b, 0, sizeof(b));
        b.d = F16(2.0f); b.qs[0] = 0xF0;
        int idx[] = { 0, 16, 1 }; float want[] = { -254.0f, 226.0f, -254.0f };
        check_values(LLM_WT_IQ4_NL, &b, idx, want, 3, "IQ4_NL");
    }
    {
        llm_block_iq4_xs b; memset(&b, 0, sizeof(b));
        b.d = F16(1.0f); b.scales_l[0] = 0x43; b.scales_h = 0x0002; b.qs[0] = 0x98; b.qs[16] = 0x07;
        int idx[] = { 0, 16, 32 }; float want[] = { 3.0f, 39.0f, 280.0f };
        check_values(LLM_WT_IQ4_XS, &b, idx, want, 3, "IQ4_XS");
    }
    {
        llm_block_mxfp4 b; memset(&b, 0, sizeof(b));
        b.e = 128; b.qs[0] = 0xF7; b.qs[1] = 0x1A;
        /* E2M1 code 7 = 6.0, scale 2^(128-127); code 0xA = -1.0 */
        int idx[] = { 0, 16, 1, 17 }; float want[] = { 12.0f, -12.0f, -2.0f, 1.0f };
        check_values(LLM_WT_MXFP4, &b, idx, want, 4, "MXFP4");
        b.e = 1;
        {
            int i2[] = { 0 }; float w2[] = { 6.0f * ldexpf(1.0f, -126) };
            check_values(LLM_WT_MXFP4, &b, i2, w2, 1, "MXFP4 with a subnormal scale");
        }
    }
    {
        llm_block_aq8 b; memset(&b, 0, sizeof(b));
        b.d = 0.25f; b.m = -1.0f; b.qs[0] = 255; b.qs[31] = 4;
        int idx[] = { 0, 31, 5 }; float want[] = { 62.75f, 0.0f, -1.0f };
        check_values(LLM_WT_AQ8, &b, idx, want, 3, "AQ8 (unpacked MLX groups)");
    }
    {
        /* gpt-oss's Hugging Face layout (interleaved nibbles, E8M0 bias 127) repacked, against its definition */
        static const float fp4[16] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6 };
        uint8_t blocks[3 * 16], scales[3];
        llm_block_mxfp4 g[3];
        float y[96];
        int i, bad = 0;
        for (i = 0; i < 48; i++) blocks[i] = (uint8_t) (i * 37 + 11);
        scales[0] = 127; scales[1] = 120; scales[2] = 133;
        llm_mxfp4_from_hf(blocks, scales, 3, g);
        llm_dequant_row(LLM_WT_MXFP4, g, y, 96);
        for (i = 0; i < 96; i++) {
            int code = i % 2 ? blocks[i / 2] >> 4 : blocks[i / 2] & 0xF;
            if (y[i] != fp4[code] * ldexpf(1.0f, scales[i / 32] - 127)) bad++;
        }
        ok(bad == 0, "MXFP4 from the Hugging Face layout: 96 values as defined (%d differ)", bad);
    }
    {
        /* names and sizes as GGUF has them */
        ok(llm_wtype_from_ggml(12) == LLM_WT_Q4_K && llm_wtype_from_ggml(8) == LLM_WT_Q8_0
           && llm_wtype_from_ggml(30) == LLM_WT_BF16 && llm_wtype_from_ggml(16) == -1,
           "GGML type ids map to types; IQ2_XXS is not supported");
        is_str(llm_ggml_type_name(16), "IQ2_XXS", "unsupported types still have their name");
        is_int((long long) llm_wtype_row_bytes(LLM_WT_Q4_K, 512), 288, "Q4_K row of 512 is 288 bytes");
        is_int((long long) llm_wtype_row_bytes(LLM_WT_Q4_K, 896), 0, "Q4_K row of 896 is not whole blocks");
    }
}

static void
test_quantizers(void)
{
    static const llm_wtype types[] = { LLM_WT_Q8_0, LLM_WT_Q4_0, LLM_WT_Q4_1, LLM_WT_Q5_0, LLM_WT_Q5_1,
                                       LLM_WT_Q4_K, LLM_WT_Q6_K };
    /* bound on rms error / rms of uniform data, a little above the step / sqrt(12) of each */
    static const float bound[] = { 0.0045f, 0.075f, 0.07f, 0.036f, 0.034f, 0.07f, 0.017f };
    enum { N = 4096 };
    static float x[N], y[N];
    static unsigned char buf[N * 2];
    size_t i, j;

    {
        /* representable values come back exactly: q*d with the largest magnitude at the rule's end */
        for (i = 0; i < 32; i++) x[i] = (float) ((int) i * 8 - 127) * 0.25f;
        x[0] = -127 * 0.25f;
        llm_quant_row(LLM_WT_Q8_0, x, buf, 32);
        llm_dequant_row(LLM_WT_Q8_0, buf, y, 32);
        ok(memcmp(x, y, 32 * 4) == 0, "Q8_0 round trip of q*d values is exact");
        for (i = 0; i < 32; i++) x[i] = (float) ((int) (i % 16) - 8) * 0.125f;
        llm_quant_row(LLM_WT_Q4_0, x, buf, 32);
        llm_dequant_row(LLM_WT_Q4_0, buf, y, 32);
        ok(memcmp(x, y, 32 * 4) == 0, "Q4_0 round trip of q*d values is exact");
    }
    for (j = 0; j < sizeof(types) / sizeof(types[0]); j++) {
        double e2 = 0, x2 = 0;
        for (i = 0; i < N; i++) x[i] = frand() * 0.05f;
        ok(llm_quant_row(types[j], x, buf, N) == 0, "%s quantizer runs", llm_wtype_info(types[j])->name);
        llm_dequant_row(types[j], buf, y, N);
        for (i = 0; i < N; i++) { e2 += (double) (x[i] - y[i]) * (x[i] - y[i]); x2 += (double) x[i] * x[i]; }
        ok(sqrt(e2 / x2) < bound[j], "%s relative rms error %.4f < %.3f",
           llm_wtype_info(types[j])->name, sqrt(e2 / x2), bound[j]);
    }
    ok(llm_quant_row(LLM_WT_IQ4_XS, x, buf, 256) == -1, "no quantizer: -1");
}

/* random valid block bytes: random codes, sane scales */
static void
random_blocks(llm_wtype t, unsigned char *p, size_t nblocks)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    size_t b, i;

    for (b = 0; b < nblocks; b++, p += tr->bytes) {
        for (i = 0; i < (size_t) tr->bytes; i++) p[i] = (unsigned char) next();
        switch (t) {
        case LLM_WT_Q8_0: case LLM_WT_Q4_0: case LLM_WT_Q5_0: case LLM_WT_IQ4_NL: {
            uint16_t d = F16(frand() * 0.02f); memcpy(p, &d, 2); break;
        }
        case LLM_WT_Q4_1: case LLM_WT_Q5_1: case LLM_WT_Q4_K: case LLM_WT_Q5_K: {
            uint16_t d = F16(frand() * 0.02f), m = F16(frand() * 0.02f);
            memcpy(p, &d, 2); memcpy(p + 2, &m, 2); break;
        }
        case LLM_WT_Q2_K: {
            uint16_t d = F16(frand() * 0.02f), m = F16(frand() * 0.02f);
            memcpy(p + 80, &d, 2); memcpy(p + 82, &m, 2); break;
        }
        case LLM_WT_Q3_K: { uint16_t d = F16(frand() * 0.02f); memcpy(p + 108, &d, 2); break; }
        case LLM_WT_Q6_K: { uint16_t d = F16(frand() * 0.002f); memcpy(p + 208, &d, 2); break; }
        case LLM_WT_IQ4_XS: { uint16_t d = F16(frand() * 0.002f); memcpy(p, &d, 2); break; }
        case LLM_WT_MXFP4: p[0] = (unsigned char) (118 + next() % 12); break;
        case LLM_WT_AQ8: { float d = frand() * 0.001f, m = frand() * 0.1f; memcpy(p, &d, 4); memcpy(p + 4, &m, 4); break; }
        default: break;
        }
    }
}

static void
test_act(const llm_kernels *ref, const llm_kernels *k)
{
    static const int ks[] = { 32, 64, 96, 256, 288, 512, 896, 4864 };
    size_t i;
    int same = 1;

    for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        int n = ks[i], j;
        size_t rb = llm_qa_row_bytes(n);
        float *x = malloc((size_t) n * 4);
        unsigned char *a = calloc(1, rb), *b = calloc(1, rb);
        for (j = 0; j < n; j++) x[j] = frand() * (j % 7 == 0 ? 10.0f : 1.0f);
        if (n >= 64) memset(x + 32, 0, 32 * 4);     /* an all-zero block */
        ref->quantize_act(a, x, n);
        k->quantize_act(b, x, n);
        if (memcmp(a, b, rb) != 0) same = 0;
        free(x); free(a); free(b);
    }
    ok(same, "%s activation rows are the scalar bytes", k->name);
}

static void
test_matmul(const llm_kernels *ref, const llm_kernels *k)
{
    static const int shapes32[][3] = {    /* k, rows, tokens */
        { 32, 1, 1 }, { 64, 5, 1 }, { 96, 9, 3 }, { 288, 13, 7 }, { 896, 6, 1 }, { 160, 7, 33 },
        { 32, 3, 5 }, { 896, 17, 2 },
        /* batches through weight panels: rows past a 16-row panel, token tails, K past 32 blocks */
        { 1088, 38, 11 },
    };
    static const int shapes256[][3] = {
        { 256, 1, 1 }, { 256, 5, 3 }, { 768, 7, 1 }, { 512, 3, 9 }, { 1024, 9, 2 }, { 256, 2, 33 },
    };
    int t;

    for (t = 0; t < LLM_WT_COUNT; t++) {
        const llm_wtype_traits *tr = llm_wtype_info((llm_wtype) t);
        const int (*shapes)[3] = tr->block == LLM_QK ? shapes256 : shapes32;
        int ns = tr->block == LLM_QK ? 6 : 9, s, acc;
        float worst = 0;

        if (!tr->quantized || tr->panel_rows) continue;     /* panels: test_panels */
        if (k->matmul_q[t] == NULL) {
            ok(0, "%s has a %s matmul", k->name, tr->name);
            continue;
        }
        for (s = 0; s < ns; s++) {
            int K = shapes[s][0], R = shapes[s][1], N = shapes[s][2], i, r;
            size_t rb = llm_wtype_row_bytes((llm_wtype) t, K), ldq = llm_qa_row_bytes(K);
            unsigned char *w = malloc(rb * R), *xq = calloc((size_t) N, ldq);
            float *x = malloc((size_t) K * 4), *wd = malloc((size_t) K * 4);
            float *y0 = malloc((size_t) N * (R + 2) * 4), *y1 = malloc((size_t) N * (R + 2) * 4);
            double *mag = calloc((size_t) N * R, sizeof(double));

            random_blocks((llm_wtype) t, w, rb * R / tr->bytes);
            for (i = 0; i < N; i++) {
                int j;
                for (j = 0; j < K; j++) x[j] = frand();
                ref->quantize_act(xq + (size_t) i * ldq, x, K);
            }
            /* magnitude of each result: sum |w * a| in the activation encoding the type reads */
            for (r = 0; r < R; r++) {
                llm_dequant_row((llm_wtype) t, w + (size_t) r * rb, wd, K);
                for (i = 0; i < N; i++) {
                    llm_qa_view v = llm_qa_view_of(xq + (size_t) i * ldq, K);
                    int j;
                    for (j = 0; j < K; j++) {
                        double a = tr->block == LLM_QK ? v.qk[j] * (double) v.dk[j / 256] : v.q[j] * (double) v.d[j / 32];
                        mag[(size_t) i * R + r] += fabs(wd[j] * a);
                    }
                }
            }
            for (acc = 0; acc < 2; acc++) {
                for (i = 0; i < N * (R + 2); i++) y0[i] = y1[i] = frand();
                /* leading dim wider than the data; a row range not starting at 0 */
                ref->matmul_q[t](y0, R + 2, xq, ldq, w, K, 1, R, N, acc);
                k->matmul_q[t](y1, R + 2, xq, ldq, w, K, 1, R, N, acc);
                for (i = 0; i < N; i++) {
                    for (r = 0; r < R + 2; r++) {
                        float e = fabsf(y1[i * (R + 2) + r] - y0[i * (R + 2) + r]);
                        double m = r >= 1 && r < R ? mag[(size_t) i * R + r] : 1.0;
                        e = (float) (e / (m + 1e-30));
                        if (!(e <= worst)) worst = e;
                    }
                }
            }
            free(w); free(xq); free(x); free(wd); free(y0); free(y1); free(mag);
        }
        ok(worst < 2e-6f, "%s %s matmul equals scalar (err / sum|w*a| %.2g < 2e-6)", k->name, tr->name, worst);
    }
}

/*
 * Panels made at load: the pack gives back every block byte for byte, and
 * each table's panel matmul equals the scalar matmul of the row-major blocks
 * on odd shapes: rows past whole panels, row ranges starting inside a panel,
 * token tails, runs of more than 32 blocks.
 */
static void
test_panels(const llm_kernels *ref, const llm_kernels *k)
{
    static const int shapes[][3] = {      /* k, rows, tokens */
        { 32, 1, 1 }, { 64, 17, 1 }, { 96, 33, 3 }, { 896, 16, 9 }, { 1088, 37, 11 }, { 160, 5, 2 }, { 288, 40, 5 },
        { 1088, 21, 16 }, { 96, 37, 35 },     /* whole 16-token tiles (AMX), with and without a tail */
    };
    static const llm_wtype types[] = { LLM_WT_Q8_0, LLM_WT_Q4_0, LLM_WT_Q5_0 };
    size_t ti;

    for (ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        llm_wtype src = types[ti], pt = (llm_wtype) llm_panel_type(src);
        const llm_wtype_traits *tr = llm_wtype_info(src);
        float worst = 0;
        int exact = 1, s, acc;

        if (k->matmul_q[pt] == NULL) {
            ok(0, "%s has a %s matmul", k->name, llm_wtype_info(pt)->name);
            continue;
        }
        for (s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++) {
            int K = shapes[s][0], R = shapes[s][1], N = shapes[s][2], i, r, b, r0;
            size_t rb = llm_wtype_row_bytes(src, K), ldq = llm_qa_row_bytes(K);
            unsigned char *w = malloc(rb * R), *pw = malloc(llm_panel_bytes(pt, R, K)), *xq = calloc((size_t) N, ldq);
            unsigned char blk[64];
            float *x = malloc((size_t) K * 4), *wd = malloc((size_t) K * 4);
            float *y0 = malloc((size_t) N * (R + 2) * 4), *y1 = malloc((size_t) N * (R + 2) * 4);
            double *mag = calloc((size_t) N * R, sizeof(double));

            random_blocks(src, w, rb * R / tr->bytes);
            llm_panel_pack(pt, pw, w, R, K);
            for (r = 0; r < R; r++) {
                for (b = 0; b < K / 32; b++) {
                    llm_panel_block(pt, pw, K, r, b, blk);
                    if (memcmp(blk, w + (size_t) r * rb + (size_t) b * tr->bytes, (size_t) tr->bytes) != 0) exact = 0;
                }
            }
            for (i = 0; i < N; i++) {
                int j;
                for (j = 0; j < K; j++) x[j] = frand();
                ref->quantize_act(xq + (size_t) i * ldq, x, K);
            }
            for (r = 0; r < R; r++) {
                llm_dequant_row(src, w + (size_t) r * rb, wd, K);
                for (i = 0; i < N; i++) {
                    llm_qa_view v = llm_qa_view_of(xq + (size_t) i * ldq, K);
                    int j;
                    for (j = 0; j < K; j++) mag[(size_t) i * R + r] += fabs(wd[j] * v.q[j] * (double) v.d[j / 32]);
                }
            }
            for (acc = 0; acc < 2; acc++) {
                /* rows from 0, and from inside the first panel (1) or the second (17) */
                for (r0 = 0; r0 <= 17 && r0 < R; r0 += r0 == 0 ? 1 : 16) {
                    for (i = 0; i < N * (R + 2); i++) y0[i] = y1[i] = frand();
                    ref->matmul_q[src](y0, R + 2, xq, ldq, w, K, r0, R, N, acc);
                    k->matmul_q[pt](y1, R + 2, xq, ldq, pw, K, r0, R, N, acc);
                    for (i = 0; i < N; i++) {
                        for (r = 0; r < R + 2; r++) {
                            float e = fabsf(y1[i * (R + 2) + r] - y0[i * (R + 2) + r]);
                            double m = r >= r0 && r < R ? mag[(size_t) i * R + r] : 1.0;
                            e = (float) (e / (m + 1e-30));
                            if (!(e <= worst)) worst = e;
                        }
                    }
                }
            }
            free(w); free(pw); free(xq); free(x); free(wd); free(y0); free(y1); free(mag);
        }
        if (k == ref) ok(exact, "%s panels give back every block byte for byte", llm_wtype_info(pt)->name);
        ok(worst < 2e-6f, "%s %s matmul equals scalar %s (err / sum|w*a| %.2g < 2e-6)", k->name,
           llm_wtype_info(pt)->name, tr->name, worst);
    }
}

/*
 * The AMX panel matmul gives the VNNI one's bits: the same integer sums and
 * the same float work in the same order (batches of more than 16 tokens in
 * runs of 32 blocks, K of at most 32 blocks so the tail tokens agree too).
 */
static void
test_panels_same(const llm_kernels *vnni, const llm_kernels *k)
{
    static const llm_wtype types[] = { LLM_WT_Q8_0, LLM_WT_Q4_0, LLM_WT_Q5_0 };
    enum { K = 1024, R = 35, N = 37 };
    size_t ti, ldq = llm_qa_row_bytes(K);

    for (ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        llm_wtype src = types[ti], pt = (llm_wtype) llm_panel_type(src);
        size_t rb = llm_wtype_row_bytes(src, K);
        unsigned char *w = malloc(rb * R), *pw = malloc(llm_panel_bytes(pt, R, K)), *xq = calloc(N, ldq);
        float *y0 = malloc((size_t) N * R * 4), *y1 = malloc((size_t) N * R * 4), x[K];
        int i, j, same = 1;

        random_blocks(src, w, rb * R / llm_wtype_info(src)->bytes);
        llm_panel_pack(pt, pw, w, R, K);
        for (i = 0; i < N; i++) {
            for (j = 0; j < K; j++) x[j] = frand();
            vnni->quantize_act(xq + (size_t) i * ldq, x, K);
        }
        for (i = 0; i < N * R; i++) y0[i] = y1[i] = frand();
        vnni->matmul_q[pt](y0, R, xq, ldq, pw, K, 3, R, N, 1);
        k->matmul_q[pt](y1, R, xq, ldq, pw, K, 3, R, N, 1);
        for (i = 0; i < N * R; i++) same &= memcmp(&y0[i], &y1[i], 4) == 0;
        ok(same, "%s %s matmul of %d tokens equals %s's bit for bit", k->name, llm_wtype_info(pt)->name, N,
           vnni->name);
        free(w); free(pw); free(xq); free(y0); free(y1);
    }
}

/* The scalar quantized matmul against float math on the dequantized weights:
 * the only difference is the int8 rounding of the activations, at most d/2 per value. */
static void
test_activation_noise(const llm_kernels *ref)
{
    static const llm_wtype types[] = { LLM_WT_Q8_0, LLM_WT_Q4_0, LLM_WT_Q4_K, LLM_WT_Q6_K };
    enum { K = 512, R = 4 };
    size_t j;

    for (j = 0; j < sizeof(types) / sizeof(types[0]); j++) {
        llm_wtype t = types[j];
        int per256 = llm_wtype_info(t)->block == LLM_QK, r, i, within = 1;
        size_t rb = llm_wtype_row_bytes(t, K);
        unsigned char *w = malloc(rb * R), *xq = malloc(llm_qa_row_bytes(K));
        float x[K], wd[K], y[R];

        random_blocks(t, w, rb * R / llm_wtype_info(t)->bytes);
        for (i = 0; i < K; i++) x[i] = frand() * (i % 5 == 0 ? 4.0f : 1.0f);
        ref->quantize_act(xq, x, K);
        ref->matmul_q[t](y, R, xq, 0, w, K, 0, R, 1, 0);
        for (r = 0; r < R; r++) {
            llm_qa_view v = llm_qa_view_of(xq, K);
            double exact = 0, bound = 0;
            llm_dequant_row(t, w + (size_t) r * rb, wd, K);
            for (i = 0; i < K; i++) {
                exact += (double) wd[i] * x[i];
                bound += fabs(wd[i]) * (per256 ? v.dk[i / 256] : v.d[i / 32]) / 2;
            }
            if (!(fabs(y[r] - exact) <= bound * 1.001 + 1e-6)) {
                printf("#   row %d: %g vs exact %g, bound %g\n", r, y[r], exact, bound);
                within = 0;
            }
        }
        ok(within, "%s: scalar matmul within the int8 activation rounding bound of exact math",
           llm_wtype_info(t)->name);
        free(w); free(xq);
    }
}

int
main(void)
{
    const llm_kernels *sc = llm_kernels_scalar(), *k;

    test_vectors();
    test_quantizers();
    test_activation_noise(sc);
    test_matmul(sc, sc);
    test_panels(sc, sc);
    if ((k = llm_kernels_avx2()) != NULL) { test_act(sc, k); test_matmul(sc, k); test_panels(sc, k); }
    else diag("AVX2 not available on this CPU: skipped");
    if ((k = llm_kernels_avx512()) != NULL) { test_act(sc, k); test_matmul(sc, k); test_panels(sc, k); }
    else diag("AVX-512 not available on this CPU: skipped");
    if ((k = llm_kernels_avx512vnni()) != NULL) { test_act(sc, k); test_matmul(sc, k); test_panels(sc, k); }
    else diag("AVX-512 VNNI not available on this CPU: skipped");
    if ((k = llm_kernels_avx512amx()) != NULL) { test_panels(sc, k); test_panels_same(llm_kernels_avx512vnni(), k); }
    else diag("AMX-INT8 not available on this CPU (or not granted by the OS): skipped");
    return done_testing();
}
