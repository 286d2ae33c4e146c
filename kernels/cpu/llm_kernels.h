/*
 * CPU kernels: one table of function pointers per instruction set (scalar
 * reference, AVX2+FMA+F16C, AVX-512 with or without VNNI).  The table is
 * chosen once from the CPU features (llm_kernels_best) and kept by the
 * caller; tables are constant.
 *
 * Float weights (f32, f16, bf16) are widened to f32 exactly while they are
 * read and multiplied with f32 activations.  Quantized weights (the ggml
 * block formats of kernels/cpu/llm_quant.h) are multiplied with int8
 * activations (llm_qa rows, quantized once per input row) in integer dot
 * products, as llama.cpp does; the result differs from exact math on the
 * dequantized weights only by that activation rounding.
 */
#ifndef LLM_KERNELS_H
#define LLM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    LLM_WT_F32 = 0,
    LLM_WT_F16,
    LLM_WT_BF16,
    LLM_WT_Q8_0,
    LLM_WT_Q4_0,
    LLM_WT_Q4_1,
    LLM_WT_Q5_0,
    LLM_WT_Q5_1,
    LLM_WT_Q2_K,
    LLM_WT_Q3_K,
    LLM_WT_Q4_K,
    LLM_WT_Q5_K,
    LLM_WT_Q6_K,
    LLM_WT_IQ4_NL,
    LLM_WT_IQ4_XS,
    LLM_WT_MXFP4,
    LLM_WT_AQ8,          /* not a GGUF type: MLX affine weights of any width, unpacked to 8 bits */
    /* not GGUF types: Q8_0 / Q4_0 / Q5_0 matrices repacked at load into panels of 16
     * rows (llm_quant.h, "Panels"); same bytes per value, no row-major layout */
    LLM_WT_Q8_0_R16,
    LLM_WT_Q4_0_R16,
    LLM_WT_Q5_0_R16,
    LLM_WT_COUNT
} llm_wtype;

/*
 * Matrix product against row-major weights W[rows][k]:
 *   y[t*ldy + r] (+)= sum_j x[t*ldx + j] * W[r][j]
 * for rows r in [r0, r1) and tokens t in [0, n).  accumulate = 1 adds to y.
 * Each call reads every weight row of its range once for all n tokens.
 */
typedef void (*llm_matmul_fn)(float *y, size_t ldy, const float *x, size_t ldx,
    const void *w, int k, int r0, int r1, int n, int accumulate);

/*
 * The same for quantized weights, whose rows are blocks (llm_quant.h): the
 * activations are n llm_qa rows of k values, ldq bytes apart (k is a multiple
 * of the type's block).
 */
typedef void (*llm_matmul_q_fn)(float *y, size_t ldy, const void *xq, size_t ldq,
    const void *w, int k, int r0, int r1, int n, int accumulate);

/* Positions per call of attend_block: a KV block of the paged cache holds 16. */
#define LLM_ATT_KEYS 16

/* Floats of scratch attend_block needs for a head size of hd. */
#define LLM_ATT_SCRATCH(hd) ((size_t) 3 * LLM_ATT_KEYS * (size_t) (hd) + 9 * LLM_ATT_KEYS)

typedef struct {
    const char   *name;                     /* "scalar", "avx2", "avx512", "avx512vnni" */
    llm_matmul_fn matmul[LLM_WT_COUNT];     /* float types (NULL for quantized ones) */
    llm_matmul_q_fn matmul_q[LLM_WT_COUNT]; /* quantized types (NULL for float ones) */
    /* one llm_qa row of k values (k a multiple of 32) from x; same bytes as llm_qa_quantize_ref */
    void  (*quantize_act)(void *row, const float *x, int k);
    float (*dot)(const float *a, const float *b, int n);
    void  (*axpy)(float *y, float a, const float *x, int n);      /* y += a*x */
    void  (*scale)(float *y, float a, int n);                       /* y *= a */
    /* y = x / rms(x) * w (w may be NULL for no weight); y may equal x */
    void  (*rmsnorm)(float *y, const float *x, const float *w, int n, float eps);
    /* x = softmax(x) in place */
    void  (*softmax)(float *x, int n);
    /* g = silu(g) * u */
    void  (*silu_mul)(float *g, const float *u, int n);
    /* g = gelu_tanh(g) * u, GELU with the tanh approximation (Gemma's GeGLU):
     * 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) */
    void  (*gelu_tanh_mul)(float *g, const float *u, int n);
    /* x = cap * tanh(x / cap): logit soft-capping (Gemma 2) */
    void  (*softcap)(float *x, int n, float cap);
    /* rotate-half RoPE of the first 2*half values of a head: (a, b) -> (a*c - b*s, b*c + a*s)
     * with a = x[i], b = x[i + half] */
    void  (*rope)(float *x, const float *cos_, const float *sin_, int half);
    /* the same with interleaved pairs a = x[2i], b = x[2i + 1] (GLM) */
    void  (*rope_pairs)(float *x, const float *cos_, const float *sin_, int half);
    /* widen n weights of any type to f32 (quantized: n a multiple of the block) */
    void  (*to_f32)(float *y, const void *w, llm_wtype t, int n);
    /* streaming read of n bytes (multiple of 64) returning a value that depends on all */
    uint64_t (*read_stream)(const void *p, size_t n);
    /*
     * One step of online-softmax attention (flash-attention style): nq query
     * rows q[r*hd ..] (already multiplied by the attention scale) over the
     * n <= LLM_ATT_KEYS keys and values of positions p0 .. p0+n-1, whose rows
     * lie `stride` elements apart from k and v, of type kt: LLM_WT_F32,
     * LLM_WT_F16 or LLM_WT_Q8_0 (rows of 32-value blocks, a scale each: hd and
     * stride multiples of 32; values widened exactly, d * q, before any math).
     * Row r sees position p only when lo[r] <= p <= hi[r]; for the positions
     * it sees, s_p = q_r.k_p (cap * tanh(s_p / cap) when cap > 0) and
     *   c = e^(m[r] - m'),  l[r] = c l[r] + sum e^(s_p - m'),
     *   acc_r = c acc_r + sum e^(s_p - m') v_p,  m[r] = m'
     * for a new reference m' >= m[r] with every score seen so far <= m' + 8
     * (the exact max, or the old one while no score exceeds it by more than
     * 8: the SIMD kernels rescale lazily).  So acc_r = sum e^(s_p - m) v_p and
     * l = sum e^(s_p - m) over everything seen, whatever m is.  A row that
     * sees none of the positions is left as it was.  Start with
     * m = -INFINITY, l = 0, acc = 0; the attention output is acc / l.
     * The keys and values are read once for all rows, which is what makes a tile of
     * queries cheaper than one query at a time.  scratch: LLM_ATT_SCRATCH(hd).
     */
    void  (*attend_block)(float *acc, float *m, float *l, const float *q, int nq,
                          const int *lo, const int *hi, const void *k, const void *v, llm_wtype kt,
                          size_t stride, int p0, int n, int hd, float cap, float *scratch);
    /* y = float16(x), round to nearest even */
    void  (*f32_to_f16)(uint16_t *y, const float *x, int n);
    /* index of the first largest of n values; a NaN is never the largest (all NaN or n = 0: 0) */
    int   (*argmax)(const float *x, int n);
} llm_kernels;

const llm_kernels *llm_kernels_scalar(void);
const llm_kernels *llm_kernels_avx2(void);    /* NULL if the CPU lacks it */
const llm_kernels *llm_kernels_avx512(void);  /* NULL if the CPU lacks it */
const llm_kernels *llm_kernels_avx512vnni(void);  /* AVX-512 with VNNI; NULL if the CPU lacks it */
/* VNNI's table with batches of panel types on AMX tiles; NULL without AMX-INT8 or the OS's leave */
const llm_kernels *llm_kernels_avx512amx(void);
/* The fastest table this CPU runs; LLM_KERNELS=scalar|avx2|avx512|avx512vnni|avx512amx in the environment
 * picks another one the CPU runs. */
const llm_kernels *llm_kernels_best(void);

/* "float32", "float16", "bfloat16" for float types, else the GGUF name ("Q4_K") */
const char *llm_wtype_name(llm_wtype t);

/* exact scalar conversions */
float    llm_bf16_to_f32(uint16_t h);
uint16_t llm_f32_to_bf16(float f);         /* round to nearest even */
float    llm_f16_to_f32(uint16_t h);
uint16_t llm_f32_to_f16(float f);          /* round to nearest even */

#endif
