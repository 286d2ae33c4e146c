/*
 * Weight panels of the batched quantized matmul for the 32-value block
 * formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, AQ8), shared by the
 * AVX2 and the AVX-512 VNNI kernels.  Internal to kernels/cpu.
 *
 * Why: in the row-major block layout one register holds 32 codes of ONE
 * row, so every (row, token, block) needs its own int-to-float conversion
 * and scale product: the float work costs more than the integer dot product.
 * A panel rearranges R rows (8: AVX2, 16: AVX-512) of a run of blocks so that
 * one register holds 4 consecutive codes of each of the R rows: a multiply-add
 * against 4 activation bytes broadcast to every lane (vpdpbusd, or
 * vpmaddubsw + vpmaddwd) advances R row sums at once, a block is 8 of them
 * summed in int32, and the block's float work (convert, times activation
 * scale, times the R weight scales, plus the offsets) is one vector per
 * token for all R rows.  Panels are built per call into a buffer on the stack
 * (PANEL_KB blocks at a time) and reused for every token of the call, for the
 * formats kept in their file layout; Q8_0 and Q4_0 are repacked into panels
 * once at load instead (types *_R16, llm_kernels_q_r16.h), read by decode too.
 *
 * Panel layout, per block of the run (R * 40 bytes, a multiple of 64):
 *   uint8 codes[8][R][4]   step s, row i: codes 4s..4s+3 of row i's block
 *   float d[R]             block scale of each row
 *   float m[R]             per-value offset of each row (value = d * code + m)
 * Rows past the matrix are zero blocks (d = m = 0).
 */
#ifndef LLM_KERNELS_Q_PANEL_H
#define LLM_KERNELS_Q_PANEL_H

#include "kernels/cpu/llm_kernels_q_dec.h"

#define PANEL_KB 32      /* blocks per panel: 1024 values; R = 16: 20 KiB of stack */

INLINE size_t
panel_block_bytes(int R)
{
    return (size_t) R * 40;
}

/* 8x8 transpose of 32-bit elements: out[s] lane i = in[i] lane s */
AVX2 INLINE void
transpose8(__m256i q[8])
{
    __m256i t0 = _mm256_unpacklo_epi32(q[0], q[1]), t1 = _mm256_unpackhi_epi32(q[0], q[1]);
    __m256i t2 = _mm256_unpacklo_epi32(q[2], q[3]), t3 = _mm256_unpackhi_epi32(q[2], q[3]);
    __m256i t4 = _mm256_unpacklo_epi32(q[4], q[5]), t5 = _mm256_unpackhi_epi32(q[4], q[5]);
    __m256i t6 = _mm256_unpacklo_epi32(q[6], q[7]), t7 = _mm256_unpackhi_epi32(q[6], q[7]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);

    q[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    q[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    q[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    q[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    q[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    q[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    q[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    q[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

/*
 * What unsigned panels add to the codes of a signed format: the smallest
 * power of two that makes them all non-negative (MXFP4 codes are at most 12
 * in magnitude; a small bias keeps the offset term, which cancels it in
 * float, small as well).
 */
INLINE int
code_bias(llm_wtype t)
{
    return t == LLM_WT_MXFP4 ? 16 : 128;
}

/*
 * Panel of rows r..r+R-1 (those below r_end; the others zero) and blocks
 * b0..b0+nblk-1 of w (rows rb bytes apart).  unsigned_codes: signed formats
 * store code + bias with the offset lowered by bias * d, so every code is an
 * unsigned byte (vpdpbusd's unsigned operand); otherwise codes are as dec32
 * gives them (signed for the signed formats).
 */
AVX2 INLINE void
panel_pack(llm_wtype t, const int R, const int unsigned_codes, char *panel, const char *w, size_t rb,
    int r, int r_end, int b0, int nblk)
{
    static const char zero_block[64];
    const int bytes = block_bytes(t);
    const size_t pbb = panel_block_bytes(R);
    int g, i, b, s;

    for (g = 0; g < R; g += 8) {
        const char *pr[8];
        int step[8];
#pragma GCC unroll 8
        for (i = 0; i < 8; i++) {
            int row = r + g + i;
            pr[i] = row < r_end ? w + (size_t) row * rb + (size_t) b0 * bytes : zero_block;
            step[i] = row < r_end ? bytes : 0;
        }
        for (b = 0; b < nblk; b++) {
            char *pb = panel + (size_t) b * pbb;
            float *dv = (float *) (pb + (size_t) R * 32), *mv = dv + R;
            __m256i q[8];
#pragma GCC unroll 8
            for (i = 0; i < 8; i++) {
                blk32 x = dec32(t, pr[i]);
                pr[i] += step[i];
                if (unsigned_codes && signed_fmt(t)) {
                    x.q = _mm256_add_epi8(x.q, _mm256_set1_epi8((char) code_bias(t)));
                    x.m -= (float) code_bias(t) * x.d;
                }
                q[i] = x.q;
                dv[g + i] = x.d;
                mv[g + i] = x.m;
            }
            transpose8(q);
#pragma GCC unroll 8
            for (s = 0; s < 8; s++) _mm256_storeu_si256((__m256i *) (pb + (size_t) s * R * 4 + (size_t) g * 4), q[s]);
        }
    }
}

/* 4 activation bytes as one int32, for a broadcast */
INLINE int
act4(const int8_t *p)
{
    int v;
    memcpy(&v, p, 4);
    return v;
}

/* tokens of the next register tile of a driver: tb_max, else 4, 2 or 1 */
INLINE int
tile_tokens(int left, int tb_max)
{
    return left >= tb_max ? tb_max : left >= 4 ? 4 : left >= 2 ? 2 : 1;
}

/* tokens tk .. tk+tb-1: activation codes, scales and scaled sums from block b0 on */
INLINE void
tile_acts(const char *xq, size_t ldq, int k, int tk, int tb, int b0, const int8_t **aq, const float **ad,
    const float **as)
{
    int j;
    for (j = 0; j < tb; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) (tk + j) * ldq, k);
        aq[j] = v.q + 32 * b0; ad[j] = v.d + b0; as[j] = v.s + b0;
    }
}

/* ---- panels made at load (types *_R16; llm_quant.h, llm_kernels_q_r16.h) ---- */

/* panel p of a matrix of k columns: codes of every block, then the float16 scales */
typedef struct {
    const unsigned char *codes;
    const uint16_t      *d;
} r16_panel;

/* what a panel holds: kind R16_Q8 (Q8_0 codes), R16_Q4 (Q4_0 nibbles), R16_Q5 (Q5_0: spread fifth bits, nibbles) */
enum { R16_Q8, R16_Q4, R16_Q5 };

INLINE int
r16_kind(llm_wtype t)
{
    return t == LLM_WT_Q4_0_R16 ? R16_Q4 : t == LLM_WT_Q5_0_R16 ? R16_Q5 : R16_Q8;
}

/* code bytes of one block of a panel (16 rows) */
INLINE int
r16_code_bytes(int kind)
{
    return kind == R16_Q4 ? 256 : kind == R16_Q5 ? 320 : 512;
}

INLINE r16_panel
r16_at(int kind, const void *w, int k, int p)
{
    const int nb = k / 32, cb = r16_code_bytes(kind);
    const unsigned char *base = (const unsigned char *) w + (size_t) p * (size_t) nb * (size_t) (cb + 32);
    r16_panel x;

    x.codes = base;
    x.d = (const uint16_t *) (base + (size_t) nb * cb);
    return x;
}

#endif
