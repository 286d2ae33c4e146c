/*
 * Internal layout of a loaded model, shared by the loader and the forward
 * pass.  Matrices are bound in place in the mmap'd files; small vectors
 * (norm weights, biases) are widened to f32 copies at load, and the dense
 * matrices decode streams are then repacked or copied into huge-page memory
 * (llm_repack.c).
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

/*
 * One decoder layer.  The block is
 *   h = attn_norm ? attn_norm(x) : x
 *   a = attention(h);  a = attn_post_norm ? attn_post_norm(a) : a
 *   x = x + residual_scale * a
 * and the same for the MLP with ffn_norm / ffn_post_norm: pre-norm only
 * (Llama), pre- and post-norms (Gemma 2/3, GLM-4) or post-norms only (OLMo 2).
 */
/*
 * A sparse MLP: a router scores the experts per token, the top_k best run
 * (each a SwiGLU MLP of moe_intermediate rows) and their outputs are summed,
 * weighted by the router's scores (llm_model's moe_* fields say how: softmax
 * or sigmoid, groups, renormalizing, scaling), plus a shared expert that
 * every token runs (GLM-4.5, DeepSeek-V3) when the model has one.
 */
#define LLM_MOE_MAX_TOPK 64

typedef struct {
    llm_mat  router;                         /* [n_experts][hidden] */
    float   *score_bias;                     /* e_score_correction_bias: added for choosing only, or NULL */
    llm_mat *gate, *up, *down;               /* [n_experts] each: experts' matrices */
    llm_mat  sh_gate, sh_up, sh_down;        /* shared expert (shared_intermediate rows), data NULL if none */
    float   *sh_weight;                      /* [hidden] the shared expert's output times sigmoid(x . sh_weight)
                                                (Qwen3-Next shared_expert_gate), NULL: times 1 */
    float   *router_bias;                    /* [n_experts] added to the router's logits (gpt-oss), or NULL */
    float   *gate_bias, *up_bias;            /* [n_experts][moe_intermediate] experts' biases (gpt-oss), or NULL */
    float   *down_bias;                      /* [n_experts][hidden] */
} llm_moe;

typedef struct {
    llm_mat  wq, wk, wv, wo, w_gate, w_up, w_down;   /* fused checkpoints: row ranges of one tensor */
    llm_moe *moe;                            /* sparse MLP in place of w_gate/w_up/w_down, else NULL */
    float   *bq, *bk, *bv, *bo;              /* NULL when the model has none */
    float   *attn_norm, *attn_post_norm;     /* NULL when absent */
    float   *ffn_norm, *ffn_post_norm;
    float   *q_norm, *k_norm;                /* q/k RMSNorm (per head or over all heads), else NULL */
    float   *sinks;                          /* [n_heads] attention sink logits (gpt-oss): a term exp(sink)
                                                in each head's softmax denominator only; NULL = none */
    int      window;                         /* sliding window of this layer, 0 = full attention */
    int      kv;                             /* this layer's slab in a KV block, -1: no attention */
    /* a gated short-convolution block in place of attention (LFM2): with h the
     * normed input, [b; c; u] = conv_in h (+ conv_in_b), s = b * u per channel,
     * y = c * (causal depthwise conv of s over the last conv_kernel positions
     * with conv_w, + conv_b), out = conv_out y (+ conv_out_b).  The last
     * conv_kernel - 1 values of s are the sequence's recurrent state. */
    int      conv;                           /* 1: this block; then wq..wo are unused */
    llm_mat  conv_in, conv_out;              /* [3 * hidden][hidden], [hidden][hidden] */
    float   *conv_w;                         /* [hidden][conv_kernel] */
    float   *conv_b, *conv_in_b, *conv_out_b;   /* NULL without conv_bias */
    /* a Gated DeltaNet block in place of attention (Qwen3-Next, Qwen3.5;
     * llm_deltanet.h has the computation).  Projections: Qwen3.5 has them
     * apart (dn_qkv [conv_dim][hidden], dn_z [value_dim], dn_b and dn_a
     * [v_heads]); Qwen3-Next has two, interleaved per key head: dn_qkv holds
     * in_proj_qkvz, dn_b in_proj_ba, and dn_z / dn_a stay unbound. */
    int      dn;                             /* 1: this block; then wq..wo are unused */
    llm_mat  dn_qkv, dn_z, dn_b, dn_a, dn_out;   /* dn_out [hidden][value_dim] */
    float   *dn_conv_w;                      /* [conv_dim][dn_kernel] depthwise causal convolution */
    float   *dn_a_log, *dn_dt_bias;          /* [v_heads]: decay g = -exp(a_log) softplus(a + dt_bias) */
    float   *dn_norm;                        /* [v_dim] gated RMSNorm weight (applied as is, not 1 + w) */
    size_t   state_off;                      /* its recurrent state's offset in a sequence's (floats) */
    /* multi-head latent attention (DeepSeek-V3; llm_mla.h has the computation):
     * wq is q_b_proj (or q_proj without a query LoRA), wk kv_a_proj_with_mqa
     * [kv_rank + rope][hidden], wo o_proj; wv is unused */
    llm_mat  wq_a;                           /* q_a_proj [q_rank][hidden], data NULL without a query LoRA */
    llm_mat  kv_b;                           /* kv_b_proj [heads * (nope + v)][kv_rank] */
    float   *bq_a;                           /* q_a_proj's bias (attention_bias), else NULL */
    float   *q_a_norm, *kv_a_norm;           /* [q_rank], [kv_rank] RMSNorm weights */
    int      rope;                           /* RoPE table of this layer (llm_model.rope[]), -1 = none (NoPE) */
} llm_layer;

#define LLM_ROPE_MAX_FACTORS 512    /* head_dim <= 1024 */

typedef enum {
    LLM_ROPE_DEFAULT = 0,
    LLM_ROPE_LINEAR,
    LLM_ROPE_LLAMA3,
    LLM_ROPE_YARN,
    LLM_ROPE_LONGROPE
} llm_rope_kind;

typedef struct {
    llm_rope_kind kind;
    double theta;
    double factor;
    double low_freq_factor, high_freq_factor;     /* llama3 */
    double original_max_pos;                      /* llama3, yarn, longrope */
    double beta_fast, beta_slow;                  /* yarn */
    int    truncate;                              /* yarn: correction range floored/ceiled (default; gpt-oss: false) */
    double attention_factor;                      /* yarn, longrope: scale of cos/sin */
    double mscale_all_dim;                        /* yarn (DeepSeek): the softmax scale times
                                                     (0.1 mscale_all_dim ln(factor) + 1)^2 in MLA, 0 = none */
    int    n_factors;                             /* longrope: rot_dim/2 */
    float  short_factor[LLM_ROPE_MAX_FACTORS];    /* longrope: used up to original_max_pos */
    float  long_factor[LLM_ROPE_MAX_FACTORS];     /* longrope: beyond it */
} llm_rope_cfg;

typedef enum {
    LLM_ACT_SILU = 0,       /* SwiGLU */
    LLM_ACT_GELU_TANH,      /* GeGLU with the tanh approximation (Gemma) */
    LLM_ACT_SWIGLU_LIMIT    /* gpt-oss: (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit) */
} llm_act;

typedef enum {
    LLM_QK_NORM_NONE = 0,
    LLM_QK_NORM_HEAD,       /* RMSNorm of each head (Qwen3, Gemma 3) */
    LLM_QK_NORM_ALL         /* RMSNorm over all heads at once (OLMo 2) */
} llm_qk_norm;

/* Architecture families: tensor names and block shape (llm_model.c has the table). */
typedef enum {
    LLM_FAM_LLAMA = 0, LLM_FAM_MISTRAL, LLM_FAM_QWEN2, LLM_FAM_QWEN3, LLM_FAM_GEMMA2, LLM_FAM_GEMMA3,
    LLM_FAM_PHI3, LLM_FAM_SMOLLM3, LLM_FAM_GLM4, LLM_FAM_GRANITE, LLM_FAM_OLMO2,
    LLM_FAM_QWEN3MOE, LLM_FAM_MIXTRAL, LLM_FAM_GLM4MOE, LLM_FAM_GPTOSS, LLM_FAM_LFM2,
    LLM_FAM_QWEN3NEXT, LLM_FAM_QWEN35, LLM_FAM_QWEN35MOE, LLM_FAM_DEEPSEEKV3
} llm_family;

#define LLM_MAX_ROPE 2      /* RoPE tables: global and sliding layers (Gemma 3) */

struct llm_model {
    llm_model_info info;
    char           architecture[64];
    char           model_type[32];
    llm_family     family;
    llm_rope_cfg   rope[LLM_MAX_ROPE];
    int            n_rope;
    int            rot_dim;      /* rotated values per head (partial rotary: < head_dim) */
    int            rope_pairs;   /* rotate adjacent pairs (GLM) rather than halves */
    int            qkv_bias;     /* q/k/v projections have biases */
    int            o_bias;       /* o projection has a bias (Llama attention_bias) */
    llm_qk_norm    qk_norm;
    llm_act        act;
    float          swiglu_limit, swiglu_alpha;   /* LLM_ACT_SWIGLU_LIMIT */
    float          embed_scale;    /* embeddings times this: sqrt(hidden) (Gemma), embedding_multiplier (Granite) */
    float          attn_scale;     /* q.k times this: 1/sqrt(head_dim), query_pre_attn_scalar^-1/2, attention_multiplier */
    float          attn_softcap;   /* attention logit soft-capping, 0 = off (Gemma 2) */
    float          final_softcap;  /* output logit soft-capping, 0 = off (Gemma 2) */
    float          residual_scale; /* residual_multiplier (Granite), else 1 */
    float          logit_scale;    /* 1 / logits_scaling (Granite), else 1 */
    int            norm_plus_one;  /* norm weights are stored as w - 1 and applied as 1 + w (Gemma) */
    int            n_experts;      /* sparse MLP layers (llm_layer.moe): experts, chosen per token, */
    int            top_k;
    int            moe_intermediate;  /* rows of each expert's gate and up */
    int            norm_topk;      /* chosen weights renormalized to sum 1 */
    int            moe_sigmoid;    /* scores: sigmoid (GLM-4.5, DeepSeek-V3) rather than softmax */
    int            n_group, topk_group;   /* sigmoid routing: experts in n_group groups, choose in the best topk_group */
    float          routed_scale;   /* routed_scaling_factor: chosen weights times this */
    int            shared_intermediate;   /* rows of the shared expert, 0 = none */
    int            n_kv_layers;    /* layers with attention: the slabs of a KV block */
    int            conv_kernel;    /* width of the short convolutions (LFM2 conv_L_cache), 0 = none */
    int            conv_bias;      /* their projections and convolutions have biases */
    int            attn_gate;      /* q_proj gives each head [query; gate]: attention output times
                                      sigmoid(gate) per value (Qwen3-Next, Qwen3.5) */
    int            dn_k_heads, dn_v_heads, dn_k_dim, dn_v_dim;   /* Gated DeltaNet heads and their sizes */
    int            dn_kernel;      /* its convolution's width (linear_conv_kernel_dim), 0 = no DeltaNet */
    size_t         state_floats;   /* recurrent state of one sequence, all layers (0: attention only) */
    /* multi-head latent attention (DeepSeek-V3), mla_kv_rank 0 = none.  Then info.head_dim is
     * mla_kv_rank + mla_rope (the head of the absorbed attention), info.n_kv_heads 1 and a KV
     * block's row holds [latent; rope key] once: the values are the keys' first mla_kv_rank
     * entries (v_cache is k_cache, llm_runtime_kv_block_bytes counts it once) */
    int            mla_q_rank;     /* q_lora_rank, 0: q_proj straight from the hidden state */
    int            mla_kv_rank;    /* kv_lora_rank: the cached latent */
    int            mla_nope, mla_rope, mla_v;   /* qk_nope_head_dim, qk_rope_head_dim, v_head_dim */
    int            experts_stacked;   /* each layer's experts in 3-d tensors: 1 gate_up_proj + down_proj
                                         (transformers 5), 2 gate_proj, up_proj, down_proj (GGUF) */
    char           prefix[32];     /* of the text model's tensors: "model.", or inside a multimodal
                                      checkpoint "model.language_model." / "language_model.model." */
    char           head_prefix[32];   /* of lm_head: "", or "language_model." */
    int            moe_legacy_names;  /* Mixtral's block_sparse_moe.experts.E.w1/w3/w2 (published checkpoints) */
    llm_mat        embed;
    llm_mat        lm_head;
    float         *final_norm;
    llm_layer     *layers;
    llm_st_file   *files;
    int            n_files;
    void         **owned;      /* buffers made at load: f32 vectors, quantized matrices */
    int            n_owned, cap_owned;
    char           dtype[48];  /* info.dtype: "bfloat16", "Q8_0", "Q4_K mix", ... */
};

/* config.json + generation_config.json into m (no tensors); -1 with msg on error */
int llm_model_parse_config(llm_model *m, const char *dir, char *msg, size_t msglen);

/*
 * inv_freq[rot_dim/2] and the cos/sin scale of one RoPE table.  n_ctx: the
 * context the tables are made for; LongRoPE uses its long factors when it
 * exceeds original_max_position_embeddings, else its short ones.
 */
void llm_rope_inv_freq(const llm_rope_cfg *r, int rot_dim, int n_ctx, float *inv_freq, float *mscale);

/*
 * The tensors a model of this config has, in file order, for the loader
 * (binds them) and the synthesizer (writes random ones).  A fused tensor
 * (Phi-3 qkv_proj, gate_up_proj) lists its parts, bound as row ranges.
 */
typedef struct {
    char      name[128];
    int       rows, cols;         /* cols 0: a vector of rows values */
    int       is_norm;            /* a norm weight (synthesized near its neutral value) */
    int       optional;
    int       n_parts;            /* matrices: 1, or 2-3 for fused tensors */
    llm_mat  *part[3];
    int       part_rows[3];
    int       n_stack;            /* > 0: a 3-d tensor [n_stack][rows][cols]; part[i] then points
                                     to n_stack matrices, one per slice */
    float   **vec;                /* vectors: where the f32 copy goes */
} llm_tensor_spec;

/* Calls fn for each tensor; stops at and returns the first non-zero result. */
int llm_model_tensors(llm_model *m, int (*fn)(void *ctx, const llm_tensor_spec *t), void *ctx);

/* the model frees p with itself; -1 (p not taken) when out of memory */
int llm_model_own(llm_model *m, void *p);

/* "q8_0" | "q4_0" | "q4_k" | "q6_k" -> the scheme's base type; -1 if unknown */
int llm_quant_scheme_parse(const char *s, llm_wtype *out);
/* on-load quantization of the float matrices (llm_quantize.c has the policy) */
int llm_model_quantize(llm_model *m, llm_wtype scheme, char *err, size_t errlen);
/*
 * The dense layers' matrices and the output matrix whose type has panels
 * (Q8_0, Q4_0: kernels/cpu/llm_quant.h) repacked into them, once, after
 * loading and on-load quantization; the embedding follows a tied output
 * matrix (its rows are read through llm_panel_dequant_row).  Memory-neutral:
 * a source made at load is freed, a source in a mapped file is dropped from
 * the mapping.  Sparse layers' experts keep their blocks.
 */
int llm_model_repack(llm_model *m, char *err, size_t errlen);

#endif
