/*
 * The batched matmul over weight panels (llm_kernels_q_panel.h), included by
 * each ISA's kernel file after it defines
 *   PANEL_TARGET  the function target attribute
 *   PANEL_R       rows per panel (8: AVX2, 16: AVX-512)
 *   PANEL_TB      most tokens per register tile (4 or 8)
 *   PANEL_UNSIGNED 1: panels of unsigned codes (panel_pack)
 *   panel_tile(t, TB, y, ldy, panel, nblk, aq, ad, as, r, nrows, add):
 *                 TB tokens (y: the first one's output row) against a panel
 *                 of nblk blocks, writing rows r..r+nrows-1 (adding when add).
 * Internal to kernels/cpu.
 */

/* rows [r0, r1) for n tokens: panel by panel, each reused for every token */
PANEL_TARGET INLINE void
matmul_panels(llm_wtype t, float *y, size_t ldy, const char *xq, size_t ldq, const char *w,
    int k, int r0, int r1, int n, int accumulate)
{
    _Alignas(64) char panel[PANEL_KB * PANEL_R * 40];
    const int nb = k / 32;
    size_t rb = (size_t) nb * (size_t) block_bytes(t);
    int r, b0, tk;

    for (r = r0; r < r1; r += PANEL_R) {
        int nrows = r1 - r < PANEL_R ? r1 - r : PANEL_R;
        for (b0 = 0; b0 < nb; b0 += PANEL_KB) {
            int nblk = nb - b0 < PANEL_KB ? nb - b0 : PANEL_KB, add = accumulate || b0 > 0;
            panel_pack(t, PANEL_R, PANEL_UNSIGNED, panel, w, rb, r, r1, b0, nblk);
            for (tk = 0; tk < n;) {
                const int8_t *aq[PANEL_TB];
                const float *ad[PANEL_TB], *as[PANEL_TB];
                float *yt = y + (size_t) tk * ldy;
                int tb = tile_tokens(n - tk, PANEL_TB);
                tile_acts(xq, ldq, k, tk, tb, b0, aq, ad, as);   /* at the panel's first block */
                if (tb == PANEL_TB) panel_tile(t, PANEL_TB, yt, ldy, panel, nblk, aq, ad, as, r, nrows, add);
                else if (tb == 4) panel_tile(t, 4, yt, ldy, panel, nblk, aq, ad, as, r, nrows, add);
                else if (tb == 2) panel_tile(t, 2, yt, ldy, panel, nblk, aq, ad, as, r, nrows, add);
                else panel_tile(t, 1, yt, ldy, panel, nblk, aq, ad, as, r, nrows, add);
                tk += tb;
            }
        }
    }
}
