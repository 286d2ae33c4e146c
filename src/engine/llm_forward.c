/*
 * Batched forward pass.  The tokens of all items are laid out one after the
 * other and processed in chunks of up to LLM_CHUNK tokens; inside a chunk every
 * weight matrix is read once for all tokens (rows split across the compute
 * threads), and attention (llm_attention.c) runs tiled over the slots' KV
 * blocks through their block tables.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/llm_attention.h"
#include "engine/llm_deltanet.h"
#include "engine/llm_moe.h"
#include "engine/llm_runtime_impl.h"
#include "kernels/cpu/llm_quant.h"

typedef struct {
    llm_runtime     *rt;
    const llm_layer *L;
    int              n;          /* tokens in the chunk */
    const float     *in;         /* lm head: gathered rows; norm: weight */
    float           *out;
    const float     *qin;        /* activation rows to quantize into rt->xq ... */
    size_t           qld;        /* ... qld floats apart ... */
    int              qk;         /* ... of qk values */
    double           t0;         /* phase timing: when the current phase began */
} llm_step;

/* Pieces per parallel step: a few per thread so a descheduled thread costs little. */
#ifndef LLM_CHUNKS_PER_THREAD
#define LLM_CHUNKS_PER_THREAD 4
#endif
#define CHUNKS(rt) ((rt)->n_threads * LLM_CHUNKS_PER_THREAD)

/*
 * A step of at most STREAM_TOKENS tokens is bound by reading its weights, and
 * its threads end together only when the last pieces are small: whichever
 * thread finishes early idles for up to one piece, and 8 pieces of lm_head are
 * milliseconds each.  Such a step cuts a matrix into pieces of about
 * PIECE_BYTES instead (at least CHUNKS, at most one grain of rows each).
 * Larger batches are bound by arithmetic and keep CHUNKS.
 */
#define STREAM_TOKENS 16
#ifndef PIECE_BYTES
#define PIECE_BYTES (256 * 1024)
#endif

/* Rows that one piece of a matrix's rows comes in multiples of: whole register tiles (4 rows), whole
 * panels (llm_quant.h) for a panel type; the larger for matrices whose pieces must match (gate, up). */
static int
row_grain(const llm_mat *a, const llm_mat *b)
{
    return llm_wtype_info(a->type)->panel_rows || (b && llm_wtype_info(b->type)->panel_rows) ? LLM_PANEL_ROWS : 4;
}

/* Row range of chunk ith of nth, in multiples of grain rows. */
static void
split_rows(int rows, int grain, int ith, int nth, int *r0, int *r1)
{
    int blocks = (rows + grain - 1) / grain;
    int b0 = (int) ((long long) blocks * ith / nth), b1 = (int) ((long long) blocks * (ith + 1) / nth);
    *r0 = b0 * grain < rows ? b0 * grain : rows;
    *r1 = b1 * grain < rows ? b1 * grain : rows;
}

/* bytes of a matrix as stored (panels: whole panels) */
static size_t
mat_bytes(const llm_mat *w)
{
    if (llm_wtype_info(w->type)->panel_rows) return llm_panel_bytes(w->type, w->rows, w->cols);
    return llm_wtype_row_bytes(w->type, w->cols) * (size_t) w->rows;
}

/* Pieces of a parallel step over n tokens that reads bytes of weights, split by rows in grains of
 * grain: CHUNKS, or for a streaming step (STREAM_TOKENS) about PIECE_BYTES each. */
static int
pieces(const llm_runtime *rt, int n, size_t bytes, int rows, int grain)
{
    size_t want = bytes / PIECE_BYTES, most = (size_t) ((rows + grain - 1) / grain);

    if (n > STREAM_TOKENS || want < (size_t) CHUNKS(rt)) return CHUNKS(rt);
    if (want > most) want = most;
    if (want > LLM_POOL_MAX_CHUNKS) want = LLM_POOL_MAX_CHUNKS;
    return want < (size_t) CHUNKS(rt) ? CHUNKS(rt) : (int) want;
}

/*
 * Rows [r0, r1) of y = x W^T (+ bias) for the n tokens, pieces of grain rows
 * (0: row_grain of w alone).  Quantized weights
 * read the activations' int8 rows in rt->xq, which quantize_input filled
 * from x before this step.
 */
static void
matmul_part(const llm_runtime *rt, const llm_mat *w, int grain, float *y, size_t ldy, const float *x,
    size_t ldx, int n, const float *bias, int accumulate, int ith, int nth)
{
    const llm_kernels *k = rt->k;
    int r0, r1, t, r;

    split_rows(w->rows, grain > 0 ? grain : row_grain(w, NULL), ith, nth, &r0, &r1);
    if (r0 >= r1) return;
    if (llm_wtype_info(w->type)->quantized) {
        k->matmul_q[w->type](y, ldy, rt->xq, rt->ldq, w->data, w->cols, r0, r1, n, accumulate);
    } else {
        k->matmul[w->type](y, ldy, x, ldx, w->data, w->cols, r0, r1, n, accumulate);
    }
    if (bias) {
        for (t = 0; t < n; t++) {
            for (r = r0; r < r1; r++) y[(size_t) t * ldy + r] += bias[r];
        }
    }
}

static void
task_qkv(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden;

    /* gated attention: q_proj's rows go to qg, rope_and_store takes the queries out */
    if (rt->m->attn_gate) {
        matmul_part(rt, &s->L->wq, 0, rt->qg, (size_t) 2 * rt->q_dim, rt->xn, H, s->n, s->L->bq, 0, ith, nth);
    } else {
        matmul_part(rt, &s->L->wq, 0, rt->q, rt->q_dim, rt->xn, H, s->n, s->L->bq, 0, ith, nth);
    }
    matmul_part(rt, &s->L->wk, 0, rt->kn, rt->kv_dim, rt->xn, H, s->n, s->L->bk, 0, ith, nth);
    matmul_part(rt, &s->L->wv, 0, rt->vn, rt->kv_dim, rt->xn, H, s->n, s->L->bv, 0, ith, nth);
}

/*
 * Output projections add into the residual stream x directly, unless the
 * block output is normed (post-norm) or scaled first: then they write xn and
 * task_residual adds it.
 */
static int
direct_residual(const llm_runtime *rt, const float *post_norm)
{
    return post_norm == NULL && rt->m->residual_scale == 1.0f;
}

static void
task_o(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, direct = direct_residual(rt, s->L->attn_post_norm);

    matmul_part(rt, &s->L->wo, 0, direct ? rt->x : rt->xn, H, rt->att, rt->q_dim, s->n, s->L->bo,
                direct, ith, nth);
}

static void
task_gate_up(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, I = rt->m->info.intermediate, r0, r1, t;
    int grain = row_grain(&s->L->w_gate, &s->L->w_up);

    matmul_part(rt, &s->L->w_gate, grain, rt->gate, I, rt->xn, H, s->n, NULL, 0, ith, nth);
    matmul_part(rt, &s->L->w_up, grain, rt->up, I, rt->xn, H, s->n, NULL, 0, ith, nth);
    /* this thread wrote columns [r0, r1) of gate and up for every token */
    split_rows(I, grain, ith, nth, &r0, &r1);
    for (t = 0; t < s->n && r1 > r0; t++) {
        float *g = rt->gate + (size_t) t * I + r0;
        const float *u = rt->up + (size_t) t * I + r0;
        if (rt->m->act == LLM_ACT_GELU_TANH) {
            rt->k->gelu_tanh_mul(g, u, r1 - r0);
        } else {
            rt->k->silu_mul(g, u, r1 - r0);
        }
    }
}

static void
task_down(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, I = rt->m->info.intermediate;

    int direct = direct_residual(rt, s->L->ffn_post_norm);

    matmul_part(rt, &s->L->w_down, 0, direct ? rt->x : rt->xn, H, rt->gate, I, s->n, NULL, direct, ith, nth);
}

/* logits, then Granite's logits_scaling and Gemma 2's final soft-capping on this thread's rows */
static void
task_lm_head(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    const llm_model *m = rt->m;
    const llm_model_info *in = &m->info;
    int r0, r1, t, grain = row_grain(&m->lm_head, NULL);

    matmul_part(rt, &m->lm_head, grain, s->out, (size_t) in->n_vocab, s->in, (size_t) in->hidden,
                s->n, NULL, 0, ith, nth);
    if (m->logit_scale == 1.0f && m->final_softcap == 0) return;
    split_rows(in->n_vocab, grain, ith, nth, &r0, &r1);
    for (t = 0; t < s->n && r1 > r0; t++) {
        float *y = s->out + (size_t) t * in->n_vocab + r0;
        if (m->logit_scale != 1.0f) rt->k->scale(y, m->logit_scale, r1 - r0);
        if (m->final_softcap > 0) rt->k->softcap(y, r1 - r0, m->final_softcap);
    }
}

/* chunk token t's row x of keys or values into a cache (slab kv) in the cache's type */
static void
store_row(llm_runtime *rt, void *cache, int kv, int t, const float *x)
{
    size_t at = llm_kv_index(rt, kv, rt->tslot[t], rt->tpos[t]);

    if (rt->kv_wt == LLM_WT_Q8_0) {
        /* ggml's rounding: d = max|x| / 127 per 32 values, q = round(x / d) */
        llm_quant_row(LLM_WT_Q8_0, x, (char *) cache + llm_kv_bytes(rt, at), rt->kv_dim);
    } else if (rt->kv_wt == LLM_WT_F16) {
        rt->k->f32_to_f16((uint16_t *) cache + at, x, rt->kv_dim);
    } else {
        memcpy((float *) cache + at, x, (size_t) rt->kv_dim * sizeof(float));
    }
}

/* q/k RMSNorm (per head or over all heads), RoPE, then K/V into the cache (slab kv), for tokens [t0, t1). */
static void
rope_and_store(llm_runtime *rt, const llm_layer *L, int kv, int t0, int t1)
{
    const llm_model *m = rt->m;
    const llm_model_info *in = &m->info;
    const llm_kernels *k = rt->k;
    int hd = in->head_dim, half = m->rot_dim / 2, t, h;
    float eps = (float) in->rms_norm_eps;
    int per_head = m->qk_norm == LLM_QK_NORM_HEAD;
    void (*rot)(float *, const float *, const float *, int) = m->rope_pairs ? k->rope_pairs : k->rope;

    for (t = t0; t < t1; t++) {
        int pos = rt->tpos[t];
        float *q = rt->q + (size_t) t * rt->q_dim, *kk = rt->kn + (size_t) t * rt->kv_dim;

        if (m->attn_gate) {
            /* q_proj gave each head [query (head_dim); gate (head_dim)] */
            for (h = 0; h < in->n_heads; h++) {
                memcpy(q + h * hd, rt->qg + (size_t) t * 2 * rt->q_dim + (size_t) h * 2 * hd, (size_t) hd * sizeof(float));
            }
        }
        if (m->qk_norm == LLM_QK_NORM_ALL) {
            k->rmsnorm(q, q, L->q_norm, rt->q_dim, eps);
            k->rmsnorm(kk, kk, L->k_norm, rt->kv_dim, eps);
        }
        for (h = 0; h < in->n_heads; h++) {
            if (per_head) k->rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, eps);
        }
        for (h = 0; h < in->n_kv_heads; h++) {
            if (per_head) k->rmsnorm(kk + h * hd, kk + h * hd, L->k_norm, hd, eps);
        }
        if (L->rope >= 0) {
            /* partial rotary: the first rot_dim values of each head turn, the rest pass */
            const float *c = rt->rope_cos[L->rope] + (size_t) pos * half;
            const float *sn = rt->rope_sin[L->rope] + (size_t) pos * half;
            for (h = 0; h < in->n_heads; h++) rot(q + h * hd, c, sn, half);
            for (h = 0; h < in->n_kv_heads; h++) rot(kk + h * hd, c, sn, half);
        }
        store_row(rt, rt->k_cache, kv, t, kk);
        store_row(rt, rt->v_cache, kv, t, rt->vn + (size_t) t * rt->kv_dim);
    }
}

static void
token_range(int n, int ith, int nth, int *t0, int *t1)
{
    *t0 = (int) ((long long) n * ith / nth);
    *t1 = (int) ((long long) n * (ith + 1) / nth);
}

/* short-convolution block (LLM_FAM_LFM2): [b; c; u] = conv_in xn, one row of 3 * hidden per token */
static void
task_conv_in(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden;

    matmul_part(rt, &s->L->conv_in, 0, rt->conv, (size_t) 3 * H, rt->xn, H, s->n, s->L->conv_in_b, 0, ith, nth);
}

/*
 * The causal depthwise convolution of b * u over each token's sequence, for
 * this piece's channels, token after token: each reads its slot's last
 * conv_kernel - 1 values ([kernel - 1][hidden] from the layer's state_off in
 * the slot's state, oldest first) and leaves itself as the newest.  A slot's
 * tokens come in position order, so the state follows the positions.  The
 * result c * conv is written over b, where task_conv_out reads it.
 */
static void
task_conv(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    const llm_layer *L = s->L;
    int H = rt->m->info.hidden, K = rt->m->conv_kernel, c0, c1, t, c, k;

    token_range(H, ith, nth, &c0, &c1);
    for (t = 0; t < s->n; t++) {
        float *row = rt->conv + (size_t) t * 3 * H;
        float *st = rt->state + (size_t) rt->tslot[t] * rt->m->state_floats + L->state_off;
        for (c = c0; c < c1; c++) {
            const float *w = L->conv_w + (size_t) c * K;
            float v = row[c] * row[2 * H + c], y = L->conv_b ? L->conv_b[c] : 0.0f;
            for (k = 0; k < K - 1; k++) y += w[k] * st[(size_t) k * H + c];
            y += w[K - 1] * v;
            for (k = 0; k + 1 < K - 1; k++) st[(size_t) k * H + c] = st[(size_t) (k + 1) * H + c];
            if (K > 1) st[(size_t) (K - 2) * H + c] = v;
            row[c] = row[H + c] * y;
        }
    }
}

static void
task_conv_out(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, direct = direct_residual(rt, s->L->attn_post_norm);

    matmul_part(rt, &s->L->conv_out, 0, direct ? rt->x : rt->xn, H, rt->conv, (size_t) 3 * H, s->n,
                s->L->conv_out_b, direct, ith, nth);
}

/* gated attention: each head's output times sigmoid of its gate, value by value */
static void
task_attn_gate(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int hd = rt->m->info.head_dim, t0, t1, t, h, i;

    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        float *a = rt->att + (size_t) t * rt->q_dim;
        const float *g = rt->qg + (size_t) t * 2 * rt->q_dim;
        for (h = 0; h < rt->m->info.n_heads; h++) {
            for (i = 0; i < hd; i++) a[h * hd + i] /= 1.0f + expf(-g[(size_t) h * 2 * hd + hd + i]);
        }
    }
}

static void
task_rope(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    int t0, t1;
    token_range(s->n, ith, nth, &t0, &t1);
    rope_and_store(s->rt, s->L, s->L->kv, t0, t1);
}

/* xn = rmsnorm(x) with the weight in s->in; a copy of x where the block has no pre-norm (OLMo 2) */
static void
task_norm(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, t0, t1, t;
    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        if (s->in) {
            rt->k->rmsnorm(rt->xn + (size_t) t * H, rt->x + (size_t) t * H, s->in, H, (float) rt->m->info.rms_norm_eps);
        } else {
            memcpy(rt->xn + (size_t) t * H, rt->x + (size_t) t * H, (size_t) H * sizeof(float));
        }
    }
}

/* x += residual_scale * post_norm(xn), post_norm (in s->in) when the block has one */
static void
task_residual(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, t0, t1, t;
    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        float *o = rt->xn + (size_t) t * H;
        if (s->in) rt->k->rmsnorm(o, o, s->in, H, (float) rt->m->info.rms_norm_eps);
        rt->k->axpy(rt->x + (size_t) t * H, rt->m->residual_scale, o, H);
    }
}

/* Phase timing (llm_runtime_time_phases): a start time, 0 when not timed ... */
static double
phase_start(const llm_runtime *rt)
{
    struct timespec ts;

    if (rt->phases == NULL) return 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ... and the seconds since it added to phase ph; returns the new start. */
static double
phase_end(llm_runtime *rt, llm_phase ph, double t0)
{
    double t = phase_start(rt);

    if (rt->phases) rt->phases->seconds[ph] += t - t0;
    return t;
}

/* Small per-token steps go to the pool only when there are enough tokens to share. */
#define PAR_TOKENS 8

static void
run_tokens(llm_runtime *rt, llm_pool_fn fn, llm_step *s)
{
    if (s->n >= PAR_TOKENS) {
        llm_pool_run(rt->pool, fn, s, rt->n_threads * 2);
    } else {
        fn(s, 0, 1, 0);
    }
}

static void
task_quantize(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int t0, t1, t;
    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        rt->k->quantize_act(rt->xq + (size_t) t * rt->ldq, s->qin + (size_t) t * s->qld, s->qk);
    }
}

/* int8 rows of x (n rows of k values, ld apart) for the matrices that read them, when any is quantized */
static void
quantize_input(llm_runtime *rt, llm_step *s, const float *x, size_t ld, int k, const llm_mat *a,
    const llm_mat *b, const llm_mat *c)
{
    if (!llm_wtype_info(a->type)->quantized && !(b && llm_wtype_info(b->type)->quantized)
        && !(c && llm_wtype_info(c->type)->quantized))
    {
        return;
    }
    s->qin = x;
    s->qld = ld;
    s->qk = k;
    run_tokens(rt, task_quantize, s);
}

/* x = the embedding rows of the chunk's tokens (times the model's embedding scale) */
static void
embed(llm_runtime *rt, int n)
{
    const llm_model *m = rt->m;
    const llm_mat *e = &m->embed;
    int H = m->info.hidden, t;

    for (t = 0; t < n; t++) {
        float *x = rt->x + (size_t) t * H;
        if (llm_wtype_info(e->type)->panel_rows) {      /* tied to a repacked output matrix */
            llm_panel_dequant_row(e->type, e->data, e->cols, rt->tok[t], x);
        } else {
            rt->k->to_f32(x, (const char *) e->data + (size_t) rt->tok[t] * llm_wtype_row_bytes(e->type, e->cols),
                          e->type, H);
        }
        if (m->embed_scale != 1.0f) rt->k->scale(x, m->embed_scale, H);
    }
}

/* xn = norm(x), with the block's norm weight */
static void
norm(llm_runtime *rt, llm_step *s, const float *weight)
{
    s->in = weight;
    run_tokens(rt, task_norm, s);
    s->t0 = phase_end(rt, LLM_PHASE_NORM, s->t0);
}

/*
 * x += residual_scale * post_norm(out), where out is the block's output in xn.  A block without a
 * post-norm or scale has already added its output projection into x (direct_residual).
 */
static void
residual(llm_runtime *rt, llm_step *s, const float *post_norm)
{
    if (direct_residual(rt, post_norm)) return;
    s->in = post_norm;
    run_tokens(rt, task_residual, s);
    s->t0 = phase_end(rt, LLM_PHASE_NORM, s->t0);
}

/* out = W_o attention(rope(W_q xn), rope(W_k xn), W_v xn) over the slots' KV caches */
static void
attention(llm_runtime *rt, llm_step *s, int l)
{
    const llm_layer *L = s->L;
    int H = rt->m->info.hidden;

    quantize_input(rt, s, rt->xn, (size_t) H, H, &L->wq, &L->wk, &L->wv);
    s->t0 = phase_end(rt, LLM_PHASE_QUANTIZE, s->t0);
    llm_pool_run(rt->pool, task_qkv, s,
                 pieces(rt, s->n, mat_bytes(&L->wq) + mat_bytes(&L->wk) + mat_bytes(&L->wv), L->wq.rows, row_grain(&L->wq, NULL)));
    s->t0 = phase_end(rt, LLM_PHASE_QKV, s->t0);
    run_tokens(rt, task_rope, s);
    s->t0 = phase_end(rt, LLM_PHASE_ROPE, s->t0);
    llm_attention(rt, l, s->n);
    if (rt->m->attn_gate) run_tokens(rt, task_attn_gate, s);
    s->t0 = phase_end(rt, LLM_PHASE_ATTENTION, s->t0);
    quantize_input(rt, s, rt->att, (size_t) rt->q_dim, rt->q_dim, &L->wo, NULL, NULL);
    s->t0 = phase_end(rt, LLM_PHASE_QUANTIZE, s->t0);
    llm_pool_run(rt->pool, task_o, s, pieces(rt, s->n, mat_bytes(&L->wo), L->wo.rows, row_grain(&L->wo, NULL)));
    s->t0 = phase_end(rt, LLM_PHASE_O, s->t0);
}

/* latent attention (llm_mla.h): the query LoRA's first half (or q_proj) and kv_a_proj, from xn */
static void
task_mla_in(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    const llm_layer *L = s->L;
    int H = rt->m->info.hidden;

    if (L->wq_a.data) {
        matmul_part(rt, &L->wq_a, 0, rt->mla, rt->mla_row, rt->xn, H, s->n, L->bq_a, 0, ith, nth);
    } else {
        matmul_part(rt, &L->wq, 0, rt->mla + LLM_MLA_QF(rt->m), rt->mla_row, rt->xn, H, s->n, NULL, 0, ith, nth);
    }
    matmul_part(rt, &L->wk, 0, rt->kn, rt->kv_dim, rt->xn, H, s->n, L->bk, 0, ith, nth);
}

static void
task_mla_qnorm(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int t0, t1, t;

    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        float *qa = rt->mla + (size_t) t * rt->mla_row;
        rt->k->rmsnorm(qa, qa, s->L->q_a_norm, rt->m->mla_q_rank, LLM_MLA_NORM_EPS);
    }
}

static void
task_mla_qb(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;

    matmul_part(rt, &s->L->wq, 0, rt->mla + LLM_MLA_QF(rt->m), rt->mla_row, rt->mla, rt->mla_row, s->n, NULL, 0,
                ith, nth);
}

/* each token's latent and rope key into the cache (one row: the values are in it), its rope query */
static void
task_mla_rope(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int t0, t1, t;

    token_range(s->n, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        llm_mla_rope(rt, s->L, t);
        store_row(rt, rt->k_cache, s->L->kv, t, rt->kn + (size_t) t * rt->kv_dim);
    }
}

static void
task_mla_absorb(void *arg, int ith, int nth, int thread)
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int h0, h1;

    token_range(rt->m->info.n_heads, ith, nth, &h0, &h1);
    llm_mla_absorb(rt, s->L, s->n, h0, h1, rt->mla_w + (size_t) thread * rt->mla_wf);
}

static void
task_mla_values(void *arg, int ith, int nth, int thread)
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int h0, h1;

    token_range(rt->m->info.n_heads, ith, nth, &h0, &h1);
    llm_mla_values(rt, s->L, s->n, h0, h1, rt->mla_w + (size_t) thread * rt->mla_wf);
}

static void
task_mla_o(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    llm_step *s = arg;
    llm_runtime *rt = s->rt;
    int H = rt->m->info.hidden, direct = direct_residual(rt, s->L->attn_post_norm);

    matmul_part(rt, &s->L->wo, 0, direct ? rt->x : rt->xn, H, rt->mla + LLM_MLA_O(rt->m), rt->mla_row, s->n,
                s->L->bo, direct, ith, nth);
}

/* DeepSeek-V3's multi-head latent attention, absorbed (llm_mla.h): out = W_o [W_UV_h attention_h] */
static void
latent_attention(llm_runtime *rt, llm_step *s, int l)
{
    const llm_model *m = rt->m;
    const llm_layer *L = s->L;
    int H = m->info.hidden, heads = m->info.n_heads < CHUNKS(rt) ? m->info.n_heads : CHUNKS(rt);

    quantize_input(rt, s, rt->xn, (size_t) H, H, L->wq_a.data ? &L->wq_a : &L->wq, &L->wk, NULL);
    llm_pool_run(rt->pool, task_mla_in, s, CHUNKS(rt));
    if (L->wq_a.data) {
        run_tokens(rt, task_mla_qnorm, s);
        quantize_input(rt, s, rt->mla, rt->mla_row, m->mla_q_rank, &L->wq, NULL, NULL);
        llm_pool_run(rt->pool, task_mla_qb, s, CHUNKS(rt));
    }
    s->t0 = phase_end(rt, LLM_PHASE_QKV, s->t0);
    run_tokens(rt, task_mla_rope, s);
    llm_pool_run(rt->pool, task_mla_absorb, s, heads);
    s->t0 = phase_end(rt, LLM_PHASE_ROPE, s->t0);
    llm_attention(rt, l, s->n);
    llm_pool_run(rt->pool, task_mla_values, s, heads);
    s->t0 = phase_end(rt, LLM_PHASE_ATTENTION, s->t0);
    quantize_input(rt, s, rt->mla + LLM_MLA_O(m), rt->mla_row, m->info.n_heads * m->mla_v, &L->wo, NULL, NULL);
    llm_pool_run(rt->pool, task_mla_o, s, CHUNKS(rt));
    s->t0 = phase_end(rt, LLM_PHASE_O, s->t0);
}

/* LFM2's short convolution in attention's place: out = W_out conv(W_in xn) */
static void
short_conv(llm_runtime *rt, llm_step *s)
{
    int H = rt->m->info.hidden;

    quantize_input(rt, s, rt->xn, (size_t) H, H, &s->L->conv_in, NULL, NULL);
    llm_pool_run(rt->pool, task_conv_in, s, CHUNKS(rt));
    run_tokens(rt, task_conv, s);
    quantize_input(rt, s, rt->conv, (size_t) 3 * H, H, &s->L->conv_out, NULL, NULL);
    llm_pool_run(rt->pool, task_conv_out, s, CHUNKS(rt));
    s->t0 = phase_end(rt, LLM_PHASE_CONV, s->t0);
}

/* out = W_down (act(W_gate xn) * W_up xn), or the mixture of experts' sum of such */
static void
ffn(llm_runtime *rt, llm_step *s)
{
    const llm_layer *L = s->L;
    int H = rt->m->info.hidden, I = rt->m->info.intermediate;

    if (L->moe) {
        int direct = direct_residual(rt, L->ffn_post_norm);
        llm_moe_ffn(rt, L->moe, rt->xn, direct ? rt->x : rt->xn, s->n, direct);
        s->t0 = phase_end(rt, LLM_PHASE_MOE, s->t0);
        return;
    }
    quantize_input(rt, s, rt->xn, (size_t) H, H, &L->w_gate, &L->w_up, NULL);
    s->t0 = phase_end(rt, LLM_PHASE_QUANTIZE, s->t0);
    llm_pool_run(rt->pool, task_gate_up, s,
                 pieces(rt, s->n, mat_bytes(&L->w_gate) + mat_bytes(&L->w_up), I, row_grain(&L->w_gate, &L->w_up)));
    s->t0 = phase_end(rt, LLM_PHASE_GATE_UP, s->t0);
    quantize_input(rt, s, rt->gate, (size_t) I, I, &L->w_down, NULL, NULL);
    s->t0 = phase_end(rt, LLM_PHASE_QUANTIZE, s->t0);
    llm_pool_run(rt->pool, task_down, s, pieces(rt, s->n, mat_bytes(&L->w_down), H, row_grain(&L->w_down, NULL)));
    s->t0 = phase_end(rt, LLM_PHASE_DOWN, s->t0);
}

/* The decoder blocks over the chunk's n tokens: the residual stream x through every layer. */
static void
run_layers(llm_runtime *rt, int n)
{
    const llm_model *m = rt->m;
    int l;
    llm_step s;

    memset(&s, 0, sizeof(s));
    s.rt = rt;
    s.n = n;
    s.t0 = phase_start(rt);
    embed(rt, n);
    s.t0 = phase_end(rt, LLM_PHASE_EMBED, s.t0);
    for (l = 0; l < m->info.n_layers; l++) {
        const llm_layer *L = s.L = &m->layers[l];

        /* x = x + attention(norm(x)) */
        norm(rt, &s, L->attn_norm);
        if (L->conv) {
            short_conv(rt, &s);
        } else if (L->dn) {
            /* Gated DeltaNet (llm_deltanet.h), timed with the other recurrent blocks */
            int direct = direct_residual(rt, L->attn_post_norm);
            llm_deltanet_block(rt, L, n, direct ? rt->x : rt->xn, direct);
            s.t0 = phase_end(rt, LLM_PHASE_CONV, s.t0);
        } else if (m->mla_kv_rank) {
            latent_attention(rt, &s, l);
        } else {
            attention(rt, &s, l);
        }
        residual(rt, &s, L->attn_post_norm);

        /* x = x + ffn(norm(x)) */
        norm(rt, &s, L->ffn_norm);
        ffn(rt, &s);
        residual(rt, &s, L->ffn_post_norm);
    }
}

/*
 * The chunk's outputs from the final norm of x: its items' last want_logits tokens into the logit
 * rows from first_row on (logits = lm_head(norm(x))), and every token of an embedding item summed
 * into its embedding row.  Returns the logit rows written.
 */
static int
output(llm_runtime *rt, const llm_batch_item *items, const int *item_of, int n, int first_row)
{
    const llm_model_info *in = &rt->m->info;
    int H = in->hidden, t, cnt = 0;
    float eps = (float) in->rms_norm_eps;
    llm_step s;

    for (t = 0; t < n; t++) {
        const llm_batch_item *it = &items[item_of[t]];
        int tail = rt->tpos[t] >= rt->seqs[it->slot].len + it->n_tokens - it->want_logits;
        float *xr = rt->x + (size_t) t * H;
        if (tail) {
            rt->k->rmsnorm(rt->rows + (size_t) (first_row + cnt) * H, xr, rt->m->final_norm, H, eps);
            cnt++;
        }
        if (it->want_embedding) {
            rt->k->rmsnorm(rt->xn + (size_t) t * H, xr, rt->m->final_norm, H, eps);
            rt->k->axpy(rt->emb + (size_t) rt->emb_row[item_of[t]] * H, 1.0f, rt->xn + (size_t) t * H, H);
        }
    }
    if (cnt > 0) {
        double t0 = phase_start(rt);
        memset(&s, 0, sizeof(s));
        s.rt = rt;
        s.n = cnt;
        s.in = rt->rows + (size_t) first_row * H;
        s.out = rt->logits + (size_t) first_row * in->n_vocab;
        quantize_input(rt, &s, s.in, (size_t) H, H, &rt->m->lm_head, NULL, NULL);
        llm_pool_run(rt->pool, task_lm_head, &s, pieces(rt, cnt, mat_bytes(&rt->m->lm_head), in->n_vocab,
                                                         row_grain(&rt->m->lm_head, NULL)));
        phase_end(rt, LLM_PHASE_LM_HEAD, t0);
    }
    return cnt;
}

/* Checks one item against its slot and the vocabulary: 0, or -1 with msg. */
static int
check_item(const llm_runtime *rt, const llm_batch_item *it, char *msg, size_t len)
{
    int j;

    if (it->n_tokens < 0 || (it->n_tokens > 0 && it->tokens == NULL)
        || (it->n_tokens == 0 && (it->want_logits || it->want_embedding)))
    {
        snprintf(msg, len, "no tokens");
        return -1;
    }
    if (it->want_logits < 0 || it->want_logits > it->n_tokens) {
        snprintf(msg, len, "logits of %d of its %d tokens", it->want_logits, it->n_tokens);
        return -1;
    }
    if (it->n_tokens > rt->n_ctx - rt->seqs[it->slot].len) {
        snprintf(msg, len, "%d + %d tokens exceed the context of %d",
                 rt->seqs[it->slot].len, it->n_tokens, rt->n_ctx);
        return -1;
    }
    for (j = 0; j < it->n_tokens; j++) {
        if (it->tokens[j] < 0 || it->tokens[j] >= rt->m->info.n_vocab) {
            snprintf(msg, len, "token id %d outside the vocabulary of %d",
                     (int) it->tokens[j], rt->m->info.n_vocab);
            return -1;
        }
    }
    return 0;
}

int
llm_forward(llm_runtime *rt, const llm_batch_item *items, int n_items, char *err, size_t errlen)
{
    const llm_model_info *in = &rt->m->info;
    int H = in->hidden, i, j, n, n_logits = 0, n_emb = 0, first_row, n_failed = 0, rows = 0;
    int item_of[LLM_CHUNK];

    rt->n_items = 0;
    if (n_items < 0 || n_items > rt->n_seq_max) {
        snprintf(err, errlen, "llm_forward: %d items for %d sequence slots", n_items, rt->n_seq_max);
        return -1;
    }
    for (i = 0; i < n_items; i++) {
        const llm_batch_item *it = &items[i];
        if (it->slot < 0 || it->slot >= rt->n_seq_max || !rt->seqs[it->slot].used) {
            snprintf(err, errlen, "llm_forward: item %d: slot %d is not open", i, it->slot);
            return -1;
        }
        for (j = 0; j < i; j++) {
            if (items[j].slot == it->slot) {
                snprintf(err, errlen, "llm_forward: slot %d appears twice", it->slot);
                return -1;
            }
        }
        rows += it->want_logits > 0 ? it->want_logits : 0;
    }
    if (rows > rt->logit_rows) {
        snprintf(err, errlen, "llm_forward: %d logit rows asked for, %d held", rows, rt->logit_rows);
        return -1;
    }
    /* per item: a bad one is left out, the others run */
    for (i = 0; i < n_items; i++) {
        char *msg = rt->item_err + (size_t) i * LLM_ITEM_ERRLEN;
        msg[0] = '\0';
        if (check_item(rt, &items[i], msg, LLM_ITEM_ERRLEN) != 0
            || llm_kv_seq_reserve(rt, items[i].slot, items[i].n_tokens, msg, LLM_ITEM_ERRLEN) != 0)
        {
            if (n_failed++ == 0) snprintf(err, errlen, "llm_forward: item %d: %s", i, msg);
        }
    }
    for (i = 0; i < n_items; i++) {
        int ran = rt->item_err[(size_t) i * LLM_ITEM_ERRLEN] == '\0';
        rt->logit_row[i] = ran && items[i].want_logits > 0 ? n_logits : -1;
        rt->n_logit[i] = rt->logit_row[i] >= 0 ? items[i].want_logits : 0;
        n_logits += rt->n_logit[i];
        rt->emb_row[i] = ran && items[i].want_embedding ? n_emb++ : -1;
        if (rt->emb_row[i] >= 0) memset(rt->emb + (size_t) rt->emb_row[i] * H, 0, (size_t) H * sizeof(float));
    }

    first_row = 0;
    n = 0;
    i = 0;
    j = 0;
    while (i < n_items) {
        /* fill a chunk */
        while (i < n_items && n < LLM_CHUNK) {
            if (j >= items[i].n_tokens || rt->item_err[(size_t) i * LLM_ITEM_ERRLEN]) {
                i++;
                j = 0;
                continue;
            }
            rt->tok[n] = items[i].tokens[j];
            rt->tslot[n] = items[i].slot;
            rt->tpos[n] = rt->seqs[items[i].slot].len + j;
            item_of[n] = i;
            n++;
            j++;
        }
        if (n == 0) break;
        run_layers(rt, n);
        first_row += output(rt, items, item_of, n, first_row);
        n = 0;
    }
    for (i = 0; i < n_items; i++) {
        if (rt->item_err[(size_t) i * LLM_ITEM_ERRLEN]) continue;
        llm_kv_seq_commit(rt, items[i].slot, items[i].tokens, items[i].n_tokens);
        if (rt->emb_row[i] >= 0) {
            rt->k->scale(rt->emb + (size_t) rt->emb_row[i] * H, 1.0f / (float) items[i].n_tokens, H);
        }
    }
    rt->n_items = n_items;
    return n_failed;
}

const float *
llm_forward_logits_at(const llm_runtime *rt, int item, int j)
{
    if (item < 0 || item >= rt->n_items || rt->logit_row[item] < 0 || j < 0 || j >= rt->n_logit[item]) {
        return NULL;
    }
    return rt->logits + (size_t) (rt->logit_row[item] + j) * rt->m->info.n_vocab;
}

const float *
llm_forward_logits(const llm_runtime *rt, int item)
{
    if (item < 0 || item >= rt->n_items || rt->logit_row[item] < 0) return NULL;
    return llm_forward_logits_at(rt, item, rt->n_logit[item] - 1);
}

const float *
llm_forward_embedding(const llm_runtime *rt, int item)
{
    if (item < 0 || item >= rt->n_items || rt->emb_row[item] < 0) return NULL;
    return rt->emb + (size_t) rt->emb_row[item] * rt->m->info.hidden;
}

const char *
llm_forward_item_error(const llm_runtime *rt, int item)
{
    const char *msg;

    if (item < 0 || item >= rt->n_items) return NULL;
    msg = rt->item_err + (size_t) item * LLM_ITEM_ERRLEN;
    return msg[0] ? msg : NULL;
}
