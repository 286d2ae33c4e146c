/* AVX-512 quantized matmuls on VNNI (vpdpbusd, vpdpwssd): see llm_kernels_avx512_q_body.h. */
#define Q_VNNI 1
#define Q_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define Q_FN(ty) llm_avx512vnni_mm_##ty
#include "kernels/cpu/llm_kernels_avx512_q_body.h"
