/*
 * Multi-head latent attention, absorbed (llm_mla.h has the computation).
 * The projections through o_proj run in llm_forward.c with the other
 * matrices; here are the per-token latent and rope steps and the per-head
 * products with kv_b_proj, whose head's rows are widened to f32 once per
 * chunk into the thread's scratch and applied to every token of the chunk
 * with the f32 matmul kernel.
 */
#include <string.h>

#include "engine/llm_mla.h"
#include "engine/llm_runtime_impl.h"

size_t
llm_mla_row_floats(const llm_model *m)
{
    if (m->mla_kv_rank == 0) return 0;
    return LLM_MLA_O(m) + (size_t) m->info.n_heads * m->mla_v;
}

size_t
llm_mla_thread_floats(const llm_model *m)
{
    /* W_UK_h^T and a row being widened, or W_UV_h */
    int rows = m->mla_nope + 1 > m->mla_v ? m->mla_nope + 1 : m->mla_v;

    return m->mla_kv_rank == 0 ? 0 : (size_t) rows * m->mla_kv_rank;
}

void
llm_mla_rope(llm_runtime *rt, const llm_layer *L, int t)
{
    const llm_model *m = rt->m;
    const llm_kernels *k = rt->k;
    int R = m->mla_kv_rank, half = m->mla_rope / 2, qk = m->mla_nope + m->mla_rope, h;
    int pos = rt->tpos[t];
    const float *c = rt->rope_cos[L->rope] + (size_t) pos * half, *sn = rt->rope_sin[L->rope] + (size_t) pos * half;
    const float *qf = rt->mla + (size_t) t * rt->mla_row + LLM_MLA_QF(m);
    void (*rot)(float *, const float *, const float *, int) = m->rope_pairs ? k->rope_pairs : k->rope;
    float *kv = rt->kn + (size_t) t * rt->kv_dim;

    k->rmsnorm(kv, kv, L->kv_a_norm, R, LLM_MLA_NORM_EPS);
    rot(kv + R, c, sn, half);
    for (h = 0; h < m->info.n_heads; h++) {
        float *q = rt->q + (size_t) t * rt->q_dim + (size_t) h * m->info.head_dim + R;
        memcpy(q, qf + (size_t) h * qk + m->mla_nope, (size_t) m->mla_rope * sizeof(float));
        rot(q, c, sn, half);
    }
}

/* rows [r0, r0 + n) of kv_b_proj widened into w, [n][kv_rank] */
static void
widen(const llm_runtime *rt, const llm_mat *kv_b, int r0, int n, float *w)
{
    size_t rb = llm_wtype_row_bytes(kv_b->type, kv_b->cols);
    int i;

    for (i = 0; i < n; i++) {
        rt->k->to_f32(w + (size_t) i * kv_b->cols, (const char *) kv_b->data + (size_t) (r0 + i) * rb, kv_b->type,
                      kv_b->cols);
    }
}

void
llm_mla_absorb(llm_runtime *rt, const llm_layer *L, int n, int h0, int h1, float *scratch)
{
    const llm_model *m = rt->m;
    int R = m->mla_kv_rank, dn = m->mla_nope, qk = dn + m->mla_rope, h, i, j;
    float *wt = scratch, *row = scratch + (size_t) R * dn;

    for (h = h0; h < h1; h++) {
        /* W_UK_h^T as [kv_rank][nope]: the head's rows widened one by one, transposed into wt */
        for (i = 0; i < dn; i++) {
            widen(rt, &L->kv_b, h * (dn + m->mla_v) + i, 1, row);
            for (j = 0; j < R; j++) wt[(size_t) j * dn + i] = row[j];
        }
        rt->k->matmul[LLM_WT_F32](rt->q + (size_t) h * m->info.head_dim, (size_t) rt->q_dim,
                                  rt->mla + LLM_MLA_QF(m) + (size_t) h * qk, rt->mla_row, wt, dn, 0, R, n, 0);
    }
}

void
llm_mla_values(llm_runtime *rt, const llm_layer *L, int n, int h0, int h1, float *scratch)
{
    const llm_model *m = rt->m;
    int R = m->mla_kv_rank, dn = m->mla_nope, dv = m->mla_v, h;

    for (h = h0; h < h1; h++) {
        widen(rt, &L->kv_b, h * (dn + dv) + dn, dv, scratch);
        rt->k->matmul[LLM_WT_F32](rt->mla + LLM_MLA_O(m) + (size_t) h * dv, rt->mla_row,
                                  rt->att + (size_t) h * m->info.head_dim, (size_t) rt->q_dim, scratch, R, 0, dv,
                                  n, 0);
    }
}
