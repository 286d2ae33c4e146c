/*
 * AVX2 quantized matmuls: integer dot products of weight blocks with int8
 * activation rows (llm_quant.h), as llama.cpp's vec_dot kernels do.
 *
 * 32-value block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4):
 * per block and token one vpmaddubsw + vpmaddwd gives 8 int32 partial sums,
 * converted and multiplied by weight scale x activation scale.  Unsigned
 * codes (Q4/Q5) go straight into vpmaddubsw; their offset or minimum is
 * applied once per block through the activation block sum.  Signed codes
 * (Q8_0, the lookup formats) use the abs/sign trick.
 *
 * K-quants (Q2_K..Q6_K, IQ4_XS) against per-256 activations: each 32 values
 * are multiplied by their integer sub-block scale in vpmaddwd and summed in
 * int32 over the super-block; offsets and minimums come from the
 * activation sums per 16; one float product per super-block remains.
 *
 * Register tiles: RB weight rows x TB tokens, weights decoded once per tile
 * and reused for its tokens.  Batches of 32-value formats go through weight
 * panels instead (llm_kernels_q_panel.h): 8 rows per register.
 */
#include "kernels/cpu/llm_kernels_q.h"
#include "kernels/cpu/llm_kernels_q_panel.h"

AVX2 INLINE __m256
lane(__m256 v, int i)
{
    return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i));
}

/*
 * y for rows r..r+RB-1 and tokens tk..tk+TB-1.  Blocks go by eights: their
 * scales are collected into one vector per row, the offsets (Q4/Q5) are one
 * vector FMA with the activation block sums, and each block's scale is a
 * lane of that vector.  Pointers advance block by block (no index
 * arithmetic in the loop).
 */
AVX2 INLINE void
tile32(llm_wtype t, const int RB, const int TB, float *y, size_t ldy, const char *xq, size_t ldq,
    const char *w, size_t rb, int k, int r, int tk, int accumulate)
{
    const int bytes = block_bytes(t), nb = k / 32;
    __m256 acc[4][4];
    float off[4][4];
    const int8_t *aq[4];
    const float *ad[4], *as[4];
    const char *pr[4];
    int i, j, b, bb;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) (tk + j) * ldq, k);
        aq[j] = v.q; ad[j] = v.d; as[j] = v.s;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) { acc[i][j] = _mm256_setzero_ps(); off[i][j] = 0; }
    }
#pragma GCC unroll 4
    for (i = 0; i < RB; i++) pr[i] = w + (size_t) (r + i) * rb;
    for (b = 0; b + 8 <= nb; b += 8) {
        __m256 dw[4];
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            dw[i] = scales8(t, pr[i], bytes, 0);
            if (has_offset(t)) {
                __m256 mw = offset_mult(t) != 0 ? _mm256_mul_ps(dw[i], _mm256_set1_ps(offset_mult(t)))
                                                : scales8(t, pr[i], bytes, 1);
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) acc[i][j] = _mm256_fmadd_ps(mw, _mm256_loadu_ps(as[j] + b), acc[i][j]);
            }
            if (TB == 1) dw[i] = _mm256_mul_ps(dw[i], _mm256_loadu_ps(ad[0] + b));
        }
#pragma GCC unroll 8
        for (bb = 0; bb < 8; bb++) {
            blk32 wb[4];
            __m256 ds[4];
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                /* the same place in the next tile's rows: one tile ahead of the stream */
                _mm_prefetch(pr[i] + (size_t) RB * rb, _MM_HINT_T0);
                wb[i] = dec32(t, pr[i]);
                ds[i] = lane(dw[i], bb);
                pr[i] += bytes;
            }
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) {
                __m256i a = _mm256_loadu_si256((const __m256i *) aq[j]);
                aq[j] += 32;
#pragma GCC unroll 4
                for (i = 0; i < RB; i++) {
                    __m256i s = signed_fmt(t) ? dot_s(wb[i].qa, wb[i].q, a) : dot_u(wb[i].q, a);
                    acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
                        TB == 1 ? ds[i] : _mm256_mul_ps(ds[i], _mm256_broadcast_ss(ad[j] + b + bb)), acc[i][j]);
                }
            }
        }
    }
    for (; b < nb; b++) {
        blk32 wb[4];
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            _mm_prefetch(pr[i] + (size_t) RB * rb, _MM_HINT_T0);
            wb[i] = dec32(t, pr[i]);
            pr[i] += bytes;
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            __m256i a = _mm256_loadu_si256((const __m256i *) aq[j]);
            __m256 da = _mm256_broadcast_ss(ad[j] + b);
            aq[j] += 32;
#pragma GCC unroll 4
            for (i = 0; i < RB; i++) {
                __m256i s = signed_fmt(t) ? dot_s(wb[i].qa, wb[i].q, a) : dot_u(wb[i].q, a);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
                                            _mm256_mul_ps(_mm256_set1_ps(wb[i].d), da), acc[i][j]);
                if (has_offset(t)) off[i][j] += wb[i].m * as[j][b];
            }
        }
    }
#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 4
        for (i = 0; i < RB; i++) {
            float s = hsum(acc[i][j]) + off[i][j];
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

AVX2 INLINE void
tile256(llm_wtype t, const int RB, const int TB, float *y, size_t ldy, const char *xq, size_t ldq,
    const char *w, size_t rb, int k, int r, int tk, int accumulate)
{
    const int bytes = block_bytes(t), nsb = k / LLM_QK;
    __m256 acc[2][4];
    const int8_t *aq[4];
    const float *adk[4];
    const int16_t *abs16[4];
    int i, j, sb, c;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) (tk + j) * ldq, k);
        aq[j] = v.qk; adk[j] = v.dk; abs16[j] = v.bsum;
#pragma GCC unroll 2
        for (i = 0; i < RB; i++) acc[i][j] = _mm256_setzero_ps();
    }
    for (sb = 0; sb < nsb; sb++) {
        hdr256 h[2];
        __m256i is[2][4];
#pragma GCC unroll 2
        for (i = 0; i < RB; i++) {
            const char *p = w + (size_t) (r + i) * rb + (size_t) sb * bytes;
            int l;
            /* the same super-block of the next tile's rows: one tile ahead of the stream */
#pragma GCC unroll 4
            for (l = 0; l < bytes; l += 64) _mm_prefetch(p + (size_t) RB * rb + l, _MM_HINT_T0);
            h[i] = dec_hdr(t, p);
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) is[i][j] = _mm256_setzero_si256();
        }
#pragma GCC unroll 8
        for (c = 0; c < 8; c++) {
            __m256i wq[2], wa[2], sc[2];
#pragma GCC unroll 2
            for (i = 0; i < RB; i++) {
                wq[i] = chunk_codes(t, &h[i], c);
                wa[i] = signed_k(t) ? _mm256_abs_epi8(wq[i]) : wq[i];
                sc[i] = chunk_scale(t, &h[i], c);
            }
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) {
                __m256i a = _mm256_loadu_si256((const __m256i *) (aq[j] + LLM_QK * sb + 32 * c));
#pragma GCC unroll 2
                for (i = 0; i < RB; i++) {
                    __m256i p = _mm256_maddubs_epi16(wa[i], signed_k(t) ? _mm256_sign_epi8(a, wq[i]) : a);
                    is[i][j] = _mm256_add_epi32(is[i][j], _mm256_madd_epi16(p, sc[i]));
                }
            }
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            __m256i bs = _mm256_loadu_si256((const __m256i *) (abs16[j] + 16 * sb));
            float dk = adk[j][sb];
#pragma GCC unroll 2
            for (i = 0; i < RB; i++) {
                __m256i s = offset_fix(t, &h[i], is[i][j], bs);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h[i].d * dk), acc[i][j]);
                if (has_min(t)) {
                    acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(h[i].mins, bs)),
                                                _mm256_set1_ps(-h[i].dmin * dk), acc[i][j]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) (tk + j) * ldy + r;
#pragma GCC unroll 2
        for (i = 0; i < RB; i++) {
            float s = hsum(acc[i][j]);
            yr[i] = accumulate ? yr[i] + s : s;
        }
    }
}

/* ================= batches: panels of 8 rows (llm_kernels_q_panel.h) ================= */

/*
 * TB tokens against a panel of 8 rows and nblk blocks: per block and token
 * 8 steps of vpmaddubsw + vpmaddwd summed in int32, then one conversion and
 * two FMAs for the 8 rows.  Unsigned codes (at most 31) go straight into
 * vpmaddubsw, two steps summed in int16 (2 * 2 * 31 * 127 fits); signed
 * codes use |w| against a with w's sign.  aq[j], ad[j], as[j]: token j's
 * codes, scales and scaled sums at the panel's first block.
 */
AVX2 INLINE void
panel_tile(llm_wtype t, const int TB, float *y, size_t ldy, const char *panel, int nblk,
    const int8_t *const *aq, const float *const *ad, const float *const *as, int r, int nrows, int add)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4];
    int j, b, s;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) acc[j] = _mm256_setzero_ps();
    for (b = 0; b < nblk; b++) {
        const char *pb = panel + (size_t) b * panel_block_bytes(8);
        __m256i is[4];
        __m256 dv = _mm256_loadu_ps((const float *) (pb + 256));
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) is[j] = _mm256_setzero_si256();
        if (signed_fmt(t)) {
#pragma GCC unroll 8
            for (s = 0; s < 8; s++) {
                __m256i wq = _mm256_loadu_si256((const __m256i *) (pb + 32 * s)), wa = _mm256_abs_epi8(wq);
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) {
                    __m256i a = _mm256_sign_epi8(_mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * s)), wq);
                    is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, a), ones));
                }
            }
        } else {
#pragma GCC unroll 4
            for (s = 0; s < 8; s += 2) {
                __m256i w0 = _mm256_loadu_si256((const __m256i *) (pb + 32 * s));
                __m256i w1 = _mm256_loadu_si256((const __m256i *) (pb + 32 * s + 32));
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) {
                    __m256i p = _mm256_add_epi16(
                        _mm256_maddubs_epi16(w0, _mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * s))),
                        _mm256_maddubs_epi16(w1, _mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * s + 4))));
                    is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(p, ones));
                }
            }
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(is[j]), _mm256_broadcast_ss(ad[j] + b));
            acc[j] = _mm256_fmadd_ps(v, dv, acc[j]);
        }
        if (has_offset(t)) {
            __m256 mv = _mm256_loadu_ps((const float *) (pb + 288));
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) acc[j] = _mm256_fmadd_ps(mv, _mm256_broadcast_ss(as[j] + b), acc[j]);
        }
    }
#pragma GCC unroll 4
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) j * ldy + r, o[8];
        int i;
        if (nrows == 8) {
            _mm256_storeu_ps(yr, add ? _mm256_add_ps(_mm256_loadu_ps(yr), acc[j]) : acc[j]);
            continue;
        }
        _mm256_storeu_ps(o, acc[j]);
        for (i = 0; i < nrows; i++) yr[i] = add ? yr[i] + o[i] : o[i];
    }
}

#define PANEL_TARGET AVX2
#define PANEL_R 8
#define PANEL_TB 4
#define PANEL_UNSIGNED 0
#include "kernels/cpu/llm_kernels_q_panel_driver.h"

/* ================= drivers ================= */

/* tokens from which a batch goes through panels (fewer: the row tiles below) */
#define PANEL_MIN_TOKENS 4

/* tokens per pass over a range of rows: their activation rows stay in L2 */
#define TOK_BLOCK 32

#define TILE(RB, TB) \
    (k256 ? tile256(t, RB, TB, y, ldy, (const char *) xq, ldq, (const char *) w, rb, k, r, tk, acc) \
          : tile32(t, RB, TB, y, ldy, (const char *) xq, ldq, (const char *) w, rb, k, r, tk, acc))

AVX2 INLINE void
matmul_q(llm_wtype t, float *y, size_t ldy, const void *xq, size_t ldq, const void *w,
    int k, int r0, int r1, int n, int acc)
{
    const int k256 = kquant(t);
    size_t rb = (size_t) (k / (k256 ? LLM_QK : 32)) * (size_t) block_bytes(t);
    int r, tk, tb, te;

    if (n == 1) {
        tk = 0;
        if (k256) {
            for (r = r0; r + 2 <= r1; r += 2) TILE(2, 1);
        } else {
            for (r = r0; r + 4 <= r1; r += 4) TILE(4, 1);
        }
        for (; r < r1; r++) TILE(1, 1);
        return;
    }
    if (!k256 && n >= PANEL_MIN_TOKENS) {
        matmul_panels(t, y, ldy, (const char *) xq, ldq, (const char *) w, k, r0, r1, n, acc);
        return;
    }
    for (tb = 0; tb < n; tb += TOK_BLOCK) {
        te = tb + TOK_BLOCK < n ? tb + TOK_BLOCK : n;
        for (r = r0; r + 2 <= r1; r += 2) {
            for (tk = tb; tk + 4 <= te; tk += 4) TILE(2, 4);
            for (; tk < te; tk++) TILE(2, 1);
        }
        for (; r < r1; r++) {
            for (tk = tb; tk + 4 <= te; tk += 4) TILE(1, 4);
            for (; tk < te; tk++) TILE(1, 1);
        }
    }
}

#define MM(ty, T)                                                                          \
    AVX2 void llm_avx2_mm_##ty(float *y, size_t ldy, const void *xq, size_t ldq,          \
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

/*
 * Panels (llm_kernels_q_r16.h) on 256-bit registers: a 16-row panel as two
 * halves of 8 rows (32 bytes of each 64-byte group).  Q4_0: vpmaddubsw of
 * the unsigned nibbles against the activation bytes; the block's 8 products
 * per lane sum in int16 (8 * 2 * 15 * 127 < 2^15), one vpmaddwd per block.
 * Q5_0: the nibbles with their fifth bits on bit 4 (unsigned, < 32); a
 * group's 2 products per lane sum in int16 (2 * 2 * 31 * 127 < 2^15), one
 * vpmaddwd per group.  Q8_0: the codes flipped back to signed, |w| against a
 * with w's sign.
 */
AVX2 INLINE void
r16_half(const int kind, const int TB, float *y, size_t ldy, r16_panel P, int h, int b0, int b1,
    const int8_t *const *aq, const float *const *ad, const float *const *as, int row0, int lo, int hi, int add)
{
    const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(15), flip = _mm256_set1_epi8((char) 0x80);
    const __m256i bit4 = _mm256_set1_epi8(16);
    const float bias = kind == R16_Q4 ? 8.0f : kind == R16_Q5 ? 16.0f : 0.0f;
    __m256 acc[4];
    float out[8];
    int j, b, g, i;

#pragma GCC unroll 4
    for (j = 0; j < TB; j++) acc[j] = _mm256_setzero_ps();
    for (b = b0; b < b1; b++) {
        const unsigned char *c = P.codes + (size_t) b * r16_code_bytes(kind) + 32 * h;
        __m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (P.d + 16 * b + 8 * h)));
        __m256i is[4];
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) is[j] = _mm256_setzero_si256();
        if (kind == R16_Q5) {
            const __m256i hw = _mm256_loadu_si256((const __m256i *) c);
#pragma GCC unroll 4
            for (g = 0; g < 4; g++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *) (c + 64 * (g + 1)));
                __m256i l = _mm256_or_si256(_mm256_and_si256(raw, low4),
                                            _mm256_and_si256(_mm256_slli_epi32(hw, 4 - g), bit4));
                __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4),
                                            _mm256_and_si256(_mm256_srli_epi32(hw, g), bit4));
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) {
                    is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(_mm256_add_epi16(
                        _mm256_maddubs_epi16(l, _mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * g))),
                        _mm256_maddubs_epi16(u, _mm256_set1_epi32(act4(aq[j] + 32 * b + 16 + 4 * g)))), ones));
                }
            }
        } else if (kind == R16_Q4) {
#pragma GCC unroll 4
            for (g = 0; g < 4; g++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *) (c + 64 * g));
                __m256i l = _mm256_and_si256(raw, low4), u = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) {
                    is[j] = _mm256_add_epi16(is[j], _mm256_add_epi16(
                        _mm256_maddubs_epi16(l, _mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * g))),
                        _mm256_maddubs_epi16(u, _mm256_set1_epi32(act4(aq[j] + 32 * b + 16 + 4 * g)))));
                }
            }
#pragma GCC unroll 4
            for (j = 0; j < TB; j++) is[j] = _mm256_madd_epi16(is[j], ones);
        } else {
#pragma GCC unroll 8
            for (g = 0; g < 8; g++) {
                __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (c + 64 * g)), flip);
                __m256i aw = _mm256_abs_epi8(q);
#pragma GCC unroll 4
                for (j = 0; j < TB; j++) {
                    __m256i a = _mm256_sign_epi8(_mm256_set1_epi32(act4(aq[j] + 32 * b + 4 * g)), q);
                    is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, a), ones));
                }
            }
        }
#pragma GCC unroll 4
        for (j = 0; j < TB; j++) {
            __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[j]), _mm256_set1_ps(ad[j][b]),
                                       _mm256_set1_ps(-bias * as[j][b]));
            acc[j] = _mm256_fmadd_ps(v, dv, acc[j]);
        }
    }
    for (j = 0; j < TB; j++) {
        float *yr = y + (size_t) j * ldy + row0 + 8 * h;
        _mm256_storeu_ps(out, acc[j]);
        for (i = lo; i < hi; i++) yr[i] = add ? yr[i] + out[i] : out[i];
    }
}

AVX2 INLINE void
r16_tile(const int kind, const int TB, float *y, size_t ldy, r16_panel P, int b0, int b1,
    const int8_t *const *aq, const float *const *ad, const float *const *as, int row0, int lo, int hi, int add)
{
    int h;

    for (h = 0; h < 2; h++) {
        int l = lo - 8 * h, u = hi - 8 * h;
        if (l < 0) l = 0;
        if (u > 8) u = 8;
        if (l < u) r16_half(kind, TB, y, ldy, P, h, b0, b1, aq, ad, as, row0, l, u, add);
    }
}

#define R16_TARGET AVX2
#define R16_TB 4
#include "kernels/cpu/llm_kernels_q_r16.h"
R16_MM(avx2, q8_0_r16, LLM_WT_Q8_0_R16)
R16_MM(avx2, q4_0_r16, LLM_WT_Q4_0_R16)
R16_MM(avx2, q5_0_r16, LLM_WT_Q5_0_R16)

/* ================= activation rows ================= */

AVX2 INLINE __m256
absf(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

AVX2 INLINE float
hmax(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* 32 floats times id, rounded to nearest even, into 32 int8; *s0, *s1: sums of values 0-15, 16-31 */
AVX2 INLINE void
q32(int8_t *q, const float *x, float id, int *s0, int *s1)
{
    __m256 v = _mm256_set1_ps(id);
    __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), v));
    __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), v));
    __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), v));
    __m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), v));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    /* packs work per 128-bit lane: restore the order of the 8 groups of 4 */
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *) q, p);
    *s0 = hsum_i32(_mm256_add_epi32(a, b));
    *s1 = hsum_i32(_mm256_add_epi32(c, d));
}

AVX2 void
llm_avx2_quantize_act(void *row, const float *x, int k)
{
    llm_qa_view v = llm_qa_view_of(row, k);
    int8_t *q = (int8_t *) v.q, *qk = (int8_t *) v.qk;
    float *d = (float *) v.d, *s = (float *) v.s, *dk = (float *) v.dk;
    int16_t *bsum = (int16_t *) v.bsum;
    int b, j;

    for (b = 0; b < k / 32; b++) {
        const float *xb = x + 32 * b;
        __m256 m = _mm256_max_ps(_mm256_max_ps(absf(_mm256_loadu_ps(xb)), absf(_mm256_loadu_ps(xb + 8))),
                                 _mm256_max_ps(absf(_mm256_loadu_ps(xb + 16)), absf(_mm256_loadu_ps(xb + 24))));
        float amax = hmax(m), id;
        int s0, s1;
        d[b] = amax / 127.0f;
        id = d[b] != 0 ? 1.0f / d[b] : 0.0f;
        q32(q + 32 * b, xb, id, &s0, &s1);
        s[b] = d[b] * (float) (s0 + s1);
    }
    if (k % LLM_QK != 0) return;
    for (b = 0; b < k / LLM_QK; b++) {
        const float *xb = x + LLM_QK * b;
        __m256 m = _mm256_setzero_ps();
        float amax, id;
        for (j = 0; j < LLM_QK; j += 8) m = _mm256_max_ps(m, absf(_mm256_loadu_ps(xb + j)));
        amax = hmax(m);
        dk[b] = amax / 127.0f;
        id = dk[b] != 0 ? 1.0f / dk[b] : 0.0f;
        for (j = 0; j < LLM_QK / 32; j++) {
            int s0, s1;
            q32(qk + LLM_QK * b + 32 * j, xb + 32 * j, id, &s0, &s1);
            bsum[16 * b + 2 * j] = (int16_t) s0;
            bsum[16 * b + 2 * j + 1] = (int16_t) s1;
        }
    }
}
