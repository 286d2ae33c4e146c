/*
 * Mixture-of-experts MLP: routing, grouping per expert, the experts' SwiGLU
 * MLPs, and the weighted sum (llm_moe.h has the contract).
 *
 * Work split: the rows of all chosen experts' matrices form one job per
 * matrix kind (gate+up, then down), cut into pieces by estimated cost (the
 * expert's rows times its tokens plus the weight read), so a step costs two
 * pool rounds however many experts run.  A token's experts are summed in the
 * order of their rank, so a token's result does not depend on the others in
 * the batch.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/llm_moe.h"
#include "engine/llm_runtime_impl.h"
#include "kernels/cpu/llm_quant.h"

/*
 * A token runs K routed experts and, when the model has one, the shared
 * expert: KS = K + 1 slots per token, the shared expert being expert number
 * E with weight 1.
 */
struct llm_moe_scratch {
    int            cap;          /* tokens */
    int            E, K, KS, H, I;   /* I: widest of the experts' and the shared expert's rows */
    float         *logits;       /* [cap][E] router logits, then scores */
    float         *choice;       /* [cap][E] sigmoid routing: scores with the correction bias, groups masked */
    int           *sel;          /* [cap][KS] chosen experts, best first */
    float         *wt;           /* [cap][KS] their weights */
    int           *arow;         /* [cap][KS] row of (token, rank) in the grouped buffers */
    int           *count;        /* [E+1] tokens per expert */
    int           *off;          /* [E+1] first grouped row of each expert */
    int           *active;       /* [E+1] experts with tokens, ascending */
    int            n_active;
    float         *xg;           /* [cap*KS][H] inputs grouped by expert */
    float         *g, *u;        /* [cap*KS][I] */
    float         *yg;           /* [cap*KS][H] expert outputs */
    unsigned char *xq;           /* [cap*KS][ldq] int8 rows for quantized experts */
    size_t         ldq;
};

typedef struct {
    llm_runtime     *rt;
    const llm_moe   *moe;
    llm_moe_scratch *s;
    const float     *in;
    float           *out;
    int              n, accumulate;
    int              qk;         /* task_quantize: values per row ... */
    const float     *qsrc;       /* ... of rows qld floats apart ... */
    size_t           qld;
    int              qrow0;      /* ... into xq rows from this one */
    int              down;       /* task_experts: 0 gate+up, 1 down */
} moe_job;

#define MOE_CHUNKS_PER_THREAD 4
#define MOE_PAR_TOKENS 8

/* ---- scratch ---- */

static int
widest_expert(const llm_model *m)
{
    return m->shared_intermediate > m->moe_intermediate ? m->shared_intermediate : m->moe_intermediate;
}

static size_t
scratch_layout(const llm_model *m, int cap, size_t *ldq)
{
    size_t C = (size_t) cap, K = (size_t) m->top_k + (m->shared_intermediate > 0), E = (size_t) m->n_experts;
    size_t H = (size_t) m->info.hidden, I = (size_t) widest_expert(m);
    int widest = m->info.hidden > (int) I ? m->info.hidden : (int) I;

    *ldq = llm_qa_row_bytes(widest);
    return 2 * C * E * sizeof(float) + 2 * C * K * sizeof(int) + C * K * sizeof(float)
         + 3 * (E + 1) * sizeof(int) + 2 * C * K * H * sizeof(float) + 2 * C * K * I * sizeof(float)
         + C * K * *ldq;
}

size_t
llm_moe_scratch_bytes(const llm_model *m, int n_tokens)
{
    size_t ldq;
    if (m->n_experts == 0) return 0;
    return sizeof(llm_moe_scratch) + scratch_layout(m, n_tokens, &ldq);
}

/* zeroed and committed now, as the runtime's other buffers (llm_runtime.c says why) */
static void *
alloc_c(size_t bytes, int *fail)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE), i;
    volatile unsigned char *p = calloc(bytes ? bytes : 1, 1);

    if (p == NULL) {
        *fail = 1;
        return NULL;
    }
    for (i = 0; i < bytes; i += page) p[i] = 0;
    return (void *) p;
}

llm_moe_scratch *
llm_moe_scratch_create(const llm_model *m, int n_tokens, int *fail)
{
    llm_moe_scratch *s;
    size_t C = (size_t) n_tokens, K, E, H, I;

    if (m->n_experts == 0) return NULL;
    s = alloc_c(sizeof(*s), fail);
    if (s == NULL) return NULL;
    s->cap = n_tokens;
    s->E = m->n_experts;
    s->K = m->top_k;
    s->KS = m->top_k + (m->shared_intermediate > 0);
    s->H = m->info.hidden;
    s->I = widest_expert(m);
    K = (size_t) s->KS; E = (size_t) s->E; H = (size_t) s->H; I = (size_t) s->I;
    scratch_layout(m, n_tokens, &s->ldq);
    s->logits = alloc_c(C * E * sizeof(float), fail);
    s->choice = alloc_c(C * E * sizeof(float), fail);
    s->sel = alloc_c(C * K * sizeof(int), fail);
    s->wt = alloc_c(C * K * sizeof(float), fail);
    s->arow = alloc_c(C * K * sizeof(int), fail);
    s->count = alloc_c((E + 1) * sizeof(int), fail);
    s->off = alloc_c((E + 1) * sizeof(int), fail);
    s->active = alloc_c((E + 1) * sizeof(int), fail);
    s->xg = alloc_c(C * K * H * sizeof(float), fail);
    s->yg = alloc_c(C * K * H * sizeof(float), fail);
    s->g = alloc_c(C * K * I * sizeof(float), fail);
    s->u = alloc_c(C * K * I * sizeof(float), fail);
    s->xq = alloc_c(C * K * s->ldq, fail);
    return s;
}

void
llm_moe_scratch_free(llm_moe_scratch *s)
{
    if (s == NULL) return;
    free(s->logits); free(s->choice); free(s->sel); free(s->wt); free(s->arow);
    free(s->count); free(s->off); free(s->active);
    free(s->xg); free(s->yg); free(s->g); free(s->u); free(s->xq);
    free(s);
}

/* ---- steps ---- */

static void
token_range(int n, int ith, int nth, int *t0, int *t1)
{
    *t0 = (int) ((long long) n * ith / nth);
    *t1 = (int) ((long long) n * (ith + 1) / nth);
}

static void
run_tokens(moe_job *j, llm_pool_fn fn)
{
    if (j->n >= MOE_PAR_TOKENS) {
        llm_pool_run(j->rt->pool, fn, j, j->rt->n_threads * 2);
    } else {
        fn(j, 0, 1, 0);
    }
}

/* one y = x W^T over rows [r0, r1) of w for n rows of x (float) or of xq (quantized) */
static void
mat_rows(const llm_runtime *rt, const llm_mat *w, float *y, size_t ldy, const float *x, size_t ldx,
    const unsigned char *xq, size_t ldq, int n, int r0, int r1)
{
    if (llm_wtype_info(w->type)->quantized) {
        rt->k->matmul_q[w->type](y, ldy, xq, ldq, w->data, w->cols, r0, r1, n, 0);
    } else {
        rt->k->matmul[w->type](y, ldy, x, ldx, w->data, w->cols, r0, r1, n, 0);
    }
}

static void
task_quantize(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    moe_job *j = arg;
    llm_moe_scratch *s = j->s;
    int t0, t1, t, rows = j->n;

    token_range(rows, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        j->rt->k->quantize_act(s->xq + (size_t) (j->qrow0 + t) * s->ldq, j->qsrc + (size_t) t * j->qld, j->qk);
    }
}

/* int8 rows (k values of rows ld floats apart) into s->xq from row row0 on */
static void
quantize_rows(moe_job *j, const float *src, size_t ld, int rows, int k, int row0)
{
    int n = j->n;
    j->qsrc = src;
    j->qld = ld;
    j->qk = k;
    j->qrow0 = row0;
    j->n = rows;
    run_tokens(j, task_quantize);
    j->n = n;
}

/* router logits of the n tokens, its rows split across the pieces */
static void
task_router(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    moe_job *j = arg;
    const llm_mat *w = &j->moe->router;
    int blocks = (w->rows + 3) / 4;
    int r0 = blocks * ith / nth * 4, r1 = blocks * (ith + 1) / nth * 4;

    if (r1 > w->rows) r1 = w->rows;
    if (r0 >= r1) return;
    mat_rows(j->rt, w, j->s->logits, (size_t) j->s->E, j->in, (size_t) j->s->H, j->s->xq, j->s->ldq, j->n, r0, r1);
}

/* the k largest of v[0..n) into idx, best first (the lower index first on ties) */
static void
top_k(const float *v, int n, int k, int *idx)
{
    int i, q, e;

    for (i = 0; i < k; i++) {
        int best = -1;
        for (e = 0; e < n; e++) {
            int taken = 0;
            for (q = 0; q < i; q++) taken |= idx[q] == e;
            if (!taken && (best < 0 || v[e] > v[best])) best = e;
        }
        idx[i] = best;
    }
}

/*
 * Grouped choice of sigmoid routing (GLM-4.5, DeepSeek-V3): a group scores
 * the sum of its two best biased scores; experts outside the topk_group best
 * groups get 0 (not minus infinity: transformers masks with 0.0).
 */
static void
mask_groups(const llm_model *m, float *c)
{
    int per = m->n_experts / m->n_group, gi, e, best[2], keep[LLM_MOE_MAX_TOPK];
    float gs[LLM_MOE_MAX_TOPK * 4];

    if (m->n_group <= 1 || m->n_group > LLM_MOE_MAX_TOPK * 4) return;
    for (gi = 0; gi < m->n_group; gi++) {
        top_k(c + gi * per, per, 2, best);
        gs[gi] = c[gi * per + best[0]] + c[gi * per + best[1]];
    }
    top_k(gs, m->n_group, m->topk_group, keep);
    for (gi = 0; gi < m->n_group; gi++) {
        int kept = 0, q;
        for (q = 0; q < m->topk_group; q++) kept |= keep[q] == gi;
        for (e = 0; !kept && e < per; e++) c[gi * per + e] = 0.0f;
    }
}

/*
 * Scores (softmax, or sigmoid with the correction bias and groups for the
 * choice), the top_k, their weights (renormalized, scaled); the shared
 * expert's slot last with weight 1.
 */
static void
task_route(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    moe_job *j = arg;
    llm_moe_scratch *s = j->s;
    const llm_model *m = j->rt->m;
    int t0, t1, t, k, e;

    token_range(j->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        float *p = s->logits + (size_t) t * s->E, *c = p, sum = 0;
        int *sel = s->sel + (size_t) t * s->KS;
        float *wt = s->wt + (size_t) t * s->KS;

        if (j->moe->router_bias) {
            for (e = 0; e < s->E; e++) p[e] += j->moe->router_bias[e];
        }
        if (m->moe_sigmoid) {
            c = s->choice + (size_t) t * s->E;
            for (e = 0; e < s->E; e++) {
                p[e] = 1.0f / (1.0f + expf(-p[e]));
                c[e] = p[e] + (j->moe->score_bias ? j->moe->score_bias[e] : 0.0f);
            }
            mask_groups(m, c);
        } else {
            j->rt->k->softmax(p, s->E);
        }
        top_k(c, s->E, s->K, sel);
        for (k = 0; k < s->K; k++) {
            wt[k] = p[sel[k]];
            sum += wt[k];
        }
        for (k = 0; k < s->K; k++) {
            /* GLM-4.5 / DeepSeek-V3 add 1e-20 to the sum; softmax weights never sum to 0 */
            if (m->norm_topk) wt[k] /= m->moe_sigmoid ? sum + 1e-20f : sum;
            wt[k] *= m->routed_scale;
        }
        if (s->KS > s->K) {
            /* the shared expert: weight 1, or Qwen3-Next's sigmoid(x . shared_expert_gate) */
            sel[s->K] = s->E;
            wt[s->K] = 1.0f;
            if (j->moe->sh_weight) {
                wt[s->K] = 1.0f / (1.0f + expf(-j->rt->k->dot(j->in + (size_t) t * s->H, j->moe->sh_weight, s->H)));
            }
        }
    }
}

/* tokens grouped per expert: offsets, the row of each (token, rank), inputs gathered */
static void
group(moe_job *j)
{
    llm_moe_scratch *s = j->s;
    int t, k, e, at = 0, H = s->H;

    memset(s->count, 0, (size_t) (s->E + 1) * sizeof(int));
    for (t = 0; t < j->n * s->KS; t++) s->count[s->sel[t]]++;
    s->n_active = 0;
    for (e = 0; e <= s->E; e++) {
        s->off[e] = at;
        at += s->count[e];
        if (s->count[e]) s->active[s->n_active++] = e;
        s->count[e] = 0;    /* refilled below as a cursor */
    }
    for (t = 0; t < j->n; t++) {
        for (k = 0; k < s->KS; k++) {
            int ex = s->sel[t * s->KS + k], row = s->off[ex] + s->count[ex]++;
            s->arow[t * s->KS + k] = row;
            memcpy(s->xg + (size_t) row * H, j->in + (size_t) t * H, (size_t) H * sizeof(float));
        }
    }
}

/*
 * gpt-oss's activation on n values: g = min(g, limit), u = clamp(u, -limit,
 * limit), g = (u + 1) * g * sigmoid(alpha g), computed as silu(alpha g) (u + 1)
 * / alpha with the silu_mul kernel.
 */
static void
swiglu_limit(const llm_runtime *rt, float *g, float *u, int n)
{
    float lim = rt->m->swiglu_limit, a = rt->m->swiglu_alpha;
    int i;

    for (i = 0; i < n; i++) {
        float x = g[i] < lim ? g[i] : lim, y = u[i] < -lim ? -lim : u[i] > lim ? lim : u[i];
        g[i] = a * x;
        u[i] = y + 1.0f;
    }
    rt->k->silu_mul(g, u, n);
    rt->k->scale(g, 1.0f / a, n);
}

/* rows [r0, r1) of n rows ld apart += bias[r] */
static void
add_bias(float *y, size_t ld, int n, const float *bias, int r0, int r1)
{
    int t, r;
    for (t = 0; t < n; t++) {
        for (r = r0; r < r1; r++) y[(size_t) t * ld + r] += bias[r];
    }
}

/* matrix which (0 gate, 1 up, 2 down) of expert e; e == E is the shared expert */
static const llm_mat *
expert(const llm_moe *moe, const llm_moe_scratch *s, int e, int which)
{
    if (e == s->E) return which == 0 ? &moe->sh_gate : which == 1 ? &moe->sh_up : &moe->sh_down;
    return which == 0 ? &moe->gate[e] : which == 1 ? &moe->up[e] : &moe->down[e];
}

/*
 * Rows of the chosen experts' matrices (gate and up together, or down) cut by
 * cost: expert a's blocks of 4 rows each cost its tokens plus a constant for
 * reading the rows; piece ith takes the blocks whose start falls in its share.
 */
#define ROW_READ_COST 4

static void
task_experts(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    moe_job *j = arg;
    llm_moe_scratch *s = j->s;
    const llm_runtime *rt = j->rt;
    int a;
    int64_t total = 0, lo, hi, c = 0;

    for (a = 0; a < s->n_active; a++) {
        int R = j->down ? s->H : expert(j->moe, s, s->active[a], 0)->rows;
        total += (int64_t) ((R + 3) / 4) * (s->count[s->active[a]] + ROW_READ_COST);
    }
    lo = total * ith / nth;
    hi = total * (ith + 1) / nth;
    for (a = 0; a < s->n_active && c < hi; a++) {
        int e = s->active[a], ne = s->count[e], row = s->off[e];
        const llm_mat *wg = expert(j->moe, s, e, 0), *wu = expert(j->moe, s, e, 1), *wd = expert(j->moe, s, e, 2);
        int R = j->down ? s->H : wg->rows, blocks = (R + 3) / 4;
        int64_t w = ne + ROW_READ_COST, span = (int64_t) blocks * w;
        int b0, b1, r0, r1, t;

        if (c + span <= lo) {
            c += span;
            continue;
        }
        b0 = lo > c ? (int) ((lo - c + w - 1) / w) : 0;
        b1 = hi - c >= span ? blocks : (int) ((hi - c + w - 1) / w);
        c += span;
        r0 = b0 * 4;
        r1 = b1 * 4 < R ? b1 * 4 : R;
        if (r0 >= r1) continue;
        /* biases (gpt-oss) belong to routed experts only, not to the shared one */
        if (j->down) {
            mat_rows(rt, wd, s->yg + (size_t) row * s->H, (size_t) s->H,
                     s->g + (size_t) row * s->I, (size_t) s->I, s->xq + (size_t) row * s->ldq, s->ldq, ne, r0, r1);
            if (j->moe->down_bias && e < s->E) {
                add_bias(s->yg + (size_t) row * s->H, (size_t) s->H, ne, j->moe->down_bias + (size_t) e * s->H, r0, r1);
            }
            continue;
        }
        mat_rows(rt, wg, s->g + (size_t) row * s->I, (size_t) s->I,
                 s->xg + (size_t) row * s->H, (size_t) s->H, s->xq + (size_t) row * s->ldq, s->ldq, ne, r0, r1);
        mat_rows(rt, wu, s->u + (size_t) row * s->I, (size_t) s->I,
                 s->xg + (size_t) row * s->H, (size_t) s->H, s->xq + (size_t) row * s->ldq, s->ldq, ne, r0, r1);
        if (j->moe->gate_bias && e < s->E) {
            size_t at = (size_t) e * (size_t) wg->rows;
            add_bias(s->g + (size_t) row * s->I, (size_t) s->I, ne, j->moe->gate_bias + at, r0, r1);
            add_bias(s->u + (size_t) row * s->I, (size_t) s->I, ne, j->moe->up_bias + at, r0, r1);
        }
        for (t = 0; t < ne; t++) {
            float *g = s->g + (size_t) (row + t) * s->I + r0;
            float *u = s->u + (size_t) (row + t) * s->I + r0;
            if (rt->m->act == LLM_ACT_GELU_TANH) rt->k->gelu_tanh_mul(g, u, r1 - r0);
            else if (rt->m->act == LLM_ACT_SWIGLU_LIMIT) swiglu_limit(rt, g, u, r1 - r0);
            else rt->k->silu_mul(g, u, r1 - r0);
        }
    }
}

/* out[t] (+)= the weighted sum of the token's expert outputs, best-ranked first */
static void
task_combine(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    moe_job *j = arg;
    llm_moe_scratch *s = j->s;
    const llm_kernels *kk = j->rt->k;
    int t0, t1, t, k, H = s->H;

    token_range(j->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        float *sum = s->yg + (size_t) s->arow[t * s->KS] * H, *o = j->out + (size_t) t * H;
        kk->scale(sum, s->wt[t * s->KS], H);
        for (k = 1; k < s->KS; k++) {
            kk->axpy(sum, s->wt[t * s->KS + k], s->yg + (size_t) s->arow[t * s->KS + k] * H, H);
        }
        if (j->accumulate) kk->axpy(o, 1.0f, sum, H);
        else memcpy(o, sum, (size_t) H * sizeof(float));
    }
}

static int
any_quantized(const llm_moe *moe, int down, const llm_moe_scratch *s)
{
    int a;
    for (a = 0; a < s->n_active; a++) {
        int e = s->active[a];
        if (down ? llm_wtype_info(expert(moe, s, e, 2)->type)->quantized
                 : llm_wtype_info(expert(moe, s, e, 0)->type)->quantized
                   || llm_wtype_info(expert(moe, s, e, 1)->type)->quantized)
        {
            return 1;
        }
    }
    return 0;
}

void
llm_moe_ffn(llm_runtime *rt, const llm_moe *moe, const float *in, float *out, int n, int accumulate)
{
    llm_moe_scratch *s = rt->moe;
    int chunks = rt->n_threads * MOE_CHUNKS_PER_THREAD;
    moe_job j;

    memset(&j, 0, sizeof(j));
    j.rt = rt;
    j.moe = moe;
    j.s = s;
    j.in = in;
    j.out = out;
    j.n = n;
    j.accumulate = accumulate;
    if (llm_wtype_info(moe->router.type)->quantized) quantize_rows(&j, in, (size_t) s->H, n, s->H, 0);
    llm_pool_run(rt->pool, task_router, &j, chunks);
    run_tokens(&j, task_route);
    group(&j);
    if (any_quantized(moe, 0, s)) quantize_rows(&j, s->xg, (size_t) s->H, n * s->KS, s->H, 0);
    j.down = 0;
    llm_pool_run(rt->pool, task_experts, &j, chunks);
    if (any_quantized(moe, 1, s)) {
        /* each expert's rows as wide as its down matrix reads them (the shared expert may be wider) */
        int a;
        for (a = 0; a < s->n_active; a++) {
            int e = s->active[a];
            quantize_rows(&j, s->g + (size_t) s->off[e] * s->I, (size_t) s->I, s->count[e],
                          expert(moe, s, e, 2)->cols, s->off[e]);
        }
    }
    j.down = 1;
    llm_pool_run(rt->pool, task_experts, &j, chunks);
    run_tokens(&j, task_combine);
}
