/* Choice of the kernel table from the CPU features (constant tables, no state). */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/llm_kernels.h"

const llm_kernels *
llm_kernels_best(void)
{
    const char *want = getenv("LLM_KERNELS");
    const llm_kernels *k;

    if (want && strcmp(want, "scalar") == 0) {
        return llm_kernels_scalar();
    }
    if (want && strcmp(want, "avx2") == 0 && (k = llm_kernels_avx2()) != NULL) {
        return k;
    }
    if ((!want || strcmp(want, "avx2") != 0) && (k = llm_kernels_avx512()) != NULL) {
        return k;
    }
    if ((k = llm_kernels_avx2()) != NULL) {
        return k;
    }
    return llm_kernels_scalar();
}
