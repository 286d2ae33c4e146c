/* Memory a configuration needs and what the machine has: see llm_memory.h. */
#include "engine/llm_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void
llm_memory_add(llm_memory_need *need, uint64_t weights, uint64_t per_worker)
{
    need->shared = add_sat(need->shared, weights);
    need->per_worker = add_sat(need->per_worker, per_worker);
}

uint64_t
llm_memory_total(const llm_memory_need *need, uint64_t workers)
{
    if (workers && need->per_worker > (UINT64_MAX - need->shared) / workers) {
        return UINT64_MAX;
    }
    return need->shared + workers * need->per_worker;
}

#define MIB(x) ((unsigned long long) ((x) >> 20))

int
llm_memory_check(const llm_memory_model *models, size_t n, uint64_t workers, uint64_t limit,
    int limit_set, char *msg, size_t len)
{
    llm_memory_need need = { 0, 0 };
    const char *s = workers == 1 ? "" : "s";
    uint64_t total;
    size_t i;

    for (i = 0; i < n; i++) {
        const llm_memory_model *m = &models[i];

        llm_memory_add(&need, m->weights, m->per_worker);
        total = llm_memory_total(&need, workers);
        if (total <= limit) continue;
        snprintf(msg, len,
                 "llm_model \"%s\": each worker needs %llu MiB for it (KV memory of %llu MiB, kv_memory=, "
                 "for parallel=%d sequences of up to ctx=%d, and scratch), so the models need %llu MiB "
                 "(weights %llu MiB, shared, plus %llu worker%s x %llu MiB), more than the %llu MiB of %s; "
                 "lower kv_memory= or ctx=, use kv=f16 or kv=q8_0, or fewer worker_processes in %s:%lu",
                 m->alias, MIB(m->per_worker), MIB(m->kv), m->parallel, m->n_ctx, MIB(total),
                 MIB(need.shared), (unsigned long long) workers, s, MIB(need.per_worker), MIB(limit),
                 limit_set ? "llm_memory_limit" : "this machine's memory", m->conf_file, m->conf_line);
        return -1;
    }
    snprintf(msg, len, "llm: the models need %llu MiB (weights %llu MiB, shared, plus %llu worker%s x %llu MiB) "
             "of %llu MiB", MIB(llm_memory_total(&need, workers)), MIB(need.shared),
             (unsigned long long) workers, s, MIB(need.per_worker), MIB(limit));
    return 0;
}

/* A cgroup limit file: a number of bytes, or "max" / a huge value for none. */
static uint64_t
cgroup_limit(const char *path)
{
    char buf[64];
    FILE *f = fopen(path, "r");
    unsigned long long v;

    if (f == NULL) return 0;
    if (fgets(buf, sizeof(buf), f) == NULL) buf[0] = '\0';
    fclose(f);
    if (sscanf(buf, "%llu", &v) != 1) return 0;    /* "max" */
    return (uint64_t) v;
}

/* The lower of limit and the value of one cgroup limit file (0 = none). */
static uint64_t
lower(uint64_t limit, const char *dir, const char *path, const char *file)
{
    char name[1024];
    uint64_t v;

    snprintf(name, sizeof(name), "%s%s/%s", dir, path, file);
    v = cgroup_limit(name);
    return v > 0 && (limit == 0 || v < limit) ? v : limit;
}

uint64_t
llm_memory_available(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    uint64_t limit = pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size : 0;
    char line[1024], *path;
    FILE *f;

    /* this process's cgroups: "N:memory:/path" (v1), "0::/path" (v2) */
    f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if ((path = strstr(line, ":memory:")) != NULL) {
            path += sizeof(":memory:") - 1;
            limit = lower(limit, "/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
            limit = lower(limit, "/sys/fs/cgroup/memory", "", "memory.limit_in_bytes");
        } else if (strncmp(line, "0::", 3) == 0) {
            path = line + 3;
            limit = lower(limit, "/sys/fs/cgroup", path, "memory.max");
            limit = lower(limit, "/sys/fs/cgroup/unified", path, "memory.max");
            limit = lower(limit, "/sys/fs/cgroup", "", "memory.max");
        }
    }
    if (f) fclose(f);
    return limit;
}
