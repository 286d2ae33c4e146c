/*
 * Gated DeltaNet blocks (llm_deltanet.h has the computation and the state
 * layout).  Steps, each split across the pool: the input projections (rows
 * of the matrices), Qwen3-Next's per-key-head interleaving undone (tokens),
 * the convolution (channels, token after token), the delta rule and the
 * gated norm (value heads, token after token), the output projection (rows).
 * A chunk's tokens of one slot come in position order, so walking the tokens
 * in order advances each slot's state along its sequence.
 */
#include <math.h>
#include <string.h>

#include "engine/llm_deltanet.h"
#include "engine/llm_runtime_impl.h"
#include "kernels/cpu/llm_quant.h"

typedef struct {
    llm_runtime     *rt;
    const llm_layer *L;
    int              n;
    float           *out;
    int              accumulate;
    const float     *qsrc;       /* task_quantize: rows of qk values qld apart */
    size_t           qld;
    int              qk;
} dn_job;

/* per-token scratch row: raw projections [W], canonical [W] = qkv | z | b | a, output o [vd] */
typedef struct {
    int K, nk, nv, dk, dv, r, kd, vd, conv, W;
    size_t row;
} dn_shape;

#define DN_CHUNKS_PER_THREAD 4
#define DN_MAX_HEAD 1024        /* parse_deltanet's bound on dk */

static dn_shape
shape_of(const llm_model *m)
{
    dn_shape s;

    s.K = m->dn_kernel;
    s.nk = m->dn_k_heads;
    s.nv = m->dn_v_heads;
    s.dk = m->dn_k_dim;
    s.dv = m->dn_v_dim;
    s.r = s.nk > 0 ? s.nv / s.nk : 0;
    s.kd = s.nk * s.dk;
    s.vd = s.nv * s.dv;
    s.conv = 2 * s.kd + s.vd;
    s.W = s.conv + s.vd + 2 * s.nv;
    s.row = (size_t) 2 * s.W + (size_t) s.vd;
    return s;
}

int
llm_deltanet_conv_dim(const llm_model *m)
{
    return shape_of(m).conv;
}

size_t
llm_deltanet_state_floats(const llm_model *m)
{
    dn_shape s = shape_of(m);
    return (size_t) (s.K - 1) * s.conv + (size_t) s.nv * s.dk * s.dv;
}

size_t
llm_deltanet_thread_floats(const llm_model *m)
{
    dn_shape s = shape_of(m);
    size_t C = LLM_DN_CHUNK;

    /* A [C][C], Q, K, W [C][dk], U [C][dv], G, beta [C] */
    return m->dn_kernel > 0 ? C * C + 3 * C * (size_t) s.dk + C * (size_t) s.dv + 2 * C : 0;
}

size_t
llm_deltanet_row_floats(const llm_model *m)
{
    return m->dn_kernel > 0 ? shape_of(m).row : 0;
}

static void
split(int n, int grain, int ith, int nth, int *r0, int *r1)
{
    int blocks = (n + grain - 1) / grain;
    int b0 = (int) ((long long) blocks * ith / nth), b1 = (int) ((long long) blocks * (ith + 1) / nth);
    *r0 = b0 * grain < n ? b0 * grain : n;
    *r1 = b1 * grain < n ? b1 * grain : n;
}

/* this piece's rows of y = x W^T for the n tokens (x quantized into rt->xq when W is) */
static void
mat_piece(const llm_runtime *rt, const llm_mat *w, float *y, size_t ldy, const float *x, size_t ldx, int n,
    int accumulate, int ith, int nth)
{
    int grain = llm_wtype_info(w->type)->panel_rows ? LLM_PANEL_ROWS : 4, r0, r1;

    if (w->data == NULL) return;
    split(w->rows, grain, ith, nth, &r0, &r1);
    if (r0 >= r1) return;
    if (llm_wtype_info(w->type)->quantized) {
        rt->k->matmul_q[w->type](y, ldy, rt->xq, rt->ldq, w->data, w->cols, r0, r1, n, accumulate);
    } else {
        rt->k->matmul[w->type](y, ldy, x, ldx, w->data, w->cols, r0, r1, n, accumulate);
    }
}

static void
task_quantize(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    dn_job *j = arg;
    int t0, t1, t;

    split(j->n, 1, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        j->rt->k->quantize_act(j->rt->xq + (size_t) t * j->rt->ldq, j->qsrc + (size_t) t * j->qld, j->qk);
    }
}

static int
quantized(const llm_mat *w)
{
    return w->data != NULL && llm_wtype_info(w->type)->quantized;
}

/* int8 rows of x (n rows of k values, ld apart) in rt->xq for the quantized matrices that read x */
static void
quantize_rows(dn_job *j, const float *x, size_t ld, int k)
{
    j->qsrc = x;
    j->qld = ld;
    j->qk = k;
    llm_pool_run(j->rt->pool, task_quantize, j, j->rt->n_threads * 2);
}

/*
 * The input projections.  Qwen3.5's four write the canonical row (qkv | z |
 * b | a) directly; Qwen3-Next's two write the raw row (qkvz, then ba).
 */
static void
task_in(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    dn_job *j = arg;
    const llm_runtime *rt = j->rt;
    const llm_layer *L = j->L;
    dn_shape s = shape_of(rt->m);
    int H = rt->m->info.hidden;
    float *raw = rt->dn, *canon = rt->dn + s.W;

    if (L->dn_z.data == NULL) {
        mat_piece(rt, &L->dn_qkv, raw, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
        mat_piece(rt, &L->dn_b, raw + s.conv + s.vd, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
        return;
    }
    mat_piece(rt, &L->dn_qkv, canon, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
    mat_piece(rt, &L->dn_z, canon + s.conv, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
    mat_piece(rt, &L->dn_b, canon + s.conv + s.vd, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
    mat_piece(rt, &L->dn_a, canon + s.conv + s.vd + s.nv, s.row, rt->xn, (size_t) H, j->n, 0, ith, nth);
}

/*
 * Qwen3-Next's raw row into the canonical one: in_proj_qkvz gives per key
 * head g [q (dk); k (dk); v (r dv); z (r dv)], in_proj_ba per key head
 * [b (r); a (r)], its value heads being g r .. g r + r - 1.
 */
static void
task_gather(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    dn_job *j = arg;
    dn_shape s = shape_of(j->rt->m);
    int t0, t1, t, g, i;

    split(j->n, 1, ith, nth, &t0, &t1);
    for (t = t0; t < t1; t++) {
        const float *raw = j->rt->dn + (size_t) t * s.row, *ba = raw + s.conv + s.vd;
        float *c = j->rt->dn + (size_t) t * s.row + s.W;
        size_t rv = (size_t) s.r * s.dv, per = 2 * (size_t) s.dk + 2 * rv;
        for (g = 0; g < s.nk; g++) {
            const float *src = raw + g * per;
            memcpy(c + (size_t) g * s.dk, src, (size_t) s.dk * sizeof(float));
            memcpy(c + s.kd + (size_t) g * s.dk, src + s.dk, (size_t) s.dk * sizeof(float));
            memcpy(c + 2 * s.kd + g * rv, src + 2 * s.dk, rv * sizeof(float));
            memcpy(c + s.conv + g * rv, src + 2 * s.dk + rv, rv * sizeof(float));
            for (i = 0; i < s.r; i++) {
                c[s.conv + s.vd + g * s.r + i] = ba[g * 2 * s.r + i];
                c[s.conv + s.vd + s.nv + g * s.r + i] = ba[g * 2 * s.r + s.r + i];
            }
        }
    }
}

static float
silu(float x)
{
    return x / (1.0f + expf(-x));
}

/*
 * The causal depthwise convolution and SiLU of this piece's channels of
 * [q; k; v], token after token: the output overwrites the canonical input,
 * the input joins the slot's last K - 1 (the state's first part).
 */
static void
task_conv(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    dn_job *j = arg;
    const llm_runtime *rt = j->rt;
    const llm_layer *L = j->L;
    dn_shape s = shape_of(rt->m);
    int c0, c1, t, c, k, K = s.K;

    split(s.conv, 16, ith, nth, &c0, &c1);
    for (t = 0; t < j->n && c1 > c0; t++) {
        float *x = rt->dn + (size_t) t * s.row + s.W;
        float *st = rt->state + (size_t) rt->tslot[t] * rt->m->state_floats + L->state_off;
        for (c = c0; c < c1; c++) {
            const float *w = L->dn_conv_w + (size_t) c * K;
            float v = x[c], y = 0.0f;
            for (k = 0; k < K - 1; k++) y += w[k] * st[(size_t) k * s.conv + c];
            y += w[K - 1] * v;
            for (k = 0; k + 1 < K - 1; k++) st[(size_t) k * s.conv + c] = st[(size_t) (k + 1) * s.conv + c];
            if (K > 1) st[(size_t) (K - 2) * s.conv + c] = v;
            x[c] = silu(y);
        }
    }
}

/* x / sqrt(sum x^2 + 1e-6) (FLA's l2norm, as transformers) times scale, into y */
static void
l2norm(const llm_kernels *kk, float *y, const float *x, int n, float scale)
{
    float inv = scale / sqrtf(kk->dot(x, x, n) + 1e-6f);
    int i;

    for (i = 0; i < n; i++) y[i] = x[i] * inv;
}

/* torch's softplus (beta 1, threshold 20) */
static float
softplus(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

/* value head h's state of chunk token t's slot */
static float *
head_state(const llm_runtime *rt, const llm_layer *L, const dn_shape *s, int t, int h)
{
    return rt->state + (size_t) rt->tslot[t] * rt->m->state_floats + L->state_off + (size_t) (s->K - 1) * s->conv
           + (size_t) h * s->dk * s->dv;
}

/* token t's beta = sigmoid(b) and log-decay g = -exp(A_log) softplus(a + dt_bias) of value head h */
static void
gates(const dn_shape *s, const llm_layer *L, const float *c, int h, float *beta, float *g)
{
    *beta = 1.0f / (1.0f + expf(-c[s->conv + s->vd + h]));
    *g = -expf(L->dn_a_log[h]) * softplus(c[s->conv + s->vd + s->nv + h] + L->dn_dt_bias[h]);
}

/* the gated norm of value head h's output o: rmsnorm(o) * weight * silu(z) */
static void
gated_norm(const llm_runtime *rt, const llm_layer *L, const dn_shape *s, const float *c, int h, float *o)
{
    const float *z = c + s->conv + (size_t) h * s->dv;
    int i;

    rt->k->rmsnorm(o, o, L->dn_norm, s->dv, (float) rt->m->info.rms_norm_eps);
    for (i = 0; i < s->dv; i++) o[i] *= silu(z[i]);
}

/* The recurrent form for chunk token t, value head h: one token's update of S and its output. */
static void
rule_token(const llm_runtime *rt, const llm_layer *L, const dn_shape *s, int t, int h)
{
    const llm_kernels *kk = rt->k;
    const float *c = rt->dn + (size_t) t * s->row + s->W, *v = c + 2 * s->kd + (size_t) h * s->dv;
    float qn[DN_MAX_HEAD], kn[DN_MAX_HEAD], delta[DN_MAX_HEAD];
    float *S = head_state(rt, L, s, t, h), *o = rt->dn + (size_t) t * s->row + 2 * s->W + (size_t) h * s->dv;
    float beta, g, decay;
    int kh = h / s->r, i;

    gates(s, L, c, h, &beta, &g);
    decay = expf(g);
    l2norm(kk, qn, c + (size_t) kh * s->dk, s->dk, 1.0f / sqrtf((float) s->dk));
    l2norm(kk, kn, c + s->kd + (size_t) kh * s->dk, s->dk, 1.0f);
    /* delta = beta (v - (decay S)^T k) */
    memset(delta, 0, (size_t) s->dv * sizeof(float));
    for (i = 0; i < s->dk; i++) {
        kk->scale(S + (size_t) i * s->dv, decay, s->dv);
        kk->axpy(delta, kn[i], S + (size_t) i * s->dv, s->dv);
    }
    for (i = 0; i < s->dv; i++) delta[i] = beta * (v[i] - delta[i]);
    /* S += k delta^T, o = S^T q */
    memset(o, 0, (size_t) s->dv * sizeof(float));
    for (i = 0; i < s->dk; i++) {
        kk->axpy(S + (size_t) i * s->dv, kn[i], delta, s->dv);
        kk->axpy(o, qn[i], S + (size_t) i * s->dv, s->dv);
    }
    gated_norm(rt, L, s, c, h, o);
}

/*
 * The chunked (WY) form for value head h over chunk tokens t0 .. t0+n-1 of one
 * slot at consecutive positions (n <= LLM_DN_CHUNK), as transformers'
 * prefill computes it.  With G the cumulative log-decay inside the chunk,
 * K, Q the normed keys and queries:
 *   A[i][j] = -beta_i (K_i . K_j) e^(G_i - G_j) for j < i, solved by forward
 *   substitution into T = (I - A)^-1 (the rows of earlier tokens final first);
 *   U = T (beta v),  W = T (beta e^G K);
 *   v'_i = U_i - S^T W_i  (S the state before the chunk);
 *   o_i = e^(G_i) S^T Q_i + sum_{j<=i} (Q_i . K_j) e^(G_i - G_j) v'_j;
 *   S = e^(G_last) S + sum_j e^(G_last - G_j) K_j v'_j^T.
 * Every term is the recurrent form's, summed in another order.
 * scratch: llm_deltanet_thread_floats.
 */
static void
rule_chunk(const llm_runtime *rt, const llm_layer *L, const dn_shape *s, int t0, int n, int h, float *scratch)
{
    const llm_kernels *kk = rt->k;
    const int C = LLM_DN_CHUNK;
    float *A = scratch, *Q = A + (size_t) C * C, *K = Q + (size_t) C * s->dk, *W = K + (size_t) C * s->dk;
    float *U = W + (size_t) C * s->dk, *G = U + (size_t) C * s->dv, *B = G + C;
    float *S = head_state(rt, L, s, t0, h), qscale = 1.0f / sqrtf((float) s->dk), last;
    int kh = h / s->r, i, j, m;

    for (i = 0; i < n; i++) {
        const float *c = rt->dn + (size_t) (t0 + i) * s->row + s->W;
        float g;
        gates(s, L, c, h, &B[i], &g);
        G[i] = (i > 0 ? G[i - 1] : 0.0f) + g;
        l2norm(kk, Q + (size_t) i * s->dk, c + (size_t) kh * s->dk, s->dk, qscale);
        l2norm(kk, K + (size_t) i * s->dk, c + s->kd + (size_t) kh * s->dk, s->dk, 1.0f);
    }
    /* T, lower triangular with a unit diagonal, in A */
    for (i = 0; i < n; i++) {
        float *a = A + (size_t) i * C;
        for (j = 0; j < i; j++) {
            a[j] = -B[i] * kk->dot(K + (size_t) i * s->dk, K + (size_t) j * s->dk, s->dk) * expf(G[i] - G[j]);
        }
        /* row i + its combination of the (final) rows before it: a_j += sum_{j<m<i} a_m T[m][j] */
        for (j = 0; j < i; j++) {
            float add = 0.0f;
            for (m = j + 1; m < i; m++) add += a[m] * A[(size_t) m * C + j];
            a[j] += add;
        }
        a[i] = 1.0f;
    }
    /* U = T (beta v), W = T (beta e^G K) */
    for (i = 0; i < n; i++) {
        float *u = U + (size_t) i * s->dv, *w = W + (size_t) i * s->dk;
        memset(u, 0, (size_t) s->dv * sizeof(float));
        memset(w, 0, (size_t) s->dk * sizeof(float));
        for (j = 0; j <= i; j++) {
            const float *cj = rt->dn + (size_t) (t0 + j) * s->row + s->W;
            float tb = A[(size_t) i * C + j] * B[j];
            kk->axpy(u, tb, cj + 2 * s->kd + (size_t) h * s->dv, s->dv);
            kk->axpy(w, tb * expf(G[j]), K + (size_t) j * s->dk, s->dk);
        }
    }
    /* v' = U - W S (into U), the state's part of each output (S as it was before the chunk) */
    for (i = 0; i < n; i++) {
        float *u = U + (size_t) i * s->dv, *o = rt->dn + (size_t) (t0 + i) * s->row + 2 * s->W + (size_t) h * s->dv;
        const float *w = W + (size_t) i * s->dk, *q = Q + (size_t) i * s->dk;
        float eg = expf(G[i]);
        memset(o, 0, (size_t) s->dv * sizeof(float));
        for (m = 0; m < s->dk; m++) {
            kk->axpy(u, -w[m], S + (size_t) m * s->dv, s->dv);
            kk->axpy(o, eg * q[m], S + (size_t) m * s->dv, s->dv);
        }
    }
    /* the chunk's own part of each output, then the gated norm */
    for (i = 0; i < n; i++) {
        const float *q = Q + (size_t) i * s->dk;
        float *o = rt->dn + (size_t) (t0 + i) * s->row + 2 * s->W + (size_t) h * s->dv;
        for (j = 0; j <= i; j++) {
            kk->axpy(o, kk->dot(q, K + (size_t) j * s->dk, s->dk) * expf(G[i] - G[j]), U + (size_t) j * s->dv, s->dv);
        }
        gated_norm(rt, L, s, rt->dn + (size_t) (t0 + i) * s->row + s->W, h, o);
    }
    /* the state after the chunk */
    last = G[n - 1];
    for (m = 0; m < s->dk; m++) {
        float *Sm = S + (size_t) m * s->dv;
        kk->scale(Sm, expf(last), s->dv);
        for (j = 0; j < n; j++) kk->axpy(Sm, K[(size_t) j * s->dk + m] * expf(last - G[j]), U + (size_t) j * s->dv, s->dv);
    }
}

/*
 * The delta rule and the gated norm for this piece's value heads; o into the
 * rows' output parts.  A slot's run of consecutive positions in the chunk
 * (a prompt being read) goes in the chunked form, LLM_DN_CHUNK tokens at a
 * time; a run of one token (a decode step) in the recurrent form.
 */
static void
task_rule(void *arg, int ith, int nth, int thread)
{
    dn_job *j = arg;
    const llm_runtime *rt = j->rt;
    dn_shape s = shape_of(rt->m);
    float *scratch = rt->dn_w + (size_t) thread * llm_deltanet_thread_floats(rt->m);
    int h0, h1, t, e, h;

    split(s.nv, 1, ith, nth, &h0, &h1);
    for (t = 0; t < j->n && h1 > h0; t = e) {
        for (e = t + 1; e < j->n && e - t < LLM_DN_CHUNK && rt->tslot[e] == rt->tslot[t]
                        && rt->tpos[e] == rt->tpos[e - 1] + 1; e++) { }
        for (h = h0; h < h1; h++) {
            if (e - t == 1) {
                rule_token(rt, j->L, &s, t, h);
            } else {
                rule_chunk(rt, j->L, &s, t, e - t, h, scratch);
            }
        }
    }
}

static void
task_out(void *arg, int ith, int nth, int thread __attribute__((unused)))
{
    dn_job *j = arg;
    dn_shape s = shape_of(j->rt->m);

    mat_piece(j->rt, &j->L->dn_out, j->out, (size_t) j->rt->m->info.hidden, j->rt->dn + 2 * s.W, s.row, j->n,
              j->accumulate, ith, nth);
}

void
llm_deltanet_block(llm_runtime *rt, const llm_layer *L, int n, float *out, int accumulate)
{
    dn_shape s = shape_of(rt->m);
    int chunks = rt->n_threads * DN_CHUNKS_PER_THREAD;
    dn_job j;

    memset(&j, 0, sizeof(j));
    j.rt = rt;
    j.L = L;
    j.n = n;
    j.out = out;
    j.accumulate = accumulate;
    if (quantized(&L->dn_qkv) || quantized(&L->dn_z) || quantized(&L->dn_b) || quantized(&L->dn_a)) {
        quantize_rows(&j, rt->xn, (size_t) rt->m->info.hidden, rt->m->info.hidden);
    }
    llm_pool_run(rt->pool, task_in, &j, chunks);
    if (L->dn_z.data == NULL) llm_pool_run(rt->pool, task_gather, &j, rt->n_threads * 2);
    llm_pool_run(rt->pool, task_conv, &j, chunks);
    llm_pool_run(rt->pool, task_rule, &j, rt->n_threads * 2 < s.nv ? rt->n_threads * 2 : s.nv);
    if (quantized(&L->dn_out)) quantize_rows(&j, rt->dn + 2 * s.W, s.row, s.vd);
    llm_pool_run(rt->pool, task_out, &j, chunks);
}
