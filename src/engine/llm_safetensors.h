/*
 * Mapped tensor files.  safetensors files, mmap'd read-only: an 8-byte little-endian header length,
 * a JSON header {name: {dtype, shape, data_offsets}}, then the tensor bytes.
 * Every tensor's byte range is checked against its shape and the file size.
 * The GGUF reader (llm_gguf.h) fills the same structures.
 */
#ifndef LLM_SAFETENSORS_H
#define LLM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/llm_file.h"
#include "kernels/cpu/llm_kernels.h"

/* 5 for the Conv3d patch embedding of a vision tower beside a text model (Qwen3.5), which is
 * not read but must not make the file unreadable */
#define LLM_ST_MAX_DIMS 8

typedef struct {
    char       *name;
    int         type;                    /* llm_wtype, or -1 for other dtypes */
    char        dtype[12];               /* as written in the file */
    int         ndim;
    int64_t     shape[LLM_ST_MAX_DIMS];
    const void *data;
    size_t      nbytes;
    void       *owned;                   /* a copy data points into (GGUF reordered rows), or NULL */
} llm_st_tensor;

typedef struct {
    char          *path;
    int            fd;                   /* kept open to notice in-place rewrites */
    llm_file_stamp stamp;                /* size and mtime when mapped */
    void          *map;
    size_t         size;
    int            n;
    llm_st_tensor *t;
} llm_st_file;

/* A regular file only (a FIFO or device in its place is refused, never waited on). */
int llm_st_open(llm_st_file *f, const char *path, char *err, size_t errlen);
/*
 * The first half of every open: f reset, path kept, the regular file opened
 * and mapped whole.  A file under min_size bytes is "not a <kind> file (too
 * short)".  On failure f holds what was set up; llm_st_close releases it.
 */
int llm_st_map(llm_st_file *f, const char *path, size_t min_size, const char *kind,
    char *err, size_t errlen);
/*
 * 0 while the mapped file is as it was opened; 1 when it has been truncated
 * or rewritten in place since (err names the file and the change): its
 * mapping may then fault (SIGBUS) or hold other weights, so it must not be
 * read.  A file replaced by rename is not a change: the mapping keeps the
 * old inode.
 */
int llm_st_changed(const llm_st_file *f, char *err, size_t errlen);
void llm_st_close(llm_st_file *f);
const llm_st_tensor *llm_st_find(const llm_st_file *f, const char *name);
/* the tensor of that name in the first of n files that has it (a model's shards), or NULL;
 * not const: the load-time unpackers (MLX, gpt-oss) rewrite entries in place */
llm_st_tensor *llm_st_find_in(llm_st_file *files, int n, const char *name);

#endif
