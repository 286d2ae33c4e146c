/*
 * Matmuls over 16-row panels (LLM_WT_Q8_0_R16, _Q4_0_R16, _Q5_0_R16: Q8_0,
 * Q4_0 and Q5_0 matrices repacked at load; layout and why in llm_quant.h, "Panels"),
 * for any number of tokens: batch-1 decode and batches read the same
 * layout.  Included by each ISA's kernel file after it defines
 *   R16_TARGET  the function target attribute
 *   R16_TB      most tokens per register tile
 *   r16_tile(kind, TB, y, ldy, P, b0, b1, aq, ad, as, row0, lo, hi, add):
 *               TB tokens (y: the first one's output row) against blocks
 *               [b0, b1) of panel P, writing (adding when add) rows
 *               row0+lo .. row0+hi-1; aq/ad/as: each token's activation
 *               codes, scales and scaled sums (llm_qa_view).
 * The tile sums a block for all 16 rows in integers and applies
 *   y += d_w * (d_a * sum(u * a) - bias * s_a)
 * (u the stored unsigned code, bias 128 for Q8_0, 8 for Q4_0, 16 for Q5_0, s_a the
 * activation block's scaled sum), or with signed Q8_0 codes and no bias where
 * the ISA multiplies signed bytes only (AVX2's vpmaddubsw).
 * Internal to kernels/cpu.
 */

/* rows [r0, r1) for n tokens: panel by panel; within a panel, token tiles over runs of blocks */
R16_TARGET INLINE void
matmul_r16(llm_wtype t, float *y, size_t ldy, const char *xq, size_t ldq, const void *w,
    int k, int r0, int r1, int n, int accumulate)
{
    const int kind = r16_kind(t), nb = k / 32;
    /* several token tiles reuse a run of blocks: 32 blocks (16 or 8 KiB) stay in L1 between them */
    const int kb = n > R16_TB ? 32 : nb;
    int p, b0, tk;

    for (p = r0 / LLM_PANEL_ROWS; p * LLM_PANEL_ROWS < r1; p++) {
        r16_panel P = r16_at(kind, w, k, p);
        int row0 = p * LLM_PANEL_ROWS;
        int lo = r0 > row0 ? r0 - row0 : 0, hi = r1 - row0 < LLM_PANEL_ROWS ? r1 - row0 : LLM_PANEL_ROWS;
        for (b0 = 0; b0 < nb; b0 += kb) {
            int b1 = b0 + kb < nb ? b0 + kb : nb, add = accumulate || b0 > 0;
            for (tk = 0; tk < n;) {
                const int8_t *aq[R16_TB];
                const float *ad[R16_TB], *as[R16_TB];
                float *yt = y + (size_t) tk * ldy;
                int tb = tile_tokens(n - tk, R16_TB);
                tile_acts(xq, ldq, k, tk, tb, 0, aq, ad, as);     /* the tile indexes blocks from 0 */
                if (tb == R16_TB) r16_tile(kind, R16_TB, yt, ldy, P, b0, b1, aq, ad, as, row0, lo, hi, add);
                else if (tb == 4) r16_tile(kind, 4, yt, ldy, P, b0, b1, aq, ad, as, row0, lo, hi, add);
                else if (tb == 2) r16_tile(kind, 2, yt, ldy, P, b0, b1, aq, ad, as, row0, lo, hi, add);
                else r16_tile(kind, 1, yt, ldy, P, b0, b1, aq, ad, as, row0, lo, hi, add);
                tk += tb;
            }
        }
    }
}

#define R16_MM(isa, ty, T)                                                                 \
    R16_TARGET void llm_##isa##_mm_##ty(float *y, size_t ldy, const void *xq, size_t ldq,  \
        const void *w, int k, int r0, int r1, int n, int acc)                              \
    {                                                                                      \
        matmul_r16(T, y, ldy, (const char *) xq, ldq, w, k, r0, r1, n, acc);              \
    }
