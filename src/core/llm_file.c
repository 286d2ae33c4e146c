/* Model-folder files: regular files only, and their stamps (llm_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/llm_file.h"

static const char *
kind_of(mode_t mode)
{
    return S_ISFIFO(mode) ? "a FIFO" : S_ISDIR(mode) ? "a directory"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : "not a plain file";
}

static void
stamp_of(const struct stat *st, llm_file_stamp *stamp)
{
    stamp->size = (uint64_t) st->st_size;
    stamp->mtime_sec = (int64_t) st->st_mtim.tv_sec;
    stamp->mtime_nsec = st->st_mtim.tv_nsec;
}

int
llm_file_open_regular(const char *path, llm_file_stamp *stamp, char *err, size_t errlen)
{
    struct stat st;
    int         fd;

    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file (%s)", path, kind_of(st.st_mode));
        close(fd);
        return -1;
    }
    if (fcntl(fd, F_SETFL, 0) != 0) {   /* plain blocking reads from here on */
        snprintf(err, errlen, "cannot use %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (stamp) stamp_of(&st, stamp);
    return fd;
}

int
llm_file_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

char *
llm_file_read(const char *path, size_t *len, char *err, size_t errlen)
{
    llm_file_stamp stamp;
    char          *buf;
    size_t         n = 0;
    ssize_t        k = 0;
    int            fd = llm_file_open_regular(path, &stamp, err, errlen);

    if (fd < 0) return NULL;
    if (stamp.size > (64u << 20)) {
        snprintf(err, errlen, "%s: %llu bytes is too large for a configuration file", path,
                 (unsigned long long) stamp.size);
        close(fd);
        return NULL;
    }
    buf = malloc((size_t) stamp.size + 1);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory reading %s", path);
        close(fd);
        return NULL;
    }
    while (n < stamp.size) {
        k = read(fd, buf + n, (size_t) stamp.size - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;    /* shrank while reading: what was there */
        n += (size_t) k;
    }
    if (k < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        free(buf);
        close(fd);
        return NULL;
    }
    close(fd);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

json_t *
llm_file_json(const char *path, size_t flags, char *err, size_t errlen)
{
    json_error_t je;
    json_t      *j;
    size_t       n;
    char        *text = llm_file_read(path, &n, err, errlen);

    if (text == NULL) return NULL;
    j = json_loadb(text, n, flags, &je);
    free(text);
    if (j == NULL) snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
    return j;
}

int
llm_file_changed(int fd, const llm_file_stamp *stamp, char *err, size_t errlen)
{
    struct stat    st;
    llm_file_stamp now;

    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat an open model file: %s", strerror(errno));
        return -1;
    }
    stamp_of(&st, &now);
    if (now.size != stamp->size) {
        snprintf(err, errlen, "its size changed from %llu to %llu bytes",
                 (unsigned long long) stamp->size, (unsigned long long) now.size);
        return 1;
    }
    if (now.mtime_sec != stamp->mtime_sec || now.mtime_nsec != stamp->mtime_nsec) {
        snprintf(err, errlen, "it was rewritten in place (modification time changed)");
        return 1;
    }
    return 0;
}
