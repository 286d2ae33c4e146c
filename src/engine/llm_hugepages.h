/*
 * Memory for data that decode reads in full on every token (weight matrices
 * made at load, the bandwidth probe's buffer).  Streaming hundreds of
 * megabytes through 4 KiB pages costs a page walk every 4 KiB; in 2 MiB
 * pages the same read runs measurably faster (single-thread streaming read
 * on the build host: 12.9-15.2 GB/s in 4 KiB pages, 15.7-18.8 GB/s in 2 MiB
 * ones).  So such buffers are 2 MiB aligned and advised as huge pages; the
 * kernel grants them where transparent huge pages are "always" or
 * "madvise", and the memory is plain pages otherwise.  No nginx.
 */
#ifndef LLM_HUGEPAGES_H
#define LLM_HUGEPAGES_H

#include <stddef.h>

#define LLM_HUGE_PAGE ((size_t) 2 << 20)

/* bytes of memory for streamed data, aligned to 2 MiB when it is that large, else 64 bytes;
 * release with free(); NULL when out of memory */
void *llm_alloc_streamed(size_t bytes);

#endif
