/*
 * The dense families on synthesized weights (no fixtures needed): each tiny
 * config loads, its logits are finite, a prefill longer than the sliding
 * window equals the same tokens decoded one by one through the KV cache,
 * batched decode equals unbatched, the SIMD kernels give the scalar
 * kernels' logits, and configs a family cannot use are refused with a
 * message.  Agreement with transformers is test_engine.c's job.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "engine/llm_engine.h"

static char tmp[256];

#define COMMON "\"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 4, " \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"vocab_size\": 300, " \
    "\"max_position_embeddings\": 256, \"bos_token_id\": 1, \"eos_token_id\": 2, "

typedef struct {
    const char *name;
    const char *config;
    int         sliding;       /* expected info.sliding_window */
} family;

static const family families[] = {
    { "gemma2", "{\"architectures\": [\"Gemma2ForCausalLM\"], " COMMON
      "\"query_pre_attn_scalar\": 24, \"sliding_window\": 8, \"attn_logit_softcapping\": 4.0, "
      "\"final_logit_softcapping\": 5.0}", 8 },
    { "gemma3", "{\"architectures\": [\"Gemma3ForCausalLM\"], " COMMON
      "\"sliding_window\": 8, \"sliding_window_pattern\": 2, \"rope_theta\": 100000.0, "
      "\"rope_local_base_freq\": 1000.0, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 4.0}, "
      "\"final_logit_softcapping\": 6.0}", 8 },
    /* the text model of a multimodal checkpoint: config inside text_config, token ids outside */
    { "gemma3mm", "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"eos_token_id\": 2, "
      "\"bos_token_id\": 1, \"vision_config\": {\"hidden_size\": 32}, \"text_config\": {"
      "\"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"vocab_size\": 300, "
      "\"max_position_embeddings\": 256, \"sliding_window\": 8, \"sliding_window_pattern\": 2, "
      "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}}", 8 },
    { "phi3", "{\"architectures\": [\"Phi3ForCausalLM\"], " COMMON
      "\"sliding_window\": 10, \"original_max_position_embeddings\": 16, \"rope_scaling\": {\"type\": \"longrope\", "
      "\"short_factor\": [1, 1.1, 1.2, 1.4, 1.8, 2.2, 2.6, 3], \"long_factor\": [1, 1.5, 2, 3, 4.5, 7, 9, 12]}}", 10 },
    { "phi4mini", "{\"architectures\": [\"Phi3ForCausalLM\"], " COMMON
      "\"partial_rotary_factor\": 0.75, \"tie_word_embeddings\": true, \"original_max_position_embeddings\": 16, "
      "\"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1.1, 1.2, 1.4, 1.8, 2.2], "
      "\"long_factor\": [1, 1.5, 2, 3, 4.5, 7]}}", 0 },
    { "smollm3", "{\"architectures\": [\"SmolLM3ForCausalLM\"], " COMMON
      "\"no_rope_layers\": [1, 0, 1, 0], \"use_sliding_window\": true, \"sliding_window\": 8}", 8 },
    { "glm4", "{\"architectures\": [\"Glm4ForCausalLM\"], " COMMON "\"partial_rotary_factor\": 0.5}", 0 },
    { "granite", "{\"architectures\": [\"GraniteForCausalLM\"], " COMMON
      "\"embedding_multiplier\": 12.0, \"attention_multiplier\": 0.1, \"residual_multiplier\": 0.22, "
      "\"logits_scaling\": 4.0, \"attention_bias\": true}", 0 },
    { "olmo2", "{\"architectures\": [\"Olmo2ForCausalLM\"], " COMMON "\"rope_theta\": 500000.0}", 0 },
    /* mixtures of experts: a dense layer among sparse ones, top-k > 1, both renormalizations */
    { "qwen3moe", "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " COMMON
      "\"num_experts\": 8, \"num_experts_per_tok\": 3, \"moe_intermediate_size\": 32, "
      "\"norm_topk_prob\": true, \"mlp_only_layers\": [2]}", 0 },
    { "qwen3moe-step", "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " COMMON
      "\"num_experts\": 6, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64, "
      "\"decoder_sparse_step\": 2, \"use_sliding_window\": true, \"sliding_window\": 8}", 8 },
    { "glm4moe", "{\"architectures\": [\"Glm4MoeForCausalLM\"], " COMMON
      "\"n_routed_experts\": 8, \"num_experts_per_tok\": 3, \"moe_intermediate_size\": 32, \"n_group\": 4, "
      "\"topk_group\": 2, \"n_shared_experts\": 2, \"first_k_dense_replace\": 1, \"routed_scaling_factor\": 2.5, "
      "\"use_qk_norm\": true, \"attention_bias\": true}", 0 },
    { "mixtral", "{\"architectures\": [\"MixtralForCausalLM\"], " COMMON
      "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"sliding_window\": 8}", 8 },
    /* LFM2 in its older spelling: attention layers by full_attn_idxs, the rest short
     * convolutions (width 4, no biases, as published checkpoints), MLP width as given */
    { "lfm2", "{\"architectures\": [\"Lfm2ForCausalLM\"], " COMMON
      "\"full_attn_idxs\": [1, 3], \"conv_L_cache\": 4, \"conv_bias\": false, "
      "\"block_auto_adjust_ff_dim\": false}", 0 },
    /* Qwen3-Next as published configs spell it: every 2nd layer full attention by
     * full_attention_interval, Gated DeltaNet with 2 value heads per key head, experts with a
     * gated shared expert; Qwen3.5: layer_types, the projections apart, a dense MLP */
    { "qwen3next", "{\"architectures\": [\"Qwen3NextForCausalLM\"], " COMMON
      "\"full_attention_interval\": 2, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, "
      "\"linear_key_head_dim\": 16, \"linear_value_head_dim\": 8, \"linear_conv_kernel_dim\": 4, "
      "\"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
      "\"shared_expert_intermediate_size\": 48, \"partial_rotary_factor\": 0.25}", 0 },
    { "qwen35", "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " COMMON
      "\"layer_types\": [\"linear_attention\", \"full_attention\", \"linear_attention\", \"linear_attention\"], "
      "\"linear_num_key_heads\": 4, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, "
      "\"linear_value_head_dim\": 16, \"linear_conv_kernel_dim\": 3}", 0 },
    /* Qwen3.5-MoE as published: the multimodal class, its text model in text_config; every
     * layer sparse with a gated shared expert */
    { "qwen35moe", "{\"architectures\": [\"Qwen3_5MoeForConditionalGeneration\"], \"eos_token_id\": 2, "
      "\"vision_config\": {\"depth\": 1}, \"text_config\": {" COMMON
      "\"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", \"full_attention\"], "
      "\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, "
      "\"linear_value_head_dim\": 8, \"num_experts\": 6, \"num_experts_per_tok\": 2, "
      "\"moe_intermediate_size\": 24, \"shared_expert_intermediate_size\": 40, "
      "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e7, \"partial_rotary_factor\": 0.5}}}", 0 },
    /* DeepSeek-V3's latent attention: query LoRA, rope halves (rope_interleave false), biases,
     * YaRN with mscale_all_dim; and DeepSeek-V2-Lite's shape: no query LoRA (q_proj), pairs */
    { "deepseekv3", "{\"architectures\": [\"DeepseekV3ForCausalLM\"], " COMMON
      "\"q_lora_rank\": 24, \"kv_lora_rank\": 32, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, "
      "\"v_head_dim\": 12, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, \"n_group\": 4, "
      "\"topk_group\": 2, \"n_shared_experts\": 1, \"moe_intermediate_size\": 32, "
      "\"first_k_dense_replace\": 1, \"routed_scaling_factor\": 2.5, \"attention_bias\": true, "
      "\"rope_interleave\": false, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, "
      "\"original_max_position_embeddings\": 32, \"mscale\": 0.8, \"mscale_all_dim\": 1.0}}", 0 },
    { "deepseekv2lite", "{\"architectures\": [\"DeepseekV3ForCausalLM\"], " COMMON
      "\"q_lora_rank\": null, \"kv_lora_rank\": 32, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 16, "
      "\"v_head_dim\": 16, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"n_group\": 2, "
      "\"topk_group\": 1, \"n_shared_experts\": 2, \"moe_intermediate_size\": 16, "
      "\"first_k_dense_replace\": 2}", 0 },
};

static int
write_config(const char *dir, const char *json)
{
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs(json, f);
    fclose(f);
    return 0;
}

static double
max_rel(const float *a, const float *b, int n)
{
    double m = 0;
    int i;
    for (i = 0; i < n; i++) {
        double d = fabs((double) a[i] - b[i]) / (1.0 + fabs((double) b[i]));
        if (!(d <= m)) m = d;
    }
    return m;
}

/* logits of every position of ids through the KV cache, one token per call */
static int
decode_all(llm_runtime *rt, const int32_t *ids, int n, float *out, int V, char *err, size_t errlen)
{
    int slot = llm_seq_open(rt), i;
    for (i = 0; i < n; i++) {
        llm_batch_item it = { slot, ids + i, 1, 1, 0 };
        if (llm_forward(rt, &it, 1, err, errlen) != 0) return -1;
        memcpy(out + (size_t) i * V, llm_forward_logits(rt, 0), (size_t) V * sizeof(float));
    }
    llm_seq_close(rt, slot);
    return 0;
}

static void
check_family(const family *f)
{
    char dir[320], cfg[400], out[400], err[512];
    llm_model *m;
    llm_runtime *rt, *rs;
    const llm_model_info *in;
    int32_t ids[40];
    float *dec, *ref;
    int i, V, finite = 1;
    const char *best = getenv("LLM_KERNELS");

    snprintf(dir, sizeof(dir), "%s/%s", tmp, f->name);
    snprintf(out, sizeof(out), "%s/%s-bf16", tmp, f->name);
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    if (mkdir(dir, 0755) != 0 || write_config(dir, f->config) != 0) {
        ok(0, "%s: scratch config", f->name);
        return;
    }
    if (!ok(llm_model_synth(cfg, out, "bf16", 11, err, sizeof(err)) == 0, "%s: synthesized", f->name)) {
        diag(err);
        return;
    }
    m = llm_model_load(out, err, sizeof(err));
    if (!ok(m != NULL, "%s: loads", f->name)) {
        diag(err);
        return;
    }
    in = llm_model_get_info(m);
    V = in->n_vocab;
    is_int(in->sliding_window, f->sliding, "%s: sliding window", f->name);
    for (i = 0; i < 40; i++) ids[i] = (int32_t) ((i * 37 + 11) % V);
    dec = malloc((size_t) 40 * V * sizeof(float));
    ref = malloc((size_t) 40 * V * sizeof(float));
    rt = llm_runtime_create(m, 2, 64, 4, err, sizeof(err));
    if (!ok(rt && dec && ref && decode_all(rt, ids, 40, dec, V, err, sizeof(err)) == 0, "%s: decodes 40 tokens", f->name)) {
        diag(err);
        goto done;
    }
    for (i = 0; i < 40 * V; i++) if (!isfinite(dec[i])) finite = 0;
    ok(finite, "%s: logits finite", f->name);
    {
        /* one prefill of all 40 tokens: the last position equals the cached decode */
        llm_batch_item it = { llm_seq_open(rt), ids, 40, 1, 0 };
        double d = 1;
        if (llm_forward(rt, &it, 1, err, sizeof(err)) == 0) d = max_rel(llm_forward_logits(rt, 0), dec + 39 * V, V);
        ok(d < 1e-5, "%s: prefill past the window equals decode through the cache (%.2g)", f->name, d);
        llm_seq_close(rt, it.slot);
    }
    {
        /* three sequences at different positions in one call equal each alone */
        llm_batch_item items[3];
        int s[3], k;
        double d = 0;
        for (k = 0; k < 3; k++) {
            llm_batch_item a;
            s[k] = llm_seq_open(rt);
            a = (llm_batch_item) { s[k], ids, 10 + 9 * k, 0, 0 };
            llm_forward(rt, &a, 1, err, sizeof(err));
            items[k] = (llm_batch_item) { s[k], &ids[10 + 9 * k], 1, 1, 0 };
        }
        if (llm_forward(rt, items, 3, err, sizeof(err)) == 0) {
            for (k = 0; k < 3; k++) {
                double e = max_rel(llm_forward_logits(rt, k), dec + (size_t) (10 + 9 * k) * V, V);
                if (e > d) d = e;
            }
        } else {
            d = 1;
        }
        ok(d < 1e-5, "%s: batched decode equals unbatched (%.2g)", f->name, d);
        for (k = 0; k < 3; k++) llm_seq_close(rt, s[k]);
    }
    /* the scalar reference kernels give the same logits as the SIMD ones */
    setenv("LLM_KERNELS", "scalar", 1);
    rs = llm_runtime_create(m, 1, 64, 1, err, sizeof(err));
    if (best) setenv("LLM_KERNELS", best, 1); else unsetenv("LLM_KERNELS");
    if (ok(rs && decode_all(rs, ids, 40, ref, V, err, sizeof(err)) == 0, "%s: scalar kernels decode", f->name)) {
        double d = max_rel(dec, ref, 40 * V);
        ok(d < 1e-4, "%s: SIMD kernels match the scalar ones at every position (%.2g)", f->name, d);
    }
    llm_runtime_free(rs);
done:
    llm_runtime_free(rt);
    free(dec);
    free(ref);
    llm_model_free(m);
}

/*
 * Quantized experts (quant=q8_0 on the synthesized Qwen3-MoE, GLM-4.5, DeepSeek-V3): the experts
 * are converted (the model's dtype is then Q8_0, experts being most of it),
 * a prefill equals the cached decode, and the logits stay near the float ones.
 */
static void
check_moe_quant(const char *name)
{
    char dir[320], err[512];
    llm_model_opts o = { "q8_0" };
    llm_model *mf, *mq;
    llm_runtime *rf = NULL, *rq = NULL;
    int32_t ids[40];
    float *df = NULL, *dq = NULL;
    int i, V;

    snprintf(dir, sizeof(dir), "%s/%s-bf16", tmp, name);
    mf = llm_model_load(dir, err, sizeof(err));
    mq = llm_model_load_opts(dir, &o, err, sizeof(err));
    if (!ok(mf && mq, "%s q8_0: loads", name)) {
        diag(err);
        goto done;
    }
    ok(strncmp(llm_model_get_info(mq)->dtype, "Q8_0", 4) == 0, "%s q8_0: experts quantized (dtype %s)",
       name, llm_model_get_info(mq)->dtype);
    V = llm_model_get_info(mf)->n_vocab;
    for (i = 0; i < 40; i++) ids[i] = (int32_t) ((i * 37 + 11) % V);
    df = malloc((size_t) 40 * V * sizeof(float));
    dq = malloc((size_t) 40 * V * sizeof(float));
    rf = llm_runtime_create(mf, 2, 64, 2, err, sizeof(err));
    rq = llm_runtime_create(mq, 2, 64, 2, err, sizeof(err));
    if (!ok(rf && rq && df && dq && decode_all(rf, ids, 40, df, V, err, sizeof(err)) == 0
            && decode_all(rq, ids, 40, dq, V, err, sizeof(err)) == 0, "%s q8_0: decodes", name)) {
        diag(err);
        goto done;
    }
    {
        llm_batch_item it = { llm_seq_open(rq), ids, 40, 1, 0 };
        double d = 1;
        if (llm_forward(rq, &it, 1, err, sizeof(err)) == 0) d = max_rel(llm_forward_logits(rq, 0), dq + 39 * V, V);
        /* the float paths agree to ~1e-7 (AVX2's lazily rescaled attention sums differ in the
         * last bits between a prefill tile and a decode row); an int8 activation rounding that
         * such a difference flips moves the logits by ~1e-4, a wrong cache by whole units */
        ok(d < 1e-3, "%s q8_0: prefill equals decode through the cache (%.2g)", name, d);
        d = max_rel(dq, df, 40 * V);
        ok(d < 0.05, "%s q8_0: logits near the float model's (%.2g)", name, d);
    }
done:
    llm_runtime_free(rf);
    llm_runtime_free(rq);
    free(df);
    free(dq);
    llm_model_free(mf);
    llm_model_free(mq);
}

/* configs a family cannot use: refused at load with a message naming the problem */
static void
check_refusals(void)
{
    static const struct { const char *config, *needle; } bad[] = {
        { "{\"architectures\": [\"Phi3ForCausalLM\"], " COMMON "\"original_max_position_embeddings\": 16, "
          "\"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 2], \"long_factor\": [1, 2]}}",
          "short_factor" },
        { "{\"architectures\": [\"Glm4ForCausalLM\"], " COMMON "\"partial_rotary_factor\": 1.5}",
          "partial_rotary_factor" },
        { "{\"architectures\": [\"Glm4ForCausalLM\"], " COMMON "\"partial_rotary_factor\": 0.1}",
          "rotary dims" },
        { "{\"architectures\": [\"Gemma2ForCausalLM\"], " COMMON "\"layer_types\": [\"sliding_attention\"]}",
          "layer_types" },
        { "{\"architectures\": [\"Gemma2ForCausalLM\"], " COMMON
          "\"layer_types\": [\"full_attention\", \"chunked\", \"full_attention\", \"full_attention\"]}",
          "layer_types[1]" },
        { "{\"architectures\": [\"Gemma2ForCausalLM\"], " COMMON "\"hidden_activation\": \"gelu\"}",
          "hidden_activation" },
        { "{\"architectures\": [\"Gemma2ForCausalLM\"], " COMMON "\"final_logit_softcapping\": -1}",
          "final_logit_softcapping" },
        { "{\"architectures\": [\"Gemma3ForCausalLM\"], " COMMON
          "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000}}}",
          "sliding_attention" },
        { "{\"architectures\": [\"SmolLM3ForCausalLM\"], " COMMON "\"no_rope_layers\": [1, 0]}",
          "no_rope_layers" },
        { "{\"architectures\": [\"GraniteForCausalLM\"], " COMMON "\"logits_scaling\": 0}",
          "logits_scaling" },
        { "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " COMMON "\"num_experts\": 4, \"num_experts_per_tok\": 5}",
          "inconsistent experts" },
        { "{\"architectures\": [\"MixtralForCausalLM\"], " COMMON "\"num_local_experts\": 0}",
          "inconsistent experts" },
        { "{\"architectures\": [\"Glm4MoeForCausalLM\"], " COMMON "\"n_routed_experts\": 8, \"n_group\": 3}",
          "expert groups" },
        { "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], " COMMON "\"text_config\": 1}",
          "text_config" },
        { "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " COMMON "\"mlp_only_layers\": 2}",
          "mlp_only_layers" },
        { "{\"architectures\": [\"Lfm2ForCausalLM\"], " COMMON
          "\"layer_types\": [\"conv\", \"conv\", \"conv\", \"conv\"]}", "no attention layer" },
        { "{\"architectures\": [\"Lfm2ForCausalLM\"], " COMMON
          "\"layer_types\": [\"conv\", \"mamba\", \"full_attention\", \"conv\"]}", "layer_types[1]" },
        { "{\"architectures\": [\"Lfm2ForCausalLM\"], " COMMON "\"conv_L_cache\": 0}", "conv_L_cache" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " COMMON
          "\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 3}", "inconsistent linear attention" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " COMMON
          "\"layer_types\": [\"linear_attention\", \"conv\", \"full_attention\", \"linear_attention\"]}",
          "layer_types[1]" },
        { "{\"architectures\": [\"Qwen3NextForCausalLM\"], " COMMON "\"full_attention_interval\": 5}",
          "no attention layer" },
        { "{\"architectures\": [\"DeepseekV3ForCausalLM\"], " COMMON "\"qk_rope_head_dim\": 7}",
          "inconsistent latent attention" },
        { "{\"architectures\": [\"DeepseekV3ForCausalLM\"], " COMMON "\"kv_lora_rank\": 0}",
          "inconsistent latent attention" },
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char dir[320], err[512];
        llm_model *m;

        snprintf(dir, sizeof(dir), "%s/bad%zu", tmp, i);
        if (mkdir(dir, 0755) != 0 || write_config(dir, bad[i].config) != 0) {
            ok(0, "scratch config %zu", i);
            continue;
        }
        m = llm_model_load(dir, err, sizeof(err));
        ok(m == NULL && strstr(err, bad[i].needle) != NULL, "refused, naming %s: %s", bad[i].needle, m ? "loaded" : err);
        llm_model_free(m);
    }
}

int
main(void)
{
    char cmd[300];
    size_t i;

    snprintf(tmp, sizeof(tmp), "/tmp/llm_engine_families_XXXXXX");
    if (mkdtemp(tmp) == NULL) return skip_all("cannot create a temporary directory");
    for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) check_family(&families[i]);
    check_moe_quant("qwen3moe");
    check_moe_quant("glm4moe");
    check_moe_quant("deepseekv3");
    check_refusals();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0) diag("could not remove the temporary directory");
    return done_testing();
}
