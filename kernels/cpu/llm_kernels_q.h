/*
 * Quantized matmuls and activation quantizers of the SIMD kernel tables,
 * defined in their own files (llm_kernels_avx2_q.c, llm_kernels_avx512_q.c)
 * and placed in the tables of llm_kernels_avx2.c / llm_kernels_avx512.c.
 * Internal to kernels/cpu.
 */
#ifndef LLM_KERNELS_Q_H
#define LLM_KERNELS_Q_H

#include "kernels/cpu/llm_kernels.h"

#define LLM_MM_Q_DECL(isa, ty) \
    void llm_##isa##_mm_##ty(float *y, size_t ldy, const void *xq, size_t ldq, \
        const void *w, int k, int r0, int r1, int n, int accumulate);

#define LLM_MM_Q_ALL(isa)                                                          \
    LLM_MM_Q_DECL(isa, q8_0) LLM_MM_Q_DECL(isa, q4_0) LLM_MM_Q_DECL(isa, q4_1)     \
    LLM_MM_Q_DECL(isa, q5_0) LLM_MM_Q_DECL(isa, q5_1) LLM_MM_Q_DECL(isa, q2_k)     \
    LLM_MM_Q_DECL(isa, q3_k) LLM_MM_Q_DECL(isa, q4_k) LLM_MM_Q_DECL(isa, q5_k)     \
    LLM_MM_Q_DECL(isa, q6_k) LLM_MM_Q_DECL(isa, iq4_nl) LLM_MM_Q_DECL(isa, iq4_xs) \
    LLM_MM_Q_DECL(isa, mxfp4) LLM_MM_Q_DECL(isa, aq8) LLM_MM_Q_DECL(isa, q8_0_r16)  \
    LLM_MM_Q_DECL(isa, q4_0_r16) LLM_MM_Q_DECL(isa, q5_0_r16)

/* designated initializer of a table's matmul_q member; the panel types' from table r16isa */
#define LLM_MM_Q_TABLE(isa) LLM_MM_Q_TABLE_R16(isa, isa)
#define LLM_MM_Q_TABLE_R16(isa, r16isa) {                                              \
    [LLM_WT_Q8_0] = llm_##isa##_mm_q8_0, [LLM_WT_Q4_0] = llm_##isa##_mm_q4_0,         \
    [LLM_WT_Q4_1] = llm_##isa##_mm_q4_1, [LLM_WT_Q5_0] = llm_##isa##_mm_q5_0,         \
    [LLM_WT_Q5_1] = llm_##isa##_mm_q5_1, [LLM_WT_Q2_K] = llm_##isa##_mm_q2_k,         \
    [LLM_WT_Q3_K] = llm_##isa##_mm_q3_k, [LLM_WT_Q4_K] = llm_##isa##_mm_q4_k,         \
    [LLM_WT_Q5_K] = llm_##isa##_mm_q5_k, [LLM_WT_Q6_K] = llm_##isa##_mm_q6_k,         \
    [LLM_WT_IQ4_NL] = llm_##isa##_mm_iq4_nl, [LLM_WT_IQ4_XS] = llm_##isa##_mm_iq4_xs, \
    [LLM_WT_MXFP4] = llm_##isa##_mm_mxfp4, [LLM_WT_AQ8] = llm_##isa##_mm_aq8,         \
    [LLM_WT_Q8_0_R16] = llm_##r16isa##_mm_q8_0_r16, [LLM_WT_Q4_0_R16] = llm_##r16isa##_mm_q4_0_r16, \
    [LLM_WT_Q5_0_R16] = llm_##r16isa##_mm_q5_0_r16 }

LLM_MM_Q_ALL(avx2)
LLM_MM_Q_ALL(avx512)
LLM_MM_Q_ALL(avx512vnni)
/* AMX (llm_kernels_avx512amx_q.c): the panel types only, the rest as VNNI */
LLM_MM_Q_DECL(avx512amx, q8_0_r16) LLM_MM_Q_DECL(avx512amx, q4_0_r16) LLM_MM_Q_DECL(avx512amx, q5_0_r16)

/* activation rows (every table that has AVX2 uses it: the bytes are the scalar ones) */
void llm_avx2_quantize_act(void *row, const float *x, int k);

#endif
