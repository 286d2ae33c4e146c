/* Every SIMD kernel equals the scalar reference on random shapes, odd sizes included. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_quant.h"

static uint64_t rng = 88172645463325252ull;

static float
frand(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float) ((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void
fill(float *v, size_t n, float scale)
{
    size_t i;
    for (i = 0; i < n; i++) v[i] = frand() * scale;
}

static float
max_rel_err(const float *a, const float *b, size_t n)
{
    float m = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]) / (1.0f + fabsf(b[i]));
        if (!(d <= m)) m = d;     /* NaN counts as an error */
    }
    return m;
}

static void
test_conversions(void)
{
    int bad_bf = 0, bad_h = 0;
    uint32_t h;

    for (h = 0; h < 65536; h++) {
        float f = llm_f16_to_f32((uint16_t) h);
        if (!isnan(f) && llm_f32_to_f16(f) != h) bad_h++;
        f = llm_bf16_to_f32((uint16_t) h);
        if (!isnan(f) && llm_f32_to_bf16(f) != h) bad_bf++;
    }
    is_int(bad_h, 0, "f16 round trip exact for all 65536 codes");
    is_int(bad_bf, 0, "bf16 round trip exact for all 65536 codes");
    is_int(llm_f32_to_bf16(1.00390625f), 0x3f80, "bf16 rounds half to even (down)");
    is_int(llm_f32_to_bf16(1.01171875f), 0x3f82, "bf16 rounds half to even (up)");
    is_near(llm_f16_to_f32(llm_f32_to_f16(0.1f)), 0.0999755859375, 0, "f16 of 0.1");
}

/*
 * attend_block against softmax attention in double: a run of keys from
 * an unaligned position fed in pieces of <= 16, query rows of odd counts
 * and head sizes, each row with its own causal end and sliding-window
 * start (some rows see nothing of a piece, some nothing at all of the
 * first ones), without and with soft-capping, f32, f16 and Q8_0 caches
 * (Q8_0 for heads of a multiple of 32; the reference reads its dequantized
 * values).
 */
static void
check_attend(const llm_kernels *k)
{
    static const int shapes[][3] = { { 1, 64, 5 }, { 7, 64, 40 }, { 13, 80, 33 }, { 4, 16, 1 },
                                     { 3, 40, 100 }, { 64, 128, 70 } };
    float worst = 0;
    size_t i;
    int same16 = 1;
    for (i = 0; i < 2 * sizeof(shapes) / sizeof(shapes[0]); i++) {
        int nq = shapes[i / 2][0], hd = shapes[i / 2][1], n = shapes[i / 2][2], base = 21;
        float cap = i % 2 ? 2.0f : 0.0f, qs = i % 2 ? 4.0f : 0.25f;
        size_t stride = (size_t) hd * 3, z;
        float *q = malloc((size_t) nq * hd * 4), *kc = malloc(stride * n * 4), *vc = malloc(stride * n * 4);
        float *acc = malloc((size_t) nq * hd * 4), *m = malloc(nq * 4), *l = malloc(nq * 4);
        float *scr = malloc(LLM_ATT_SCRATCH(hd) * 4);
        uint16_t *k16 = malloc(stride * n * 2), *v16 = malloc(stride * n * 2), *r16 = malloc(stride * n * 2);
        int *lo = malloc(nq * 4), *hi = malloc(nq * 4), f16, r, p, j, d;
        llm_block_q8_0 *kq = malloc(stride * n / 32 * sizeof(llm_block_q8_0));
        llm_block_q8_0 *vq = malloc(stride * n / 32 * sizeof(llm_block_q8_0));
        float *kd = malloc(stride * n * 4), *vd = malloc(stride * n * 4);
        fill(q, (size_t) nq * hd, qs); fill(kc, stride * n, 1.0f); fill(vc, stride * n, 1.0f);
        if (hd % 32 == 0) {
            llm_quant_row(LLM_WT_Q8_0, kc, kq, (int64_t) (stride * n));
            llm_quant_row(LLM_WT_Q8_0, vc, vq, (int64_t) (stride * n));
            llm_dequant_row(LLM_WT_Q8_0, kq, kd, (int64_t) (stride * n));
            llm_dequant_row(LLM_WT_Q8_0, vq, vd, (int64_t) (stride * n));
        }
        llm_kernels_scalar()->f32_to_f16(r16, kc, (int) (stride * n));
        k->f32_to_f16(k16, kc, (int) (stride * n));
        k->f32_to_f16(v16, vc, (int) (stride * n));
        for (z = 0; z < stride * n; z++) same16 &= r16[z] == k16[z];
        for (r = 0; r < nq; r++) {
            hi[r] = base + n - 1 - (r * 5) % n;            /* causal end of the row */
            lo[r] = r % 3 == 2 ? hi[r] - 9 : 0;            /* a window of 10 positions */
        }
        /* f16: 0 f32, 1 f16, 2 Q8_0 */
        for (f16 = 0; f16 < 3; f16++) {
            if (f16 == 2 && hd % 32 != 0) continue;
            for (r = 0; r < nq; r++) { m[r] = -INFINITY; l[r] = 0; }
            memset(acc, 0, (size_t) nq * hd * 4);
            /* pieces: up to a block boundary (base is not a multiple of 16), then blocks */
            for (p = 0; p < n;) {
                int e = ((base + p) | 15) + 1 - base;
                if (e > n) e = n;
                if (f16 == 2) {
                    k->attend_block(acc, m, l, q, nq, lo, hi, kq + ((size_t) p * stride + hd) / 32,
                                    vq + ((size_t) p * stride + hd) / 32, LLM_WT_Q8_0, stride, base + p, e - p,
                                    hd, cap, scr);
                } else if (f16) {
                    k->attend_block(acc, m, l, q, nq, lo, hi, k16 + (size_t) p * stride + hd,
                                    v16 + (size_t) p * stride + hd, LLM_WT_F16, stride, base + p, e - p, hd, cap, scr);
                } else {
                    k->attend_block(acc, m, l, q, nq, lo, hi, kc + (size_t) p * stride + hd,
                                    vc + (size_t) p * stride + hd, LLM_WT_F32, stride, base + p, e - p, hd, cap, scr);
                }
                p = e;
            }
            for (r = 0; r < nq; r++) {
                double sc[128], mx = -1e300, sum = 0, o;
                for (j = 0; j < n; j++) {
                    double t = 0;
                    for (d = 0; d < hd; d++) {
                        size_t at = (size_t) j * stride + hd + d;
                        t += (double) q[(size_t) r * hd + d]
                             * (f16 == 2 ? kd[at] : f16 ? llm_f16_to_f32(k16[at]) : kc[at]);
                    }
                    if (cap > 0) t = cap * tanh(t / cap);
                    sc[j] = base + j < lo[r] || base + j > hi[r] ? -1e300 : t;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (j = 0; j < n; j++) sum += sc[j] > -1e300 ? exp(sc[j] - mx) : 0;
                for (d = 0; d < hd; d++) {
                    float e;
                    o = 0;
                    for (j = 0; j < n; j++) {
                        size_t at = (size_t) j * stride + hd + d;
                        if (sc[j] > -1e300) {
                            o += exp(sc[j] - mx) / sum * (f16 == 2 ? vd[at] : f16 ? llm_f16_to_f32(v16[at]) : vc[at]);
                        }
                    }
                    e = fabsf((float) (acc[(size_t) r * hd + d] / l[r] - o)) / (1.0f + fabsf((float) o));
                    if (!(e <= worst)) worst = e;
                }
            }
        }
        free(q); free(kc); free(vc); free(acc); free(m); free(l); free(scr); free(k16); free(v16);
        free(r16); free(lo); free(hi); free(kq); free(vq); free(kd); free(vd);
    }
    ok(same16, "%s f32_to_f16 equals the scalar conversion", k->name);
    ok(worst < 1e-5f, "%s attend_block (online softmax in pieces, per-row causal end and window) "
       "equals softmax attention, with and without soft-capping, f32, f16 and Q8_0 caches (%.2g)", k->name, worst);
}

static void
check_table(const llm_kernels *ref, const llm_kernels *k)
{
    static const int shapes[][3] = {   /* k, rows, tokens */
        { 1, 1, 1 }, { 7, 3, 1 }, { 16, 4, 4 }, { 17, 5, 3 }, { 33, 9, 7 },
        { 64, 8, 1 }, { 100, 13, 5 }, { 129, 7, 66 }, { 896, 12, 2 }, { 255, 33, 9 },
        { 100, 21, 1 }, { 897, 40, 1 }, { 48, 19, 1 },
    };
    char name[96];
    size_t s;
    int t;

    for (t = 0; t <= LLM_WT_BF16; t++) {     /* the float types; quantized ones: test_quant.c */
        float worst = 0;
        for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            int K = shapes[s][0], R = shapes[s][1], N = shapes[s][2], acc, i;
            size_t nw = (size_t) K * R;
            float *wf = malloc(nw * 4), *x = malloc((size_t) N * (K + 3) * 4);
            float *y0 = malloc((size_t) N * (R + 2) * 4), *y1 = malloc((size_t) N * (R + 2) * 4);
            void *w = malloc(nw * 4);
            fill(wf, nw, 1.0f);
            fill(x, (size_t) N * (K + 3), 1.0f);
            for (i = 0; i < (int) nw; i++) {
                if (t == LLM_WT_F32) ((float *) w)[i] = wf[i];
                else if (t == LLM_WT_F16) ((uint16_t *) w)[i] = llm_f32_to_f16(wf[i]);
                else ((uint16_t *) w)[i] = llm_f32_to_bf16(wf[i]);
            }
            for (acc = 0; acc < 2; acc++) {
                fill(y0, (size_t) N * (R + 2), 1.0f);
                memcpy(y1, y0, (size_t) N * (R + 2) * 4);
                /* leading dims wider than the data; a row range not starting at 0 */
                ref->matmul[t](y0, R + 2, x, K + 3, w, K, 1, R, N, acc);
                k->matmul[t](y1, R + 2, x, K + 3, w, K, 1, R, N, acc);
                {
                    float e = max_rel_err(y1, y0, (size_t) N * (R + 2)) / sqrtf((float) K);
                    if (!(e <= worst)) worst = e;
                }
            }
            free(wf); free(x); free(y0); free(y1); free(w);
        }
        snprintf(name, sizeof(name), "%s matmul %s equals scalar (err/sqrt(k) %.2g < 1e-6)",
                 k->name, llm_wtype_name((llm_wtype) t), worst);
        ok(worst < 1e-6f, "%s", name);
    }

    {
        static const int sizes[] = { 1, 3, 8, 15, 16, 17, 31, 64, 100, 897 };
        float e_dot = 0, e_axpy = 0, e_scale = 0, e_norm = 0, e_sm = 0, e_silu = 0, e_rope = 0, e_cvt = 0;
        float e_gelu = 0, e_cap = 0;
        size_t i;
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            int n = sizes[i], j;
            float *a = malloc(n * 4), *b = malloc(n * 4), *c0 = malloc(n * 4), *c1 = malloc(n * 4);
            float *w = malloc(n * 4), *cs = malloc(n * 4), *sn = malloc(n * 4), d;
            uint16_t *h = malloc(n * 2);
            fill(a, n, 3.0f); fill(b, n, 3.0f); fill(w, n, 1.0f);
            d = fabsf(k->dot(a, b, n) - ref->dot(a, b, n)) / (float) n;
            if (d > e_dot) e_dot = d;
            memcpy(c0, b, n * 4); memcpy(c1, b, n * 4);
            ref->axpy(c0, 0.7f, a, n); k->axpy(c1, 0.7f, a, n);
            d = max_rel_err(c1, c0, n); if (d > e_axpy) e_axpy = d;
            ref->scale(c0, -1.3f, n); k->scale(c1, -1.3f, n);
            d = max_rel_err(c1, c0, n); if (d > e_scale) e_scale = d;
            ref->rmsnorm(c0, a, w, n, 1e-6f); k->rmsnorm(c1, a, w, n, 1e-6f);
            d = max_rel_err(c1, c0, n); if (d > e_norm) e_norm = d;
            ref->rmsnorm(c0, a, NULL, n, 1e-6f); k->rmsnorm(c1, a, NULL, n, 1e-6f);
            d = max_rel_err(c1, c0, n); if (d > e_norm) e_norm = d;
            for (j = 0; j < n; j++) c0[j] = c1[j] = a[j] * 10.0f;
            ref->softmax(c0, n); k->softmax(c1, n);
            d = max_rel_err(c1, c0, n); if (d > e_sm) e_sm = d;
            memcpy(c0, a, n * 4); memcpy(c1, a, n * 4);
            ref->silu_mul(c0, b, n); k->silu_mul(c1, b, n);
            d = max_rel_err(c1, c0, n); if (d > e_silu) e_silu = d;
            /* GeGLU over a wide range: both tails of the tanh matter */
            for (j = 0; j < n; j++) c0[j] = c1[j] = a[j] * 4.0f;
            ref->gelu_tanh_mul(c0, b, n); k->gelu_tanh_mul(c1, b, n);
            d = max_rel_err(c1, c0, n); if (d > e_gelu) e_gelu = d;
            /* soft-capping: values near 0 (linear part) and far past the cap */
            for (j = 0; j < n; j++) c0[j] = c1[j] = a[j] * (j % 2 ? 0.01f : 30.0f);
            ref->softcap(c0, n, 5.0f); k->softcap(c1, n, 5.0f);
            d = max_rel_err(c1, c0, n); if (d > e_cap) e_cap = d;
            if (n % 2 == 0) {
                for (j = 0; j < n / 2; j++) { cs[j] = cosf(a[j]); sn[j] = sinf(a[j]); }
                memcpy(c0, b, n * 4); memcpy(c1, b, n * 4);
                ref->rope(c0, cs, sn, n / 2); k->rope(c1, cs, sn, n / 2);
                d = max_rel_err(c1, c0, n); if (d > e_rope) e_rope = d;
                memcpy(c0, b, n * 4); memcpy(c1, b, n * 4);
                ref->rope_pairs(c0, cs, sn, n / 2); k->rope_pairs(c1, cs, sn, n / 2);
                d = max_rel_err(c1, c0, n); if (d > e_rope) e_rope = d;
            }
            for (j = 0; j < n; j++) h[j] = llm_f32_to_bf16(a[j]);
            ref->to_f32(c0, h, LLM_WT_BF16, n); k->to_f32(c1, h, LLM_WT_BF16, n);
            d = max_rel_err(c1, c0, n); if (d > e_cvt) e_cvt = d;
            for (j = 0; j < n; j++) h[j] = llm_f32_to_f16(a[j]);
            ref->to_f32(c0, h, LLM_WT_F16, n); k->to_f32(c1, h, LLM_WT_F16, n);
            d = max_rel_err(c1, c0, n); if (d > e_cvt) e_cvt = d;
            ref->to_f32(c0, a, LLM_WT_F32, n); k->to_f32(c1, a, LLM_WT_F32, n);
            d = max_rel_err(c1, c0, n); if (d > e_cvt) e_cvt = d;
            free(a); free(b); free(c0); free(c1); free(w); free(cs); free(sn); free(h);
        }
        ok(e_dot < 1e-6f, "%s dot (err/n %.2g)", k->name, e_dot);
        ok(e_axpy < 1e-6f, "%s axpy (%.2g)", k->name, e_axpy);
        ok(e_scale < 1e-6f, "%s scale (%.2g)", k->name, e_scale);
        ok(e_norm < 1e-5f, "%s rmsnorm (%.2g)", k->name, e_norm);
        ok(e_sm < 1e-6f, "%s softmax (%.2g)", k->name, e_sm);
        ok(e_silu < 1e-6f, "%s silu_mul (%.2g)", k->name, e_silu);
        ok(e_gelu < 1e-6f, "%s gelu_tanh_mul (%.2g)", k->name, e_gelu);
        ok(e_cap < 1e-6f, "%s softcap (%.2g)", k->name, e_cap);
        ok(e_rope < 1e-6f, "%s rope and rope_pairs (%.2g)", k->name, e_rope);
        ok(e_cvt == 0, "%s widening to f32 is exact (%.2g)", k->name, e_cvt);
    }
    {
        /* float16 conversion at the edges: subnormals, overflow, ties, signed zero */
        float sp[19] = { 0.0f, -0.0f, 1e-6f, -3e-7f, 5.96e-8f, 2.98e-8f, 6.1e-5f, 65504.0f, 65519.0f,
                         65520.0f, 1e9f, -1e9f, 1.00048828125f, 1.00146484375f, 0.333333f, 2049.0f,
                         3.0e-5f, 1.5e-5f, 7.0e-8f };
        uint16_t a[19], b[19];
        int i, same = 1;
        ref->f32_to_f16(a, sp, 19);
        k->f32_to_f16(b, sp, 19);
        for (i = 0; i < 19; i++) if (a[i] != b[i]) same = 0;
        ok(same, "%s f32_to_f16 equals scalar at the edges", k->name);
    }
    {
        size_t n = 1 << 16;
        uint64_t *buf = malloc(n);
        size_t i;
        for (i = 0; i < n / 8; i++) buf[i] = (uint64_t) i * 0x9e3779b97f4a7c15ull;
        is_int((long long) k->read_stream(buf, n), (long long) ref->read_stream(buf, n),
               "%s read_stream digest", k->name);
        free(buf);
    }
    check_attend(k);
}

/* The scalar reference itself against values computed independently (double precision). */
static void
test_reference_values(void)
{
    const llm_kernels *r = llm_kernels_scalar();
    float g[4] = { 1.0f, -1.0f, 3.0f, -10.0f }, u[4] = { 1.0f, 1.0f, 2.0f, 1.0f };
    float c[3] = { 0.1f, 10.0f, -100.0f };
    float x[4] = { 1.0f, 2.0f, 3.0f, 4.0f }, cs[2] = { 0.0f, 1.0f }, sn[2] = { 1.0f, 0.0f };
    float att[2], kk[4] = { 1.0f, 0.0f, 0.0f, 1.0f }, vv[4] = { 1.0f, 0.0f, 0.0f, 1.0f }, q[2] = { 10.0f, 0.0f }, scr[LLM_ATT_SCRATCH(2)];

    r->gelu_tanh_mul(g, u, 4);
    is_near(g[0], 0.8411919906, 1e-6, "gelu_tanh(1)");
    is_near(g[1], -0.1588080094, 1e-6, "gelu_tanh(-1)");
    is_near(g[2], 2 * 2.9963627, 1e-5, "gelu_tanh(3) * 2");
    is_near(g[3], 0.0, 1e-6, "gelu_tanh(-10)");
    r->softcap(c, 3, 5.0f);
    is_near(c[0], 5.0 * tanh(0.02), 1e-6, "softcap(0.1, 5)");
    is_near(c[1], 5.0 * tanh(2.0), 1e-6, "softcap(10, 5)");
    is_near(c[2], -5.0, 1e-6, "softcap(-100, 5)");
    /* pair (1, 2) turned by 90 degrees, pair (3, 4) kept */
    r->rope_pairs(x, cs, sn, 2);
    ok(x[0] == -2.0f && x[1] == 1.0f && x[2] == 3.0f && x[3] == 4.0f, "rope_pairs rotates adjacent pairs");
    /* scores 10 and 0 capped at 1: weights e^tanh(10)/(e^tanh(10)+1) */
    {
        float m = -INFINITY, l = 0;
        int lo = 0, hi = 1;
        att[0] = att[1] = 0;
        r->attend_block(att, &m, &l, q, 1, &lo, &hi, kk, vv, LLM_WT_F32, 2, 0, 2, 2, 1.0f, scr);
        att[0] /= l;
    }
    is_near(att[0], exp(tanh(10.0)) / (exp(tanh(10.0)) + 1.0), 1e-6, "attend_block applies the cap before softmax");
}

/*
 * argmax: the first of equal largest values, NaN never the largest, -inf
 * taken when nothing is larger; each table against the scalar one on
 * lengths around the vector widths, ties, -inf runs and NaNs.
 */
static void
check_argmax(const llm_kernels *sc, const llm_kernels *k)
{
    static const int lens[] = { 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 151936 };
    float *x = malloc(151936 * sizeof(float));
    int same = 1, li, trial, i;

    for (li = 0; li < (int) (sizeof(lens) / sizeof(lens[0])); li++) {
        int n = lens[li];
        for (trial = 0; trial < 6; trial++) {
            for (i = 0; i < n; i++) {
                /* trial 0: distinct; 1: few values (ties); 2: -inf with a few finite; 3: NaNs among
                 * values; 4: all -inf; 5: all NaN */
                float r = (float) (rand() % 1000000) / 1000.0f - 500.0f;
                x[i] = trial == 0 ? r : trial == 1 ? (float) (rand() % 3) : trial == 2 ? (rand() % 50 ? -INFINITY : r)
                     : trial == 3 ? (rand() % 3 ? r : NAN) : trial == 4 ? -INFINITY : NAN;
            }
            if (k->argmax(x, n) != sc->argmax(x, n)) {
                char msg[128];
                snprintf(msg, sizeof(msg), "%s argmax n %d trial %d: %d, scalar %d", k->name, n, trial,
                         k->argmax(x, n), sc->argmax(x, n));
                diag(msg);
                same = 0;
            }
        }
    }
    ok(same, "%s argmax equals scalar (ties, -inf, NaN; lengths 1 .. 151936)", k->name);
    free(x);
}

static void
test_argmax_values(const llm_kernels *sc)
{
    const float a[] = { 1, 3, 3, 2 }, b[] = { NAN, 1, 5, 5 }, c[] = { -INFINITY, -INFINITY }, d[] = { NAN, NAN };
    const float e[] = { NAN, -INFINITY, 2 };

    ok(sc->argmax(a, 4) == 1, "argmax: the first of equal largest values");
    ok(sc->argmax(b, 4) == 2, "argmax: a NaN is never the largest");
    ok(sc->argmax(c, 2) == 0 && sc->argmax(d, 2) == 0 && sc->argmax(a, 0) == 0, "argmax: all -inf, all NaN, none: 0");
    ok(sc->argmax(e, 2) == 1, "argmax: -inf after a NaN");
}

int
main(void)
{
    const llm_kernels *sc = llm_kernels_scalar(), *k;

    test_conversions();
    test_reference_values();
    ok(llm_kernels_best() != NULL, "best table: %s", llm_kernels_best()->name);
    check_attend(sc);
    test_argmax_values(sc);
    if ((k = llm_kernels_avx2()) != NULL) { check_table(sc, k); check_argmax(sc, k); }
    else diag("AVX2 not available on this CPU: skipped");
    if ((k = llm_kernels_avx512()) != NULL) { check_table(sc, k); check_argmax(sc, k); }
    else diag("AVX-512 not available on this CPU: skipped");
    return done_testing();
}
