/*
 * Quantized weight formats: the block layouts ggml defines (GGUF files store
 * them byte for byte), their exact scalar dequantization, the quantizers used
 * for on-load quantization, and the int8 activation rows that the integer
 * dot products of the kernels read.
 *
 * A quantized matrix row of k values is k / block blocks laid end to end; a
 * block holds its scale(s) and packed integers.  Dequantization follows each
 * format's definition operation for operation (same float products in the
 * same order), so it is bit-exact with ggml's reference code.
 *
 * Activations of a quantized matmul are quantized once per input row
 * (llm_qa_quantize) into int8 twice over: per 32 values (scale d = max|x| /
 * 127, q = round(x / d), like ggml's Q8_0) for the formats with 32-value
 * blocks, whose float block scales must multiply each block's integer sum;
 * and per 256 values (like ggml's Q8_K, with sums per 16) for the K-quants,
 * whose small integer sub-block scales then apply in integer arithmetic
 * and one float product per 256 values remains.
 */
#ifndef LLM_QUANT_H
#define LLM_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/llm_kernels.h"

#define LLM_QK  256      /* values per K-quant super-block */
#define LLM_QB  32       /* values per small block and per activation block */

typedef struct { uint16_t d; uint8_t qs[16]; } llm_block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } llm_block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } llm_block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } llm_block_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } llm_block_q8_0;
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } llm_block_q2_k;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } llm_block_q3_k;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } llm_block_q4_k;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } llm_block_q5_k;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } llm_block_q6_k;
typedef struct { uint16_t d; uint8_t qs[16]; } llm_block_iq4_nl;
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } llm_block_iq4_xs;
typedef struct { uint8_t e; uint8_t qs[16]; } llm_block_mxfp4;
/* MLX affine groups unpacked: value = d * q + m, q unsigned 8-bit (exact for any MLX width) */
typedef struct { float d, m; uint8_t qs[32]; } llm_block_aq8;

/* the 16 values of IQ4_NL / IQ4_XS, and of MXFP4 (E2M1 doubled: scale is 2^(e-128)) */
extern const int8_t llm_iq4nl_values[16];
extern const int8_t llm_mxfp4_values[16];

typedef struct {
    const char *name;          /* "Q4_K", as GGUF and llama.cpp name it; "F32", "F16", "BF16" */
    int         block;         /* values per block (1 for float types) */
    int         bytes;         /* bytes per block */
    int         quantized;     /* 1: matmul reads int8 activations (matmul_q) */
    int         ggml_type;     /* GGML type id, -1 if none */
    int         panel_rows;    /* rows per panel of a panel type (see "Panels"), else 0 */
} llm_wtype_traits;

const llm_wtype_traits *llm_wtype_info(llm_wtype t);
/* Bytes of one row of cols values; 0 if cols is not a multiple of the block. */
size_t llm_wtype_row_bytes(llm_wtype t, int64_t cols);
/* Type of a GGML type id; -1 if not supported. */
int llm_wtype_from_ggml(int ggml_type);
/* Name of any GGML type id (also unsupported ones), "type N" if unknown. */
const char *llm_ggml_type_name(int ggml_type);

/* Exact dequantization of n values (n a multiple of the block) of any row-major type (not panels). */
void llm_dequant_row(llm_wtype t, const void *src, float *y, int64_t n);

/*
 * Quantization of n values (a multiple of the block) for on-load quantization
 * and fixtures.  Q8_0 and Q4_0 follow ggml's reference rule exactly; the
 * K-quants use the rule documented at llm_quant_row_q4_k / _q6_k.
 * Returns -1 for a type without a quantizer here.
 */
int llm_quant_row(llm_wtype t, const float *x, void *dst, int64_t n);

/*
 * MXFP4 as Hugging Face checkpoints store it (gpt-oss "*_blocks": U8 [..., k/32, 16], each byte
 * two E2M1 codes, the low nibble the even value; "*_scales": U8 [..., k/32], E8M0, value =
 * fp4 * 2^(s - 127)) repacked into nblocks ggml blocks (low nibbles hold values 0-15, high
 * nibbles 16-31; same scale byte).  Exact: the values do not change.
 */
void llm_mxfp4_from_hf(const uint8_t *blocks, const uint8_t *scales, size_t nblocks, llm_block_mxfp4 *dst);

/* ---- panels ---- */

/*
 * Q8_0, Q4_0 and Q5_0 matrices are repacked at load (src/engine/llm_repack.c)
 * into panels of LLM_PANEL_ROWS rows, types LLM_WT_Q8_0_R16 / _Q4_0_R16 / _Q5_0_R16,
 * which every matmul (decode and batches, every kernel table) reads in place
 * of the row-major blocks.  Why: in row-major blocks a SIMD register holds
 * codes of one row, so every (row, block) needs its own integer-to-float
 * conversion and scale product, several instructions per 34 or 18 bytes --
 * more than a core can issue while memory streams the next bytes, so batch-1
 * decode was compute-bound, and batches packed panels per call.  In a panel
 * one 64-byte load holds 4 codes of each of the 16 rows: 8 (Q8_0) or 4 (Q4_0)
 * loads and multiply-adds against broadcast activation bytes sum a block for
 * 16 rows, and the float work is one vector per block for all 16 rows.
 *
 * Layout of a matrix of rows x cols (nb = cols / 32 blocks): panel p holds
 * rows 16p .. 16p+15 (rows past the matrix: zero codes, d = 0) in
 * 16 * nb * block-bytes bytes, the same bytes per value as the blocks:
 *   codes[nb][groups][16][4]   block b, group g, row i: bytes 4g .. 4g+3 of
 *                              the row's block after d (groups = 8 for Q8_0,
 *                              4 for Q4_0, 5 for Q5_0), Q8_0 codes XOR 0x80
 *                              (unsigned, value d * (u - 128)); Q4_0 bytes as
 *                              in the block (low nibble value 4g+c, high
 *                              16+4g+c, value d * (u - 8)); Q5_0: group 0 its
 *                              qh spread (bit 8c + k = qh bit 4k + c: shifted
 *                              by k, bit 4 of byte c is the fifth bit of value
 *                              4k + c), groups 1-4 its qs as Q4_0's, value
 *                              d * (nibble + 16 * fifth bit - 16)
 *   d[nb][16]                  float16 scale of block b of row i
 * The scales are the blocks' own, so a panel matmul equals the row-major one
 * up to float summation order, and llm_panel_block gives back the block bytes.
 */
#define LLM_PANEL_ROWS 16

/* the panel type a matrix of type t is repacked into, or -1 */
int llm_panel_type(llm_wtype t);
/* the block type a panel type holds (LLM_WT_Q8_0, LLM_WT_Q4_0 or LLM_WT_Q5_0) */
llm_wtype llm_panel_source(llm_wtype pt);
/* bytes of a rows x cols matrix of panel type pt (rows rounded up to whole panels) */
size_t llm_panel_bytes(llm_wtype pt, int rows, int cols);
/* panels of a row-major matrix of llm_panel_source(pt) blocks; dst holds llm_panel_bytes */
void llm_panel_pack(llm_wtype pt, void *dst, const void *src, int rows, int cols);
/* the bytes of block b of one row, as in the row-major source (exact inverse of the pack) */
void llm_panel_block(llm_wtype pt, const void *panels, int cols, int row, int b, void *block);
/* one row dequantized (llm_dequant_row has no row of a panel type to read) */
void llm_panel_dequant_row(llm_wtype pt, const void *panels, int cols, int row, float *y);

/* ---- int8 activation rows ---- */

/*
 * One activation row of k values (k a multiple of 32):
 *   int8    q[k]            per-32 quantization
 *   int8    qk[k]           per-256 quantization (when k is a multiple of 256)
 *   float   d[k / 32]       scale of each 32 values of q
 *   float   s[k / 32]       d * (sum of the 32 q)
 *   float   dk[k / 256]     scale of each 256 values of qk
 *   int16   bsum[k / 16]    sum of each 16 values of qk
 * Rows are llm_qa_row_bytes(k) apart (a multiple of 64).
 */
typedef struct {
    const int8_t  *q, *qk;
    const float   *d, *s, *dk;
    const int16_t *bsum;
} llm_qa_view;

static inline size_t
llm_qa_row_bytes(int k)
{
    return ((size_t) k * 2 + (size_t) k / 4 + 4 * (size_t) ((k + 255) / 256) + (size_t) k / 8 + 63) / 64 * 64;
}

static inline llm_qa_view
llm_qa_view_of(const void *row, int k)
{
    const char *p = (const char *) row;
    llm_qa_view v;
    v.q = (const int8_t *) p;
    v.qk = (const int8_t *) (p + k);
    v.d = (const float *) (p + 2 * (size_t) k);
    v.s = v.d + k / 32;
    v.dk = v.s + k / 32;
    v.bsum = (const int16_t *) (v.dk + (k + 255) / 256);
    return v;
}

/* scalar reference: the SIMD versions produce the same bytes */
void llm_qa_quantize_ref(void *row, const float *x, int k);

#endif
