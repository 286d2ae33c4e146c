/*
 * Tiled, threaded attention (llm_attention.h says what and why).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/llm_attention.h"
#include "engine/llm_runtime_impl.h"

/* Work items a layer aims for per thread before KV ranges are split. */
#define ITEMS_PER_THREAD 4
/* Partial states per thread: bounds the split-K scratch. */
#define PARTIALS_PER_THREAD 8
/* Shortest KV range worth a work item of its own (positions, a multiple of a block). */
#define MIN_SPLIT 256

/* A query tile: tokens t0 .. t0+nt-1 of the chunk (one sequence, consecutive
 * positions) times query heads h0 .. h0+nh-1 (all of KV head g). */
typedef struct {
    int slot, t0, nt, g, h0, nh;
    int lo, hi;          /* the positions any of its rows sees */
    int part0, n_parts;  /* its partial states when its KV range is split */
} att_tile;

/* A work item: positions lo .. hi of one tile, into a partial state or, part < 0, into rt->att. */
typedef struct {
    int tile, lo, hi, part;
} att_item;

struct llm_att_scratch {
    int        hd, n_threads, max_tiles, max_parts;
    size_t     per_thread;    /* floats of one thread's scratch */
    float     *thread;        /* [n_threads][per_thread] */
    float     *partial;       /* [max_parts][LLM_ATT_ROWS][hd + 2]: acc, then m and l */
    att_tile  *tiles;         /* [max_tiles] */
    att_item  *items;         /* [max_tiles + max_parts] */
    int        n_tiles, n_items;
    int        layer;
};

/* per thread: the tile's queries, acc, m, l, lo, hi, and the kernel's scratch */
static size_t
thread_floats(int hd)
{
    size_t rows = LLM_ATT_ROWS;
    size_t f = 2 * rows * (size_t) hd + 4 * rows + LLM_ATT_SCRATCH(hd);
    return (f + 15) & ~(size_t) 15;
}

/* heads per tile row group: a KV group's query heads, at most LLM_ATT_ROWS */
static int
heads_per_tile(const llm_model_info *in)
{
    int group = in->n_heads / in->n_kv_heads;
    return group < LLM_ATT_ROWS ? group : LLM_ATT_ROWS;
}

static int
max_tiles(const llm_model_info *in, int n_tokens)
{
    int hp = heads_per_tile(in), parts = (in->n_heads / in->n_kv_heads + hp - 1) / hp;
    return n_tokens * in->n_kv_heads * parts;
}

#define ALIGN64(x) (((x) + 63) & ~(size_t) 63)

static size_t
layout(const llm_model_info *in, int n_threads, int n_tokens, size_t *off)
{
    int hd = in->head_dim, tiles = max_tiles(in, n_tokens), parts = n_threads * PARTIALS_PER_THREAD;
    size_t at = ALIGN64(sizeof(llm_att_scratch));

    off[0] = at;
    at += ALIGN64((size_t) n_threads * thread_floats(hd) * sizeof(float));
    off[1] = at;
    at += ALIGN64((size_t) parts * LLM_ATT_ROWS * (size_t) (hd + 2) * sizeof(float));
    off[2] = at;
    at += ALIGN64((size_t) tiles * sizeof(att_tile));
    off[3] = at;
    at += ALIGN64((size_t) (tiles + parts) * sizeof(att_item));
    return at;
}

size_t
llm_attention_scratch_bytes(const llm_model *m, int n_threads, int n_tokens)
{
    size_t off[4];
    return layout(llm_model_get_info(m), n_threads, n_tokens, off);
}

llm_att_scratch *
llm_attention_scratch_init(void *mem, const llm_model *m, int n_threads, int n_tokens)
{
    const llm_model_info *in = llm_model_get_info(m);
    llm_att_scratch *s = mem;
    size_t off[4];

    layout(in, n_threads, n_tokens, off);
    s->hd = in->head_dim;
    s->n_threads = n_threads;
    s->max_tiles = max_tiles(in, n_tokens);
    s->max_parts = n_threads * PARTIALS_PER_THREAD;
    s->per_thread = thread_floats(in->head_dim);
    s->thread = (float *) ((char *) mem + off[0]);
    s->partial = (float *) ((char *) mem + off[1]);
    s->tiles = (att_tile *) ((char *) mem + off[2]);
    s->items = (att_item *) ((char *) mem + off[3]);
    return s;
}

static int
first_seen(const llm_layer *L, int pos)
{
    return L->window > 0 && pos - L->window + 1 > 0 ? pos - L->window + 1 : 0;
}

/* The chunk's tokens cut into tiles: runs of one sequence, times the KV heads (and head parts). */
static void
make_tiles(llm_runtime *rt, const llm_layer *L, int n)
{
    const llm_model_info *in = &rt->m->info;
    llm_att_scratch *s = rt->attn;
    int group = in->n_heads / in->n_kv_heads, hp = heads_per_tile(in);
    int per_tile = LLM_ATT_ROWS / hp, t0 = 0, t, g, h;

    s->n_tiles = 0;
    while (t0 < n) {
        t = t0 + 1;
        while (t < n && t - t0 < per_tile && rt->tslot[t] == rt->tslot[t0]
               && rt->tpos[t] == rt->tpos[t - 1] + 1)
        {
            t++;
        }
        for (g = 0; g < in->n_kv_heads; g++) {
            for (h = 0; h < group; h += hp) {
                att_tile *ti = &s->tiles[s->n_tiles++];
                ti->slot = rt->tslot[t0];
                ti->t0 = t0;
                ti->nt = t - t0;
                ti->g = g;
                ti->h0 = g * group + h;
                ti->nh = group - h < hp ? group - h : hp;
                ti->lo = first_seen(L, rt->tpos[t0]);
                ti->hi = rt->tpos[t - 1];
                ti->n_parts = 1;
                ti->part0 = -1;
            }
        }
        t0 = t;
    }
}

/*
 * Work items: one per tile when there are enough tiles to share; otherwise
 * each tile's KV range is cut into pieces of `seg` positions (a multiple of
 * the block, at least MIN_SPLIT), as many as the threads and the partial
 * states allow.
 */
static void
make_items(llm_runtime *rt)
{
    llm_att_scratch *s = rt->attn;
    int target = rt->n_threads * ITEMS_PER_THREAD, i, p, parts = 0;
    long long total = 0, seg;

    s->n_items = 0;
    for (i = 0; i < s->n_tiles; i++) total += s->tiles[i].hi - s->tiles[i].lo + 1;
    if (s->n_tiles < target && rt->n_threads > 1) {
        seg = (total + target - 1) / target;
        if (seg < MIN_SPLIT) seg = MIN_SPLIT;
        seg = (seg + LLM_KV_BLOCK - 1) & ~(long long) (LLM_KV_BLOCK - 1);
        for (;;) {
            parts = 0;
            for (i = 0; i < s->n_tiles; i++) {
                int len = s->tiles[i].hi - s->tiles[i].lo + 1;
                int k = (int) ((len + seg - 1) / seg);
                parts += k > 1 ? k : 0;
            }
            if (parts <= s->max_parts) break;
            seg *= 2;
        }
        parts = 0;
        for (i = 0; i < s->n_tiles; i++) {
            att_tile *ti = &s->tiles[i];
            int len = ti->hi - ti->lo + 1, k = (int) ((len + seg - 1) / seg);
            if (k <= 1) continue;
            ti->n_parts = k;
            ti->part0 = parts;
            for (p = 0; p < k; p++) {
                att_item *it = &s->items[s->n_items++];
                it->tile = i;
                it->lo = ti->lo + (int) (p * seg);
                it->hi = ti->lo + (int) ((p + 1) * seg) - 1 < ti->hi ? ti->lo + (int) ((p + 1) * seg) - 1 : ti->hi;
                it->part = parts + p;
            }
            parts += k;
        }
    }
    for (i = 0; i < s->n_tiles; i++) {
        if (s->tiles[i].n_parts > 1) continue;
        s->items[s->n_items++] = (att_item) { i, s->tiles[i].lo, s->tiles[i].hi, -1 };
    }
}

/*
 * An attention sink (gpt-oss): one more term exp(sink) in the head's softmax
 * denominator only; with the row's sums taken relative to its reference max
 * m, that term is exp(sink - m).
 */
static float
sink_term(const llm_layer *L, int head, float m)
{
    return L->sinks ? expf(L->sinks[head] - m) : 0.0f;
}

/* rows of a tile, token-major: row r = token t0 + r / nh, head h0 + r % nh */
static float *
att_row(llm_runtime *rt, const att_tile *ti, int r)
{
    return rt->att + (size_t) (ti->t0 + r / ti->nh) * rt->q_dim
           + (size_t) (ti->h0 + r % ti->nh) * rt->m->info.head_dim;
}

/*
 * The next block's keys and values of one head into the cache while this
 * block is computed.  Blocks of one layer lie a whole block (all layers)
 * apart, further than the hardware prefetcher follows, so without this every
 * block of a long context starts with a wait on memory.
 */
static void
prefetch_rows(const llm_runtime *rt, size_t at)
{
    const char *k = (const char *) rt->k_cache + llm_kv_bytes(rt, at);
    const char *v = (const char *) rt->v_cache + llm_kv_bytes(rt, at);
    size_t row = llm_kv_bytes(rt, (size_t) rt->kv_dim), len = llm_kv_bytes(rt, (size_t) rt->m->info.head_dim);
    size_t r, o;

    for (r = 0; r < LLM_KV_BLOCK; r++) {
        for (o = 0; o < len; o += 64) {
            __builtin_prefetch(k + r * row + o);
            __builtin_prefetch(v + r * row + o);
        }
        __builtin_prefetch(k + r * row + len - 1);    /* a row that does not start a line */
        __builtin_prefetch(v + r * row + len - 1);
    }
}

static void
task_item(void *arg, int ith, int nth, int thread)
{
    llm_runtime *rt = arg;
    llm_att_scratch *s = rt->attn;
    const llm_model *m = rt->m;
    const llm_layer *L = &m->layers[s->layer];
    int hd = m->info.head_dim, wi;
    float *q = s->thread + (size_t) thread * s->per_thread;
    float *acc = q + (size_t) LLM_ATT_ROWS * hd, *mx = acc + (size_t) LLM_ATT_ROWS * hd;
    float *sum = mx + LLM_ATT_ROWS, *ks = sum + 3 * LLM_ATT_ROWS;
    int *lo = (int *) (sum + LLM_ATT_ROWS), *hi = lo + LLM_ATT_ROWS;
    size_t layer_off = (size_t) L->kv * LLM_KV_BLOCK * rt->kv_dim;

    /* the longest items (latest tiles) first: they are last in the list */
    for (wi = ith; wi < s->n_items; wi += nth) {
        const att_item *it = &s->items[s->n_items - 1 - wi];
        const att_tile *ti = &s->tiles[it->tile];
        const int32_t *table = rt->seqs[ti->slot].table;
        int nq = ti->nt * ti->nh, r, p, d;

        for (r = 0; r < nq; r++) {
            int t = ti->t0 + r / ti->nh;
            const float *src = rt->q + (size_t) t * rt->q_dim + (size_t) (ti->h0 + r % ti->nh) * hd;
            for (d = 0; d < hd; d++) q[(size_t) r * hd + d] = src[d] * m->attn_scale;
            hi[r] = rt->tpos[t];
            lo[r] = first_seen(L, hi[r]);
            mx[r] = -INFINITY;
            sum[r] = 0;
        }
        memset(acc, 0, (size_t) nq * hd * sizeof(float));
        for (p = it->lo; p <= it->hi;) {
            int end = (p | (LLM_KV_BLOCK - 1)) + 1, n;
            size_t at = (size_t) table[p >> LLM_KV_BLOCK_SHIFT] * rt->block_elems + layer_off
                        + (size_t) (p & (LLM_KV_BLOCK - 1)) * rt->kv_dim + (size_t) ti->g * hd;
            if (end > it->hi + 1) end = it->hi + 1;
            if (end <= it->hi) {
                size_t nx = (size_t) table[end >> LLM_KV_BLOCK_SHIFT] * rt->block_elems + layer_off
                            + (size_t) ti->g * hd;
                prefetch_rows(rt, nx);
            }
            n = end - p;
            rt->k->attend_block(acc, mx, sum, q, nq, lo, hi, (const char *) rt->k_cache + llm_kv_bytes(rt, at),
                                (const char *) rt->v_cache + llm_kv_bytes(rt, at), rt->kv_wt, (size_t) rt->kv_dim,
                                p, n, hd, m->attn_softcap, ks);
            p = end;
        }
        if (it->part < 0) {
            for (r = 0; r < nq; r++) {
                float *o = att_row(rt, ti, r), l = sum[r] + sink_term(L, ti->h0 + r % ti->nh, mx[r]);
                float inv = l > 0 ? 1.0f / l : 0;
                for (d = 0; d < hd; d++) o[d] = acc[(size_t) r * hd + d] * inv;
            }
        } else {
            float *ps = s->partial + (size_t) it->part * LLM_ATT_ROWS * (size_t) (hd + 2);
            for (r = 0; r < nq; r++) {
                float *pr = ps + (size_t) r * (hd + 2);
                memcpy(pr, acc + (size_t) r * hd, (size_t) hd * sizeof(float));
                pr[hd] = mx[r];
                pr[hd + 1] = sum[r];
            }
        }
    }
}

/* the partial states of each split tile, rescaled to their common max and summed */
static void
task_merge(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_runtime *rt = arg;
    llm_att_scratch *s = rt->attn;
    int hd = rt->m->info.head_dim, i, r, p, d;
    size_t ps = (size_t) LLM_ATT_ROWS * (size_t) (hd + 2);

    for (i = ith; i < s->n_tiles; i += nth) {
        const att_tile *ti = &s->tiles[i];
        if (ti->n_parts <= 1) continue;
        for (r = 0; r < ti->nt * ti->nh; r++) {
            float *o = att_row(rt, ti, r), mx = -INFINITY, l = 0;
            for (p = 0; p < ti->n_parts; p++) {
                const float *pr = s->partial + (size_t) (ti->part0 + p) * ps + (size_t) r * (hd + 2);
                if (pr[hd] > mx) mx = pr[hd];
            }
            memset(o, 0, (size_t) hd * sizeof(float));
            for (p = 0; p < ti->n_parts; p++) {
                const float *pr = s->partial + (size_t) (ti->part0 + p) * ps + (size_t) r * (hd + 2);
                float c;
                if (pr[hd + 1] == 0) continue;     /* saw none of its range (sliding window) */
                c = expf(pr[hd] - mx);
                l += c * pr[hd + 1];
                for (d = 0; d < hd; d++) o[d] += c * pr[d];
            }
            l += sink_term(&rt->m->layers[s->layer], ti->h0 + r % ti->nh, mx);
            if (l > 0) rt->k->scale(o, 1.0f / l, hd);
        }
    }
}

void
llm_attention(llm_runtime *rt, int layer, int n_tokens)
{
    llm_att_scratch *s = rt->attn;
    int i, split = 0;

    s->layer = layer;
    make_tiles(rt, &rt->m->layers[layer], n_tokens);
    make_items(rt);
    for (i = 0; i < s->n_tiles; i++) split |= s->tiles[i].n_parts > 1;
    llm_pool_run(rt->pool, task_item, rt, s->n_items < LLM_POOL_MAX_CHUNKS ? s->n_items : LLM_POOL_MAX_CHUNKS);
    if (split) {
        llm_pool_run(rt->pool, task_merge, rt, s->n_tiles < LLM_POOL_MAX_CHUNKS ? s->n_tiles : LLM_POOL_MAX_CHUNKS);
    }
}
