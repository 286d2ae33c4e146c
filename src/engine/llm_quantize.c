/*
 * On-load quantization (llm_model ... quant=): float matrices are converted
 * at load, in the nginx master, into the block formats of
 * kernels/cpu/llm_quant.h; workers share the result after fork.
 *
 * Per-tensor policy, after llama.cpp's mixes of the same names:
 *   q8_0   every matrix Q8_0.
 *   q4_0   every matrix Q4_0; the output matrix (lm_head, or the embedding
 *          when it is tied) Q6_K.
 *   q4_k   Q4_K, with Q6_K for attention v and FFN down in the first and
 *          last eighth of the layers and every third layer between (the
 *          Q4_K_M mix); output Q6_K.
 *   q6_k   every matrix Q6_K.
 * A K-quant needs rows that are whole 256-value super-blocks: other rows
 * fall back as llama.cpp does (Q4_K -> Q5_0, Q6_K -> Q8_0); a matrix whose
 * rows are not whole 32-value blocks keeps its float type.  Matrices that
 * are already quantized (GGUF, MLX) are left as they are.  Norm weights and
 * biases stay f32.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/llm_hugepages.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

typedef enum {
    ROLE_EMBED, ROLE_OUTPUT, ROLE_Q, ROLE_K, ROLE_V, ROLE_O, ROLE_GATE, ROLE_UP, ROLE_DOWN
} mat_role;

int
llm_quant_scheme_parse(const char *s, llm_wtype *out)
{
    static const struct { const char *name; llm_wtype t; } schemes[] = {
        { "q8_0", LLM_WT_Q8_0 }, { "q4_0", LLM_WT_Q4_0 }, { "q4_k", LLM_WT_Q4_K }, { "q6_k", LLM_WT_Q6_K },
    };
    size_t i;
    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        if (strcmp(s, schemes[i].name) == 0) {
            *out = schemes[i].t;
            return 0;
        }
    }
    return -1;
}

/* layers that get more bits in llama.cpp's _M mixes */
static int
more_bits(int layer, int n_layers)
{
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

static llm_wtype
policy(llm_wtype scheme, mat_role role, int layer, int n_layers, int cols)
{
    llm_wtype t = scheme;

    if (role == ROLE_OUTPUT && scheme != LLM_WT_Q8_0) {
        t = LLM_WT_Q6_K;
    } else if (scheme == LLM_WT_Q4_K && (role == ROLE_V || role == ROLE_DOWN) && more_bits(layer, n_layers)) {
        t = LLM_WT_Q6_K;
    }
    if (cols % LLM_QK != 0) {
        if (t == LLM_WT_Q4_K) t = LLM_WT_Q5_0;
        if (t == LLM_WT_Q6_K) t = LLM_WT_Q8_0;
    }
    return t;
}

static int
convert(llm_model *m, llm_mat *w, llm_wtype to, char *err, size_t errlen)
{
    size_t rb = llm_wtype_row_bytes(to, w->cols), src_rb = llm_wtype_row_bytes(w->type, w->cols);
    unsigned char *dst;
    float *row;
    int r;

    if (w->cols % LLM_QB != 0 || rb == 0 || llm_wtype_info(w->type)->quantized) return 0;
    dst = llm_alloc_streamed(rb * (size_t) w->rows);
    row = malloc((size_t) w->cols * sizeof(float));
    if (dst == NULL || row == NULL || llm_model_own(m, dst) != 0) {
        free(dst);
        free(row);
        snprintf(err, errlen, "out of memory quantizing a %d x %d matrix", w->rows, w->cols);
        return -1;
    }
    for (r = 0; r < w->rows; r++) {
        llm_dequant_row(w->type, (const char *) w->data + (size_t) r * src_rb, row, w->cols);
        llm_quant_row(to, row, dst + (size_t) r * rb, w->cols);
    }
    free(row);
    w->data = dst;
    w->type = to;
    return 0;
}

int
llm_model_quantize(llm_model *m, llm_wtype scheme, char *err, size_t errlen)
{
    const llm_model_info *in = &m->info;
    int l, n = in->n_layers;

    if (convert(m, &m->embed, policy(scheme, in->tie_word_embeddings ? ROLE_OUTPUT : ROLE_EMBED, 0, n,
                                     m->embed.cols), err, errlen) != 0)
    {
        return -1;
    }
    if (in->tie_word_embeddings) {
        m->lm_head = m->embed;
    } else if (convert(m, &m->lm_head, policy(scheme, ROLE_OUTPUT, 0, n, m->lm_head.cols), err, errlen) != 0) {
        return -1;
    }
    for (l = 0; l < n; l++) {
        llm_layer *L = &m->layers[l];
        struct { llm_mat *w; mat_role role; } mats[] = {
            { &L->wq, ROLE_Q }, { &L->wk, ROLE_K }, { &L->wv, ROLE_V }, { &L->wo, ROLE_O },
            { &L->w_gate, ROLE_GATE }, { &L->w_up, ROLE_UP }, { &L->w_down, ROLE_DOWN },
            { &L->conv_in, ROLE_Q }, { &L->conv_out, ROLE_O },     /* short-convolution blocks (LFM2) */
            { &L->dn_qkv, ROLE_Q }, { &L->dn_z, ROLE_Q }, { &L->dn_out, ROLE_O },   /* Gated DeltaNet */
            { &L->wq_a, ROLE_Q }, { &L->kv_b, ROLE_K },          /* latent attention (read by rows) */
        };
        size_t i;
        int e;
        for (i = 0; i < sizeof(mats) / sizeof(mats[0]); i++) {
            if (mats[i].w->data == NULL) continue;      /* a sparse layer's unused dense MLP */
            if (convert(m, mats[i].w, policy(scheme, mats[i].role, l, n, mats[i].w->cols), err, errlen) != 0) {
                return -1;
            }
        }
        /* experts as the dense MLP's matrices; the router stays float (it picks the experts) */
        for (e = 0; L->moe && e < m->n_experts; e++) {
            if (convert(m, &L->moe->gate[e], policy(scheme, ROLE_GATE, l, n, L->moe->gate[e].cols), err, errlen) != 0
                || convert(m, &L->moe->up[e], policy(scheme, ROLE_UP, l, n, L->moe->up[e].cols), err, errlen) != 0
                || convert(m, &L->moe->down[e], policy(scheme, ROLE_DOWN, l, n, L->moe->down[e].cols), err, errlen) != 0)
            {
                return -1;
            }
        }
        if (L->moe && L->moe->sh_gate.data
            && (convert(m, &L->moe->sh_gate, policy(scheme, ROLE_GATE, l, n, L->moe->sh_gate.cols), err, errlen) != 0
                || convert(m, &L->moe->sh_up, policy(scheme, ROLE_UP, l, n, L->moe->sh_up.cols), err, errlen) != 0
                || convert(m, &L->moe->sh_down, policy(scheme, ROLE_DOWN, l, n, L->moe->sh_down.cols), err, errlen) != 0))
        {
            return -1;
        }
    }
    return 0;
}
