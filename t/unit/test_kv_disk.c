/*
 * Disk tier of the prefix cache (src/engine/llm_kv_disk.c): a block written
 * reads back byte for byte; another prefix, a corrupted file, a truncated
 * one and another model's file are not trusted; a partial block is found by
 * its prefix and read by the head it shares with the prompt; the size bound removes the
 * least recently used files; no temporary file is left behind.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"

#include "engine/llm_kv.h"
#include "engine/llm_kv_disk.h"

static void
block_tokens(int32_t *t, int seed)
{
    int i;
    for (i = 0; i < LLM_KV_BLOCK; i++) t[i] = seed * 100 + i;
}

static void
fill(unsigned char *p, size_t n, int seed)
{
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char) (i * 31 + (size_t) seed * 7);
}

/* files under path whose name starts with prefix */
static int
count_files(const char *path, const char *prefix)
{
    DIR *dp = opendir(path);
    struct dirent *e;
    char sub[4096];
    struct stat sb;
    int n = 0;

    if (dp == NULL) return 0;
    while ((e = readdir(dp)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        if (stat(sub, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) n += count_files(sub, prefix);
        else if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    }
    closedir(dp);
    return n;
}

static void
file_of(char *buf, size_t len, const char *dir, uint64_t fp, uint64_t parent, const int32_t *tokens)
{
    uint64_t c = llm_kv_chain(parent, tokens);
    snprintf(buf, len, "%s/%016llx/%02x/%016llx.kv", dir, (unsigned long long) fp, (unsigned) (c >> 56),
             (unsigned long long) c);
}

static void
flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    int c;
    if (f == NULL) return;
    fseek(f, at, at < 0 ? SEEK_END : SEEK_SET);
    c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x40, f);
    fclose(f);
}

/* llm_kv_cache_path's max_size=, as nginx takes an offset. */
static void
test_option(void)
{
    char      err[256];
    uint64_t  max = 7;

    ok(llm_kv_disk_option("max_size=16m", &max, err, sizeof(err)) == 0 && max == 16ULL << 20, "max_size=16m");
    ok(llm_kv_disk_option("max_size=3", &max, err, sizeof(err)) == 0 && max == 3, "max_size=3: bytes");
    ok(llm_kv_disk_option("max_size=2K", &max, err, sizeof(err)) == 0 && max == 2048, "max_size=2K");
    ok(llm_kv_disk_option("max_size=4g", &max, err, sizeof(err)) == 0 && max == 4ULL << 30, "max_size=4g: offsets take g");
    max = 7;
    ok(llm_kv_disk_option("max_size=lots", &max, err, sizeof(err)) == -1 && max == 7, "max_size=lots is refused, nothing set");
    is_str(err, "invalid max_size value \"max_size=lots\"", "the value named as nginx logs it");
    ok(llm_kv_disk_option("max_size=0", &max, err, sizeof(err)) == -1, "max_size=0: above 0 only");
    ok(llm_kv_disk_option("max_size=", &max, err, sizeof(err)) == -1, "max_size= empty");
    ok(llm_kv_disk_option("max_size=m", &max, err, sizeof(err)) == -1, "a unit without a number");
    ok(llm_kv_disk_option("max_size=-1", &max, err, sizeof(err)) == -1, "a sign is not a number");
    ok(llm_kv_disk_option("max_size=99999999999g", &max, err, sizeof(err)) == -1, "beyond an off_t");
    ok(llm_kv_disk_option("max_size=99999999999999999999999", &max, err, sizeof(err)) == -1, "a number that overflows");
    ok(llm_kv_disk_option("size=16m", &max, err, sizeof(err)) == -1, "another parameter is refused");
    is_str(err, "invalid parameter \"size=16m\"", "the parameter named");
}

int
main(void)
{
    char dir[] = "/tmp/llm-test-kv-disk-XXXXXX", err[512] = "", why[512] = "", path[4096], other[4096];
    llm_kv_disk_shape shape = { 0x1234abcd5678ef01ULL, 2 * 40, 3, 40 }, foreign = shape;
    llm_kv_disk *d, *f;
    llm_kv_disk_stats st;
    int32_t t1[LLM_KV_BLOCK], t2[LLM_KV_BLOCK];
    unsigned char *k, *v, *k2, *v2;
    size_t half;
    uint64_t parent2;
    int i;

    test_option();

    if (mkdtemp(dir) == NULL) return 1;
    d = llm_kv_disk_open(dir, 0, &shape, err, sizeof(err));
    ok(d != NULL, "opened (%s)", err);
    if (d == NULL) return done_testing();
    half = llm_kv_disk_half_bytes(d);
    ok(half == 3 * LLM_KV_BLOCK * 40 * 2, "a block's keys: layers x 16 rows of kv_dim x 2 bytes (%zu)", half);
    k = malloc(half); v = malloc(half); k2 = malloc(half); v2 = malloc(half);
    fill(k, half, 1);
    fill(v, half, 2);
    block_tokens(t1, 1);
    block_tokens(t2, 2);
    parent2 = llm_kv_chain(LLM_KV_ROOT, t1);

    ok(llm_kv_disk_read(d, LLM_KV_ROOT, t1, k2, v2, why, sizeof(why)) == 0, "nothing on disk yet: a miss");
    ok(llm_kv_disk_write(d, LLM_KV_ROOT, t1, LLM_KV_BLOCK, k, v, err, sizeof(err)) == 0, "block 1 written (%s)", err);
    ok(llm_kv_disk_write(d, parent2, t2, LLM_KV_BLOCK, v, k, err, sizeof(err)) == 0, "block 2 (after block 1) written");
    ok(llm_kv_disk_write(d, LLM_KV_ROOT, t1, LLM_KV_BLOCK, k, v, err, sizeof(err)) == 0, "writing block 1 again: present");
    llm_kv_disk_get_stats(d, &st);
    ok(st.written == 2, "two files written, not three (%llu)", (unsigned long long) st.written);
    ok(count_files(dir, ".tmp.") == 0 && count_files(dir, "") == 4,
       "two files and a link each under its prefix (%d names), no temporary one left", count_files(dir, ""));

    memset(k2, 0, half);
    memset(v2, 0, half);
    ok(llm_kv_disk_read(d, LLM_KV_ROOT, t1, k2, v2, why, sizeof(why)) == 1
       && memcmp(k, k2, half) == 0 && memcmp(v, v2, half) == 0, "block 1 reads back byte for byte");
    ok(llm_kv_disk_read(d, parent2, t2, k2, v2, why, sizeof(why)) == 1 && memcmp(v, k2, half) == 0,
       "block 2 reads back under its prefix");
    ok(llm_kv_disk_read(d, LLM_KV_ROOT, t2, k2, v2, why, sizeof(why)) == 0,
       "the same tokens after another prefix: no file");
    {
        int32_t held[LLM_KV_BLOCK];
        int n_held = 0;
        ok(llm_kv_disk_read_head(d, LLM_KV_ROOT, t1, 7, held, &n_held, k2, v2, why, sizeof(why)) == 7
           && n_held == LLM_KV_BLOCK && memcmp(k, k2, half) == 0,
           "a prompt ending 7 positions into block 1 reads that head through its prefix's link");
    }

    /* a reopened tier (a reload) finds what the last one wrote */
    llm_kv_disk_close(d);
    d = llm_kv_disk_open(dir, 0, &shape, err, sizeof(err));
    ok(d != NULL && llm_kv_disk_read(d, LLM_KV_ROOT, t1, k2, v2, why, sizeof(why)) == 1
       && memcmp(k, k2, half) == 0, "after reopening: block 1 read back");
    llm_kv_disk_get_stats(d, &st);
    ok(st.bytes == 2 * (2 * half + 136), "reopening counts what the directory holds (%llu)",
       (unsigned long long) st.bytes);

    /* another model: its own directory, nothing found; its file under our name is rejected */
    foreign.fingerprint ^= 1;
    f = llm_kv_disk_open(dir, 0, &foreign, err, sizeof(err));
    ok(f != NULL && llm_kv_disk_read(f, LLM_KV_ROOT, t1, k2, v2, why, sizeof(why)) == 0,
       "another model's tier does not see our blocks");
    ok(llm_kv_disk_write(f, LLM_KV_ROOT, t2, LLM_KV_BLOCK, k, v, err, sizeof(err)) == 0, "another model writes a block");
    file_of(other, sizeof(other), dir, foreign.fingerprint, LLM_KV_ROOT, t2);
    file_of(path, sizeof(path), dir, shape.fingerprint, LLM_KV_ROOT, t2);
    {
        char cmd[12400];
        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname %s)\" && cp %s %s", path, other, path);
        ok(system(cmd) == 0, "its file copied under our model's name");
    }
    why[0] = '\0';
    ok(llm_kv_disk_read(d, LLM_KV_ROOT, t2, k2, v2, why, sizeof(why)) == -1 && strstr(why, "another model"),
       "another model's file is rejected: %s", why);

    /* corruption: a payload byte, a header byte (tokens), truncation */
    file_of(path, sizeof(path), dir, shape.fingerprint, LLM_KV_ROOT, t1);
    flip_byte(path, 500);
    ok(llm_kv_disk_read(d, LLM_KV_ROOT, t1, k2, v2, why, sizeof(why)) == -1 && strstr(why, "checksum"),
       "a flipped payload byte is rejected: %s", why);
    file_of(path, sizeof(path), dir, shape.fingerprint, parent2, t2);
    flip_byte(path, 60);
    ok(llm_kv_disk_read(d, parent2, t2, k2, v2, why, sizeof(why)) == -1 && strstr(why, "other tokens"),
       "a flipped token id is rejected: %s", why);
    flip_byte(path, 60);
    ok(llm_kv_disk_read(d, parent2, t2, k2, v2, why, sizeof(why)) == 1, "flipped back: read again");
    ok(truncate(path, 1000) == 0 && llm_kv_disk_read(d, parent2, t2, k2, v2, why, sizeof(why)) == -1
       && strstr(why, "size"), "a truncated file is rejected: %s", why);
    llm_kv_disk_get_stats(d, &st);
    ok(st.rejected == 4, "4 files rejected (%llu)", (unsigned long long) st.rejected);

    /* partial blocks (where a sequence ended): found by their prefix, read by the longest head
     * they share with the prompt; a newer one after the same prefix replaces the older */
    {
        int32_t head[LLM_KV_BLOCK], prompt[LLM_KV_BLOCK], held[LLM_KV_BLOCK];
        int n_held = 0, l, rows_ok = 1;
        size_t row = 2 * 40, layer = LLM_KV_BLOCK * row;
        uint64_t p3 = llm_kv_chain(parent2, t2);

        block_tokens(head, 3);
        memcpy(prompt, head, sizeof(prompt));
        ok(!llm_kv_disk_has(d, p3, NULL), "partial: none after block 2 yet");
        ok(llm_kv_disk_read_head(d, p3, prompt, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)) == 0,
           "partial: reading it is a miss");
        ok(llm_kv_disk_write(d, p3, head, 5, k, v, err, sizeof(err)) == 0, "partial: 5 positions written (%s)", err);
        ok(llm_kv_disk_has(d, p3, NULL) && !llm_kv_disk_has(d, p3, head), "partial: found by its prefix alone");
        memset(k2, 0, half);
        memset(v2, 0, half);
        ok(llm_kv_disk_read_head(d, p3, prompt, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)) == 5
           && n_held == 5 && memcmp(held, head, 5 * sizeof(int32_t)) == 0,
           "partial: a prompt continuing it reads its 5 positions (%s)", why);
        for (l = 0; l < 3; l++) {
            rows_ok &= memcmp(k2 + l * layer, k + l * layer, 5 * row) == 0
                       && memcmp(v2 + l * layer, v + l * layer, 5 * row) == 0;
        }
        ok(rows_ok, "partial: the 5 rows of every layer read back byte for byte");
        prompt[3] = -7;
        is_int(llm_kv_disk_read_head(d, p3, prompt, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)), 3,
               "partial: a prompt sharing 3 of them reads a head of 3");
        is_int(llm_kv_disk_read_head(d, p3, head, 2, held, &n_held, k2, v2, why, sizeof(why)), 2,
               "partial: a prompt with 2 tokens left reads 2");
        prompt[0] = -7;
        is_int(llm_kv_disk_read_head(d, p3, prompt, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)), 0,
               "partial: a prompt sharing none: a miss");
        llm_kv_disk_get_stats(d, &st);
        ok(st.rejected == 4, "partial: a miss is not a rejection (%llu)", (unsigned long long) st.rejected);
        block_tokens(head, 4);
        ok(llm_kv_disk_write(d, p3, head, 9, v, k, err, sizeof(err)) == 0, "partial: a newer one of 9 written");
        ok(llm_kv_disk_read_head(d, p3, head, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)) == 9
           && n_held == 9 && memcmp(k2, v, 9 * row) == 0, "partial: the newer one replaced it");
        ok(count_files(dir, ".tmp.") == 0, "partial: no temporary file left");
        snprintf(path, sizeof(path), "%s/%016llx/%02x/%016llx.part", dir, (unsigned long long) shape.fingerprint,
                 (unsigned) (p3 >> 56), (unsigned long long) p3);
        flip_byte(path, -20);
        ok(llm_kv_disk_read_head(d, p3, head, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)) == -1
           && strstr(why, "checksum"), "partial: a flipped payload byte is rejected: %s", why);
        flip_byte(path, -20);
        flip_byte(path, 36);    /* n_tokens: 9 -> 73 */
        ok(llm_kv_disk_read_head(d, p3, head, LLM_KV_BLOCK, held, &n_held, k2, v2, why, sizeof(why)) == -1
           && strstr(why, "positions"), "partial: a count past a block is rejected: %s", why);
    }

    /* the size bound: room for 5 files; 12 written; the first ones go */
    llm_kv_disk_close(d);
    llm_kv_disk_close(f);
    {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf %s/*", dir);
        ok(system(cmd) == 0, "emptied");
    }
    d = llm_kv_disk_open(dir, 5 * (2 * half + 144), &shape, err, sizeof(err));
    for (i = 0; i < 12; i++) {
        int32_t t[LLM_KV_BLOCK];
        block_tokens(t, 10 + i);
        llm_kv_disk_write(d, LLM_KV_ROOT, t, LLM_KV_BLOCK, k, v, err, sizeof(err));
    }
    llm_kv_disk_get_stats(d, &st);
    ok(st.written == 12 && st.removed > 0 && st.bytes <= 5 * (2 * half + 144),
       "12 written, %llu removed, %llu bytes held within the bound", (unsigned long long) st.removed,
       (unsigned long long) st.bytes);
    ok(count_files(dir, "") <= 5, "at most 5 files remain (%d)", count_files(dir, ""));
    {
        int32_t t[LLM_KV_BLOCK];
        block_tokens(t, 21);
        ok(llm_kv_disk_read(d, LLM_KV_ROOT, t, k2, v2, why, sizeof(why)) == 1, "the newest is kept");
    }
    llm_kv_disk_close(d);
    {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0) ok(0, "removed %s", dir);
    }
    free(k); free(v); free(k2); free(v2);
    return done_testing();
}
