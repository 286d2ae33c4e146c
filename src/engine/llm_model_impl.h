/*
 * Internal layout of a loaded model, shared by the loader and the forward
 * pass.  Large matrices are used in place from the mmap'd files; small vectors
 * (norm weights, biases) are widened to f32 copies at load.
 */
#ifndef LLM_MODEL_IMPL_H
#define LLM_MODEL_IMPL_H

#include "engine/llm_engine.h"
#include "engine/llm_safetensors.h"
#include "kernels/cpu/llm_kernels.h"

typedef struct {
    const void *data;
    llm_wtype   type;
    int         rows;      /* output features */
    int         cols;      /* input features (contiguous) */
} llm_mat;

typedef struct {
    llm_mat  wq, wk, wv, wo, w_gate, w_up, w_down;
    float   *bq, *bk, *bv, *bo;              /* NULL when the model has none */
    float   *attn_norm, *ffn_norm;
    float   *q_norm, *k_norm;                /* per-head RMSNorm (Qwen3), else NULL */
} llm_layer;

typedef enum {
    LLM_ROPE_DEFAULT = 0,
    LLM_ROPE_LINEAR,
    LLM_ROPE_LLAMA3,
    LLM_ROPE_YARN
} llm_rope_kind;

typedef struct {
    llm_rope_kind kind;
    double theta;
    double factor;
    double low_freq_factor, high_freq_factor;     /* llama3 */
    double original_max_pos;                      /* llama3, yarn */
    double beta_fast, beta_slow;                  /* yarn */
    double attention_factor;                      /* yarn: scale of cos/sin */
} llm_rope_cfg;

struct llm_model {
    llm_model_info info;
    char           architecture[64];
    char           model_type[32];
    llm_rope_cfg   rope;
    int            qkv_bias;   /* q/k/v projections have biases */
    int            o_bias;     /* o projection has a bias (Llama attention_bias) */
    int            qk_norm;    /* per-head q/k RMSNorm (Qwen3) */
    llm_mat        embed;
    llm_mat        lm_head;
    float         *final_norm;
    llm_layer     *layers;
    llm_st_file   *files;
    int            n_files;
    float        **owned;      /* f32 copies made at load */
    int            n_owned, cap_owned;
};

/* config.json + generation_config.json into m (no tensors); -1 with msg on error */
int llm_model_parse_config(llm_model *m, const char *dir, char *msg, size_t msglen);

/* inv_freq[head_dim/2] and the cos/sin scale for this model's RoPE */
void llm_rope_inv_freq(const llm_rope_cfg *r, int head_dim, float *inv_freq, float *mscale);

#endif
