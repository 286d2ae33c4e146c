/*
 * Memory sizing at configuration time: what a runtime allocates is what
 * llm_runtime_memory predicts (so nginx -t refuses exactly what would not
 * fit), every page of it is resident once the runtime exists (committed at
 * worker start, not on first use), and the plan arithmetic counts weights
 * once and the rest per worker without overflowing.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "engine/llm_engine.h"
#include "engine/llm_memory.h"
#include "engine/llm_runtime_impl.h"

#define FIX "t/fixtures/models"

/* Bytes the C allocator has handed out (0 where an instrumented allocator hides it). */
static size_t
heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#endif
}

/* Fraction of the pages of [p, p + n) that are resident. */
static double
resident(const void *p, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t) p & ~(uintptr_t) (page - 1), e = (uintptr_t) p + n;
    size_t pages = (e - a + (size_t) page - 1) / (size_t) page, i, in = 0;
    unsigned char *v = malloc(pages);

    if (v == NULL || mincore((void *) a, e - a, v) != 0) {
        free(v);
        return -1;
    }
    for (i = 0; i < pages; i++) in += v[i] & 1;
    free(v);
    return (double) in / (double) pages;
}

static void
test_runtime_memory(void)
{
    char err[256];
    llm_model *m = llm_model_load(FIX "/llama_f32", err, sizeof(err));
    static const int cfg[][4] = {   /* threads, ctx, slots, kv */
        { 1, 16, 1, LLM_KV_F32 }, { 2, 256, 4, LLM_KV_F32 }, { 3, 2048, 8, LLM_KV_F16 },
    };
    size_t i, kv;

    if (m == NULL) { ok(0, "%s", err); return; }
    for (i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        size_t before = heap_in_use(), used;
        llm_runtime *rt = llm_runtime_create_kv(m, cfg[i][0], cfg[i][1], cfg[i][2],
                                                (llm_kv_type) cfg[i][3], err, sizeof(err));
        llm_runtime_opts o = { cfg[i][0], cfg[i][1], cfg[i][2], (llm_kv_type) cfg[i][3], 0, NULL };
        size_t want = llm_runtime_memory(m, &o, &kv);
        if (!ok(rt != NULL, "runtime %zu", i)) { diag(err); continue; }
        used = heap_in_use() - before;
        if (before == 0 || used < want / 2) {
            ok(1, "# skip the allocator does not report its use here (sanitizer, valgrind)");
        } else {
            /* every allocation costs a header, large ones are rounded up to pages */
            ok(used >= want && used <= want + want / 100 + 256 * 1024,
               "threads=%d ctx=%d slots=%d: allocated %zu bytes, predicted %zu",
               cfg[i][0], cfg[i][1], cfg[i][2], used, want);
        }
        is_int(kv, llm_runtime_kv_bytes(rt), "KV bytes as predicted");
        /* 2 layers x (2 KV heads x 16) x K,V */
        is_int(kv, 2LL * cfg[i][1] * cfg[i][2] * 32 * 2 * (cfg[i][3] == LLM_KV_F16 ? 2 : 4),
               "KV bytes = layers x ctx x slots x kv_dim x 2 x element");
        {
            double rk = resident(rt->k_cache, kv / 2), rv = resident(rt->v_cache, kv / 2),
                   rl = resident(rt->logits, (size_t) cfg[i][2] * 256 * sizeof(float));
            ok(rk == 1 && rv == 1 && rl == 1,
               "KV cache and logits are resident at creation (%.2f, %.2f, %.2f)", rk, rv, rl);
        }
        llm_runtime_free(rt);
    }
    {
        llm_runtime_opts o = { 2, 1 << 20, 256, LLM_KV_F32, 0, NULL };
        is_int(llm_runtime_memory(m, &o, &kv) > (size_t) 128 << 30, 1,
               "ctx=1048576 parallel=256 is predicted beyond 128 GiB");
        is_int(kv, 2LL * (1 << 20) * 256 * 32 * 2 * 4, "its KV bytes");
    }
    {
        /* a budget: 1 MiB of blocks of 16 positions x 2 layers x 32 x K,V x f32 = 128 blocks */
        llm_runtime_opts o = { 1, 0, 4, LLM_KV_F32, 1 << 20, NULL }, r;
        llm_runtime *rt;

        llm_runtime_memory(m, &o, &kv);
        is_int(kv, 1 << 20, "kv_memory=1m: the KV blocks are the budget");
        r = o;
        is_int(llm_runtime_resolve(m, &r, err, sizeof(err)), 0, "the budget resolves");
        is_int(r.n_ctx, 256, "ctx defaults to max_position_embeddings under the budget");
        rt = llm_runtime_create_opts(m, &o, err, sizeof(err));
        if (ok(rt != NULL, "a runtime on the budget")) {
            is_int(llm_runtime_kv_blocks(rt), 128, "128 blocks for 4 sequences: no parallel x ctx reservation");
            is_int(llm_runtime_n_ctx(rt), 256, "its context");
            llm_runtime_free(rt);
        }
        o.kv_memory = 8 * 8192;
        r = o;
        is_int(llm_runtime_resolve(m, &r, err, sizeof(err)), 0, "a budget smaller than the model's context");
        is_int(r.n_ctx, 8 * 16, "caps ctx at the tokens it holds");
        r = o;
        r.n_ctx = 2048;
        ok(llm_runtime_resolve(m, &r, err, sizeof(err)) != 0 && strstr(err, "kv_memory"),
           "an explicit ctx beyond the budget is refused (%s)", err);
        is_int(llm_runtime_kv_default(m, LLM_KV_F32, 4, 0, 0), 4LL * 256 / 16 * 8192,
               "default budget: parallel sequences of the whole context");
        is_int(llm_runtime_kv_default(m, LLM_KV_F32, 4, 64, 0), 4LL * 64 / 16 * 8192,
               "or of the ctx given");
        is_int(llm_runtime_kv_default(m, LLM_KV_F32, 4, 0, 8LL * 32 * 8192), 32LL * 8192,
               "capped at an eighth of the memory");
    }
    llm_model_free(m);
}

static void
test_plan(void)
{
    llm_memory_need need = { 0, 0 };
    uint64_t avail;

    llm_memory_add(&need, 1000, 300);
    llm_memory_add(&need, 500, 200);
    is_int(need.shared, 1500, "weights add up once");
    is_int(need.per_worker, 500, "per-worker needs add up");
    is_int(llm_memory_total(&need, 1), 2000, "one worker");
    is_int(llm_memory_total(&need, 4), 3500, "four workers: weights once, the rest four times");
    is_int(llm_memory_total(&need, 0), 1500, "no worker: weights only");
    llm_memory_add(&need, 0, UINT64_MAX / 2);
    ok(llm_memory_total(&need, 3) == UINT64_MAX, "saturates instead of wrapping");
    llm_memory_add(&need, UINT64_MAX, 0);
    ok(need.shared == UINT64_MAX, "adding saturates too");

    {
        char msg[1024];
        llm_memory_model ms[2] = {
            { "small", 100 << 20, 10 << 20, 8 << 20, 4, 2048, "/etc/nginx.conf", 12 },
            { "big", 200 << 20, 30 << 20, 24 << 20, 8, 4096, "/etc/nginx.conf", 13 },
        };
        is_int(llm_memory_check(ms, 2, 2, 380ULL << 20, 1, msg, sizeof(msg)), 0, "two models within the limit");
        ok(strcmp(msg, "llm: the models need 380 MiB (weights 300 MiB, shared, plus 2 workers x 40 MiB) "
                  "of 380 MiB") == 0, "the summary: %s", msg);
        is_int(llm_memory_check(ms, 2, 2, 379ULL << 20, 1, msg, sizeof(msg)), -1, "a MiB less: refused");
        ok(strcmp(msg, "llm_model \"big\": each worker needs 30 MiB for it (KV memory of 24 MiB, kv_memory=, "
                  "for parallel=8 sequences of up to ctx=4096, and scratch), so the models need 380 MiB "
                  "(weights 300 MiB, shared, plus 2 workers x 40 MiB), more than the 379 MiB of "
                  "llm_memory_limit; lower kv_memory= or ctx=, use kv=f16 or kv=q8_0, or fewer worker_processes in "
                  "/etc/nginx.conf:13") == 0, "names the model that tips it over: %s", msg);
        is_int(llm_memory_check(ms, 2, 1, 109ULL << 20, 0, msg, sizeof(msg)), -1, "the first alone is too big");
        ok(strstr(msg, "llm_model \"small\":") == msg && strstr(msg, "plus 1 worker x 10 MiB")
           && strstr(msg, "of this machine's memory;") && strstr(msg, ":12"),
           "names it, one worker, the machine's memory: %s", msg);
    }

    avail = llm_memory_available();
    ok(avail > (64ULL << 20), "available memory is known (%llu MiB)", (unsigned long long) (avail >> 20));
    ok(avail <= (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGESIZE),
       "and at most the physical memory");
}

int
main(void)
{
    test_runtime_memory();
    test_plan();
    return done_testing();
}
