/* Streamed buffers in huge pages (see llm_hugepages.h). */
#include <stdlib.h>
#include <sys/mman.h>

#include "engine/llm_hugepages.h"

void *
llm_alloc_streamed(size_t bytes)
{
    size_t align = bytes >= LLM_HUGE_PAGE ? LLM_HUGE_PAGE : 64;
    void *p = NULL;

    if (bytes == 0) bytes = 1;
    if (posix_memalign(&p, align, (bytes + align - 1) / align * align) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    /* advice only: where it is refused the pages stay small */
    if (align == LLM_HUGE_PAGE) (void) madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return p;
}
