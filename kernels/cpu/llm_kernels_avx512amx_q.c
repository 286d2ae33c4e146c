/*
 * Panel matmuls (LLM_WT_Q8_0_R16 / _Q4_0_R16 / _Q5_0_R16, llm_kernels_q_r16.h)
 * on Intel AMX (AMX-TILE + AMX-INT8) for batches of 16 tokens and more.
 *
 * Why: on VNNI a block of 32 values times 16 rows times 16 tokens is 128
 * vpdpbusd, one port's worth of work per cycle; one tdpbsud does the same
 * 8192 multiply-adds in the tile unit, so what is left per block is the float
 * work (one conversion and two FMAs per token for the 16 rows), which the
 * VNNI kernel has as well.  Prefill of a quantized model is mostly these
 * matmuls.
 *
 * The panel layout is already the tile layout: block b of a panel is
 * codes[8 groups][16 rows][4 bytes] (Q8_0: 512 bytes, unsigned), i.e. the B
 * tile of K = 32 (8 rows of 64 bytes: row g holds values 4g..4g+3 of each of
 * the 16 weight rows).  Q4_0 / Q5_0 blocks are unpacked into that form (the
 * VNNI kernel's unpacking) once per run of 32 blocks, for every token tile.  The A tile is 16
 * tokens' 32 activation bytes of block b, read in place (rows ldq apart).
 * tdpbsud (signed A, unsigned B) gives C[token][row] = sum(a * u): exactly
 * the VNNI kernel's integer sums, and the float work after it is the VNNI
 * kernel's instruction for instruction, so the results are the same bits.
 * Two sets of tiles alternate between even and odd blocks, so the tile unit
 * works on one block while the vector unit finishes the other.
 *
 * Tokens past the last whole 16 go to the VNNI kernels (as do batches of
 * fewer than 16 tokens, batch-1 decode included).  The tile state is
 * configured per call and released at its end.  Internal to kernels/cpu.
 */
#include "kernels/cpu/llm_kernels_q.h"
#include "kernels/cpu/llm_kernels_q_panel.h"

#define AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

/* tokens per tile (A and C rows) */
#define AMX_TOK 16

/*
 * The tile instructions as inline assembly with a memory clobber: the
 * compiler must not move the B buffer's stores past a tile load, nor reads of
 * C's buffer before the tile store (the compiler's own AMX intrinsics say
 * neither).
 */
#define TILE_LOAD(t, base, stride) \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t : : "r"(base), "r"((long) (stride)) : "memory")
#define TILE_STORE(t, base, stride) \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" : : "r"(base), "r"((long) (stride)) : "memory")
#define TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t : : : "memory")
/* C += A (signed bytes) . B (unsigned bytes) */
#define TILE_DPBSUD(c, a, b) __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c : : : "memory")

/* tile configuration (palette 1): C0/C1 16 x 64 bytes, A0/A1 16 x 32, B0/B1 8 x 64 */
typedef struct {
    uint8_t  palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
} amx_config;

AMX static void
amx_configure(void)
{
    _Alignas(64) amx_config c;

    memset(&c, 0, sizeof(c));
    c.palette = 1;
    c.rows[0] = AMX_TOK; c.colsb[0] = 64;     /* tmm0: C of even blocks */
    c.rows[1] = AMX_TOK; c.colsb[1] = 32;     /* tmm1: A of even blocks */
    c.rows[2] = 8;       c.colsb[2] = 64;     /* tmm2: B of even blocks */
    c.rows[3] = AMX_TOK; c.colsb[3] = 64;     /* tmm3..5: the same for odd blocks */
    c.rows[4] = AMX_TOK; c.colsb[4] = 32;
    c.rows[5] = 8;       c.colsb[5] = 64;
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
}

/* blocks [b0, b1) of a Q4_0 / Q5_0 panel as B tiles of 512 bytes each in buf (the VNNI kernel's unpacking) */
AMX static void
amx_unpack(int kind, const unsigned char *codes, int b0, int b1, unsigned char *buf)
{
    const __m512i low4 = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16);
    const int hb = kind == R16_Q5, cb = r16_code_bytes(kind);
    int b, g;

    for (b = b0; b < b1; b++) {
        const unsigned char *c = codes + (size_t) b * cb;
        unsigned char *t = buf + (size_t) (b - b0) * 512;
        __m512i h = hb ? _mm512_loadu_si512((const void *) c) : _mm512_setzero_si512();
#pragma GCC unroll 4
        for (g = 0; g < 4; g++) {
            __m512i raw = _mm512_loadu_si512((const void *) (c + 64 * (g + hb)));
            __m512i l = _mm512_and_si512(raw, low4), u = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
            if (hb) {
                l = _mm512_or_si512(l, _mm512_and_si512(_mm512_slli_epi32(h, 4 - g), bit4));
                u = _mm512_or_si512(u, _mm512_and_si512(_mm512_srli_epi32(h, g), bit4));
            }
            /* low nibbles: values 4g..4g+3 (B row g); high nibbles: values 16+4g.. (B row 4+g) */
            _mm512_store_si512((void *) (t + 64 * g), l);
            _mm512_store_si512((void *) (t + 64 * (4 + g)), u);
        }
    }
}

/* the float work of one block for the 16 tokens (as the VNNI kernel's r16_tile) */
AMX static inline void
amx_finish(__m512 acc[AMX_TOK], const int32_t *cbuf, __m512 dv, const float *const *ad, const float *const *as,
    int b, float bias)
{
    int j;

#pragma GCC unroll 16
    for (j = 0; j < AMX_TOK; j++) {
        __m512i sum = _mm512_load_si512((const void *) (cbuf + 16 * j));
        __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(ad[j][b]),
                                   _mm512_set1_ps(-bias * as[j][b]));
        acc[j] = _mm512_fmadd_ps(v, dv, acc[j]);
    }
}

/*
 * 16 tokens (activation rows xq, ldq apart; outputs from y, ldy apart) against
 * blocks [b0, b1) of panel P, whose B tiles are tiles[0 ..] (512 bytes each),
 * writing (adding when add) rows row0+lo .. row0+hi-1.
 */
AMX static void
amx_tile(float bias, float *y, size_t ldy, const char *xq, size_t ldq, const unsigned char *tiles, r16_panel P,
    int b0, int b1, int k, int row0, int lo, int hi, int add)
{
    const __mmask16 rows = (__mmask16) (((1u << hi) - 1) & ~((1u << lo) - 1));
    _Alignas(64) int32_t cbuf[2][AMX_TOK * 16];
    const float *ad[AMX_TOK], *as[AMX_TOK];
    __m512 acc[AMX_TOK];
    int j, b;

#pragma GCC unroll 16
    for (j = 0; j < AMX_TOK; j++) {
        llm_qa_view v = llm_qa_view_of(xq + (size_t) j * ldq, k);
        ad[j] = v.d;
        as[j] = v.s;
        acc[j] = _mm512_setzero_ps();
    }
    for (b = b0; b + 1 < b1; b += 2) {
        const unsigned char *w0 = tiles + (size_t) (b - b0) * 512;
        TILE_LOAD(2, w0, 64);
        TILE_LOAD(1, xq + 32 * (size_t) b, ldq);
        TILE_ZERO(0);
        TILE_DPBSUD(0, 1, 2);
        TILE_LOAD(5, w0 + 512, 64);
        TILE_LOAD(4, xq + 32 * (size_t) (b + 1), ldq);
        TILE_ZERO(3);
        TILE_DPBSUD(3, 4, 5);
        TILE_STORE(0, cbuf[0], 64);
        amx_finish(acc, cbuf[0], _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (P.d + 16 * b))), ad, as, b, bias);
        TILE_STORE(3, cbuf[1], 64);
        amx_finish(acc, cbuf[1], _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (P.d + 16 * (b + 1)))), ad, as,
                   b + 1, bias);
    }
    if (b < b1) {
        TILE_LOAD(2, tiles + (size_t) (b - b0) * 512, 64);
        TILE_LOAD(1, xq + 32 * (size_t) b, ldq);
        TILE_ZERO(0);
        TILE_DPBSUD(0, 1, 2);
        TILE_STORE(0, cbuf[0], 64);
        amx_finish(acc, cbuf[0], _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (P.d + 16 * b))), ad, as, b, bias);
    }
#pragma GCC unroll 16
    for (j = 0; j < AMX_TOK; j++) {
        float *yr = y + (size_t) j * ldy + row0;
        __m512 v = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(rows, yr), acc[j]) : acc[j];
        _mm512_mask_storeu_ps(yr, rows, v);
    }
}

/*
 * Rows [r0, r1) for the first n16 tokens (a multiple of 16): panel by panel,
 * runs of 32 blocks that every token tile reuses from L1 (the VNNI driver's
 * order for batches, so its float sums come in the same order).
 */
AMX static void
amx_matmul(int kind, float *y, size_t ldy, const char *xq, size_t ldq, const void *w, int k, int r0, int r1,
    int n16, int accumulate)
{
    const int nb = k / 32, kb = 32;
    const float bias = kind == R16_Q4 ? 8.0f : kind == R16_Q5 ? 16.0f : 128.0f;
    _Alignas(64) unsigned char unpacked[32 * 512];
    int p, b0, tk;

    amx_configure();
    for (p = r0 / LLM_PANEL_ROWS; p * LLM_PANEL_ROWS < r1; p++) {
        r16_panel P = r16_at(kind, w, k, p);
        int row0 = p * LLM_PANEL_ROWS;
        int lo = r0 > row0 ? r0 - row0 : 0, hi = r1 - row0 < LLM_PANEL_ROWS ? r1 - row0 : LLM_PANEL_ROWS;
        for (b0 = 0; b0 < nb; b0 += kb) {
            int b1 = b0 + kb < nb ? b0 + kb : nb, add = accumulate || b0 > 0;
            const unsigned char *tiles = P.codes + (size_t) b0 * 512;     /* Q8_0: the panel itself */
            /* nibbles unpacked once per run of blocks, for every token tile */
            if (kind != R16_Q8) {
                amx_unpack(kind, P.codes, b0, b1, unpacked);
                tiles = unpacked;
            }
            for (tk = 0; tk < n16; tk += AMX_TOK) {
                amx_tile(bias, y + (size_t) tk * ldy, ldy, xq + (size_t) tk * ldq, ldq, tiles, P, b0, b1, k, row0, lo,
                         hi, add);
            }
        }
    }
    __asm__ volatile("tilerelease" : : : "memory");
}

#define AMX_MM(ty, T)                                                                                         \
    AMX void llm_avx512amx_mm_##ty(float *y, size_t ldy, const void *xq, size_t ldq, const void *w, int k,     \
        int r0, int r1, int n, int acc)                                                                       \
    {                                                                                                         \
        int n16 = n / AMX_TOK * AMX_TOK;                                                                      \
        if (n16 > 0) amx_matmul(r16_kind(T), y, ldy, (const char *) xq, ldq, w, k, r0, r1, n16, acc);         \
        if (n16 < n) {                                                                                        \
            llm_avx512vnni_mm_##ty(y + (size_t) n16 * ldy, ldy, (const char *) xq + (size_t) n16 * ldq, ldq, \
                                   w, k, r0, r1, n - n16, acc);                                               \
        }                                                                                                     \
    }
AMX_MM(q8_0_r16, LLM_WT_Q8_0_R16)
AMX_MM(q4_0_r16, LLM_WT_Q4_0_R16)
AMX_MM(q5_0_r16, LLM_WT_Q5_0_R16)
