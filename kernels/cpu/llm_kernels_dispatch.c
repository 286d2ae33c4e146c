/* Choice of the kernel table from the CPU features (constant tables, no state). */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/llm_kernels.h"

const llm_kernels *
llm_kernels_best(void)
{
    /* fastest first */
    const llm_kernels *(*const all[])(void) = {
        llm_kernels_avx512amx, llm_kernels_avx512vnni, llm_kernels_avx512, llm_kernels_avx2, llm_kernels_scalar
    };
    const char *want = getenv("LLM_KERNELS");
    const llm_kernels *k;
    size_t i;

    for (i = 0; want && i < sizeof(all) / sizeof(all[0]); i++) {
        if ((k = all[i]()) != NULL && strcmp(k->name, want) == 0) return k;
    }
    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if ((k = all[i]()) != NULL) return k;
    }
    return llm_kernels_scalar();
}
