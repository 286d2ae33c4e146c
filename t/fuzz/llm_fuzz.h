/*
 * Shared helpers of the libFuzzer targets in t/fuzz/ (see t/fuzz/README.md).
 * Fixtures are found under LLM_FUZZ_ROOT (the repository, set by run.sh).
 */
#ifndef LLM_FUZZ_H
#define LLM_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef LLM_FUZZ_ROOT
#define LLM_FUZZ_ROOT "."
#endif

/* A byte reader over the fuzz input for targets that build structure. */
typedef struct {
    const uint8_t *p;
    size_t         n;
} llm_fuzz_in;

static inline unsigned
llm_fuzz_byte(llm_fuzz_in *in)
{
    unsigned b;
    if (in->n == 0) return 0;
    b = in->p[0];
    in->p++;
    in->n--;
    return b;
}

/* Next chunk up to (not including) sep, or the rest. */
static inline size_t
llm_fuzz_chunk(llm_fuzz_in *in, uint8_t sep, const char **s)
{
    const uint8_t *e = memchr(in->p, sep, in->n);
    size_t len = e ? (size_t) (e - in->p) : in->n;
    *s = (const char *) in->p;
    in->p += len;
    in->n -= len;
    if (e) { in->p++; in->n--; }
    return len;
}

static inline void
llm_fuzz_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf /dev/shm/llm-fuzz-%ld /tmp/llm-fuzz-%ld",
             (long) getpid(), (long) getpid());
    if (system(cmd) != 0) { /* nothing to do */ }
}

/* A private scratch directory under /dev/shm (or /tmp), made once and
 * removed when the process exits. */
static inline const char *
llm_fuzz_dir(void)
{
    static char dir[256];
    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "/dev/shm/llm-fuzz-%ld", (long) getpid());
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            snprintf(dir, sizeof(dir), "/tmp/llm-fuzz-%ld", (long) getpid());
            (void) mkdir(dir, 0700);
        }
        atexit(llm_fuzz_cleanup);
    }
    return dir;
}

/* Write len bytes to dir/name; returns 0 or -1. */
static inline int
llm_fuzz_write(const char *dir, const char *name, const void *data, size_t len)
{
    char path[1024];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL && errno == ENOENT && mkdir(dir, 0700) == 0) f = fopen(path, "wb");
    if (f == NULL) return -1;
    if (len && fwrite(data, 1, len, f) != len) { fclose(f); return -1; }
    return fclose(f) == 0 ? 0 : -1;
}

/* Read a whole file (NUL-terminated, malloc'd) or NULL. */
static inline char *
llm_fuzz_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (f == NULL) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t) n + 1);
        if (buf && fread(buf, 1, (size_t) n, f) != (size_t) n) { free(buf); buf = NULL; }
        if (buf) { buf[n] = '\0'; if (len) *len = (size_t) n; }
    }
    fclose(f);
    return buf;
}

#endif
