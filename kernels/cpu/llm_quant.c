/*
 * Quantized formats: traits, exact dequantization, quantizers, and the
 * scalar quantization of activation rows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/llm_quant.h"

const int8_t llm_iq4nl_values[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};
const int8_t llm_mxfp4_values[16] = {
    0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
};

static const llm_wtype_traits traits[LLM_WT_COUNT] = {
    [LLM_WT_F32]    = { "F32",    1,   4,                         0, 0 },
    [LLM_WT_F16]    = { "F16",    1,   2,                         0, 1 },
    [LLM_WT_BF16]   = { "BF16",   1,   2,                         0, 30 },
    [LLM_WT_Q8_0]   = { "Q8_0",   32,  sizeof(llm_block_q8_0),    1, 8 },
    [LLM_WT_Q4_0]   = { "Q4_0",   32,  sizeof(llm_block_q4_0),    1, 2 },
    [LLM_WT_Q4_1]   = { "Q4_1",   32,  sizeof(llm_block_q4_1),    1, 3 },
    [LLM_WT_Q5_0]   = { "Q5_0",   32,  sizeof(llm_block_q5_0),    1, 6 },
    [LLM_WT_Q5_1]   = { "Q5_1",   32,  sizeof(llm_block_q5_1),    1, 7 },
    [LLM_WT_Q2_K]   = { "Q2_K",   256, sizeof(llm_block_q2_k),    1, 10 },
    [LLM_WT_Q3_K]   = { "Q3_K",   256, sizeof(llm_block_q3_k),    1, 11 },
    [LLM_WT_Q4_K]   = { "Q4_K",   256, sizeof(llm_block_q4_k),    1, 12 },
    [LLM_WT_Q5_K]   = { "Q5_K",   256, sizeof(llm_block_q5_k),    1, 13 },
    [LLM_WT_Q6_K]   = { "Q6_K",   256, sizeof(llm_block_q6_k),    1, 14 },
    [LLM_WT_IQ4_NL] = { "IQ4_NL", 32,  sizeof(llm_block_iq4_nl),  1, 20 },
    [LLM_WT_IQ4_XS] = { "IQ4_XS", 256, sizeof(llm_block_iq4_xs),  1, 23 },
    [LLM_WT_MXFP4]  = { "MXFP4",  32,  sizeof(llm_block_mxfp4),   1, 39 },
    [LLM_WT_AQ8]    = { "AQ8",    32,  sizeof(llm_block_aq8),     1, -1 },
    [LLM_WT_Q8_0_R16] = { "Q8_0_R16", 32, sizeof(llm_block_q8_0), 1, -1, LLM_PANEL_ROWS },
    [LLM_WT_Q4_0_R16] = { "Q4_0_R16", 32, sizeof(llm_block_q4_0), 1, -1, LLM_PANEL_ROWS },
    [LLM_WT_Q5_0_R16] = { "Q5_0_R16", 32, sizeof(llm_block_q5_0), 1, -1, LLM_PANEL_ROWS },
};

/* the packed structs above have no padding: their sizes are the ggml block sizes */
_Static_assert(sizeof(llm_block_q4_0) == 18 && sizeof(llm_block_q4_1) == 20
               && sizeof(llm_block_q5_0) == 22 && sizeof(llm_block_q5_1) == 24
               && sizeof(llm_block_q8_0) == 34 && sizeof(llm_block_q2_k) == 84
               && sizeof(llm_block_q3_k) == 110 && sizeof(llm_block_q4_k) == 144
               && sizeof(llm_block_q5_k) == 176 && sizeof(llm_block_q6_k) == 210
               && sizeof(llm_block_iq4_nl) == 18 && sizeof(llm_block_iq4_xs) == 136
               && sizeof(llm_block_mxfp4) == 17 && sizeof(llm_block_aq8) == 40, "ggml block sizes");

const llm_wtype_traits *
llm_wtype_info(llm_wtype t)
{
    return (unsigned) t < LLM_WT_COUNT ? &traits[t] : NULL;
}

size_t
llm_wtype_row_bytes(llm_wtype t, int64_t cols)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    if (tr == NULL || cols < 0 || cols % tr->block != 0) return 0;
    return (size_t) (cols / tr->block) * (size_t) tr->bytes;
}

int
llm_wtype_from_ggml(int g)
{
    int t;
    for (t = 0; t < LLM_WT_COUNT; t++) {
        if (traits[t].ggml_type == g) return t;
    }
    return -1;
}

const char *
llm_ggml_type_name(int g)
{
    static const char *names[] = {
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS",
        "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64",
        "IQ1_M", "BF16", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",
        "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
    };
    if (g >= 0 && g < (int) (sizeof(names) / sizeof(names[0]))) return names[g];
    return "unknown";
}

const char *
llm_wtype_name(llm_wtype t)
{
    switch (t) {
    case LLM_WT_F32:  return "float32";
    case LLM_WT_F16:  return "float16";
    case LLM_WT_BF16: return "bfloat16";
    default:          return (unsigned) t < LLM_WT_COUNT ? traits[t].name : "unknown";
    }
}

/* ---- dequantization: each format's definition ---- */

#define H(x) llm_f16_to_f32(x)

/* 6-bit scale and min j (0..7) of Q4_K / Q5_K */
static void
scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t) ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t) ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* the 16 signed 6-bit scales of Q3_K (stored as value + 32) */
static void
scales_q3_k(const uint8_t *s12, int8_t out[16])
{
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[4], tmp;

    memcpy(aux, s12, 12);
    tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    memcpy(out, aux, 16);
}

/* 2^(e - 128): the MXFP4 scale for the doubled E2M1 values */
static float
e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void
dq_q4_0(const llm_block_q4_0 *b, float *y)
{
    float d = H(b->d);
    int j;
    for (j = 0; j < 16; j++) {
        y[j] = (float) ((b->qs[j] & 0x0F) - 8) * d;
        y[j + 16] = (float) ((b->qs[j] >> 4) - 8) * d;
    }
}

static void
dq_q4_1(const llm_block_q4_1 *b, float *y)
{
    float d = H(b->d), m = H(b->m);
    int j;
    for (j = 0; j < 16; j++) {
        y[j] = (float) (b->qs[j] & 0x0F) * d + m;
        y[j + 16] = (float) (b->qs[j] >> 4) * d + m;
    }
}

static void
dq_q5_0(const llm_block_q5_0 *b, float *y)
{
    float d = H(b->d);
    uint32_t qh;
    int j;
    memcpy(&qh, b->qh, 4);
    for (j = 0; j < 16; j++) {
        int h0 = (int) (((qh >> j) << 4) & 0x10), h1 = (int) ((qh >> (j + 12)) & 0x10);
        y[j] = (float) (((b->qs[j] & 0x0F) | h0) - 16) * d;
        y[j + 16] = (float) (((b->qs[j] >> 4) | h1) - 16) * d;
    }
}

static void
dq_q5_1(const llm_block_q5_1 *b, float *y)
{
    float d = H(b->d), m = H(b->m);
    uint32_t qh;
    int j;
    memcpy(&qh, b->qh, 4);
    for (j = 0; j < 16; j++) {
        int h0 = (int) (((qh >> j) << 4) & 0x10), h1 = (int) ((qh >> (j + 12)) & 0x10);
        y[j] = (float) ((b->qs[j] & 0x0F) | h0) * d + m;
        y[j + 16] = (float) ((b->qs[j] >> 4) | h1) * d + m;
    }
}

static void
dq_q8_0(const llm_block_q8_0 *b, float *y)
{
    float d = H(b->d);
    int j;
    for (j = 0; j < 32; j++) y[j] = (float) b->qs[j] * d;
}

static void
dq_q2_k(const llm_block_q2_k *b, float *y)
{
    float d = H(b->d), min = H(b->dmin), dl, ml;
    const uint8_t *q = b->qs;
    int is = 0, n, j, l, shift;

    for (n = 0; n < LLM_QK; n += 128) {
        shift = 0;
        for (j = 0; j < 4; j++) {
            uint8_t sc = b->scales[is++];
            dl = d * (float) (sc & 0xF); ml = min * (float) (sc >> 4);
            for (l = 0; l < 16; l++) *y++ = dl * (float) ((int8_t) ((q[l] >> shift) & 3)) - ml;
            sc = b->scales[is++];
            dl = d * (float) (sc & 0xF); ml = min * (float) (sc >> 4);
            for (l = 0; l < 16; l++) *y++ = dl * (float) ((int8_t) ((q[l + 16] >> shift) & 3)) - ml;
            shift += 2;
        }
        q += 32;
    }
}

static void
dq_q3_k(const llm_block_q3_k *b, float *y)
{
    float d = H(b->d), dl;
    const uint8_t *q = b->qs, *hm = b->hmask;
    int8_t sc[16];
    uint8_t m = 1;
    int is = 0, n, j, l, shift;

    scales_q3_k(b->scales, sc);
    for (n = 0; n < LLM_QK; n += 128) {
        shift = 0;
        for (j = 0; j < 4; j++) {
            dl = d * (float) (sc[is++] - 32);
            for (l = 0; l < 16; l++) {
                *y++ = dl * (float) ((int8_t) ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
            }
            dl = d * (float) (sc[is++] - 32);
            for (l = 0; l < 16; l++) {
                *y++ = dl * (float) ((int8_t) ((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
            }
            shift += 2;
            m <<= 1;
        }
        q += 32;
    }
}

static void
dq_q4_k(const llm_block_q4_k *b, float *y)
{
    float d = H(b->d), min = H(b->dmin);
    const uint8_t *q = b->qs;
    uint8_t sc, m;
    int is = 0, j, l;

    for (j = 0; j < LLM_QK; j += 64) {
        float d1, m1, d2, m2;
        scale_min_k4(is, b->scales, &sc, &m);
        d1 = d * (float) sc; m1 = min * (float) m;
        scale_min_k4(is + 1, b->scales, &sc, &m);
        d2 = d * (float) sc; m2 = min * (float) m;
        for (l = 0; l < 32; l++) *y++ = d1 * (float) (q[l] & 0xF) - m1;
        for (l = 0; l < 32; l++) *y++ = d2 * (float) (q[l] >> 4) - m2;
        q += 32;
        is += 2;
    }
}

static void
dq_q5_k(const llm_block_q5_k *b, float *y)
{
    float d = H(b->d), min = H(b->dmin);
    const uint8_t *ql = b->qs, *qh = b->qh;
    uint8_t sc, m, u1 = 1, u2 = 2;
    int is = 0, j, l;

    for (j = 0; j < LLM_QK; j += 64) {
        float d1, m1, d2, m2;
        scale_min_k4(is, b->scales, &sc, &m);
        d1 = d * (float) sc; m1 = min * (float) m;
        scale_min_k4(is + 1, b->scales, &sc, &m);
        d2 = d * (float) sc; m2 = min * (float) m;
        for (l = 0; l < 32; l++) *y++ = d1 * (float) ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (l = 0; l < 32; l++) *y++ = d2 * (float) ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 <<= 2;
        u2 <<= 2;
    }
}

static void
dq_q6_k(const llm_block_q6_k *b, float *y)
{
    float d = H(b->d);
    const uint8_t *ql = b->ql, *qh = b->qh;
    const int8_t *sc = b->scales;
    int n, l;

    for (n = 0; n < LLM_QK; n += 128) {
        for (l = 0; l < 32; l++) {
            int is = l / 16;
            int8_t q1 = (int8_t) ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int8_t q2 = (int8_t) ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int8_t q3 = (int8_t) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int8_t q4 = (int8_t) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float) sc[is] * (float) q1;
            y[l + 32] = d * (float) sc[is + 2] * (float) q2;
            y[l + 64] = d * (float) sc[is + 4] * (float) q3;
            y[l + 96] = d * (float) sc[is + 6] * (float) q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

static void
dq_iq4_nl(const llm_block_iq4_nl *b, float *y)
{
    float d = H(b->d);
    int j;
    for (j = 0; j < 16; j++) {
        y[j] = d * (float) llm_iq4nl_values[b->qs[j] & 0xF];
        y[j + 16] = d * (float) llm_iq4nl_values[b->qs[j] >> 4];
    }
}

static void
dq_iq4_xs(const llm_block_iq4_xs *b, float *y)
{
    float d = H(b->d);
    const uint8_t *qs = b->qs;
    int ib, j;

    for (ib = 0; ib < LLM_QK / 32; ib++) {
        int ls = ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((b->scales_h >> 2 * ib) & 3) << 4);
        float dl = d * (float) (ls - 32);
        for (j = 0; j < 16; j++) {
            y[j] = dl * (float) llm_iq4nl_values[qs[j] & 0xF];
            y[j + 16] = dl * (float) llm_iq4nl_values[qs[j] >> 4];
        }
        y += 32;
        qs += 16;
    }
}

static void
dq_mxfp4(const llm_block_mxfp4 *b, float *y)
{
    float d = e8m0_half(b->e);
    int j;
    for (j = 0; j < 16; j++) {
        y[j] = (float) llm_mxfp4_values[b->qs[j] & 0xF] * d;
        y[j + 16] = (float) llm_mxfp4_values[b->qs[j] >> 4] * d;
    }
}

static void
dq_aq8(const llm_block_aq8 *b, float *y)
{
    int j;
    for (j = 0; j < 32; j++) y[j] = b->d * (float) b->qs[j] + b->m;
}

void
llm_mxfp4_from_hf(const uint8_t *blocks, const uint8_t *scales, size_t nblocks, llm_block_mxfp4 *dst)
{
    size_t b;
    int j;

    for (b = 0; b < nblocks; b++) {
        const uint8_t *in = blocks + 16 * b;
        uint8_t c[32];
        for (j = 0; j < 16; j++) {
            c[2 * j] = in[j] & 0xF;
            c[2 * j + 1] = in[j] >> 4;
        }
        dst[b].e = scales[b];
        for (j = 0; j < 16; j++) dst[b].qs[j] = (uint8_t) (c[j] | c[j + 16] << 4);
    }
}

/* ---- panels ---- */

int
llm_panel_type(llm_wtype t)
{
    switch (t) {
    case LLM_WT_Q8_0: return LLM_WT_Q8_0_R16;
    case LLM_WT_Q4_0: return LLM_WT_Q4_0_R16;
    case LLM_WT_Q5_0: return LLM_WT_Q5_0_R16;
    default:          return -1;
    }
}

llm_wtype
llm_panel_source(llm_wtype pt)
{
    return pt == LLM_WT_Q8_0_R16 ? LLM_WT_Q8_0 : pt == LLM_WT_Q5_0_R16 ? LLM_WT_Q5_0 : LLM_WT_Q4_0;
}

size_t
llm_panel_bytes(llm_wtype pt, int rows, int cols)
{
    size_t panels = (size_t) (rows + LLM_PANEL_ROWS - 1) / LLM_PANEL_ROWS;
    return panels * LLM_PANEL_ROWS * llm_wtype_row_bytes(pt, cols);
}

/* where block b of row r lives: its 4-byte code groups (groups of them, LLM_PANEL_ROWS * 4 bytes
 * apart) and its scale */
typedef struct { unsigned char *codes; unsigned char *d; int groups; int flip; int spread; } panel_at;

/* Q5_0's fifth bits as a panel holds them: bit 8j + k of the word = bit 4k + j of the block's qh
 * (value 4k + j), so shifting by k puts group k's bits on bit 4 of each byte (llm_quant.h) */
static uint32_t
qh_spread(uint32_t qh)
{
    uint32_t w = 0;
    int j, k;

    for (k = 0; k < 8; k++) {
        for (j = 0; j < 4; j++) w |= ((qh >> (4 * k + j)) & 1u) << (8 * j + k);
    }
    return w;
}

static uint32_t
qh_gather(uint32_t w)
{
    uint32_t qh = 0;
    int j, k;

    for (k = 0; k < 8; k++) {
        for (j = 0; j < 4; j++) qh |= ((w >> (8 * j + k)) & 1u) << (4 * k + j);
    }
    return qh;
}

static void
put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) v; p[1] = (unsigned char) (v >> 8); p[2] = (unsigned char) (v >> 16); p[3] = (unsigned char) (v >> 24);
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static panel_at
panel_locate(llm_wtype pt, const void *panels, int cols, int r, int b)
{
    const int bytes = llm_wtype_info(pt)->bytes, nb = cols / LLM_QB, code_bytes = bytes - 2;
    unsigned char *p = (unsigned char *) panels + (size_t) (r / LLM_PANEL_ROWS) * LLM_PANEL_ROWS * nb * bytes;
    int i = r % LLM_PANEL_ROWS;
    panel_at a;

    a.codes = p + (size_t) b * code_bytes * LLM_PANEL_ROWS + (size_t) i * 4;
    a.d = p + (size_t) nb * code_bytes * LLM_PANEL_ROWS + ((size_t) b * LLM_PANEL_ROWS + i) * 2;
    a.groups = code_bytes / 4;
    a.flip = pt == LLM_WT_Q8_0_R16 ? 0x80 : 0;
    a.spread = pt == LLM_WT_Q5_0_R16;      /* group 0 holds qh, spread */
    return a;
}

void
llm_panel_pack(llm_wtype pt, void *dst, const void *src, int rows, int cols)
{
    const int bytes = llm_wtype_info(pt)->bytes, nb = cols / LLM_QB;
    size_t rb = (size_t) nb * bytes;
    int r, b, g, c;

    memset(dst, 0, llm_panel_bytes(pt, rows, cols));     /* rows past the matrix: d = 0 */
    for (r = 0; r < rows; r++) {
        for (b = 0; b < nb; b++) {
            const unsigned char *blk = (const unsigned char *) src + (size_t) r * rb + (size_t) b * bytes;
            panel_at a = panel_locate(pt, dst, cols, r, b);
            memcpy(a.d, blk, 2);
            for (g = 0; g < a.groups; g++) {
                for (c = 0; c < 4; c++) {
                    a.codes[(size_t) g * LLM_PANEL_ROWS * 4 + c] = (unsigned char) (blk[2 + 4 * g + c] ^ a.flip);
                }
            }
            if (a.spread) put_u32(a.codes, qh_spread(get_u32(blk + 2)));
        }
    }
}

void
llm_panel_block(llm_wtype pt, const void *panels, int cols, int row, int b, void *block)
{
    panel_at a = panel_locate(pt, panels, cols, row, b);
    unsigned char *blk = block;
    int g, c;

    memcpy(blk, a.d, 2);
    for (g = 0; g < a.groups; g++) {
        for (c = 0; c < 4; c++) blk[2 + 4 * g + c] = (unsigned char) (a.codes[(size_t) g * LLM_PANEL_ROWS * 4 + c] ^ a.flip);
    }
    if (a.spread) put_u32(blk + 2, qh_gather(get_u32(a.codes)));
}

void
llm_panel_dequant_row(llm_wtype pt, const void *panels, int cols, int row, float *y)
{
    unsigned char blk[64];
    int b;

    for (b = 0; b < cols / LLM_QB; b++) {
        llm_panel_block(pt, panels, cols, row, b, blk);
        llm_dequant_row(llm_panel_source(pt), blk, y + (size_t) b * LLM_QB, LLM_QB);
    }
}

void
llm_dequant_row(llm_wtype t, const void *src, float *y, int64_t n)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    const char *p = src;
    int64_t i, nb = n / tr->block;

    switch (t) {
    case LLM_WT_F32:
        memcpy(y, src, (size_t) n * 4);
        return;
    case LLM_WT_F16:
        for (i = 0; i < n; i++) y[i] = llm_f16_to_f32(((const uint16_t *) src)[i]);
        return;
    case LLM_WT_BF16:
        for (i = 0; i < n; i++) y[i] = llm_bf16_to_f32(((const uint16_t *) src)[i]);
        return;
    default:
        break;
    }
    for (i = 0; i < nb; i++, p += tr->bytes, y += tr->block) {
        switch (t) {
        case LLM_WT_Q8_0:   dq_q8_0((const void *) p, y); break;
        case LLM_WT_Q4_0:   dq_q4_0((const void *) p, y); break;
        case LLM_WT_Q4_1:   dq_q4_1((const void *) p, y); break;
        case LLM_WT_Q5_0:   dq_q5_0((const void *) p, y); break;
        case LLM_WT_Q5_1:   dq_q5_1((const void *) p, y); break;
        case LLM_WT_Q2_K:   dq_q2_k((const void *) p, y); break;
        case LLM_WT_Q3_K:   dq_q3_k((const void *) p, y); break;
        case LLM_WT_Q4_K:   dq_q4_k((const void *) p, y); break;
        case LLM_WT_Q5_K:   dq_q5_k((const void *) p, y); break;
        case LLM_WT_Q6_K:   dq_q6_k((const void *) p, y); break;
        case LLM_WT_IQ4_NL: dq_iq4_nl((const void *) p, y); break;
        case LLM_WT_IQ4_XS: dq_iq4_xs((const void *) p, y); break;
        case LLM_WT_MXFP4:  dq_mxfp4((const void *) p, y); break;
        case LLM_WT_AQ8:    dq_aq8((const void *) p, y); break;
        default: break;
        }
    }
}

/* ---- quantizers ---- */

static int
nearest(float x)
{
    return (int) lrintf(x);
}

/* ggml's reference rule: d = max|x| / 127, q = round(x / d) */
static void
q_q8_0(const float *x, llm_block_q8_0 *b)
{
    float amax = 0, d, id;
    int j;
    for (j = 0; j < 32; j++) if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    d = amax / 127.0f;
    id = d != 0 ? 1.0f / d : 0.0f;
    b->d = llm_f32_to_f16(d);
    for (j = 0; j < 32; j++) b->qs[j] = (int8_t) roundf(x[j] * id);
}

/* ggml's reference rule: the value of largest magnitude maps to -8 */
static void
q_q4_0(const float *x, llm_block_q4_0 *b)
{
    float amax = 0, max = 0, d, id;
    int j;
    for (j = 0; j < 32; j++) {
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    }
    d = max / -8;
    id = d != 0 ? 1.0f / d : 0.0f;
    b->d = llm_f32_to_f16(d);
    for (j = 0; j < 16; j++) {
        int8_t a = (int8_t) (x[j] * id + 8.5f), c = (int8_t) (x[j + 16] * id + 8.5f);
        uint8_t q0 = (uint8_t) (a < 15 ? a : 15), q1 = (uint8_t) (c < 15 ? c : 15);
        b->qs[j] = (uint8_t) (q0 | (q1 << 4));
    }
}

/* ggml's reference rule: d = (max - min) / 15, m = min */
static void
q_q4_1(const float *x, llm_block_q4_1 *b)
{
    float min = INFINITY, max = -INFINITY, d, id;
    int j;
    for (j = 0; j < 32; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    d = (max - min) / 15;
    id = d != 0 ? 1.0f / d : 0.0f;
    b->d = llm_f32_to_f16(d);
    b->m = llm_f32_to_f16(min);
    for (j = 0; j < 16; j++) {
        int8_t a = (int8_t) ((x[j] - min) * id + 0.5f), c = (int8_t) ((x[j + 16] - min) * id + 0.5f);
        uint8_t q0 = (uint8_t) (a < 15 ? a : 15), q1 = (uint8_t) (c < 15 ? c : 15);
        b->qs[j] = (uint8_t) (q0 | (q1 << 4));
    }
}

/* ggml's reference rule: the value of largest magnitude maps to -16 */
static void
q_q5_0(const float *x, llm_block_q5_0 *b)
{
    float amax = 0, max = 0, d, id;
    uint32_t qh = 0;
    int j;
    for (j = 0; j < 32; j++) {
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    }
    d = max / -16;
    id = d != 0 ? 1.0f / d : 0.0f;
    b->d = llm_f32_to_f16(d);
    for (j = 0; j < 16; j++) {
        int8_t a = (int8_t) (x[j] * id + 16.5f), c = (int8_t) (x[j + 16] * id + 16.5f);
        uint8_t q0 = (uint8_t) (a < 31 ? a : 31), q1 = (uint8_t) (c < 31 ? c : 31);
        b->qs[j] = (uint8_t) ((q0 & 0x0F) | ((q1 & 0x0F) << 4));
        qh |= ((uint32_t) (q0 & 0x10) >> 4) << j;
        qh |= ((uint32_t) (q1 & 0x10) >> 4) << (j + 16);
    }
    memcpy(b->qh, &qh, 4);
}

/* ggml's reference rule: d = (max - min) / 31, m = min */
static void
q_q5_1(const float *x, llm_block_q5_1 *b)
{
    float min = INFINITY, max = -INFINITY, d, id;
    uint32_t qh = 0;
    int j;
    for (j = 0; j < 32; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    d = (max - min) / 31;
    id = d != 0 ? 1.0f / d : 0.0f;
    b->d = llm_f32_to_f16(d);
    b->m = llm_f32_to_f16(min);
    for (j = 0; j < 16; j++) {
        int8_t a = (int8_t) ((x[j] - min) * id + 0.5f), c = (int8_t) ((x[j + 16] - min) * id + 0.5f);
        uint8_t q0 = (uint8_t) (a < 31 ? a : 31), q1 = (uint8_t) (c < 31 ? c : 31);
        b->qs[j] = (uint8_t) ((q0 & 0x0F) | ((q1 & 0x0F) << 4));
        qh |= ((uint32_t) (q0 & 0x10) >> 4) << j;
        qh |= ((uint32_t) (q1 & 0x10) >> 4) << (j + 16);
    }
    memcpy(b->qh, &qh, 4);
}

static int
clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Q4_K, this project's rule (simpler than llama.cpp's search): each block of
 * 32 spans [min(0, min x), max x] in 15 steps: scale s = (max - lo) / 15 and
 * minimum m = -lo.  The 8 scales and 8 minimums are stored as 6-bit
 * multiples of d = max s / 63 and dmin = max m / 63, rounded to nearest;
 * values are then q = round((x + dmin*mq) / (d*sq)) clamped to 0..15, using
 * the stored (f16-rounded) d and dmin so the rounding is against what
 * dequantization reproduces.
 */
static void
q_q4_k(const float *x, llm_block_q4_k *b)
{
    float s[8], m[8], smax = 0, mmax = 0, d, dmin;
    uint8_t sq[8], mq[8];
    int j, l;

    for (j = 0; j < 8; j++) {
        float lo = 0, hi = -INFINITY;
        for (l = 0; l < 32; l++) {
            if (x[32 * j + l] < lo) lo = x[32 * j + l];
            if (x[32 * j + l] > hi) hi = x[32 * j + l];
        }
        s[j] = (hi - lo) / 15;
        m[j] = -lo;
        if (s[j] > smax) smax = s[j];
        if (m[j] > mmax) mmax = m[j];
    }
    b->d = llm_f32_to_f16(smax / 63);
    b->dmin = llm_f32_to_f16(mmax / 63);
    d = llm_f16_to_f32(b->d);
    dmin = llm_f16_to_f32(b->dmin);
    for (j = 0; j < 8; j++) {
        sq[j] = (uint8_t) clampi(d > 0 ? nearest(s[j] / d) : 0, 0, 63);
        mq[j] = (uint8_t) clampi(dmin > 0 ? nearest(m[j] / dmin) : 0, 0, 63);
    }
    for (j = 0; j < 4; j++) {
        b->scales[j] = (uint8_t) (sq[j] | ((sq[j + 4] >> 4) << 6));
        b->scales[j + 4] = (uint8_t) (mq[j] | ((mq[j + 4] >> 4) << 6));
        b->scales[j + 8] = (uint8_t) ((sq[j + 4] & 0xF) | ((mq[j + 4] & 0xF) << 4));
    }
    memset(b->qs, 0, sizeof(b->qs));
    for (j = 0; j < 8; j++) {
        float ds = d * (float) sq[j], dm = dmin * (float) mq[j];
        float id = ds > 0 ? 1.0f / ds : 0.0f;
        for (l = 0; l < 32; l++) {
            int q = clampi(nearest((x[32 * j + l] + dm) * id), 0, 15);
            /* blocks 2i and 2i+1 share bytes 32i..32i+31: low and high nibbles */
            b->qs[32 * (j / 2) + l] |= (uint8_t) (q << (4 * (j % 2)));
        }
    }
}

/*
 * Q6_K, this project's rule: each block of 16 maps its value of largest
 * magnitude to -32 (scale s = that value / -32, as Q4_0 does with -8); the
 * 16 scales are int8 multiples of d = max |s| / 127; values are
 * q = round(x / (d*sq)) + 32 clamped to 0..63 with the stored d.
 */
static void
q_q6_k(const float *x, llm_block_q6_k *b)
{
    float s[16], smax = 0, d;
    int8_t sq[16];
    uint8_t L[LLM_QK];
    int j, l, n;

    for (j = 0; j < 16; j++) {
        float amax = 0, max = 0;
        for (l = 0; l < 16; l++) {
            if (fabsf(x[16 * j + l]) > amax) { amax = fabsf(x[16 * j + l]); max = x[16 * j + l]; }
        }
        s[j] = max / -32;
        if (fabsf(s[j]) > smax) smax = fabsf(s[j]);
    }
    b->d = llm_f32_to_f16(smax / 127);
    d = llm_f16_to_f32(b->d);
    for (j = 0; j < 16; j++) {
        float ds;
        sq[j] = (int8_t) clampi(d > 0 ? nearest(s[j] / d) : 0, -128, 127);
        ds = d * (float) sq[j];
        for (l = 0; l < 16; l++) {
            L[16 * j + l] = (uint8_t) clampi(ds != 0 ? nearest(x[16 * j + l] / ds) + 32 : 32, 0, 63);
        }
    }
    memcpy(b->scales, sq, 16);
    /* 128 values per half: ql holds low nibbles of l and l+64 (l, l+32 for the second), qh the top bits */
    for (n = 0; n < 2; n++) {
        uint8_t *ql = b->ql + 64 * n, *qh = b->qh + 32 * n;
        const uint8_t *q = L + 128 * n;
        for (l = 0; l < 32; l++) {
            uint8_t q1 = q[l], q2 = q[l + 32], q3 = q[l + 64], q4 = q[l + 96];
            ql[l] = (uint8_t) ((q1 & 0xF) | ((q3 & 0xF) << 4));
            ql[l + 32] = (uint8_t) ((q2 & 0xF) | ((q4 & 0xF) << 4));
            qh[l] = (uint8_t) ((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
}

int
llm_quant_row(llm_wtype t, const float *x, void *dst, int64_t n)
{
    const llm_wtype_traits *tr = llm_wtype_info(t);
    char *p = dst;
    int64_t i, nb;

    if (tr == NULL || n % tr->block != 0) return -1;
    nb = n / tr->block;
    switch (t) {
    case LLM_WT_F32:
        memcpy(dst, x, (size_t) n * 4);
        return 0;
    case LLM_WT_F16:
        for (i = 0; i < n; i++) ((uint16_t *) dst)[i] = llm_f32_to_f16(x[i]);
        return 0;
    case LLM_WT_BF16:
        for (i = 0; i < n; i++) ((uint16_t *) dst)[i] = llm_f32_to_bf16(x[i]);
        return 0;
    case LLM_WT_Q8_0: case LLM_WT_Q4_0: case LLM_WT_Q4_1: case LLM_WT_Q5_0:
    case LLM_WT_Q5_1: case LLM_WT_Q4_K: case LLM_WT_Q6_K:
        break;
    default:
        return -1;
    }
    for (i = 0; i < nb; i++, p += tr->bytes, x += tr->block) {
        switch (t) {
        case LLM_WT_Q8_0: q_q8_0(x, (void *) p); break;
        case LLM_WT_Q4_0: q_q4_0(x, (void *) p); break;
        case LLM_WT_Q4_1: q_q4_1(x, (void *) p); break;
        case LLM_WT_Q5_0: q_q5_0(x, (void *) p); break;
        case LLM_WT_Q5_1: q_q5_1(x, (void *) p); break;
        case LLM_WT_Q4_K: q_q4_k(x, (void *) p); break;
        default:          q_q6_k(x, (void *) p); break;
        }
    }
    return 0;
}

/* ---- activation rows ---- */

void
llm_qa_quantize_ref(void *row, const float *x, int k)
{
    llm_qa_view v = llm_qa_view_of(row, k);
    int8_t *q = (int8_t *) v.q, *qk = (int8_t *) v.qk;
    float *d = (float *) v.d, *s = (float *) v.s, *dk = (float *) v.dk;
    int16_t *bsum = (int16_t *) v.bsum;
    int b, j;

    for (b = 0; b < k / LLM_QB; b++) {
        const float *xb = x + LLM_QB * b;
        float amax = 0, id;
        int sum = 0;
        for (j = 0; j < LLM_QB; j++) if (fabsf(xb[j]) > amax) amax = fabsf(xb[j]);
        d[b] = amax / 127.0f;
        id = d[b] != 0 ? 1.0f / d[b] : 0.0f;
        for (j = 0; j < LLM_QB; j++) {
            int v = (int) lrintf(xb[j] * id);
            q[LLM_QB * b + j] = (int8_t) v;
            sum += v;
        }
        s[b] = d[b] * (float) sum;
    }
    if (k % LLM_QK != 0) return;
    for (b = 0; b < k / LLM_QK; b++) {
        const float *xb = x + LLM_QK * b;
        float amax = 0, id;
        for (j = 0; j < LLM_QK; j++) if (fabsf(xb[j]) > amax) amax = fabsf(xb[j]);
        dk[b] = amax / 127.0f;
        id = dk[b] != 0 ? 1.0f / dk[b] : 0.0f;
        for (j = 0; j < LLM_QK; j++) qk[LLM_QK * b + j] = (int8_t) lrintf(xb[j] * id);
        for (j = 0; j < LLM_QK / 16; j++) {
            int l, sum = 0;
            for (l = 0; l < 16; l++) sum += qk[LLM_QK * b + 16 * j + l];
            bsum[LLM_QK / 16 * b + j] = (int16_t) sum;
        }
    }
}
