/*
 * AVX2 + FMA + F16C kernels.  Per-function target attributes, as in the
 * AVX-512 file; tails shorter than a vector are finished in scalar code.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_kernels_q.h"
#include "kernels/cpu/llm_quant.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

AVX2 INLINE __m256
ld_w(const void *w, llm_wtype t, size_t i)
{
    if (t == LLM_WT_F32) {
        return _mm256_loadu_ps((const float *) w + i);
    }
    if (t == LLM_WT_F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i)));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(
        _mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i))), 16));
}

INLINE float
w1(const void *w, llm_wtype t, size_t i)
{
    if (t == LLM_WT_F32) return ((const float *) w)[i];
    if (t == LLM_WT_F16) return llm_f16_to_f32(((const uint16_t *) w)[i]);
    return llm_bf16_to_f32(((const uint16_t *) w)[i]);
}

AVX2 INLINE float
hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2 INLINE void
tile(llm_wtype t, const int RB, const int TB, float *y, size_t ldy,
    const float *x, size_t ldx, const void *w, int k, int r, int tk, int accumulate)
{
    __m256 acc[4][2], wv[4], xv;
    float tail[4][2];
    int i, j, kk;

#pragma GCC unroll 4
    for (i = 0; i < RB; i++) {
#pragma GCC unroll 2
        for (j = 0; j < TB; j++) { acc[i][j] = _mm256_setzero_ps(); tail[i][j] = 0; }
    }
    for (kk = 0; kk + 8 <= k; kk += 8) {
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) wv[i] = ld_w(w, t, (size_t) (r + i) * k + kk);
#pragma GCC unroll 2
        for (j = 0; j < TB; j++) {
            xv = _mm256_loadu_ps(x + (size_t) (tk + j) * ldx + kk);
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
        }
    }
    for (; kk < k; kk++) {
        for (i = 0; i < RB; i++) {
            float wi = w1(w, t, (size_t) (r + i) * k + kk);
            for (j = 0; j < TB; j++) tail[i][j] += wi * x[(size_t) (tk + j) * ldx + kk];
        }
    }
#pragma GCC unroll 2
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            float s = hsum(acc[i][j]) + tail[i][j];
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

#define TOK_BLOCK 64

AVX2 INLINE void
matmul_t(llm_wtype t, float *y, size_t ldy, const float *x, size_t ldx,
    const void *w, int k, int r0, int r1, int n, int acc)
{
    int tb, te, r, tk;

    for (tb = 0; tb < n; tb += TOK_BLOCK) {
        te = tb + TOK_BLOCK < n ? tb + TOK_BLOCK : n;
        for (r = r0; r + 4 <= r1; r += 4) {
            for (tk = tb; tk + 2 <= te; tk += 2) tile(t, 4, 2, y, ldy, x, ldx, w, k, r, tk, acc);
            if (tk < te) tile(t, 4, 1, y, ldy, x, ldx, w, k, r, tk, acc);
        }
        for (; r < r1; r++) {
            for (tk = tb; tk + 2 <= te; tk += 2) tile(t, 1, 2, y, ldy, x, ldx, w, k, r, tk, acc);
            if (tk < te) tile(t, 1, 1, y, ldy, x, ldx, w, k, r, tk, acc);
        }
    }
}

AVX2 static void
mm_f32(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_F32, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

AVX2 static void
mm_f16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_F16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

AVX2 static void
mm_bf16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_BF16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

/* 2^n * p(r) as in the AVX-512 file */
AVX2 INLINE __m256
exp8(__m256 x)
{
    __m256 n, r, p;
    __m256i e;

    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

AVX2 static float
v_dot(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    float s;
    int i = 0;

    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    }
    s = hsum(_mm256_add_ps(s0, s1));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

AVX2 static void
v_axpy(float *y, float a, const float *x, int n)
{
    __m256 av = _mm256_set1_ps(a);
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    }
    for (; i < n; i++) y[i] += a * x[i];
}

AVX2 static void
v_scale(float *y, float a, int n)
{
    __m256 av = _mm256_set1_ps(a);
    int i = 0;

    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(av, _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] *= a;
}

AVX2 static void
v_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    __m256 s = _mm256_setzero_ps(), inv;
    float ss, invs;
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        s = _mm256_fmadd_ps(v, v, s);
    }
    ss = hsum(s);
    for (; i < n; i++) ss += x[i] * x[i];
    invs = 1.0f / sqrtf(ss / (float) n + eps);
    inv = _mm256_set1_ps(invs);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv);
        if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = x[i] * invs * (w ? w[i] : 1.0f);
}

AVX2 static void
v_softmax(float *x, int n)
{
    __m256 mxv = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps(), vmx;
    float mx, s, inv, buf[8];
    int i = 0, j;

    for (; i + 8 <= n; i += 8) mxv = _mm256_max_ps(mxv, _mm256_loadu_ps(x + i));
    _mm256_storeu_ps(buf, mxv);
    mx = buf[0];
    for (j = 1; j < 8; j++) if (buf[j] > mx) mx = buf[j];
    for (; i < n; i++) if (x[i] > mx) mx = x[i];
    vmx = _mm256_set1_ps(mx);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
        sum = _mm256_add_ps(sum, e);
        _mm256_storeu_ps(x + i, e);
    }
    s = hsum(sum);
    for (; i < n; i++) { x[i] = expf(x[i] - mx); s += x[i]; }
    inv = 1.0f / s;
    v_scale(x, inv, n);
}

AVX2 static void
v_silu_mul(float *g, const float *u, int n)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        __m256 gv = _mm256_loadu_ps(g + i);
        __m256 sg = _mm256_div_ps(gv, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(sg, _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* tanh(y) = sign(y) (1 - 2 / (exp(2|y|) + 1)); absolute error ~1e-7 */
AVX2 INLINE __m256
tanh8(__m256 y)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    __m256 a = _mm256_andnot_ps(sign, y);
    __m256 e = exp8(_mm256_add_ps(a, a));
    __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    return _mm256_or_ps(t, _mm256_and_ps(sign, y));
}

/* 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) */
AVX2 static void
v_gelu_tanh_mul(float *g, const float *u, int n)
{
    const __m256 one = _mm256_set1_ps(1.0f), c3 = _mm256_set1_ps(0.044715f);
    const __m256 m2k = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 in = _mm256_fmadd_ps(_mm256_mul_ps(c3, x), _mm256_mul_ps(x, x), x);
        __m256 y = _mm256_div_ps(x, _mm256_add_ps(one, exp8(_mm256_mul_ps(m2k, in))));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(y, _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) {
        float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))) * u[i];
    }
}

AVX2 static void
v_softcap(float *x, int n, float cap)
{
    const __m256 c = _mm256_set1_ps(cap), ic = _mm256_set1_ps(1.0f / cap);
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(x + i, _mm256_mul_ps(c, tanh8(_mm256_mul_ps(_mm256_loadu_ps(x + i), ic))));
    }
    for (; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

/* interleaved pairs; a few values per head, not worth vector shuffles */
AVX2 static void
v_rope_pairs(float *x, const float *c, const float *s, int half)
{
    int i;
    for (i = 0; i < half; i++) {
        float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c[i] - b * s[i];
        x[2 * i + 1] = b * c[i] + a * s[i];
    }
}

AVX2 static void
v_rope(float *x, const float *c, const float *s, int half)
{
    int i = 0;

    for (; i + 8 <= half; i += 8) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + half + i);
        __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(s + i);
        _mm256_storeu_ps(x + i, _mm256_fmsub_ps(a, cv, _mm256_mul_ps(b, sv)));
        _mm256_storeu_ps(x + half + i, _mm256_fmadd_ps(b, cv, _mm256_mul_ps(a, sv)));
    }
    for (; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
    }
}

AVX2 static void
v_to_f32(float *y, const void *w, llm_wtype t, int n)
{
    int i = 0;

    if (llm_wtype_info(t)->quantized) {
        llm_dequant_row(t, w, y, n);
        return;
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = t == LLM_WT_F32 ? ld_w(w, LLM_WT_F32, (size_t) i)
                 : t == LLM_WT_F16 ? ld_w(w, LLM_WT_F16, (size_t) i)
                 : ld_w(w, LLM_WT_BF16, (size_t) i);
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = w1(w, t, (size_t) i);
}

/* the largest value (a NaN loses every max: the loaded value is the first operand), then its first index */
AVX2 static int
v_argmax(const float *x, int n)
{
    __m256 m = _mm256_set1_ps(-INFINITY), b;
    float best, t[8];
    int i, j;

    for (i = 0; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
    _mm256_storeu_ps(t, m);
    best = t[0];
    for (j = 1; j < 8; j++) if (t[j] > best) best = t[j];
    for (; i < n; i++) if (x[i] > best) best = x[i];
    b = _mm256_set1_ps(best);
    for (i = 0; i + 8 <= n; i += 8) {
        int e = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), b, _CMP_EQ_OQ));
        if (e) return i + __builtin_ctz((unsigned) e);
    }
    for (; i < n; i++) if (x[i] == best) return i;
    return 0;
}

AVX2 static uint64_t
v_read_stream(const void *p, size_t n)
{
    const char *c = p;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t out[4], r = 0;
    size_t i;
    int j;

    for (i = 0; i + 128 <= n; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_loadu_si256((const __m256i *) (c + i)));
        a1 = _mm256_xor_si256(a1, _mm256_loadu_si256((const __m256i *) (c + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_loadu_si256((const __m256i *) (c + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_loadu_si256((const __m256i *) (c + i + 96)));
    }
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_xor_si256(a0, _mm256_loadu_si256((const __m256i *) (c + i)));
    }
    a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    _mm256_storeu_si256((__m256i *) out, a0);
    for (j = 0; j < 4; j++) r ^= out[j];
    return r;
}

/* n rows of float16, stride apart, widened into rows of hd floats */
AVX2 static void
widen_rows(float *y, const uint16_t *x, size_t stride, int n, int hd)
{
    int j, d;

    for (j = 0; j < n; j++) {
        const uint16_t *xr = x + (size_t) j * stride;
        float *yr = y + (size_t) j * hd;
        for (d = 0; d + 8 <= hd; d += 8) {
            _mm256_storeu_ps(yr + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (xr + d))));
        }
        for (; d < hd; d++) yr[d] = llm_f16_to_f32(xr[d]);
    }
}

/* n rows of Q8_0 blocks, stride elements apart (hd, stride multiples of 32), widened: d * q */
AVX2 static void
widen_rows_q8_0(float *y, const void *x, size_t stride, int n, int hd)
{
    int j, b, i;

    for (j = 0; j < n; j++) {
        const llm_block_q8_0 *xb = (const llm_block_q8_0 *) x + (size_t) j * (stride / 32);
        float *yr = y + (size_t) j * hd;
        for (b = 0; b < hd / 32; b++) {
            __m256 d = _mm256_set1_ps(llm_f16_to_f32(xb[b].d));
            for (i = 0; i < 4; i++) {
                __m128i q = _mm_loadl_epi64((const __m128i *) (xb[b].qs + 8 * i));
                _mm256_storeu_ps(yr + 32 * b + 8 * i, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
            }
        }
    }
}

AVX2 INLINE float
hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* online-softmax update of one row from the 8 scores of positions p .. p+7 (lanes), with the
 * AVX-512 kernel's lazy max (the max moves only when a score exceeds it by LAZY_MAX): the
 * weights by softmax_row, the values by attend_rows */
#define LAZY_MAX 8.0f

AVX2 static void
softmax_row(float *m, float *l, __m256 s, __m256 vis, float cap, float *pr, float *cs)
{
    __m256 p;

    *cs = 1.0f;
    if (cap > 0) {
        s = _mm256_mul_ps(_mm256_set1_ps(cap), tanh8(_mm256_mul_ps(s, _mm256_set1_ps(1.0f / cap))));
    }
    if (_mm256_movemask_ps(_mm256_and_ps(vis, _mm256_cmp_ps(s, _mm256_set1_ps(*m + LAZY_MAX), _CMP_GT_OQ)))) {
        float mx = hmax(_mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, vis)), mn = *m > mx ? *m : mx;
        *cs = expf(*m - mn);
        *l *= *cs;
        *m = mn;
    }
    p = _mm256_and_ps(exp8(_mm256_sub_ps(s, _mm256_set1_ps(*m))), vis);
    *l += hsum(p);
    _mm256_storeu_ps(pr, p);
}

/*
 * The value part for NR rows at once (weights 8 apart in pr), each value
 * vector loaded once for all of them; a row's sums are taken in the same
 * order whatever NR is, as the AVX-512 kernel's.
 */
AVX2 INLINE void
attend_rows(const int NR, float *const *acc, const float *pr, const float *cs, const float *v,
    size_t vs, int n, int hd)
{
    __m256 a0[4], a1[4], v0, v1;
    int i, j, d;

    for (d = 0; d + 8 <= hd; d += 8) {
#pragma GCC unroll 4
        for (i = 0; i < NR; i++) {
            a0[i] = _mm256_mul_ps(_mm256_loadu_ps(acc[i] + d), _mm256_set1_ps(cs[i]));
            a1[i] = _mm256_setzero_ps();
        }
        for (j = 0; j + 1 < n; j += 2) {
            v0 = _mm256_loadu_ps(v + (size_t) j * vs + d);
            v1 = _mm256_loadu_ps(v + (size_t) (j + 1) * vs + d);
#pragma GCC unroll 4
            for (i = 0; i < NR; i++) {
                a0[i] = _mm256_fmadd_ps(_mm256_set1_ps(pr[i * 8 + j]), v0, a0[i]);
                a1[i] = _mm256_fmadd_ps(_mm256_set1_ps(pr[i * 8 + j + 1]), v1, a1[i]);
            }
        }
        if (j < n) {
            v0 = _mm256_loadu_ps(v + (size_t) j * vs + d);
#pragma GCC unroll 4
            for (i = 0; i < NR; i++) {
                a0[i] = _mm256_fmadd_ps(_mm256_set1_ps(pr[i * 8 + j]), v0, a0[i]);
            }
        }
#pragma GCC unroll 4
        for (i = 0; i < NR; i++) {
            _mm256_storeu_ps(acc[i] + d, _mm256_add_ps(a0[i], a1[i]));
        }
    }
    for (; d < hd; d++) {
        for (i = 0; i < NR; i++) {
            float a = acc[i][d] * cs[i];
            for (j = 0; j < n; j++) a += pr[i * 8 + j] * v[(size_t) j * vs + d];
            acc[i][d] = a;
        }
    }
}

/*
 * As the AVX-512 kernel: keys (rows copied or widened side by side first)
 * transposed into kt[d][16] by gathers, scores of four rows at a time (the
 * AVX-512 kernel takes eight; AVX2 has half the registers) by broadcast FMAs,
 * in two halves of 8 positions (each half one online-softmax update).
 */
AVX2 static void
v_attend_block(float *acc, float *m, float *l, const float *q, int nq, const int *lo,
    const int *hi, const void *k, const void *v, llm_wtype kvt, size_t stride, int p0, int n, int hd,
    float cap, float *scratch)
{
    float *kt = scratch, *kf = scratch + (size_t) LLM_ATT_KEYS * hd;
    float *vf = kf + (size_t) LLM_ATT_KEYS * hd, *pr = vf + (size_t) LLM_ATT_KEYS * hd;
    const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    const float *kr = k, *vr = v;
    size_t ks = stride, vs = stride;
    int r, i, d, h;

    if (kvt != LLM_WT_F32) {
        if (kvt == LLM_WT_Q8_0) {
            widen_rows_q8_0(kf, k, stride, n, hd);
            widen_rows_q8_0(vf, v, stride, n, hd);
        } else {
            widen_rows(kf, k, stride, n, hd);
            widen_rows(vf, v, stride, n, hd);
        }
        vr = vf;
        vs = (size_t) hd;
    } else {
        /* side by side first: a gather across the cache's strided rows touches far lines */
        for (i = 0; i < n; i++) memcpy(kf + (size_t) i * hd, kr + (size_t) i * ks, (size_t) hd * sizeof(float));
    }
    kr = kf;
    ks = (size_t) hd;
    for (h = 0; h < 2; h++) {
        __m256i lane = _mm256_add_epi32(iota, _mm256_set1_epi32(8 * h));
        __m256i idx = _mm256_mullo_epi32(lane, _mm256_set1_epi32((int) ks));
        __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
        for (d = 0; d < hd; d++) {
            _mm256_storeu_ps(kt + (size_t) d * LLM_ATT_KEYS + 8 * h,
                             _mm256_mask_i32gather_ps(_mm256_setzero_ps(), kr + d, idx, in, 4));
        }
    }
    for (h = 0; h < 2 && 8 * h < n; h++) {
        int nh = n - 8 * h < 8 ? n - 8 * h : 8, ph = p0 + 8 * h;
        __m256 pos = _mm256_cvtepi32_ps(_mm256_add_epi32(iota, _mm256_set1_epi32(ph)));
        __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nh), iota));

        for (r = 0; r < nq; r += 4) {
            const float *qr[4];
            float *ar[4], cs[4];
            __m256 s[4], vis[4];
            int any = 0, nl;

            for (i = 0; i < 4; i++) {
                int row = r + i < nq ? r + i : r;
                qr[i] = q + (size_t) row * hd;
                s[i] = _mm256_setzero_ps();
                vis[i] = _mm256_and_ps(in, _mm256_and_ps(
                    _mm256_cmp_ps(pos, _mm256_set1_ps((float) lo[row]), _CMP_GE_OQ),
                    _mm256_cmp_ps(pos, _mm256_set1_ps((float) hi[row]), _CMP_LE_OQ)));
                if (r + i >= nq) vis[i] = _mm256_setzero_ps();
                any |= _mm256_movemask_ps(vis[i]);
            }
            if (!any) continue;
            for (d = 0; d < hd; d++) {
                __m256 kd = _mm256_loadu_ps(kt + (size_t) d * LLM_ATT_KEYS + 8 * h);
                s[0] = _mm256_fmadd_ps(_mm256_set1_ps(qr[0][d]), kd, s[0]);
                s[1] = _mm256_fmadd_ps(_mm256_set1_ps(qr[1][d]), kd, s[1]);
                s[2] = _mm256_fmadd_ps(_mm256_set1_ps(qr[2][d]), kd, s[2]);
                s[3] = _mm256_fmadd_ps(_mm256_set1_ps(qr[3][d]), kd, s[3]);
            }
            /* the rows that see any of these positions, their weights side by side in pr */
            nl = 0;
            for (i = 0; i < 4; i++) {
                if (_mm256_movemask_ps(vis[i]) == 0) continue;
                softmax_row(&m[r + i], &l[r + i], s[i], vis[i], cap, pr + nl * 8, &cs[nl]);
                ar[nl++] = acc + (size_t) (r + i) * hd;
            }
            switch (nl) {
            case 4: attend_rows(4, ar, pr, cs, vr + (size_t) 8 * h * vs, vs, nh, hd); break;
            case 3: attend_rows(3, ar, pr, cs, vr + (size_t) 8 * h * vs, vs, nh, hd); break;
            case 2: attend_rows(2, ar, pr, cs, vr + (size_t) 8 * h * vs, vs, nh, hd); break;
            default: attend_rows(1, ar, pr, cs, vr + (size_t) 8 * h * vs, vs, nh, hd); break;
            }
        }
    }
}

AVX2 static void
v_f32_to_f16(uint16_t *y, const float *x, int n)
{
    int i = 0;

    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *) (y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) y[i] = llm_f32_to_f16(x[i]);
}

static const llm_kernels avx2_table = {
    .name = "avx2",
    .matmul = { [LLM_WT_F32] = mm_f32, [LLM_WT_F16] = mm_f16, [LLM_WT_BF16] = mm_bf16 },
    .matmul_q = LLM_MM_Q_TABLE(avx2),
    .quantize_act = llm_avx2_quantize_act,
    .dot = v_dot, .axpy = v_axpy, .scale = v_scale, .rmsnorm = v_rmsnorm,
    .softmax = v_softmax, .silu_mul = v_silu_mul, .gelu_tanh_mul = v_gelu_tanh_mul,
    .softcap = v_softcap, .rope = v_rope, .rope_pairs = v_rope_pairs, .to_f32 = v_to_f32,
    .read_stream = v_read_stream, .attend_block = v_attend_block, .argmax = v_argmax,
    .f32_to_f16 = v_f32_to_f16,
};

/* F16C from CPUID leaf 1 (not every compiler's __builtin_cpu_supports knows it) */
static int
cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

const llm_kernels *
llm_kernels_avx2(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        && cpu_has_f16c())
    {
        return &avx2_table;
    }
    return NULL;
}
