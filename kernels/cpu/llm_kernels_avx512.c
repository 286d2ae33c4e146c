/*
 * AVX-512 kernels (F, BW, VL, DQ).  Each function carries its own target
 * attribute so the file builds with any compiler flags (nginx uses its own);
 * the table is only handed out when the CPU reports the features.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/cpu/llm_kernels.h"
#include "kernels/cpu/llm_kernels_q.h"
#include "kernels/cpu/llm_quant.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* software prefetch of the next row block: distance in bytes and cache level */
#ifndef PF_AHEAD
#define PF_AHEAD 1024
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T1
#endif

/* ---- loads of 16 weights widened to f32 ---- */

AVX512 INLINE __m512
ld_w(const void *w, llm_wtype t, size_t i)
{
    if (t == LLM_WT_F32) {
        return _mm512_loadu_ps((const float *) w + i);
    }
    if (t == LLM_WT_F16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) ((const uint16_t *) w + i)));
    }
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
        _mm256_loadu_si256((const __m256i *) ((const uint16_t *) w + i))), 16));
}

AVX512 INLINE __m512
ld_w_mask(const void *w, llm_wtype t, size_t i, __mmask16 m)
{
    if (t == LLM_WT_F32) {
        return _mm512_maskz_loadu_ps(m, (const float *) w + i);
    }
    if (t == LLM_WT_F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *) w + i));
    }
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
        _mm256_maskz_loadu_epi16(m, (const uint16_t *) w + i)), 16));
}

/* ---- matmul: RB weight rows x TB tokens per register tile ---- */

AVX512 INLINE void
tile(llm_wtype t, const int RB, const int TB, float *y, size_t ldy,
    const float *x, size_t ldx, const void *w, int k, int r, int tk, int accumulate, int prefetch)
{
    __m512 acc[8][8], wv[8], xv;
    int i, j, kk;

#pragma GCC unroll 8
    for (i = 0; i < RB; i++) {
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) acc[i][j] = _mm512_setzero_ps();
    }
    for (kk = 0; kk + 16 <= k; kk += 16) {
        if (prefetch) {
            /* first pass over these rows: memory bound; fetch the next block early */
#pragma GCC unroll 8
            for (i = 0; i < RB; i++) {
                _mm_prefetch((const char *) w + ((size_t) (r + RB + i) * k + kk) * (t == LLM_WT_F32 ? 4 : 2) + PF_AHEAD, PF_HINT);
            }
        }
#pragma GCC unroll 8
        for (i = 0; i < RB; i++) wv[i] = ld_w(w, t, (size_t) (r + i) * k + kk);
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) {
            xv = _mm512_loadu_ps(x + (size_t) (tk + j) * ldx + kk);
#pragma GCC unroll 8
            for (i = 0; i < RB; i++) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
        }
    }
    if (kk < k) {
        __mmask16 m = (__mmask16) ((1u << (k - kk)) - 1);
#pragma GCC unroll 8
        for (i = 0; i < RB; i++) wv[i] = ld_w_mask(w, t, (size_t) (r + i) * k + kk, m);
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) {
            xv = _mm512_maskz_loadu_ps(m, x + (size_t) (tk + j) * ldx + kk);
#pragma GCC unroll 8
            for (i = 0; i < RB; i++) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
        }
    }
#pragma GCC unroll 8
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 8
        for (i = 0; i < RB; i++) {
            float s = _mm512_reduce_add_ps(acc[i][j]);
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

/* Tokens are taken in blocks of TOK_BLOCK so their rows stay in L2 while
 * every weight row of the range streams past once per block; register tiles
 * are 4 rows x 6 tokens (24 accumulators), the fastest shape measured here. */
#define TOK_BLOCK 48

#define TOKEN_TILES(RB)                                                           \
    for (tk = tb; tk + 6 <= te; tk += 6) {                                        \
        tile(t, RB, 6, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb);               \
    }                                                                             \
    switch (te - tk) {                                                            \
    case 5: tile(t, RB, 5, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb); break;    \
    case 4: tile(t, RB, 4, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb); break;    \
    case 3: tile(t, RB, 3, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb); break;    \
    case 2: tile(t, RB, 2, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb); break;    \
    case 1: tile(t, RB, 1, y, ldy, x, ldx, w, k, r, tk, acc, tk == tb); break;    \
    default: break;                                                               \
    }

AVX512 INLINE void
matmul_t(llm_wtype t, float *y, size_t ldy, const float *x, size_t ldx,
    const void *w, int k, int r0, int r1, int n, int acc)
{
    int tb, te, r, tk;

    if (n == 1) {
        /* one token: purely a stream over the weights, 8 rows at a time */
#ifndef LLM_DECODE_ROWS4
        for (r = r0; r + 8 <= r1; r += 8) tile(t, 8, 1, y, ldy, x, ldx, w, k, r, 0, acc, 1);
#else
        r = r0;
#endif
        for (; r + 4 <= r1; r += 4) tile(t, 4, 1, y, ldy, x, ldx, w, k, r, 0, acc, 1);
        for (; r < r1; r++) tile(t, 1, 1, y, ldy, x, ldx, w, k, r, 0, acc, 1);
        return;
    }
    for (tb = 0; tb < n; tb += TOK_BLOCK) {
        te = tb + TOK_BLOCK < n ? tb + TOK_BLOCK : n;
        for (r = r0; r + 4 <= r1; r += 4) {
            TOKEN_TILES(4)
        }
        for (; r < r1; r++) {
            TOKEN_TILES(1)
        }
    }
}

AVX512 static void
mm_f32(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_F32, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

AVX512 static void
mm_f16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_F16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

AVX512 static void
mm_bf16(float *y, size_t ldy, const float *x, size_t ldx, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    matmul_t(LLM_WT_BF16, y, ldy, x, ldx, w, k, r0, r1, n, acc);
}

/* ---- vector exp: 2^n * p(r), |r| <= ln2/2, degree-6 polynomial (~1 ulp) ---- */

AVX512 INLINE __m512
exp16(__m512 x)
{
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2hi = _mm512_set1_ps(0.693359375f);
    const __m512 ln2lo = _mm512_set1_ps(-2.12194440e-4f);
    __m512 n, r, p;
    __m512i e;

    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
    n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fnmadd_ps(n, ln2hi, x);
    r = _mm512_fnmadd_ps(n, ln2lo, r);
    p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

AVX512 static float
v_dot(const float *a, const float *b, int n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;

    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

AVX512 static void
v_axpy(float *y, float a, const float *x, int n)
{
    __m512 av = _mm512_set1_ps(a);
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), yv));
    }
}

AVX512 static void
v_scale(float *y, float a, int n)
{
    __m512 av = _mm512_set1_ps(a);
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, y + i)));
    }
}

AVX512 static void
v_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    __m512 s = _mm512_setzero_ps(), inv;
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        s = _mm512_fmadd_ps(v, v, s);
    }
    inv = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(s) / (float) n + eps));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

AVX512 static void
v_softmax(float *x, int n)
{
    __m512 mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps(), vmx, inv;
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, x + i));
    }
    vmx = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmx));
        e = _mm512_maskz_mov_ps(m, e);
        sum = _mm512_add_ps(sum, e);
        _mm512_mask_storeu_ps(x + i, m, e);
    }
    inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    }
}

AVX512 static void
v_silu_mul(float *g, const float *u, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        __m512 sig = _mm512_div_ps(gv, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv))));
        _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(sig, _mm512_maskz_loadu_ps(m, u + i)));
    }
}

/* tanh(y) = sign(y) (1 - 2 / (exp(2|y|) + 1)); absolute error ~1e-7 */
AVX512 INLINE __m512
tanh16(__m512 y)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_abs_ps(y);
    __m512 e = exp16(_mm512_add_ps(a, a));
    __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
        _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32((int) 0x80000000u))));
}

/* 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) */
AVX512 static void
v_gelu_tanh_mul(float *g, const float *u, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f), c3 = _mm512_set1_ps(0.044715f);
    const __m512 m2k = _mm512_set1_ps(-2.0f * 0.7978845608028654f);
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        __m512 in = _mm512_fmadd_ps(_mm512_mul_ps(c3, x), _mm512_mul_ps(x, x), x);
        __m512 y = _mm512_div_ps(x, _mm512_add_ps(one, exp16(_mm512_mul_ps(m2k, in))));
        _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(y, _mm512_maskz_loadu_ps(m, u + i)));
    }
}

AVX512 static void
v_softcap(float *x, int n, float cap)
{
    const __m512 c = _mm512_set1_ps(cap), ic = _mm512_set1_ps(1.0f / cap);
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(c, tanh16(_mm512_mul_ps(v, ic))));
    }
}

/* interleaved pairs; a few values per head, not worth vector shuffles */
AVX512 static void
v_rope_pairs(float *x, const float *c, const float *s, int half)
{
    int i;
    for (i = 0; i < half; i++) {
        float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c[i] - b * s[i];
        x[2 * i + 1] = b * c[i] + a * s[i];
    }
}

AVX512 static void
v_rope(float *x, const float *c, const float *s, int half)
{
    int i;

    for (i = 0; i < half; i += 16) {
        __mmask16 m = half - i >= 16 ? 0xffff : (__mmask16) ((1u << (half - i)) - 1);
        __m512 a = _mm512_maskz_loadu_ps(m, x + i), b = _mm512_maskz_loadu_ps(m, x + half + i);
        __m512 cv = _mm512_maskz_loadu_ps(m, c + i), sv = _mm512_maskz_loadu_ps(m, s + i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_fmsub_ps(a, cv, _mm512_mul_ps(b, sv)));
        _mm512_mask_storeu_ps(x + half + i, m, _mm512_fmadd_ps(b, cv, _mm512_mul_ps(a, sv)));
    }
}

AVX512 static void
v_to_f32(float *y, const void *w, llm_wtype t, int n)
{
    int i;

    if (llm_wtype_info(t)->quantized) {
        llm_dequant_row(t, w, y, n);
        return;
    }
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m512 v = t == LLM_WT_F32 ? ld_w_mask(w, LLM_WT_F32, (size_t) i, m)
                 : t == LLM_WT_F16 ? ld_w_mask(w, LLM_WT_F16, (size_t) i, m)
                 : ld_w_mask(w, LLM_WT_BF16, (size_t) i, m);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* the largest value (a NaN loses every max: the loaded value is the first operand), then its first index */
AVX512 static int
v_argmax(const float *x, int n)
{
    __m512 m = _mm512_set1_ps(-INFINITY), b;
    float best;
    int i;

    for (i = 0; i + 16 <= n; i += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + i), m);
    best = _mm512_reduce_max_ps(m);
    for (; i < n; i++) if (x[i] > best) best = x[i];
    b = _mm512_set1_ps(best);
    for (i = 0; i + 16 <= n; i += 16) {
        __mmask16 e = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), b, _CMP_EQ_OQ);
        if (e) return i + __builtin_ctz((unsigned) e);
    }
    for (; i < n; i++) if (x[i] == best) return i;
    return 0;
}

AVX512 static uint64_t
v_read_stream(const void *p, size_t n)
{
    const char *c = p;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t out[8], r = 0;
    size_t i;
    int j;

    for (i = 0; i + 256 <= n; i += 256) {
        a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(c + i));
        a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(c + i + 64));
        a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(c + i + 128));
        a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(c + i + 192));
    }
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(c + i));
    }
    a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
    _mm512_storeu_si512(out, a0);
    for (j = 0; j < 8; j++) r ^= out[j];
    return r;
}

/* n rows of float16, stride elements apart, widened into rows of hd floats */
AVX512 static void
widen_rows(float *y, const uint16_t *x, size_t stride, int n, int hd)
{
    int j, d;

    for (j = 0; j < n; j++) {
        for (d = 0; d < hd; d += 16) {
            __mmask16 m = hd - d >= 16 ? 0xffff : (__mmask16) ((1u << (hd - d)) - 1);
            _mm512_mask_storeu_ps(y + (size_t) j * hd + d, m,
                                  _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + (size_t) j * stride + d)));
        }
    }
}

/* n rows of Q8_0 blocks, stride elements apart (hd, stride multiples of 32), widened: d * q */
AVX512 static void
widen_rows_q8_0(float *y, const void *x, size_t stride, int n, int hd)
{
    int j, b;

    for (j = 0; j < n; j++) {
        const llm_block_q8_0 *xb = (const llm_block_q8_0 *) x + (size_t) j * (stride / 32);
        float *yr = y + (size_t) j * hd;
        for (b = 0; b < hd / 32; b++) {
            __m512 d = _mm512_set1_ps(llm_f16_to_f32(xb[b].d));
            __m128i lo = _mm_loadu_si128((const __m128i *) xb[b].qs);
            __m128i hi = _mm_loadu_si128((const __m128i *) (xb[b].qs + 16));
            _mm512_storeu_ps(yr + 32 * b, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo))));
            _mm512_storeu_ps(yr + 32 * b + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi))));
        }
    }
}

/*
 * Online-softmax update of one row from its 16 scores (lanes = positions):
 * weights of the visible lanes, the row's sum, acc plus the weighted values.
 * The running max only moves (and acc and the sum are rescaled) when a score
 * exceeds it by more than LAZY_MAX: weights up to e^LAZY_MAX stay far from
 * float overflow and the result acc / l is the same, while most blocks skip
 * the horizontal max and the rescaling (lazy rescaling, as FlashAttention-3).
 */
#define LAZY_MAX 8.0f

/*
 * The softmax part of that update for one row: the weights of the visible
 * lanes into pr, the sum, and in *cs the factor acc is to be rescaled by
 * (1 unless the max moved).
 */
AVX512 static void
softmax_row(float *m, float *l, __m512 s, __mmask16 vis, float cap, float *pr, float *cs)
{
    __m512 p;

    *cs = 1.0f;
    if (cap > 0) {
        s = _mm512_mul_ps(_mm512_set1_ps(cap), tanh16(_mm512_mul_ps(s, _mm512_set1_ps(1.0f / cap))));
    }
    if (_mm512_mask_cmp_ps_mask(vis, s, _mm512_set1_ps(*m + LAZY_MAX), _CMP_GT_OQ)) {
        float mx = _mm512_mask_reduce_max_ps(vis, s), mn = *m > mx ? *m : mx;
        *cs = expf(*m - mn);
        *l *= *cs;
        *m = mn;
    }
    p = _mm512_maskz_mov_ps(vis, exp16(_mm512_sub_ps(s, _mm512_set1_ps(*m))));
    *l += _mm512_reduce_add_ps(p);
    _mm512_storeu_ps(pr, p);
}

/*
 * The value part for NR rows at once: acc_i = acc_i * cs_i + sum_j pr_i[j] v_j.
 * Each value vector is loaded once for all the rows (a verification's query
 * rows share the block), and each row's sum is taken in the same order
 * whatever NR is (even j, odd j, then the two added), so a row's result does
 * not depend on the rows beside it.  Multiplying by cs = 1 is exact.
 */
AVX512 INLINE void
attend_rows(const int NR, float *const *acc, const float *pr, const float *cs, const float *v,
    size_t vs, int n, int hd)
{
    __m512 a0[8], a1[8], v0, v1;
    int i, j, d;

    for (d = 0; d < hd; d += 16) {
        __mmask16 dm = hd - d >= 16 ? 0xffff : (__mmask16) ((1u << (hd - d)) - 1);
#pragma GCC unroll 8
        for (i = 0; i < NR; i++) {
            a0[i] = _mm512_mul_ps(_mm512_maskz_loadu_ps(dm, acc[i] + d), _mm512_set1_ps(cs[i]));
            a1[i] = _mm512_setzero_ps();
        }
        for (j = 0; j + 1 < n; j += 2) {
            v0 = _mm512_maskz_loadu_ps(dm, v + (size_t) j * vs + d);
            v1 = _mm512_maskz_loadu_ps(dm, v + (size_t) (j + 1) * vs + d);
#pragma GCC unroll 8
            for (i = 0; i < NR; i++) {
                a0[i] = _mm512_fmadd_ps(_mm512_set1_ps(pr[i * LLM_ATT_KEYS + j]), v0, a0[i]);
                a1[i] = _mm512_fmadd_ps(_mm512_set1_ps(pr[i * LLM_ATT_KEYS + j + 1]), v1, a1[i]);
            }
        }
        if (j < n) {
            v0 = _mm512_maskz_loadu_ps(dm, v + (size_t) j * vs + d);
#pragma GCC unroll 8
            for (i = 0; i < NR; i++) {
                a0[i] = _mm512_fmadd_ps(_mm512_set1_ps(pr[i * LLM_ATT_KEYS + j]), v0, a0[i]);
            }
        }
#pragma GCC unroll 8
        for (i = 0; i < NR; i++) {
            _mm512_mask_storeu_ps(acc[i] + d, dm, _mm512_add_ps(a0[i], a1[i]));
        }
    }
}

/*
 * The keys are transposed once into kt[d][16] (a gather per dimension, from
 * rows copied or widened next to each other first: a gather across the cache's
 * strided rows touches 16 far lines), so a row's 16 scores are hd broadcast
 * FMAs with no horizontal sums; rows go eight at a time to keep eight FMA
 * chains in flight (two FMA ports times four cycles of latency).
 */
AVX512 static void
v_attend_block(float *acc, float *m, float *l, const float *q, int nq, const int *lo,
    const int *hi, const void *k, const void *v, llm_wtype kvt, size_t stride, int p0, int n, int hd,
    float cap, float *scratch)
{
    float *kt = scratch, *kf = scratch + (size_t) LLM_ATT_KEYS * hd;
    float *vf = kf + (size_t) LLM_ATT_KEYS * hd, *pr = vf + (size_t) LLM_ATT_KEYS * hd;
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512 pos = _mm512_cvtepi32_ps(_mm512_add_epi32(iota, _mm512_set1_epi32(p0)));
    __mmask16 nm = (__mmask16) ((1u << n) - 1);
    const float *kr = k, *vr = v;
    size_t ks = stride, vs = stride;
    __m512i idx;
    int r, i, d;

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
        for (i = 0; i < n; i++) memcpy(kf + (size_t) i * hd, kr + (size_t) i * ks, (size_t) hd * sizeof(float));
    }
    kr = kf;
    ks = (size_t) hd;
    idx = _mm512_mullo_epi32(iota, _mm512_set1_epi32((int) ks));
    for (d = 0; d < hd; d++) {
        _mm512_storeu_ps(kt + (size_t) d * LLM_ATT_KEYS,
                         _mm512_mask_i32gather_ps(_mm512_setzero_ps(), nm, idx, kr + d, 4));
    }
    for (r = 0; r < nq; r += 8) {
        const float *qr[8];
        float *ar[8], cs[8];
        __m512 s[8];
        __mmask16 vis[8];
        int any = 0, nl;

        for (i = 0; i < 8; i++) {
            int row = r + i < nq ? r + i : r;
            qr[i] = q + (size_t) row * hd;
            s[i] = _mm512_setzero_ps();
            vis[i] = r + i < nq
                     ? nm & _mm512_cmp_ps_mask(pos, _mm512_set1_ps((float) lo[row]), _CMP_GE_OQ)
                          & _mm512_cmp_ps_mask(pos, _mm512_set1_ps((float) hi[row]), _CMP_LE_OQ)
                     : 0;
            any |= vis[i] != 0;
        }
        if (!any) continue;
        for (d = 0; d < hd; d++) {
            __m512 kd = _mm512_loadu_ps(kt + (size_t) d * LLM_ATT_KEYS);
            s[0] = _mm512_fmadd_ps(_mm512_set1_ps(qr[0][d]), kd, s[0]);
            s[1] = _mm512_fmadd_ps(_mm512_set1_ps(qr[1][d]), kd, s[1]);
            s[2] = _mm512_fmadd_ps(_mm512_set1_ps(qr[2][d]), kd, s[2]);
            s[3] = _mm512_fmadd_ps(_mm512_set1_ps(qr[3][d]), kd, s[3]);
            s[4] = _mm512_fmadd_ps(_mm512_set1_ps(qr[4][d]), kd, s[4]);
            s[5] = _mm512_fmadd_ps(_mm512_set1_ps(qr[5][d]), kd, s[5]);
            s[6] = _mm512_fmadd_ps(_mm512_set1_ps(qr[6][d]), kd, s[6]);
            s[7] = _mm512_fmadd_ps(_mm512_set1_ps(qr[7][d]), kd, s[7]);
        }
        /* the rows that see any of the block, their weights side by side in pr */
        nl = 0;
        for (i = 0; i < 8; i++) {
            if (vis[i] == 0) continue;
            softmax_row(&m[r + i], &l[r + i], s[i], vis[i], cap, pr + nl * LLM_ATT_KEYS, &cs[nl]);
            ar[nl++] = acc + (size_t) (r + i) * hd;
        }
        switch (nl) {
        case 8: attend_rows(8, ar, pr, cs, vr, vs, n, hd); break;
        case 7: attend_rows(7, ar, pr, cs, vr, vs, n, hd); break;
        case 6: attend_rows(6, ar, pr, cs, vr, vs, n, hd); break;
        case 5: attend_rows(5, ar, pr, cs, vr, vs, n, hd); break;
        case 4: attend_rows(4, ar, pr, cs, vr, vs, n, hd); break;
        case 3: attend_rows(3, ar, pr, cs, vr, vs, n, hd); break;
        case 2: attend_rows(2, ar, pr, cs, vr, vs, n, hd); break;
        default: attend_rows(1, ar, pr, cs, vr, vs, n, hd); break;
        }
    }
}

AVX512 static void
v_f32_to_f16(uint16_t *y, const float *x, int n)
{
    int i;

    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16) ((1u << (n - i)) - 1);
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(y + i, m, h);
    }
}

#define AVX512_TABLE(tname, isa, r16isa)                                                   \
    {                                                                                      \
        .name = tname,                                                                     \
        .matmul = { [LLM_WT_F32] = mm_f32, [LLM_WT_F16] = mm_f16, [LLM_WT_BF16] = mm_bf16 }, \
        .matmul_q = LLM_MM_Q_TABLE_R16(isa, r16isa),                                       \
        .quantize_act = llm_avx2_quantize_act,                                             \
        .dot = v_dot, .axpy = v_axpy, .scale = v_scale, .rmsnorm = v_rmsnorm,              \
        .softmax = v_softmax, .silu_mul = v_silu_mul, .gelu_tanh_mul = v_gelu_tanh_mul,    \
        .softcap = v_softcap, .rope = v_rope, .rope_pairs = v_rope_pairs, .to_f32 = v_to_f32, \
        .read_stream = v_read_stream, .attend_block = v_attend_block, .argmax = v_argmax, \
        .f32_to_f16 = v_f32_to_f16,                                                        \
    }

static const llm_kernels avx512_table = AVX512_TABLE("avx512", avx512, avx512);
/* the same with the quantized matmuls on VNNI's vpdpbusd */
static const llm_kernels avx512vnni_table = AVX512_TABLE("avx512vnni", avx512vnni, avx512vnni);
/* and with batches of panel types on AMX tiles */
static const llm_kernels avx512amx_table = AVX512_TABLE("avx512amx", avx512vnni, avx512amx);

/* F16C from CPUID leaf 1 (not every compiler's __builtin_cpu_supports knows it) */
static int
cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

const llm_kernels *
llm_kernels_avx512(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("fma") && cpu_has_f16c())
    {
        return &avx512_table;
    }
    return NULL;
}

const llm_kernels *
llm_kernels_avx512vnni(void)
{
    if (llm_kernels_avx512() != NULL && __builtin_cpu_supports("avx512vnni")) return &avx512vnni_table;
    return NULL;
}

/*
 * AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24, 25), and the kernel's
 * permission for this process to use the tile data (Linux asks for it once:
 * arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA; granting it again is a no-op).
 */
static int
amx_usable(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

const llm_kernels *
llm_kernels_avx512amx(void)
{
    if (llm_kernels_avx512vnni() != NULL && amx_usable()) return &avx512amx_table;
    return NULL;
}
