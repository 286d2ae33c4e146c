/*
 * Reading the files of a model folder.  Only regular files are opened: a
 * FIFO, device or directory in a model's place would block `nginx -t`
 * forever or feed the loader nonsense, so it is refused with a message
 * naming the path.  A file's identity (size and modification time) is kept
 * so that a file rewritten in place under a running server is noticed
 * before its mapping is used again (docs/operations.md).
 */
#ifndef LLM_FILE_H
#define LLM_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* What a file looked like when it was opened. */
typedef struct {
    uint64_t  size;
    int64_t   mtime_sec;
    long      mtime_nsec;
} llm_file_stamp;

/*
 * Opens path read-only (close-on-exec) when it is a regular file, and
 * records its stamp (may be NULL).  Returns the descriptor, or -1 with err
 * set ("cannot open …: …", "… is not a regular file (a FIFO)").
 */
int llm_file_open_regular(const char *path, llm_file_stamp *stamp, char *err,
                          size_t errlen);

/* 1 when something exists at path (a file of any type), else 0. */
int llm_file_exists(const char *path);

/*
 * The whole regular file: a malloc'd, NUL-terminated buffer and its length
 * (len may be NULL).  NULL with err set on failure.
 */
char *llm_file_read(const char *path, size_t *len, char *err, size_t errlen);

/*
 * The JSON document in a regular file (json_loadb flags).  NULL with err
 * set: the reason, with the line for a syntax error.
 */
json_t *llm_file_json(const char *path, size_t flags, char *err, size_t errlen);

/*
 * 0 when the open file fd still has the stamp it had; 1 when it was
 * truncated, grown or rewritten in place (err says how); -1 when fstat
 * fails.  A file replaced by rename keeps its old inode open, unchanged.
 */
int llm_file_changed(int fd, const llm_file_stamp *stamp, char *err,
                     size_t errlen);

#endif
