/* Internal layout of a runtime: KV cache, slots, scratch; shared by runtime and forward pass. */
#ifndef LLM_RUNTIME_IMPL_H
#define LLM_RUNTIME_IMPL_H

#include "engine/llm_engine.h"
#include "engine/llm_model_impl.h"
#include "engine/llm_moe.h"
#include "engine/llm_pool.h"
#include "kernels/cpu/llm_kernels.h"

/* Tokens per internal pass of the forward: bounds the scratch buffers. */
#define LLM_CHUNK 256

/* Room for one item's error message of the last forward. */
#define LLM_ITEM_ERRLEN 128

struct llm_runtime {
    const llm_model   *m;
    const llm_kernels *k;
    llm_pool          *pool;
    int                n_threads;
    int                n_ctx;
    int                n_seq_max;
    int                kv_dim;
    int                q_dim;

    void              *k_cache;     /* [layer][slot][n_ctx][kv_dim] of float or float16 */
    void              *v_cache;
    int                kv_f16;
    size_t             kv_bytes;
    int               *seq_len;
    unsigned char     *seq_used;

    float             *rope_cos[LLM_MAX_ROPE];   /* per table [n_ctx][rot_dim/2], attention scale folded in */
    float             *rope_sin[LLM_MAX_ROPE];

    /* per chunk */
    int32_t           *tok;
    int               *tslot, *tpos;
    float             *x, *xn, *q, *kn, *vn, *att, *gate, *up;
    float             *scores;      /* [n_threads][n_ctx] */
    llm_moe_scratch   *moe;         /* sparse MLP layers' buffers, NULL without experts */
    unsigned char     *xq;          /* int8 activation rows of a quantized matmul's input */
    size_t             ldq;         /* bytes between them (llm_qa_row_bytes of the widest input) */

    /* results of the last forward */
    int                logit_rows;  /* n_seq_max + LLM_VERIFY_ROWS */
    float             *rows;        /* [logit_rows][hidden] final-normed rows for logits */
    float             *logits;      /* [logit_rows][n_vocab] */
    float             *emb;         /* [n_seq_max][hidden] */
    int               *logit_row;   /* per item: its first logit row, -1 */
    int               *n_logit;     /* per item: its logit rows */
    int               *emb_row;     /* per item, -1 */
    char              *item_err;    /* [n_seq_max][LLM_ITEM_ERRLEN], "" = the item ran */
    int                n_items;
};

/* element index of (layer, slot, position) in a cache */
static inline size_t
llm_kv_index(const llm_runtime *rt, int layer, int slot, int pos)
{
    return (((size_t) layer * rt->n_seq_max + slot) * rt->n_ctx + pos) * rt->kv_dim;
}

#endif
