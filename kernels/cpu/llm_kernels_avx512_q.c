/* AVX-512 (F, BW, VL, DQ) quantized matmuls without VNNI: see llm_kernels_avx512_q_body.h. */
#define Q_VNNI 0
#define Q_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define Q_FN(ty) llm_avx512_mm_##ty
#include "kernels/cpu/llm_kernels_avx512_q_body.h"
