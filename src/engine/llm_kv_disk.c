/*
 * Disk tier of the prefix cache (llm_kv_disk.h says what and why).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/llm_fnv.h"
#include "engine/llm_kv.h"
#include "engine/llm_kv_disk.h"

#define MAGIC   "NGXLLMKV"
#define VERSION 3       /* 2: row_bytes (any KV type) where 1 had elem_bytes; 3: n_tokens (partial blocks) */

/* on disk, little-endian as the host (a file from another byte order fails the magic/version) */
typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t row_bytes;
    uint64_t fingerprint;
    uint32_t n_layers;
    uint32_t kv_dim;
    uint32_t block_tokens;
    uint32_t n_tokens;       /* positions held: LLM_KV_BLOCK, or fewer in a partial block */
    uint64_t parent;
    uint64_t chain;          /* llm_kv_chain(parent, tokens) */
    int32_t  tokens[LLM_KV_BLOCK];    /* -1 past n_tokens */
    uint64_t payload;        /* bytes of keys + values */
} disk_header;

struct llm_kv_disk {
    char              *dir;          /* DIR/<fingerprint> */
    char              *root;         /* DIR: the size bound covers it all */
    uint64_t           max_size;
    llm_kv_disk_shape  shape;
    size_t             half;
    unsigned           tmp_seq;
    llm_kv_disk_stats  st;
};


static int
mkdir_p(const char *path)
{
    char buf[4096];
    size_t i, n = strlen(path);

    if (n >= sizeof(buf)) return -1;
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    return 0;
}

typedef struct {
    char   *path;
    double  mtime;
    off_t   size;
} file_ent;

static int
older_first(const void *a, const void *b)
{
    const file_ent *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

static void
collect(const char *path, int depth, file_ent **v, size_t *n, size_t *cap)
{
    DIR *dp = opendir(path);
    struct dirent *e;
    char sub[4096];
    struct stat sb;

    if (dp == NULL) return;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
        if ((size_t) snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub)) continue;
        if (lstat(sub, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode) && depth < 3) {
            collect(sub, depth + 1, v, n, cap);
        } else if (S_ISREG(sb.st_mode)) {
            /* another writer's file in flight: not counted, not removed (a crashed one's
             * ages past a minute and goes first) */
            if (strncmp(e->d_name, ".tmp.", 5) == 0 && sb.st_mtime > time(NULL) - 60) continue;
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 256;
                file_ent *nv = realloc(*v, nc * sizeof(**v));
                if (nv == NULL) break;
                *v = nv;
                *cap = nc;
            }
            (*v)[*n].path = strdup(sub);
            (*v)[*n].mtime = strncmp(e->d_name, ".tmp.", 5) == 0
                             ? 0 : (double) sb.st_mtim.tv_sec + 1e-9 * (double) sb.st_mtim.tv_nsec;
            /* a full block's file is linked under its prefix too: counted once in all */
            (*v)[*n].size = sb.st_size / (off_t) (sb.st_nlink > 1 ? sb.st_nlink : 1);
            if ((*v)[*n].path) (*n)++;
        }
    }
    closedir(dp);
}

/*
 * What the directory holds; over max_size (goal = 90% of it), the least
 * recently used files are removed down to the goal.  goal 0: count only.
 */
static void
sweep(llm_kv_disk *d, uint64_t goal)
{
    file_ent *v = NULL;
    size_t n = 0, cap = 0, i;
    uint64_t total = 0;

    collect(d->root, 0, &v, &n, &cap);
    for (i = 0; i < n; i++) total += (uint64_t) v[i].size;
    if (n > 1) qsort(v, n, sizeof(*v), older_first);    /* qsort(NULL, 0) is undefined */
    for (i = 0; goal > 0 && i < n && total > goal; i++) {
        if (unlink(v[i].path) == 0) {
            total -= (uint64_t) v[i].size;
            d->st.removed++;
        }
    }
    for (i = 0; i < n; i++) free(v[i].path);
    free(v);
    d->st.bytes = total;
}

llm_kv_disk *
llm_kv_disk_open(const char *dir, uint64_t max_size, const llm_kv_disk_shape *shape, char *err,
    size_t errlen)
{
    llm_kv_disk *d = calloc(1, sizeof(*d));
    size_t n = strlen(dir) + 32;

    if (d == NULL || (d->dir = malloc(n)) == NULL || (d->root = strdup(dir)) == NULL) {
        snprintf(err, errlen, "out of memory");
        llm_kv_disk_close(d);
        return NULL;
    }
    snprintf(d->dir, n, "%s/%016llx", dir, (unsigned long long) shape->fingerprint);
    if (mkdir_p(d->dir) != 0) {
        snprintf(err, errlen, "cannot create \"%s\": %s", d->dir, strerror(errno));
        llm_kv_disk_close(d);
        return NULL;
    }
    d->max_size = max_size;
    d->shape = *shape;
    d->half = (size_t) shape->n_layers * LLM_KV_BLOCK * (size_t) shape->row_bytes;
    sweep(d, 0);
    return d;
}

void
llm_kv_disk_close(llm_kv_disk *d)
{
    if (d == NULL) return;
    free(d->dir);
    free(d->root);
    free(d);
}

size_t
llm_kv_disk_half_bytes(const llm_kv_disk *d)
{
    return d->half;
}

void
llm_kv_disk_get_stats(const llm_kv_disk *d, llm_kv_disk_stats *st)
{
    *st = d->st;
}

/* A full block's file is named by its chain hash, a partial one's by its parent's. */
static void
file_name(const llm_kv_disk *d, uint64_t name, int partial, char *buf, size_t len, int dir_only)
{
    if (dir_only) {
        snprintf(buf, len, "%s/%02x", d->dir, (unsigned) (name >> 56));
    } else {
        snprintf(buf, len, "%s/%02x/%016llx.%s", d->dir, (unsigned) (name >> 56), (unsigned long long) name,
                 partial ? "part" : "kv");
    }
}

/* Bytes of one of keys, values of a block holding n positions. */
static size_t
half_of(const llm_kv_disk *d, int n)
{
    return (size_t) d->shape.n_layers * (size_t) n * (size_t) d->shape.row_bytes;
}

static void
fill_header(const llm_kv_disk *d, disk_header *h, uint64_t parent, const int32_t *tokens, int n)
{
    int i;

    memset(h, 0, sizeof(*h));
    memcpy(h->magic, MAGIC, 8);
    h->version = VERSION;
    h->row_bytes = (uint32_t) d->shape.row_bytes;
    h->fingerprint = d->shape.fingerprint;
    h->n_layers = (uint32_t) d->shape.n_layers;
    h->kv_dim = (uint32_t) d->shape.kv_dim;
    h->block_tokens = LLM_KV_BLOCK;
    h->n_tokens = (uint32_t) n;
    h->parent = parent;
    for (i = 0; i < LLM_KV_BLOCK; i++) h->tokens[i] = i < n ? tokens[i] : -1;
    h->chain = llm_kv_chain(parent, h->tokens);
    h->payload = 2 * (uint64_t) half_of(d, n);
}

static int
write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t) w;
    }
    return 0;
}

static int
read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r;
        n -= (size_t) r;
    }
    return 0;
}

/* The first n rows of every layer of a block's keys or values (whole-block layout). */
static int
write_rows(int fd, const llm_kv_disk *d, const char *p, int n, uint64_t *sum)
{
    size_t layer = (size_t) LLM_KV_BLOCK * (size_t) d->shape.row_bytes, rows = (size_t) n * (size_t) d->shape.row_bytes;
    int l;

    for (l = 0; l < d->shape.n_layers; l++) {
        if (write_all(fd, p + (size_t) l * layer, rows) != 0) return -1;
        *sum = llm_fnv1a(*sum, p + (size_t) l * layer, rows);
    }
    return 0;
}

static int
read_rows(int fd, const llm_kv_disk *d, char *p, int n, uint64_t *sum)
{
    size_t layer = (size_t) LLM_KV_BLOCK * (size_t) d->shape.row_bytes, rows = (size_t) n * (size_t) d->shape.row_bytes;
    int l;

    for (l = 0; l < d->shape.n_layers; l++) {
        if (read_all(fd, p + (size_t) l * layer, rows) != 0) return -1;
        *sum = llm_fnv1a(*sum, p + (size_t) l * layer, rows);
    }
    return 0;
}

int
llm_kv_disk_write(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, int n,
    const void *k, const void *v, char *err, size_t errlen)
{
    disk_header h;
    char path[4096], tmp[4200];
    uint64_t sum;
    struct stat sb;
    int fd, partial = n < LLM_KV_BLOCK;

    if (n < 1 || n > LLM_KV_BLOCK) {
        snprintf(err, errlen, "a block of %d positions", n);
        return -1;
    }
    fill_header(d, &h, parent, tokens, n);
    file_name(d, partial ? parent : h.chain, partial, path, sizeof(path), 0);
    /* a full block's name says its content; a partial one is replaced by the newest */
    if (!partial && stat(path, &sb) == 0) {
        (void) utimes(path, NULL);    /* in use: the size sweep removes the oldest first */
        return 0;
    }
    file_name(d, partial ? parent : h.chain, partial, tmp, sizeof(tmp), 1);
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create \"%s\": %s", tmp, strerror(errno));
        return -1;
    }
    snprintf(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), "/.tmp.%ld.%u", (long) getpid(), d->tmp_seq++);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create \"%s\": %s", tmp, strerror(errno));
        return -1;
    }
    sum = llm_fnv1a(LLM_FNV_BASIS, &h, sizeof(h));
    if (write_all(fd, &h, sizeof(h)) != 0 || write_rows(fd, d, k, n, &sum) != 0
        || write_rows(fd, d, v, n, &sum) != 0 || write_all(fd, &sum, sizeof(sum)) != 0)
    {
        snprintf(err, errlen, "cannot write \"%s\": %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (!partial) {
        /* also the newest block after its prefix (a link, no copy): a prompt that ends inside
         * it, or leaves it, reads its head as a partial block's (a link that fails is only a
         * shortcut lost) */
        char part[4096];
        file_name(d, parent, 1, tmp, sizeof(tmp), 1);
        if (mkdir(tmp, 0700) == 0 || errno == EEXIST) {
            snprintf(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), "/.tmp.%ld.%u", (long) getpid(), d->tmp_seq++);
            file_name(d, parent, 1, part, sizeof(part), 0);
            if (link(path, tmp) == 0 && rename(tmp, part) != 0) unlink(tmp);
        }
    }
    d->st.written++;
    d->st.bytes += sizeof(h) + h.payload + sizeof(sum);
    if (d->max_size > 0 && d->st.bytes > d->max_size) sweep(d, d->max_size / 10 * 9);
    return 0;
}

/*
 * Reads and checks the file at path: the block after `parent`, full or
 * partial.  The length of the head its tokens share with tokens[0..n)
 * (a full block must share all of them), its header into *h and its rows
 * into k and v; 0 when there is no file or (partial) it shares nothing, -1
 * when it is not trusted (why).
 */
static int
read_file(llm_kv_disk *d, const char *path, uint64_t parent, int partial, const int32_t *tokens,
    int n, disk_header *h, void *k, void *v, char *why, size_t whylen)
{
    disk_header want;
    struct stat sb;
    uint64_t sum, stored;
    int fd, held, i, common = 0;

    fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    if (fstat(fd, &sb) != 0 || (size_t) sb.st_size < sizeof(*h) + sizeof(sum)) {
        snprintf(why, whylen, "\"%s\": size %lld, not a block of this model", path, (long long) sb.st_size);
        goto reject;
    }
    if (read_all(fd, h, sizeof(*h)) != 0) {
        snprintf(why, whylen, "\"%s\": cannot read the header", path);
        goto reject;
    }
    if (memcmp(h->magic, MAGIC, 8) != 0 || h->version != VERSION) {
        snprintf(why, whylen, "\"%s\": not a KV block file of this version", path);
        goto reject;
    }
    if (h->fingerprint != d->shape.fingerprint || h->row_bytes != (uint32_t) d->shape.row_bytes
        || h->n_layers != (uint32_t) d->shape.n_layers || h->kv_dim != (uint32_t) d->shape.kv_dim
        || h->block_tokens != LLM_KV_BLOCK)
    {
        snprintf(why, whylen, "\"%s\": written by another model (fingerprint %016llx)", path,
                 (unsigned long long) h->fingerprint);
        goto reject;
    }
    held = (int) h->n_tokens;
    if (partial ? held < 1 || held > LLM_KV_BLOCK : held != LLM_KV_BLOCK) {
        snprintf(why, whylen, "\"%s\": holds %u positions", path, h->n_tokens);
        goto reject;
    }
    fill_header(d, &want, parent, h->tokens, held);
    for (i = held; i < LLM_KV_BLOCK; i++) {
        if (h->tokens[i] != -1) want.chain = ~h->chain;    /* not the canonical padding */
    }
    while (common < n && common < held && h->tokens[common] == tokens[common]) common++;
    if (h->parent != parent || h->chain != want.chain || h->payload != want.payload
        || (!partial && common != LLM_KV_BLOCK))
    {
        snprintf(why, whylen, "\"%s\": holds other tokens", path);
        goto reject;
    }
    if (common == 0) {
        close(fd);    /* another conversation's block after this prefix */
        return 0;
    }
    if ((uint64_t) sb.st_size != sizeof(*h) + h->payload + sizeof(sum)) {
        snprintf(why, whylen, "\"%s\": size %lld, not a block of this model", path, (long long) sb.st_size);
        goto reject;
    }
    sum = llm_fnv1a(LLM_FNV_BASIS, h, sizeof(*h));
    if (read_rows(fd, d, k, held, &sum) != 0 || read_rows(fd, d, v, held, &sum) != 0
        || read_all(fd, &stored, sizeof(stored)) != 0)
    {
        snprintf(why, whylen, "\"%s\": truncated", path);
        goto reject;
    }
    if (sum != stored) {
        snprintf(why, whylen, "\"%s\": checksum mismatch", path);
        goto reject;
    }
    close(fd);
    /* recently used: the size sweep removes the oldest first */
    (void) utimes(path, NULL);
    d->st.hits++;
    return common;

reject:
    close(fd);
    d->st.rejected++;
    return -1;
}

int
llm_kv_disk_has(const llm_kv_disk *d, uint64_t parent, const int32_t *tokens)
{
    char path[4096];

    file_name(d, tokens ? llm_kv_chain(parent, tokens) : parent, tokens == NULL, path, sizeof(path), 0);
    return access(path, R_OK) == 0;
}

int
llm_kv_disk_read(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, void *k, void *v,
    char *why, size_t whylen)
{
    disk_header h;
    char path[4096];
    int rc;

    file_name(d, llm_kv_chain(parent, tokens), 0, path, sizeof(path), 0);
    rc = read_file(d, path, parent, 0, tokens, LLM_KV_BLOCK, &h, k, v, why, whylen);
    return rc > 0 ? 1 : rc;
}

int
llm_kv_disk_read_head(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, int n,
    int32_t *held, int *n_held, void *k, void *v, char *why, size_t whylen)
{
    disk_header h;
    char path[4096];
    int rc;

    file_name(d, parent, 1, path, sizeof(path), 0);
    rc = read_file(d, path, parent, 1, tokens, n, &h, k, v, why, whylen);
    if (rc > 0) {
        memcpy(held, h.tokens, sizeof(h.tokens));
        *n_held = (int) h.n_tokens;
    }
    return rc;
}

int
llm_kv_disk_option(const char *arg, uint64_t *max, char *err, size_t errlen)
{
    size_t       i, len;
    uint64_t     n, unit;
    const char  *p;

    if (strncmp(arg, "max_size=", 9) != 0) {
        snprintf(err, errlen, "invalid parameter \"%s\"", arg);
        return -1;
    }

    p = arg + 9;
    len = strlen(p);
    unit = 1;
    if (len > 0 && strchr("kKmMgG", p[len - 1])) {
        unit = p[len - 1] == 'k' || p[len - 1] == 'K' ? 1024
               : p[len - 1] == 'm' || p[len - 1] == 'M' ? 1024 * 1024
               : 1024 * 1024 * 1024;
        len--;
    }

    /* digits only, above 0, and within an off_t (as nginx's offsets) */
    n = 0;
    for (i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || n > ((uint64_t) INT64_MAX - 9) / 10) {
            len = 0;
            break;
        }
        n = n * 10 + (uint64_t) (p[i] - '0');
    }

    if (len == 0 || n == 0 || n > (uint64_t) INT64_MAX / unit) {
        snprintf(err, errlen, "invalid max_size value \"%s\"", arg);
        return -1;
    }

    *max = n * unit;
    return 0;
}
