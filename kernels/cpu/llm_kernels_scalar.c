/* Scalar reference kernels: the definition every SIMD variant is tested against. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_quant.h"

float
llm_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t) h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t
llm_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) {
        return (uint16_t) ((u >> 16) | 0x40);      /* quiet NaN */
    }
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t) (u >> 16);
}

float
llm_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    float f;

    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        f = ldexpf((float) man, -24);
        return sign ? -f : f;
    }
    if (exp == 31) {
        u = sign | 0x7f800000 | (man << 13);
    } else {
        u = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}

uint16_t
llm_f32_to_f16(float f)
{
    uint32_t u, sign, man;
    int exp;

    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000;
    if ((u & 0x7fffffff) > 0x7f800000) {
        return (uint16_t) (sign | 0x7e00);
    }
    exp = (int) ((u >> 23) & 0xff) - 127 + 15;
    man = u & 0x7fffff;
    if (exp >= 31) {
        return (uint16_t) (sign | 0x7c00);
    }
    if (exp <= 0) {
        /* subnormal half: shift with round to nearest even */
        uint32_t m, shift, half, rem, r;
        if (exp < -10) {
            return (uint16_t) sign;
        }
        m = man | 0x800000;
        shift = (uint32_t) (14 - exp);
        r = m >> shift;
        rem = m & ((1u << shift) - 1);
        half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) {
            r++;
        }
        return (uint16_t) (sign | r);
    }
    {
        uint32_t r = ((uint32_t) exp << 10) | (man >> 13);
        uint32_t rem = man & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) {
            r++;     /* may carry into the exponent, which is right */
        }
        return (uint16_t) (sign | r);
    }
}

static void
sc_to_f32(float *y, const void *w, llm_wtype t, int n)
{
    const uint16_t *h = w;
    int i;

    switch (t) {
    case LLM_WT_F32:
        memcpy(y, w, (size_t) n * 4);
        break;
    case LLM_WT_F16:
        for (i = 0; i < n; i++) y[i] = llm_f16_to_f32(h[i]);
        break;
    case LLM_WT_BF16:
        for (i = 0; i < n; i++) y[i] = llm_bf16_to_f32(h[i]);
        break;
    default:
        llm_dequant_row(t, w, y, n);
        break;
    }
}

static float
sc_weight(const void *w, llm_wtype t, size_t i)
{
    switch (t) {
    case LLM_WT_F32:  return ((const float *) w)[i];
    case LLM_WT_F16:  return llm_f16_to_f32(((const uint16_t *) w)[i]);
    default:          return llm_bf16_to_f32(((const uint16_t *) w)[i]);
    }
}

static void
sc_matmul(llm_wtype t, float *y, size_t ldy, const float *x, size_t ldx,
    const void *w, int k, int r0, int r1, int n, int accumulate)
{
    int r, tk, j;

    for (r = r0; r < r1; r++) {
        for (tk = 0; tk < n; tk++) {
            const float *xr = x + (size_t) tk * ldx;
            float acc = 0;
            for (j = 0; j < k; j++) {
                acc += xr[j] * sc_weight(w, t, (size_t) r * k + j);
            }
            if (accumulate) {
                y[(size_t) tk * ldy + r] += acc;
            } else {
                y[(size_t) tk * ldy + r] = acc;
            }
        }
    }
}

static void
sc_matmul_f32(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    sc_matmul(LLM_WT_F32, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

static void
sc_matmul_f16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    sc_matmul(LLM_WT_F16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

static void
sc_matmul_bf16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    sc_matmul(LLM_WT_BF16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

/*
 * Quantized weights against int8 activations, the definition the SIMD
 * versions are tested against: per block of 32 (per super-block of 256 for
 * the K-quants) the dequantized weights times the int8 activations, times
 * the activation scale.
 */
static void
sc_matmul_q(llm_wtype t, float *y, size_t ldy, const void *xq, size_t ldq,
    const void *w, int k, int r0, int r1, int n, int accumulate)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    size_t rb = llm_wtype_row_bytes(t, k);
    int nb = k / tr->block, per256 = tr->block == LLM_QK, r, t0, tt, b, i;
    float wb[LLM_QK], acc[16];
    char blk[64];

    for (r = r0; r < r1; r++) {
        const char *row = (const char *) w + (size_t) r * rb;
        for (t0 = 0; t0 < n; t0 += 16) {
            int nt = n - t0 < 16 ? n - t0 : 16;
            memset(acc, 0, sizeof(acc));
            for (b = 0; b < nb; b++) {
                if (tr->panel_rows) {       /* the block's bytes, gathered from the panel */
                    llm_panel_block(t, w, k, r, b, blk);
                    llm_dequant_row(llm_panel_source(t), blk, wb, tr->block);
                } else {
                    llm_dequant_row(t, row + (size_t) b * tr->bytes, wb, tr->block);
                }
                for (tt = 0; tt < nt; tt++) {
                    llm_qa_view v = llm_qa_view_of((const char *) xq + (size_t) (t0 + tt) * ldq, k);
                    const int8_t *q = (per256 ? v.qk : v.q) + (size_t) b * tr->block;
                    float s = 0;
                    for (i = 0; i < tr->block; i++) s += wb[i] * (float) q[i];
                    acc[tt] += s * (per256 ? v.dk[b] : v.d[b]);
                }
            }
            for (tt = 0; tt < nt; tt++) {
                float *yy = y + (size_t) (t0 + tt) * ldy + r;
                *yy = accumulate ? *yy + acc[tt] : acc[tt];
            }
        }
    }
}

#define SC_MM_Q(T, name)                                                                   \
    static void name(float *y, size_t ldy, const void *xq, size_t ldq, const void *w,     \
        int k, int r0, int r1, int n, int acc)                                             \
    {                                                                                      \
        sc_matmul_q(T, y, ldy, xq, ldq, w, k, r0, r1, n, acc);                            \
    }
SC_MM_Q(LLM_WT_Q8_0, sc_mm_q8_0)
SC_MM_Q(LLM_WT_Q4_0, sc_mm_q4_0)
SC_MM_Q(LLM_WT_Q4_1, sc_mm_q4_1)
SC_MM_Q(LLM_WT_Q5_0, sc_mm_q5_0)
SC_MM_Q(LLM_WT_Q5_1, sc_mm_q5_1)
SC_MM_Q(LLM_WT_Q2_K, sc_mm_q2_k)
SC_MM_Q(LLM_WT_Q3_K, sc_mm_q3_k)
SC_MM_Q(LLM_WT_Q4_K, sc_mm_q4_k)
SC_MM_Q(LLM_WT_Q5_K, sc_mm_q5_k)
SC_MM_Q(LLM_WT_Q6_K, sc_mm_q6_k)
SC_MM_Q(LLM_WT_IQ4_NL, sc_mm_iq4_nl)
SC_MM_Q(LLM_WT_IQ4_XS, sc_mm_iq4_xs)
SC_MM_Q(LLM_WT_MXFP4, sc_mm_mxfp4)
SC_MM_Q(LLM_WT_AQ8, sc_mm_aq8)
SC_MM_Q(LLM_WT_Q8_0_R16, sc_mm_q8_0_r16)
SC_MM_Q(LLM_WT_Q4_0_R16, sc_mm_q4_0_r16)
SC_MM_Q(LLM_WT_Q5_0_R16, sc_mm_q5_0_r16)
#undef SC_MM_Q

static float
sc_dot(const float *a, const float *b, int n)
{
    float s = 0;
    int i;
    for (i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void
sc_axpy(float *y, float a, const float *x, int n)
{
    int i;
    for (i = 0; i < n; i++) y[i] += a * x[i];
}

static void
sc_scale(float *y, float a, int n)
{
    int i;
    for (i = 0; i < n; i++) y[i] *= a;
}

static void
sc_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0;
    float inv;
    int i;

    for (i = 0; i < n; i++) ss += (double) x[i] * x[i];
    inv = 1.0f / sqrtf((float) (ss / n) + eps);
    for (i = 0; i < n; i++) y[i] = x[i] * inv * (w ? w[i] : 1.0f);
}

static void
sc_softmax(float *x, int n)
{
    float mx = -INFINITY, sum = 0;
    int i;

    for (i = 0; i < n; i++) if (x[i] > mx) mx = x[i];
    for (i = 0; i < n; i++) { x[i] = expf(x[i] - mx); sum += x[i]; }
    for (i = 0; i < n; i++) x[i] /= sum;
}

static void
sc_silu_mul(float *g, const float *u, int n)
{
    int i;
    for (i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* as PyTorch's gelu(approximate="tanh") computes it */
static void
sc_gelu_tanh_mul(float *g, const float *u, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))) * u[i];
    }
}

static void
sc_softcap(float *x, int n, float cap)
{
    int i;
    for (i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

static void
sc_rope_pairs(float *x, const float *c, const float *s, int half)
{
    int i;
    for (i = 0; i < half; i++) {
        float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c[i] - b * s[i];
        x[2 * i + 1] = b * c[i] + a * s[i];
    }
}

static void
sc_rope(float *x, const float *c, const float *s, int half)
{
    int i;
    for (i = 0; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
    }
}

static int
sc_argmax(const float *x, int n)
{
    float bv = -INFINITY;
    int i, best = -1;

    for (i = 0; i < n; i++) {
        if (x[i] > bv || (best < 0 && x[i] == bv)) {
            bv = x[i];
            best = i;
        }
    }
    return best < 0 ? 0 : best;
}

static uint64_t
sc_read_stream(const void *p, size_t n)
{
    const uint64_t *q = p;
    uint64_t acc = 0;
    size_t i;
    for (i = 0; i < n / 8; i++) acc ^= q[i];
    return acc;
}

/* element i of a float, float16 or Q8_0 key/value block, widened */
static float
sc_kv(const void *x, llm_wtype t, size_t i)
{
    const llm_block_q8_0 *b;

    if (t == LLM_WT_F32) return ((const float *) x)[i];
    if (t == LLM_WT_F16) return llm_f16_to_f32(((const uint16_t *) x)[i]);
    b = (const llm_block_q8_0 *) x + i / 32;
    return llm_f16_to_f32(b->d) * (float) b->qs[i % 32];
}

static void
sc_attend_block(float *acc, float *m, float *l, const float *q, int nq, const int *lo,
    const int *hi, const void *k, const void *v, llm_wtype kvt, size_t stride, int p0, int n, int hd,
    float cap, float *scratch)
{
    float *s = scratch;
    int r, j, d;

    for (r = 0; r < nq; r++) {
        const float *qr = q + (size_t) r * hd;
        float *ar = acc + (size_t) r * hd, mx = -INFINITY, mn, c, sum = 0;

        for (j = 0; j < n; j++) {
            float t = 0;
            s[j] = -INFINITY;
            if (p0 + j < lo[r] || p0 + j > hi[r]) continue;
            for (d = 0; d < hd; d++) t += qr[d] * sc_kv(k, kvt, (size_t) j * stride + (size_t) d);
            s[j] = cap > 0 ? cap * tanhf(t / cap) : t;
            if (s[j] > mx) mx = s[j];
        }
        if (mx == -INFINITY) continue;
        mn = m[r] > mx ? m[r] : mx;
        c = expf(m[r] - mn);
        for (d = 0; d < hd; d++) ar[d] *= c;
        for (j = 0; j < n; j++) {
            float p;
            if (s[j] == -INFINITY) continue;
            p = expf(s[j] - mn);
            sum += p;
            for (d = 0; d < hd; d++) ar[d] += p * sc_kv(v, kvt, (size_t) j * stride + (size_t) d);
        }
        l[r] = l[r] * c + sum;
        m[r] = mn;
    }
}

static void
sc_f32_to_f16(uint16_t *y, const float *x, int n)
{
    int i;
    for (i = 0; i < n; i++) y[i] = llm_f32_to_f16(x[i]);
}

static const llm_kernels scalar_table = {
    .name = "scalar",
    .matmul = { [LLM_WT_F32] = sc_matmul_f32, [LLM_WT_F16] = sc_matmul_f16, [LLM_WT_BF16] = sc_matmul_bf16 },
    .matmul_q = {
        [LLM_WT_Q8_0] = sc_mm_q8_0, [LLM_WT_Q4_0] = sc_mm_q4_0, [LLM_WT_Q4_1] = sc_mm_q4_1,
        [LLM_WT_Q5_0] = sc_mm_q5_0, [LLM_WT_Q5_1] = sc_mm_q5_1, [LLM_WT_Q2_K] = sc_mm_q2_k,
        [LLM_WT_Q3_K] = sc_mm_q3_k, [LLM_WT_Q4_K] = sc_mm_q4_k, [LLM_WT_Q5_K] = sc_mm_q5_k,
        [LLM_WT_Q6_K] = sc_mm_q6_k, [LLM_WT_IQ4_NL] = sc_mm_iq4_nl, [LLM_WT_IQ4_XS] = sc_mm_iq4_xs,
        [LLM_WT_MXFP4] = sc_mm_mxfp4, [LLM_WT_AQ8] = sc_mm_aq8,
        [LLM_WT_Q8_0_R16] = sc_mm_q8_0_r16, [LLM_WT_Q4_0_R16] = sc_mm_q4_0_r16,
        [LLM_WT_Q5_0_R16] = sc_mm_q5_0_r16,
    },
    .quantize_act = llm_qa_quantize_ref,
    .dot = sc_dot, .axpy = sc_axpy, .scale = sc_scale, .rmsnorm = sc_rmsnorm,
    .softmax = sc_softmax, .silu_mul = sc_silu_mul, .gelu_tanh_mul = sc_gelu_tanh_mul,
    .softcap = sc_softcap, .rope = sc_rope, .rope_pairs = sc_rope_pairs, .to_f32 = sc_to_f32,
    .read_stream = sc_read_stream, .argmax = sc_argmax, .attend_block = sc_attend_block,
    .f32_to_f16 = sc_f32_to_f16,
};

const llm_kernels *
llm_kernels_scalar(void)
{
    return &scalar_table;
}
