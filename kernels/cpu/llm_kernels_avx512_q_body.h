/*
 * AVX-512 quantized matmuls, compiled twice: without VNNI
 * (llm_kernels_avx512_q.c) and with it (llm_kernels_avx512vnni_q.c).  The
 * including file defines Q_VNNI (0 or 1), Q_TARGET (the function target
 * attribute) and Q_FN(ty) (the exported name of a type's matmul).
 *
 * Same arithmetic as the AVX2 kernels (see llm_kernels_avx2_q.c) on 512-bit
 * registers: two 32-value blocks, or two K-quant chunks, per register.
 * With VNNI, vpdpbusd does a 32-value block's multiply-add in one
 * instruction (signed codes as |q| against a with q's sign, exact in
 * integers), and vpdpwssd applies the K-quant chunk scales while
 * accumulating.  Batches of 32-value formats on VNNI go through weight
 * panels of 16 rows (llm_kernels_q_panel.h).
 */
#include "kernels/cpu/llm_kernels_q.h"
#include "kernels/cpu/llm_kernels_q_panel.h"

#define X512 Q_TARGET

X512 INLINE __m512i
cat_i(__m256i lo, __m256i hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

X512 INLINE __m512
cat_f(float lo, float hi)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

/* a with its sign flipped where w is negative (AVX-512 has no vpsignb) */
X512 INLINE __m512i
sign_of(__m512i a, __m512i w)
{
    return _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
}

typedef struct {
    __m512i q, qa;
    __m512  d;
    float   m0, m1;
} blk64;

/* blocks at p0 and p1 (p1 NULL: a zero block) */
X512 INLINE blk64
dec64(llm_wtype t, const char *p0, const char *p1)
{
    blk32 a = dec32(t, p0), b;
    blk64 r;

    if (p1) {
        b = dec32(t, p1);
    } else {
        b.q = b.qa = _mm256_setzero_si256();
        b.d = b.m = 0;
    }
    r.q = cat_i(a.q, b.q);
    r.qa = cat_i(a.qa, b.qa);
    r.d = cat_f(a.d, b.d);
    r.m0 = a.m;
    r.m1 = b.m;
    return r;
}

X512 INLINE __m512i
dot64(llm_wtype t, const blk64 *w, __m512i a)
{
    if (signed_fmt(t)) a = sign_of(a, w->q);
#if Q_VNNI
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w->qa, a);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w->qa, a), _mm512_set1_epi16(1));
#endif
}

/* scales of 16 blocks (field as scales8) */
X512 INLINE __m512
scales16(llm_wtype t, const char *p, int bytes, int field)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(scales8(t, p, bytes, field)),
                              scales8(t, p + 8 * bytes, bytes, field), 1);
}

/* lanes 2p (low 8) and 2p+1 (high 8) of v */
X512 INLINE __m512
pair_lanes(__m512 v, int p)
{
    return _mm512_permutexvar_ps(_mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p,
        2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1), v);
}

/* as the AVX2 tile32: blocks by sixteens (scales in one vector per row), pairs per register */
X512 INLINE void
tile32(llm_wtype t, const int RB, const int TB, float *y, size_t ldy, const char *xq, size_t ldq,
    const char *w, size_t rb, int k, int r, int tk, int accumulate)
{
    const int bytes = block_bytes(t), nb = k / 32;
    __m512 acc[4][4];
    float off[4][4];
    const int8_t *aq[4];
    const float *ad[4], *as[4];
    const char *pr[4];
    int i, j, b, pp;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) (tk + j) * ldq, k);
        aq[j] = v.q; ad[j] = v.d; as[j] = v.s;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) { acc[i][j] = _mm512_setzero_ps(); off[i][j] = 0; }
    }
#pragma GCC unroll 4
    for (i = 0; i < RB; i++) pr[i] = w + (size_t) (r + i) * rb;
    for (b = 0; b + 16 <= nb; b += 16) {
        __m512 dw[4];
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            dw[i] = scales16(t, pr[i], bytes, 0);
            if (has_offset(t)) {
                __m512 mw = offset_mult(t) != 0 ? _mm512_mul_ps(dw[i], _mm512_set1_ps(offset_mult(t)))
                                                : scales16(t, pr[i], bytes, 1);
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) acc[i][j] = _mm512_fmadd_ps(mw, _mm512_loadu_ps(as[j] + b), acc[i][j]);
            }
            if (TB == 1) dw[i] = _mm512_mul_ps(dw[i], _mm512_loadu_ps(ad[0] + b));
        }
#pragma GCC unroll 8
        for (pp = 0; pp < 8; pp++) {
            blk64 wb[4];
            __m512 ds[4];
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                /* the same place in the next tile's rows: one tile ahead of the stream */
                _mm_prefetch(pr[i] + (size_t) RB * rb, _MM_HINT_T0);
                wb[i] = dec64(t, pr[i], pr[i] + bytes);
                ds[i] = pair_lanes(dw[i], pp);
                pr[i] += 2 * bytes;
            }
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) {
                __m512i a = _mm512_loadu_si512((const void *) aq[j]);
                aq[j] += 64;
#pragma GCC unroll 4
                for (i = 0; i < RB; i++) {
                    acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot64(t, &wb[i], a)),
                        TB == 1 ? ds[i] : _mm512_mul_ps(ds[i], pair_lanes(_mm512_loadu_ps(ad[j] + b), pp)),
                        acc[i][j]);
                }
            }
        }
    }
    for (; b < nb; b += 2) {
        const int tail = b + 1 == nb;
        blk64 wb[4];
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            _mm_prefetch(pr[i] + (size_t) RB * rb, _MM_HINT_T0);
            wb[i] = dec64(t, pr[i], tail ? NULL : pr[i] + bytes);
            pr[i] += 2 * bytes;
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            /* a tail block reads 32 bytes past the row's q: still inside the activation row, times zero */
            __m512i a = _mm512_loadu_si512((const void *) aq[j]);
            __m512 da = cat_f(ad[j][b], tail ? 0.0f : ad[j][b + 1]);
            float s0 = as[j][b], s1 = tail ? 0.0f : as[j][b + 1];
            aq[j] += 64;
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot64(t, &wb[i], a)),
                                            _mm512_mul_ps(wb[i].d, da), acc[i][j]);
                if (has_offset(t)) off[i][j] += wb[i].m0 * s0 + wb[i].m1 * s1;
            }
        }
    }
#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            float s = _mm512_reduce_add_ps(acc[i][j]) + off[i][j];
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

X512 INLINE void
tile256(llm_wtype t, const int RB, const int TB, float *y, size_t ldy, const char *xq, size_t ldq,
    const char *w, size_t rb, int k, int r, int tk, int accumulate)
{
    const int bytes = block_bytes(t), nsb = k / LLM_QK;
    __m512 acc[4][4];
    const int8_t *aq[4];
    const float *adk[4];
    const int16_t *abs16[4];
    int i, j, sb, cp;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) (tk + j) * ldq, k);
        aq[j] = v.qk; adk[j] = v.dk; abs16[j] = v.bsum;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) acc[i][j] = _mm512_setzero_ps();
    }
    for (sb = 0; sb < nsb; sb++) {
        hdr256 h[4];
        __m512i is[4][4];
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            const char *p = w + (size_t) (r + i) * rb + (size_t) sb * bytes;
            int l;
            /* the same super-block of the next tile's rows: one tile ahead of the stream */
#pragma GCC unroll 4
            for (l = 0; l < bytes; l += 64) _mm_prefetch(p + (size_t) RB * rb + l, _MM_HINT_T0);
            h[i] = dec_hdr(t, p);
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) is[i][j] = _mm512_setzero_si512();
        }
#pragma GCC unroll 4
        for (cp = 0; cp < 4; cp++) {
            __m512i wq[4], wa[4], sc[4];
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                wq[i] = cat_i(chunk_codes(t, &h[i], 2 * cp), chunk_codes(t, &h[i], 2 * cp + 1));
                wa[i] = signed_k(t) ? _mm512_abs_epi8(wq[i]) : wq[i];
                sc[i] = cat_i(chunk_scale(t, &h[i], 2 * cp), chunk_scale(t, &h[i], 2 * cp + 1));
            }
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) {
                __m512i a = _mm512_loadu_si512((const void *) (aq[j] + LLM_QK * sb + 64 * cp));
#pragma GCC unroll 4
                for (i = 0; i < RB; i++) {
                    __m512i p = _mm512_maddubs_epi16(wa[i], signed_k(t) ? sign_of(a, wq[i]) : a);
#if Q_VNNI
                    is[i][j] = _mm512_dpwssd_epi32(is[i][j], p, sc[i]);
#else
                    is[i][j] = _mm512_add_epi32(is[i][j], _mm512_madd_epi16(p, sc[i]));
#endif
                }
            }
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            __m256i bs = _mm256_loadu_si256((const __m256i *) (abs16[j] + 16 * sb));
            float dk = adk[j][sb];
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                __m512i s = _mm512_add_epi32(is[i][j],
                    _mm512_zextsi256_si512(offset_fix(t, &h[i], _mm256_setzero_si256(), bs)));
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(h[i].d * dk), acc[i][j]);
                if (has_min(t)) {
                    __m256 mn = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(h[i].mins, bs)),
                                              _mm256_set1_ps(-h[i].dmin * dk));
                    acc[i][j] = _mm512_add_ps(acc[i][j], _mm512_zextps256_ps512(mn));
                }
            }
        }
    }
#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            float s = _mm512_reduce_add_ps(acc[i][j]);
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

#if Q_VNNI
/*
 * TB tokens against a panel of 16 rows and nblk blocks, all codes unsigned:
 * per block and token 8 vpdpbusd (4 activation bytes broadcast from memory)
 * sum the block in int32 for the 16 rows; then one conversion, a product
 * with the activation scale and two FMAs (weight scales; offsets times the
 * activation's scaled sum).  aq[j], ad[j], as[j]: token j's codes, scales and
 * scaled sums at the panel's first block.
 */
X512 INLINE void
panel_tile(llm_wtype t, const int TB, float *y, size_t ldy, const char *panel, int nblk,
    const int8_t *const *aq, const float *const *ad, const float *const *as, int r, int nrows, int add)
{
    const __mmask16 rows = (__mmask16) ((1u << nrows) - 1);
    __m512 acc[8];
    int j, b, s;

#pragma GCC unroll 8
    for (j = 0; j < TB; j++) acc[j] = _mm512_setzero_ps();
    for (b = 0; b < nblk; b++) {
        const char *pb = panel + (size_t) b * panel_block_bytes(16);
        __m512i is[8];
        __m512 dv = _mm512_loadu_ps((const float *) (pb + 512)), mv = _mm512_loadu_ps((const float *) (pb + 576));
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) is[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (s = 0; s < 8; s++) {
            __m512i wq = _mm512_loadu_si512((const void *) (pb + 64 * s));
#pragma GCC unroll 8
            for (j = 0; j < TB; j++) {
                is[j] = _mm512_dpbusd_epi32(is[j], wq, _mm512_set1_epi32(act4(aq[j] + 32 * b + 4 * s)));
            }
        }
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) {
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(is[j]), _mm512_set1_ps(ad[j][b]));
            acc[j] = _mm512_fmadd_ps(v, dv, _mm512_fmadd_ps(mv, _mm512_set1_ps(as[j][b]), acc[j]));
        }
    }
#pragma GCC unroll 8
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) j * ldy + r;
        __m512 v = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(rows, yr), acc[j]) : acc[j];
        _mm512_mask_storeu_ps(yr, rows, v);
    }
}

#define PANEL_TARGET X512
#define PANEL_R 16
#define PANEL_TB 8
#define PANEL_UNSIGNED 1
#include "kernels/cpu/llm_kernels_q_panel_driver.h"
#endif

#if Q_VNNI
/*
 * Panels made at load (llm_kernels_q_r16.h): per block, 8 (Q8_0) or 4 x 2
 * (Q4_0 / Q5_0 nibbles) vpdpbusd of a 64-byte group against 4 activation
 * bytes broadcast sum the block for all 16 rows; the codes are unsigned
 * (Q8_0 flipped, bias 128; Q4_0 bias 8; Q5_0 nibble + fifth bit shifted onto
 * bit 4, bias 16).  Two integer chains per token while the tile has few
 * tokens, so a lone token's block is not one serial chain.
 */
X512 INLINE void
r16_tile(const int kind, const int TB, float *y, size_t ldy, r16_panel P, int b0, int b1,
    const int8_t *const *aq, const float *const *ad, const float *const *as, int row0, int lo, int hi, int add)
{
    const __mmask16 rows = (__mmask16) (((1u << hi) - 1) & ~((1u << lo) - 1));
    const int two = TB <= 4;
    const __m512i low4 = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16);
    const int nib = kind != R16_Q8, hb = kind == R16_Q5;       /* nibble groups start after the fifth bits */
    const float bias = kind == R16_Q4 ? 8.0f : kind == R16_Q5 ? 16.0f : 128.0f;
    __m512 acc[8];
    int j, b, g;

#pragma GCC unroll 8
    for (j = 0; j < TB; j++) acc[j] = _mm512_setzero_ps();
    for (b = b0; b < b1; b++) {
        const unsigned char *c = P.codes + (size_t) b * r16_code_bytes(kind);
        __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (P.d + 16 * b)));
        __m512i is[8], is2[8];
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) is[j] = is2[j] = _mm512_setzero_si512();
#ifndef R16_PF
#define R16_PF 4096
#endif
#pragma GCC unroll 8
        for (g = 0; g < r16_code_bytes(kind) / 64; g++) _mm_prefetch((const char *) c + R16_PF + 64 * g, _MM_HINT_T0);
        if (nib) {
            const __m512i h = hb ? _mm512_loadu_si512((const void *) c) : _mm512_setzero_si512();
#pragma GCC unroll 4
            for (g = 0; g < 4; g++) {
                __m512i raw = _mm512_loadu_si512((const void *) (c + 64 * (g + hb)));
                __m512i l = _mm512_and_si512(raw, low4), u = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                if (hb) {
                    l = _mm512_or_si512(l, _mm512_and_si512(_mm512_slli_epi32(h, 4 - g), bit4));
                    u = _mm512_or_si512(u, _mm512_and_si512(_mm512_srli_epi32(h, g), bit4));
                }
#pragma GCC unroll 8
                for (j = 0; j < TB; j++) {
                    is[j] = _mm512_dpbusd_epi32(is[j], l, _mm512_set1_epi32(act4(aq[j] + 32 * b + 4 * g)));
                    if (two) is2[j] = _mm512_dpbusd_epi32(is2[j], u, _mm512_set1_epi32(act4(aq[j] + 32 * b + 16 + 4 * g)));
                    else is[j] = _mm512_dpbusd_epi32(is[j], u, _mm512_set1_epi32(act4(aq[j] + 32 * b + 16 + 4 * g)));
                }
            }
        } else {
#pragma GCC unroll 8
            for (g = 0; g < 8; g++) {
                __m512i wq = _mm512_loadu_si512((const void *) (c + 64 * g));
#pragma GCC unroll 8
                for (j = 0; j < TB; j++) {
                    __m512i a = _mm512_set1_epi32(act4(aq[j] + 32 * b + 4 * g));
                    if (two && (g & 1)) is2[j] = _mm512_dpbusd_epi32(is2[j], wq, a);
                    else is[j] = _mm512_dpbusd_epi32(is[j], wq, a);
                }
            }
        }
#pragma GCC unroll 8
        for (j = 0; j < TB; j++) {
            __m512i sum = two ? _mm512_add_epi32(is[j], is2[j]) : is[j];
            __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(ad[j][b]),
                                       _mm512_set1_ps(-bias * as[j][b]));
            acc[j] = _mm512_fmadd_ps(v, dv, acc[j]);
        }
    }
#pragma GCC unroll 8
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) j * ldy + row0;
        __m512 v = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(rows, yr), acc[j]) : acc[j];
        _mm512_mask_storeu_ps(yr, rows, v);
    }
}

#define R16_TARGET X512
#define R16_TB 8
#include "kernels/cpu/llm_kernels_q_r16.h"
R16_MM(avx512vnni, q8_0_r16, LLM_WT_Q8_0_R16)
R16_MM(avx512vnni, q4_0_r16, LLM_WT_Q4_0_R16)
R16_MM(avx512vnni, q5_0_r16, LLM_WT_Q5_0_R16)
#else
/* without VNNI the AVX2 panel kernels (vpmaddubsw on 256 bits) */
X512 void
llm_avx512_mm_q8_0_r16(float *y, size_t ldy, const void *xq, size_t ldq, const void *w, int k, int r0, int r1,
    int n, int acc)
{
    llm_avx2_mm_q8_0_r16(y, ldy, xq, ldq, w, k, r0, r1, n, acc);
}

X512 void
llm_avx512_mm_q4_0_r16(float *y, size_t ldy, const void *xq, size_t ldq, const void *w, int k, int r0, int r1,
    int n, int acc)
{
    llm_avx2_mm_q4_0_r16(y, ldy, xq, ldq, w, k, r0, r1, n, acc);
}

X512 void
llm_avx512_mm_q5_0_r16(float *y, size_t ldy, const void *xq, size_t ldq, const void *w, int k, int r0, int r1,
    int n, int acc)
{
    llm_avx2_mm_q5_0_r16(y, ldy, xq, ldq, w, k, r0, r1, n, acc);
}
#endif

/* tokens from which a batch of a 32-value format goes through panels (VNNI only) */
#define PANEL_MIN_TOKENS 4

/* tokens per pass over a range of rows: their activation rows stay in L2 */
#define TOK_BLOCK 32

#define TILE(RB, TB) \
    (k256 ? tile256(t, RB, TB, y, ldy, (const char *) xq, ldq, (const char *) w, rb, k, r, tk, acc) \
          : tile32(t, RB, TB, y, ldy, (const char *) xq, ldq, (const char *) w, rb, k, r, tk, acc))

X512 INLINE void
matmul_q(llm_wtype t, float *y, size_t ldy, const void *xq, size_t ldq, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    const int k256 = kquant(t);
    size_t rb = (size_t) (k / (k256 ? LLM_QK : 32)) * (size_t) block_bytes(t);
    int r, tk, tb, te;

    if (n == 1) {
        tk = 0;
        for (r = r0; r + 4 <= r1; r += 4) TILE(4, 1);
        for (; r < r1; r++) TILE(1, 1);
        return;
    }
#if Q_VNNI
    if (!k256 && n >= PANEL_MIN_TOKENS) {
        matmul_panels(t, y, ldy, (const char *) xq, ldq, (const char *) w, k, r0, r1, n, acc);
        return;
    }
#endif
    for (tb = 0; tb < n; tb += TOK_BLOCK) {
        te = tb + TOK_BLOCK < n ? tb + TOK_BLOCK : n;
        if (k256) {
            for (r = r0; r + 2 <= r1; r += 2) {
                for (tk = tb; tk + 4 <= te; tk += 4) TILE(2, 4);
                for (; tk < te; tk++) TILE(2, 1);
            }
        } else {
            for (r = r0; r + 4 <= r1; r += 4) {
                for (tk = tb; tk + 4 <= te; tk += 4) TILE(4, 4);
                for (; tk < te; tk++) TILE(4, 1);
            }
        }
        for (; r < r1; r++) {
            for (tk = tb; tk + 4 <= te; tk += 4) TILE(1, 4);
            for (; tk < te; tk++) TILE(1, 1);
        }
    }
}

#define MM(ty, T)                                                                          \
    X512 void Q_FN(ty)(float *y, size_t ldy, const void *xq, size_t ldq,                   \
        const void *w, int k, int r0, int r1, int n, int acc)                              \
    {                                                                                      \
        matmul_q(T, y, ldy, xq, ldq, w, k, r0, r1, n, acc);                                \
    }
MM(q8_0, LLM_WT_Q8_0)
MM(q4_0, LLM_WT_Q4_0)
MM(q4_1, LLM_WT_Q4_1)
MM(q5_0, LLM_WT_Q5_0)
MM(q5_1, LLM_WT_Q5_1)
MM(q2_k, LLM_WT_Q2_K)
MM(q3_k, LLM_WT_Q3_K)
MM(q4_k, LLM_WT_Q4_K)
MM(q5_k, LLM_WT_Q5_K)
MM(q6_k, LLM_WT_Q6_K)
MM(iq4_nl, LLM_WT_IQ4_NL)
MM(iq4_xs, LLM_WT_IQ4_XS)
MM(mxfp4, LLM_WT_MXFP4)
MM(aq8, LLM_WT_AQ8)
#undef MM
