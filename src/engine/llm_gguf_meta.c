/*
 * GGUF metadata -> the JSON documents of a Hugging Face folder, so the
 * config, tokenizer and chat-template code read a GGUF model as they read
 * a folder (llm_gguf_json), and the lookup of a model path's documents
 * (llm_model_doc): a folder's files, or for a GGUF file the files beside
 * it (tokenizer.json, tokenizer_config.json) when present, else its
 * metadata.
 *
 * Architectures: llama (also Mistral), qwen2, qwen3, granite, olmo2, glm4,
 * phi3, gemma2, gemma3, smollm3, qwen3moe, and llama with experts (Mixtral).
 * Tokenizers: "gpt2"
 * (byte-level BPE with merges; the pre-tokenizer name mapped to the split
 * regex its tokenizer.json has) and "llama" (SentencePiece with scores,
 * turned into BPE merges ranked by the merged piece's score, as
 * transformers converts SentencePiece models).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/llm_file.h"
#include "engine/llm_gguf.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

static json_t *
mget(const llm_gguf *g, const char *arch, const char *key)
{
    char k[160];
    if (arch == NULL) return json_object_get(g->meta, key);
    snprintf(k, sizeof(k), "%s.%s", arch, key);
    return json_object_get(g->meta, k);
}

static const llm_st_tensor *
tensor(const llm_gguf *g, const char *name)
{
    return llm_st_find_in(g->files, g->n_files, name);
}

/* copy meta[arch.key] to o[name] when it is present */
static void
copy_key(json_t *o, const char *name, const llm_gguf *g, const char *arch, const char *key)
{
    json_t *v = mget(g, arch, key);
    if (v) json_object_set(o, name, v);
}

/*
 * What llama.cpp fixes for Gemma 2 / 3 and SmolLM3 instead of reading it
 * from the file: the scale of the attention scores (1 / sqrt(head size);
 * 1 / sqrt(hidden / heads) for the 27B models: 46 and 62 layers), the
 * sliding pattern (every 2nd / 6th layer global, the window from the file,
 * 4096 without), Gemma 3's local RoPE base (10000, or rope.freq_base_swa
 * where a file has it), SmolLM3's NoPE step (every 4th layer); Gemma 2's
 * soft-caps are keys.
 */
static void
llamacpp_fixed(json_t *c, const llm_gguf *g, const char *arch)
{
    json_t *hd = json_object_get(c, "head_dim"), *h = json_object_get(c, "hidden_size");
    json_t *nh = json_object_get(c, "num_attention_heads"), *nl = json_object_get(c, "num_hidden_layers");
    json_t *sw = mget(g, arch, "attention.sliding_window"), *swa_base = mget(g, arch, "rope.freq_base_swa");
    int gemma2 = strcmp(arch, "gemma2") == 0;

    if (strcmp(arch, "smollm3") == 0) {
        json_object_set_new(c, "no_rope_layer_interval", json_integer(4));
        return;
    }
    json_object_set_new(c, "hidden_activation", json_string("gelu_pytorch_tanh"));
    if (json_is_integer(h) && json_is_integer(nh) && json_integer_value(nh) > 0 && json_is_integer(nl)) {
        json_int_t per_head = json_integer_value(h) / json_integer_value(nh);
        int big = json_integer_value(nl) == (gemma2 ? 46 : 62);
        json_object_set_new(c, "query_pre_attn_scalar",
                            json_integer(big || !json_is_integer(hd) ? per_head : json_integer_value(hd)));
    }
    json_object_set_new(c, "sliding_window", json_is_integer(sw) ? json_incref(sw) : json_integer(4096));
    if (gemma2) {
        copy_key(c, "attn_logit_softcapping", g, arch, "attn_logit_softcapping");
        copy_key(c, "final_logit_softcapping", g, arch, "final_logit_softcapping");
    } else {
        json_object_set_new(c, "sliding_window_pattern", json_integer(6));
        json_object_set_new(c, "rope_local_base_freq", json_is_number(swa_base) ? json_incref(swa_base) : json_real(10000.0));
    }
}

static json_t *
config_json(const llm_gguf *g, char *err, size_t errlen)
{
    static const struct { const char *gguf, *hf, *type; } archs[] = {
        { "llama", "LlamaForCausalLM", "llama" },
        { "qwen2", "Qwen2ForCausalLM", "qwen2" },
        { "qwen3", "Qwen3ForCausalLM", "qwen3" },
        { "granite", "GraniteForCausalLM", "granite" },
        { "olmo2", "Olmo2ForCausalLM", "olmo2" },
        { "glm4", "Glm4ForCausalLM", "glm4" },
        { "phi3", "Phi3ForCausalLM", "phi3" },
        { "gemma2", "Gemma2ForCausalLM", "gemma2" },
        { "gemma3", "Gemma3ForCausalLM", "gemma3_text" },
        { "smollm3", "SmolLM3ForCausalLM", "smollm3" },
        { "qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe" },
        { "gpt-oss", "GptOssForCausalLM", "gpt_oss" },
    };
    json_t *n_exp;
    const llm_st_tensor *lf, *sf;
    json_t *rdim;
    const char *arch = json_string_value(mget(g, NULL, "general.architecture")), *st;
    const llm_st_tensor *emb, *rf;
    json_t *c, *toks, *sc;
    size_t i;

    if (arch == NULL) {
        ERR("GGUF metadata has no general.architecture");
        return NULL;
    }
    for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
        if (strcmp(arch, archs[i].gguf) == 0) break;
    }
    if (i == sizeof(archs) / sizeof(archs[0])) {
        ERR("GGUF architecture \"%s\" is not supported (llama, qwen2, qwen3, granite, olmo2, glm4, phi3, "
            "gemma2, gemma3, smollm3, qwen3moe, gpt-oss)", arch);
        return NULL;
    }
    c = json_object();
    json_object_set_new(c, "architectures", json_pack("[s]", archs[i].hf));
    json_object_set_new(c, "model_type", json_string(archs[i].type));
    /* experts: Mixtral is llama.cpp's llama with expert_count; Qwen3-MoE has every layer sparse
     * and always renormalizes the chosen experts' weights */
    n_exp = mget(g, arch, "expert_count");
    if (json_is_integer(n_exp) && json_integer_value(n_exp) > 0) {
        copy_key(c, "num_experts_per_tok", g, arch, "expert_used_count");
        if (strcmp(arch, "llama") == 0) {
            json_object_set_new(c, "architectures", json_pack("[s]", "MixtralForCausalLM"));
            json_object_set_new(c, "model_type", json_string("mixtral"));
            json_object_set(c, "num_local_experts", n_exp);
        } else if (strcmp(arch, "qwen3moe") == 0) {
            json_object_set(c, "num_experts", n_exp);
            copy_key(c, "moe_intermediate_size", g, arch, "expert_feed_forward_length");
            json_object_set_new(c, "norm_topk_prob", json_true());
            json_object_set_new(c, "decoder_sparse_step", json_integer(1));
            json_object_set_new(c, "mlp_only_layers", json_array());
        } else if (strcmp(arch, "gpt-oss") == 0) {
            json_object_set(c, "num_local_experts", n_exp);
        }
    }
    copy_key(c, "hidden_size", g, arch, "embedding_length");
    copy_key(c, "intermediate_size", g, arch, "feed_forward_length");
    copy_key(c, "num_hidden_layers", g, arch, "block_count");
    copy_key(c, "num_attention_heads", g, arch, "attention.head_count");
    copy_key(c, "num_key_value_heads", g, arch, "attention.head_count_kv");
    copy_key(c, "head_dim", g, arch, "attention.key_length");
    copy_key(c, "rms_norm_eps", g, arch, "attention.layer_norm_rms_epsilon");
    copy_key(c, "rope_theta", g, arch, "rope.freq_base");
    copy_key(c, "max_position_embeddings", g, arch, "context_length");
    copy_key(c, "vocab_size", g, arch, "vocab_size");
    /* Granite's multipliers as llama.cpp names them */
    copy_key(c, "embedding_multiplier", g, arch, "embedding_scale");
    copy_key(c, "residual_multiplier", g, arch, "residual_scale");
    copy_key(c, "attention_multiplier", g, arch, "attention.scale");
    copy_key(c, "logits_scaling", g, arch, "logit_scale");
    /* rotary dims of a head: a part of it for GLM-4 (and wherever fewer than the head) */
    rdim = mget(g, arch, "rope.dimension_count");
    if (json_is_integer(rdim)) {
        json_t *hd = json_object_get(c, "head_dim");
        json_int_t head = json_is_integer(hd) ? json_integer_value(hd)
                          : json_is_integer(json_object_get(c, "hidden_size")) && json_is_integer(json_object_get(c, "num_attention_heads"))
                            && json_integer_value(json_object_get(c, "num_attention_heads")) > 0
                          ? json_integer_value(json_object_get(c, "hidden_size")) / json_integer_value(json_object_get(c, "num_attention_heads"))
                          : 0;
        if (head > 0 && (strcmp(arch, "glm4") == 0 || json_integer_value(rdim) < head)) {
            json_object_set_new(c, "partial_rotary_factor", json_real((double) json_integer_value(rdim) / (double) head));
        }
    }
    toks = mget(g, NULL, "tokenizer.ggml.tokens");
    emb = tensor(g, "model.embed_tokens.weight");
    if (json_object_get(c, "vocab_size") == NULL) {
        if (emb && emb->ndim == 2) json_object_set_new(c, "vocab_size", json_integer(emb->shape[0]));
        else if (json_is_array(toks)) json_object_set_new(c, "vocab_size", json_integer((json_int_t) json_array_size(toks)));
    }
    json_object_set_new(c, "tie_word_embeddings", json_boolean(tensor(g, "lm_head.weight") == NULL));
    json_object_set_new(c, "attention_bias", json_boolean(tensor(g, "model.layers.0.self_attn.q_proj.bias") != NULL));
    json_object_set_new(c, "hidden_act", json_string("silu"));
    copy_key(c, "bos_token_id", g, NULL, "tokenizer.ggml.bos_token_id");
    copy_key(c, "eos_token_id", g, NULL, "tokenizer.ggml.eos_token_id");

    /* RoPE scaling: linear / yarn keys, or llama 3's per-frequency factors as a tensor */
    st = json_string_value(mget(g, arch, "rope.scaling.type"));
    sc = NULL;
    if (st && (strcmp(st, "linear") == 0 || strcmp(st, "yarn") == 0)) {
        sc = json_pack("{ss}", "rope_type", st);
        copy_key(sc, "factor", g, arch, "rope.scaling.factor");
        copy_key(sc, "original_max_position_embeddings", g, arch, "rope.scaling.original_context_length");
    } else if (st && strcmp(st, "none") != 0) {
        ERR("GGUF rope.scaling.type \"%s\" is not supported (none, linear, yarn)", st);
        json_decref(c);
        return NULL;
    }
    if ((rf = tensor(g, "rope_freqs.weight")) != NULL) {
        /* theta_i = pos * base^(-2i/d) / factor_i: LongRoPE's formula with one factor set */
        json_t *f = json_array();
        int64_t n = rf->shape[0], j;
        if (rf->type != 0 || rf->ndim != 1 || sc != NULL) {
            ERR("GGUF rope_freqs.weight must be one F32 vector without other RoPE scaling");
            json_decref(f);
            json_decref(sc);
            json_decref(c);
            return NULL;
        }
        for (j = 0; j < n; j++) json_array_append_new(f, json_real(((const float *) rf->data)[j]));
        /* one factor set for every context: the original length is the whole context */
        sc = json_pack("{sssOsOsfsI}", "rope_type", "longrope", "short_factor", f, "long_factor", f,
                       "attention_factor", 1.0, "original_max_position_embeddings",
                       json_is_integer(json_object_get(c, "max_position_embeddings"))
                       ? json_integer_value(json_object_get(c, "max_position_embeddings")) : (json_int_t) 1 << 20);
        json_decref(f);
    }
    /* Phi-3's LongRoPE: its two factor sets as tensors, the original length and attention factor as keys */
    lf = tensor(g, "gguf:rope_factors_long.weight");
    sf = tensor(g, "gguf:rope_factors_short.weight");
    if (lf || sf) {
        json_t *fl = json_array(), *fs = json_array();
        int64_t j;
        if (lf == NULL || sf == NULL || lf->type != 0 || sf->type != 0 || lf->ndim != 1 || sf->ndim != 1
            || lf->shape[0] != sf->shape[0] || sc != NULL)
        {
            ERR("GGUF rope_factors_long/short.weight must be two F32 vectors of one length without other RoPE scaling");
            json_decref(fl);
            json_decref(fs);
            json_decref(sc);
            json_decref(c);
            return NULL;
        }
        for (j = 0; j < lf->shape[0]; j++) {
            json_array_append_new(fl, json_real(((const float *) lf->data)[j]));
            json_array_append_new(fs, json_real(((const float *) sf->data)[j]));
        }
        sc = json_pack("{sssoso}", "rope_type", "longrope", "long_factor", fl, "short_factor", fs);
        copy_key(sc, "original_max_position_embeddings", g, arch, "rope.scaling.original_context_length");
        copy_key(sc, "attention_factor", g, arch, "rope.scaling.attn_factor");
    }
    {
        /* Phi-3's window, on every layer; 0 is none (what llama.cpp writes for models without one) */
        json_t *sw = mget(g, arch, "attention.sliding_window");
        if ((strcmp(arch, "phi3") == 0 || strcmp(arch, "gpt-oss") == 0) && json_is_integer(sw)
            && json_integer_value(sw) > 0)
        {
            json_object_set(c, "sliding_window", sw);
        }
        /* gpt-oss's YaRN does not round its correction range (its config says truncate: false) */
        if (strcmp(arch, "gpt-oss") == 0 && sc != NULL) json_object_set_new(sc, "truncate", json_false());
    }
    if (sc) json_object_set_new(c, "rope_scaling", sc);
    if (strcmp(arch, "gemma2") == 0 || strcmp(arch, "gemma3") == 0 || strcmp(arch, "smollm3") == 0) {
        llamacpp_fixed(c, g, arch);
    }
    if (json_object_get(c, "hidden_size") == NULL || json_object_get(c, "num_hidden_layers") == NULL
        || json_object_get(c, "num_attention_heads") == NULL || json_object_get(c, "intermediate_size") == NULL)
    {
        ERR("GGUF metadata lacks %s.embedding_length, .block_count, .feed_forward_length or "
            ".attention.head_count", arch);
        json_decref(c);
        return NULL;
    }
    return c;
}

static json_t *
generation_json(const llm_gguf *g)
{
    json_t *c = json_object(), *eos = mget(g, NULL, "tokenizer.ggml.eos_token_id");
    json_t *eot = mget(g, NULL, "tokenizer.ggml.eot_token_id"), *ids;

    copy_key(c, "bos_token_id", g, NULL, "tokenizer.ggml.bos_token_id");
    ids = json_array();
    if (json_is_integer(eos)) json_array_append(ids, eos);
    if (json_is_integer(eot) && !(json_is_integer(eos) && json_integer_value(eot) == json_integer_value(eos))) {
        json_array_append(ids, eot);
    }
    if (json_array_size(ids)) json_object_set_new(c, "eos_token_id", ids);
    else json_decref(ids);
    return c;
}

/* the split regex of each pre-tokenizer name llama.cpp writes, as the models' tokenizer.json have it */
static const char *
pre_regex(const char *pre)
{
    static const struct { const char *name, *re; } map[] = {
        { "qwen2", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                   "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
        { "llama-bpe", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
                       "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
        { "gpt-2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" },
    };
    size_t i;
    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(pre, map[i].name) == 0) return map[i].re;
    }
    return NULL;
}

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef struct {
    const char *l, *r;
    int         li, ri, mi;
    double      score;
} spm_merge;

static int
merge_cmp(const void *a, const void *b)
{
    const spm_merge *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->mi != y->mi) return x->mi - y->mi;
    if (x->li != y->li) return x->li - y->li;
    return x->ri - y->ri;
}

/* SentencePiece pieces -> BPE merges: every split of a piece into two pieces, ranked by its score */
static json_t *
spm_merges(json_t *toks, json_t *scores, json_t *types, json_t *vocab, char *err, size_t errlen)
{
    size_t n = json_array_size(toks), i, cap = 1024, cnt = 0;
    spm_merge *m = malloc(cap * sizeof(*m));
    json_t *out;

    if (m == NULL) return NULL;
    for (i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(toks, i));
        size_t len = p ? strlen(p) : 0, k;
        json_int_t tt = json_integer_value(json_array_get(types, i));
        if (p == NULL || (json_is_integer(json_array_get(types, i)) && tt != TT_NORMAL && tt != TT_USER)) continue;
        for (k = 1; k < len; k++) {
            char left[512];
            json_t *li, *ri;
            if (((unsigned char) p[k] & 0xC0) == 0x80 || k >= sizeof(left)) continue;   /* UTF-8 boundary */
            memcpy(left, p, k);
            left[k] = '\0';
            if ((li = json_object_get(vocab, left)) == NULL || (ri = json_object_get(vocab, p + k)) == NULL) continue;
            if (cnt == cap) {
                spm_merge *g = realloc(m, (cap *= 2) * sizeof(*m));
                if (g == NULL) { free(m); return NULL; }
                m = g;
            }
            m[cnt].l = json_string_value(json_array_get(toks, (size_t) json_integer_value(li)));
            m[cnt].r = p + k;
            m[cnt].li = (int) json_integer_value(li);
            m[cnt].ri = (int) json_integer_value(ri);
            m[cnt].mi = (int) i;
            m[cnt].score = json_number_value(json_array_get(scores, i));
            cnt++;
        }
    }
    qsort(m, cnt, sizeof(*m), merge_cmp);
    out = json_array();
    for (i = 0; out && i < cnt; i++) {
        json_array_append_new(out, json_pack("[ss]", m[i].l, m[i].r));
    }
    free(m);
    if (out == NULL) ERR("out of memory");
    return out;
}

/* BOS / EOS added around a text (add_special), as a TemplateProcessing step */
static json_t *
post_processor(const llm_gguf *g, json_t *toks, int spm)
{
    json_t *ab = mget(g, NULL, "tokenizer.ggml.add_bos_token"), *ae = mget(g, NULL, "tokenizer.ggml.add_eos_token");
    json_t *bos = mget(g, NULL, "tokenizer.ggml.bos_token_id"), *eos = mget(g, NULL, "tokenizer.ggml.eos_token_id");
    int add_bos = json_is_boolean(ab) ? json_is_true(ab) : spm, add_eos = json_is_true(ae);
    json_t *single = json_array(), *specials = json_object();
    struct { int on; json_t *id; } ends[2] = { { add_bos, bos }, { add_eos, eos } };
    int k;

    for (k = 0; k < 2; k++) {
        const char *piece;
        if (k == 1) json_array_append_new(single, json_pack("{s{sssi}}", "Sequence", "id", "A", "type_id", 0));
        if (!ends[k].on || !json_is_integer(ends[k].id)) continue;
        piece = json_string_value(json_array_get(toks, (size_t) json_integer_value(ends[k].id)));
        if (piece == NULL) continue;
        json_array_append_new(single, json_pack("{s{sssi}}", "SpecialToken", "id", piece, "type_id", 0));
        json_object_set_new(specials, piece, json_pack("{ss s[O] s[s]}", "id", piece, "ids", ends[k].id,
                                                       "tokens", piece));
    }
    return json_pack("{ss so so}", "type", "TemplateProcessing", "single", single, "special_tokens", specials);
}

static json_t *
tokenizer_json(const llm_gguf *g, char *err, size_t errlen)
{
    const char *model = json_string_value(mget(g, NULL, "tokenizer.ggml.model"));
    const char *pre = json_string_value(mget(g, NULL, "tokenizer.ggml.pre"));
    json_t *toks = mget(g, NULL, "tokenizer.ggml.tokens"), *types = mget(g, NULL, "tokenizer.ggml.token_type");
    json_t *root, *vocab, *added, *bpe, *merges;
    size_t i, n = json_array_size(toks);
    int spm;

    if (model == NULL || !json_is_array(toks) || n == 0) {
        ERR("GGUF metadata has no tokenizer (tokenizer.ggml.model, tokenizer.ggml.tokens) and no tokenizer.json is beside the file");
        return NULL;
    }
    if (strcmp(model, "gpt2") != 0 && strcmp(model, "llama") != 0) {
        ERR("GGUF tokenizer model \"%s\" is not supported (gpt2, llama); put the model's tokenizer.json beside the file", model);
        return NULL;
    }
    spm = strcmp(model, "llama") == 0;
    root = json_object();
    vocab = json_object();
    added = json_array();
    for (i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(toks, i));
        json_int_t tt = json_is_integer(json_array_get(types, i)) ? json_integer_value(json_array_get(types, i)) : TT_NORMAL;
        if (p == NULL) continue;
        if (tt == TT_CONTROL || tt == TT_USER || (spm && tt == TT_UNKNOWN)) {
            json_array_append_new(added, json_pack("{sIsssbsbsbsbsb}", "id", (json_int_t) i, "content", p,
                                                   "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized",
                                                   tt == TT_USER && spm, "special", tt != TT_USER));
            if (!spm) continue;         /* byte-level vocabularies keep added tokens out of the BPE vocab */
        }
        json_object_set_new(vocab, p, json_integer((json_int_t) i));
    }
    json_object_set_new(root, "added_tokens", added);
    if (spm) {
        json_t *scores = mget(g, NULL, "tokenizer.ggml.scores"), *sp = mget(g, NULL, "tokenizer.ggml.add_space_prefix");
        if (!json_is_array(scores) || json_array_size(scores) != n) {
            ERR("GGUF llama tokenizer without tokenizer.ggml.scores");
            json_decref(vocab);
            json_decref(root);
            return NULL;
        }
        merges = spm_merges(toks, scores, types, vocab, err, errlen);
        if (!json_is_false(sp)) {
            json_object_set_new(root, "normalizer", json_pack("{ss s[{ssss}{ss s{ss} ss}]}", "type", "Sequence",
                "normalizers", "type", "Prepend", "prepend", "\xe2\x96\x81",
                "type", "Replace", "pattern", "String", " ", "content", "\xe2\x96\x81"));
        } else {
            json_object_set_new(root, "normalizer", json_pack("{ss s{ss} ss}", "type", "Replace",
                "pattern", "String", " ", "content", "\xe2\x96\x81"));
        }
        json_object_set_new(root, "pre_tokenizer", json_null());
        json_object_set_new(root, "decoder", json_pack("{ss s[{ss s{ss} ss}{ss}{ss}{ss ss si si}]}", "type", "Sequence",
            "decoders", "type", "Replace", "pattern", "String", "\xe2\x96\x81", "content", " ",
            "type", "ByteFallback", "type", "Fuse", "type", "Strip", "content", " ", "start", 1, "stop", 0));
    } else {
        json_t *mg = mget(g, NULL, "tokenizer.ggml.merges");
        const char *re = pre_regex(pre ? pre : "gpt-2");
        if (re == NULL) {
            ERR("GGUF pre-tokenizer \"%s\" is not supported (qwen2, llama-bpe, gpt-2); put the model's "
                "tokenizer.json beside the file", pre);
            json_decref(vocab);
            json_decref(root);
            return NULL;
        }
        if (!json_is_array(mg)) {
            ERR("GGUF gpt2 tokenizer without tokenizer.ggml.merges");
            json_decref(vocab);
            json_decref(root);
            return NULL;
        }
        merges = json_incref(mg);
        json_object_set_new(root, "normalizer", strcmp(pre ? pre : "", "qwen2") == 0
                                                ? json_pack("{ss}", "type", "NFC") : json_null());
        json_object_set_new(root, "pre_tokenizer", json_pack("{ss s[{ss s{ss} ss sb}{ss sb sb sb}]}",
            "type", "Sequence", "pretokenizers",
            "type", "Split", "pattern", "Regex", re, "behavior", "Isolated", "invert", 0,
            "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0));
        json_object_set_new(root, "decoder", json_pack("{ss}", "type", "ByteLevel"));
    }
    if (merges == NULL) {
        json_decref(vocab);
        json_decref(root);
        return NULL;
    }
    bpe = json_pack("{ss sO so sb sb}", "type", "BPE", "vocab", vocab, "merges", merges,
                    "byte_fallback", spm, "fuse_unk", spm);
    json_decref(vocab);
    if (spm) {
        json_t *unk = mget(g, NULL, "tokenizer.ggml.unknown_token_id");
        const char *u = json_is_integer(unk) ? json_string_value(json_array_get(toks, (size_t) json_integer_value(unk))) : NULL;
        if (u) json_object_set_new(bpe, "unk_token", json_string(u));
    }
    json_object_set_new(root, "model", bpe);
    json_object_set_new(root, "post_processor", post_processor(g, toks, spm));
    return root;
}

static void
token_key(json_t *o, const char *name, const llm_gguf *g, const char *id_key)
{
    json_t *id = mget(g, NULL, id_key), *toks = mget(g, NULL, "tokenizer.ggml.tokens");
    const char *s = json_is_integer(id) ? json_string_value(json_array_get(toks, (size_t) json_integer_value(id))) : NULL;
    if (s) json_object_set_new(o, name, json_string(s));
}

static json_t *
tokenizer_config_json(const llm_gguf *g)
{
    const char *model = json_string_value(mget(g, NULL, "tokenizer.ggml.model"));
    int spm = model && strcmp(model, "llama") == 0;
    json_t *c = json_object(), *ab = mget(g, NULL, "tokenizer.ggml.add_bos_token");
    json_t *ae = mget(g, NULL, "tokenizer.ggml.add_eos_token");

    json_object_set_new(c, "add_bos_token", json_boolean(json_is_boolean(ab) ? json_is_true(ab) : spm));
    json_object_set_new(c, "add_eos_token", json_boolean(json_is_true(ae)));
    token_key(c, "bos_token", g, "tokenizer.ggml.bos_token_id");
    token_key(c, "eos_token", g, "tokenizer.ggml.eos_token_id");
    token_key(c, "unk_token", g, "tokenizer.ggml.unknown_token_id");
    token_key(c, "pad_token", g, "tokenizer.ggml.padding_token_id");
    copy_key(c, "chat_template", g, NULL, "tokenizer.chat_template");
    return c;
}

json_t *
llm_gguf_json(const llm_gguf *g, const char *name, char *err, size_t errlen)
{
    err[0] = '\0';
    if (strcmp(name, "config.json") == 0) return config_json(g, err, errlen);
    if (strcmp(name, "generation_config.json") == 0) return generation_json(g);
    if (strcmp(name, "tokenizer.json") == 0) return tokenizer_json(g, err, errlen);
    if (strcmp(name, "tokenizer_config.json") == 0) return tokenizer_config_json(g);
    ERR("no %s in a GGUF file", name);
    return NULL;
}

json_t *
llm_model_doc(const char *path, const char *name, size_t flags, int *absent, char *err, size_t errlen)
{
    char p[4200];
    llm_gguf g;
    json_t *j;
    const char *slash;

    *absent = 0;
    err[0] = '\0';
    if (!llm_gguf_is_path(path)) {
        snprintf(p, sizeof(p), "%s/%s", path, name);
        *absent = !llm_file_exists(p);
        return llm_file_json(p, flags, err, errlen);     /* its message when absent too */
    }
    /* tokenizer files beside a GGUF file take precedence over its metadata */
    if (strncmp(name, "tokenizer", 9) == 0) {
        slash = strrchr(path, '/');
        if (slash) snprintf(p, sizeof(p), "%.*s/%s", (int) (slash - path), path, name);
        else snprintf(p, sizeof(p), "%s", name);
        if (llm_file_exists(p)) return llm_file_json(p, flags, err, errlen);
    }
    if (llm_gguf_open(&g, path, err, errlen) != 0) {
        llm_gguf_close(&g);
        return NULL;
    }
    j = llm_gguf_json(&g, name, err, errlen);
    llm_gguf_close(&g);
    return j;
}
