/*
 * safetensors files, mmap'd read-only: an 8-byte little-endian header length,
 * a JSON header {name: {dtype, shape, data_offsets}}, then the tensor bytes.
 * Every tensor's byte range is checked against its shape and the file size.
 */
#ifndef LLM_SAFETENSORS_H
#define LLM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/llm_kernels.h"

#define LLM_ST_MAX_DIMS 4

typedef struct {
    char       *name;
    int         type;                    /* llm_wtype, or -1 for other dtypes */
    char        dtype[12];               /* as written in the file */
    int         ndim;
    int64_t     shape[LLM_ST_MAX_DIMS];
    const void *data;
    size_t      nbytes;
} llm_st_tensor;

typedef struct {
    char          *path;
    void          *map;
    size_t         size;
    int            n;
    llm_st_tensor *t;
} llm_st_file;

int llm_st_open(llm_st_file *f, const char *path, char *err, size_t errlen);
void llm_st_close(llm_st_file *f);
const llm_st_tensor *llm_st_find(const llm_st_file *f, const char *name);

#endif
