/* safetensors reader: mmap, header parse, bounds checks. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/llm_safetensors.h"

static int
dtype_of(const char *s, size_t *esize)
{
    static const struct { const char *name; int type; size_t size; } map[] = {
        { "F32", LLM_WT_F32, 4 }, { "F16", LLM_WT_F16, 2 }, { "BF16", LLM_WT_BF16, 2 },
        { "F64", -1, 8 }, { "I64", -1, 8 }, { "I32", -1, 4 }, { "U32", -1, 4 },
        { "I16", -1, 2 }, { "U16", -1, 2 }, { "I8", -1, 1 }, { "U8", -1, 1 },
        { "BOOL", -1, 1 }, { "F8_E4M3", -1, 1 }, { "F8_E5M2", -1, 1 }, { "U64", -1, 8 },
    };
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(s, map[i].name) == 0) {
            *esize = map[i].size;
            return map[i].type;
        }
    }
    *esize = 0;
    return -2;
}

static int
parse_tensor(llm_st_file *f, llm_st_tensor *t, const char *name, json_t *v,
    const unsigned char *data, uint64_t data_len, char *err, size_t errlen)
{
    json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    json_t *offs = json_object_get(v, "data_offsets");
    uint64_t numel = 1, begin, end;
    size_t esize, i;

    if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs)
        || json_array_size(offs) != 2
        || !json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)))
    {
        snprintf(err, errlen, "%s: tensor \"%s\" has a malformed header entry", f->path, name);
        return -1;
    }
    t->name = strdup(name);
    if (t->name == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(t->dtype, sizeof(t->dtype), "%s", json_string_value(dt));
    t->type = dtype_of(json_string_value(dt), &esize);
    if (t->type == -2) {
        snprintf(err, errlen, "%s: tensor \"%s\" has unknown dtype %s", f->path, name, t->dtype);
        return -1;
    }
    if (json_array_size(shape) > LLM_ST_MAX_DIMS) {
        snprintf(err, errlen, "%s: tensor \"%s\" has more than %d dimensions", f->path, name, LLM_ST_MAX_DIMS);
        return -1;
    }
    t->ndim = (int) json_array_size(shape);
    for (i = 0; i < json_array_size(shape); i++) {
        json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1LL << 40)) {
            snprintf(err, errlen, "%s: tensor \"%s\" has a bad shape", f->path, name);
            return -1;
        }
        t->shape[i] = json_integer_value(d);
        numel *= (uint64_t) t->shape[i];
        if (numel > (1ULL << 40)) {
            snprintf(err, errlen, "%s: tensor \"%s\" is too large", f->path, name);
            return -1;
        }
    }
    if (json_integer_value(json_array_get(offs, 0)) < 0 || json_integer_value(json_array_get(offs, 1)) < 0) {
        snprintf(err, errlen, "%s: tensor \"%s\" has negative offsets", f->path, name);
        return -1;
    }
    begin = (uint64_t) json_integer_value(json_array_get(offs, 0));
    end = (uint64_t) json_integer_value(json_array_get(offs, 1));
    if (begin > end || end > data_len) {
        snprintf(err, errlen, "%s: tensor \"%s\" lies outside the file (bytes %llu..%llu of %llu): "
                 "truncated or corrupt file", f->path, name,
                 (unsigned long long) begin, (unsigned long long) end, (unsigned long long) data_len);
        return -1;
    }
    if (end - begin != numel * esize) {
        snprintf(err, errlen, "%s: tensor \"%s\" holds %llu bytes, its shape needs %llu",
                 f->path, name, (unsigned long long) (end - begin), (unsigned long long) (numel * esize));
        return -1;
    }
    t->data = data + begin;
    t->nbytes = (size_t) (end - begin);
    return 0;
}

int
llm_st_map(llm_st_file *f, const char *path, size_t min_size, const char *kind,
    char *err, size_t errlen)
{
    int fd;

    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->path = strdup(path);
    if (f->path == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    fd = llm_file_open_regular(path, &f->stamp, err, errlen);
    if (fd < 0) {
        return -1;
    }
    f->fd = fd;
    if (f->stamp.size < (uint64_t) min_size) {
        snprintf(err, errlen, "%s: not a %s file (too short)", path, kind);
        return -1;
    }
    f->size = (size_t) f->stamp.size;
    f->map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        snprintf(err, errlen, "cannot mmap %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int
llm_st_open(llm_st_file *f, const char *path, char *err, size_t errlen)
{
    uint64_t hlen = 0;
    const unsigned char *base;
    json_t *hdr = NULL, *v;
    json_error_t jerr;
    const char *key;
    int i, rc = -1;

    if (llm_st_map(f, path, 8, "safetensors", err, errlen) != 0) {
        return -1;
    }
    base = f->map;
    for (i = 7; i >= 0; i--) hlen = (hlen << 8) | base[i];
    if (hlen < 2 || hlen > f->size - 8 || hlen > (100u << 20)) {
        snprintf(err, errlen, "%s: bad header length %llu for a file of %zu bytes (truncated or not safetensors)",
                 path, (unsigned long long) hlen, f->size);
        return -1;
    }
    hdr = json_loadb((const char *) base + 8, (size_t) hlen, 0, &jerr);
    if (!json_is_object(hdr)) {
        snprintf(err, errlen, "%s: header is not a JSON object: %s", path, jerr.text);
        goto done;
    }
    f->t = calloc(json_object_size(hdr) + 1, sizeof(*f->t));
    if (f->t == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    json_object_foreach(hdr, key, v) {
        if (strcmp(key, "__metadata__") == 0) continue;
        if (!json_is_object(v)) {
            snprintf(err, errlen, "%s: tensor \"%s\" header is not an object", path, key);
            goto done;
        }
        if (parse_tensor(f, &f->t[f->n], key, v, base + 8 + hlen, f->size - 8 - hlen, err, errlen) != 0) {
            f->n++;
            goto done;
        }
        f->n++;
    }
    rc = 0;
done:
    json_decref(hdr);
    return rc;
}

void
llm_st_close(llm_st_file *f)
{
    int i;

    if (f->map) munmap(f->map, f->size);
    if (f->fd >= 0 && f->path) close(f->fd);
    for (i = 0; i < f->n; i++) {
        free(f->t[i].name);
        free(f->t[i].owned);
    }
    free(f->t);
    free(f->path);
    memset(f, 0, sizeof(*f));
}

int
llm_st_changed(const llm_st_file *f, char *err, size_t errlen)
{
    char why[160];
    int  rc;

    if (f->map == NULL || f->fd < 0) return 0;
    rc = llm_file_changed(f->fd, &f->stamp, why, sizeof(why));
    if (rc != 0) snprintf(err, errlen, "%s changed on disk since it was loaded: %s", f->path, why);
    return rc != 0;
}

llm_st_tensor *
llm_st_find_in(llm_st_file *files, int n, const char *name)
{
    int i, j;
    for (i = 0; i < n; i++) {
        for (j = 0; j < files[i].n; j++) {
            if (strcmp(files[i].t[j].name, name) == 0) return &files[i].t[j];
        }
    }
    return NULL;
}

const llm_st_tensor *
llm_st_find(const llm_st_file *f, const char *name)
{
    int i;
    for (i = 0; i < f->n; i++) {
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    }
    return NULL;
}
