/*
 * Engine against transformers: every fixture model's logits (prefill, decode
 * token by token, batched), greedy continuations and embeddings match the
 * reference outputs made by t/fixtures/gen/make_models.py.
 *
 * Tolerance: 1e-3 max abs on logits for every weight dtype (f16 and bf16
 * weights are widened exactly and all arithmetic is f32, as in the reference,
 * which transformers computes in float32 from the stored weights).
 *
 * LongRoPE models (reference "rope_switch": S) use their short factors in a
 * runtime of at most S positions and their long ones in a longer runtime, as
 * transformers does for sequences up to / beyond S: prompts of up to S tokens
 * are checked in a runtime of S, longer ones in one of 96.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "logits_check.h"
#include "engine/llm_engine.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

#define FIX "t/fixtures/models"
#define TOL 1e-3
#define KV16_REL 1e-2
#define KVQ8_REL 5e-2

static const char *models[] = {
    "llama_f32", "llama3_rope_f32", "llama_linear_f16", "mistral_sw_bf16",
    "qwen2_bf16", "qwen2_sharded_f32", "qwen3_f32", "qwen3_yarn_bf16", "llama_bias_f32",
    "gemma2_f32", "gemma2_bf16", "gemma3_f32", "gemma3_bf16", "phi3_f32", "phi4mini_bf16",
    "smollm3_f32", "smollm3_bf16", "glm4_f32", "glm4_bf16", "granite_f32", "granite_bf16",
    "olmo2_f32", "olmo2_bf16",
    "gemma3mm_bf16", "qwen3moe_f32", "qwen3moe_bf16", "mixtral_f32", "mixtral_bf16", "glm4moe_f32",
    "gptoss_bf16", "lfm2_f32", "qwen3next_f32", "qwen35_f32", "deepseekv3_bf16", "qwen35moe_f32", "qwen35mm_bf16",
};

/*
 * The same weights quantized: a checkpoint in a quantized format, whose every
 * bound tensor dequantizes to the same values as the reference model's, or
 * the reference folder quantized at load (quant=); either way the logits stay
 * within QUANT_REL of the references (quantized kernels round the
 * activations to int8 per 32 values, quant= the weights too).
 */
static const struct { const char *dir, *ref, *quant; } same_as[] = {
    /* experts as MXFP4 blocks, quantization_config mxfp4: made by t/make-gguf-models.sh archs */
    { "t/.cache/gguf-archs/gptoss_mxfp4", "gptoss_bf16", NULL },
    /* gpt-oss's unpacked experts (and their biases) through the on-load quantization */
    { FIX "/gptoss_bf16", "gptoss_bf16", "q8_0" },
    /* LFM2's short-convolution projections quantized with the rest */
    { FIX "/lfm2_f32", "lfm2_f32", "q8_0" },
    /* Gated DeltaNet projections quantized with the rest (Qwen3.5: dense, so no expert
     * choice flips under quantization as Qwen3-Next's random router's do) */
    { FIX "/qwen35_f32", "qwen35_f32", "q8_0" },
};
#define QUANT_REL 0.12

static float *
read_f32(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    float *v;
    long sz;

    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    v = malloc((size_t) sz);
    if (v && fread(v, 1, (size_t) sz, f) != (size_t) sz) { free(v); v = NULL; }
    fclose(f);
    *n = (size_t) sz / 4;
    return v;
}

typedef struct {
    int      n_prompts;
    int32_t  ids[8][64];
    int      len[8];
    size_t   off[8];     /* offset of the prompt's first position in the logits file */
} prompts_t;

/*
 * Every check over the prompts of lengths [min_len, max_len] in a runtime of
 * n_ctx positions (float16 KV check: kv16_ctx positions).
 */
static void
run_regime(const char *model_name, llm_model *m, json_t *ref, const float *logits, const float *embed,
    const prompts_t *all, int min_len, int max_len, int n_ctx, int kv16_ctx, const char *what)
{
    char name[160], err[512];
    const llm_model_info *in = llm_model_get_info(m);
    llm_runtime *rt;
    json_t *greedy;
    prompts_t P;
    size_t gi;
    int V = in->n_vocab, H = in->hidden, p, i, slot, orig[8], kt;
    double worst_prefill = 0, worst_decode = 0, worst_batch = 0, worst_emb = 0;

    if (what) snprintf(name, sizeof(name), "%s (%s)", model_name, what);
    else snprintf(name, sizeof(name), "%s", model_name);
    memset(&P, 0, sizeof(P));
    for (p = 0; p < all->n_prompts; p++) {
        if (all->len[p] < min_len || all->len[p] > max_len) continue;
        P.len[P.n_prompts] = all->len[p];
        P.off[P.n_prompts] = all->off[p];
        memcpy(P.ids[P.n_prompts], all->ids[p], sizeof(P.ids[0]));
        orig[P.n_prompts++] = p;
    }
    if (!ok(P.n_prompts > 0, "%s: prompts of %d..%d tokens", name, min_len, max_len)) return;

    rt = llm_runtime_create(m, 2, n_ctx, 6, err, sizeof(err));
    if (!ok(rt != NULL, "%s: runtime", name)) { diag(err); return; }

    /* 1. whole prompt in one call: last-position logits and embedding */
    for (p = 0; p < P.n_prompts; p++) {
        llm_batch_item it = { 0, P.ids[p], P.len[p], 1, 1 };
        slot = llm_seq_open(rt);
        it.slot = slot;
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { ok(0, "%s", err); continue; }
        {
            double d = max_abs(llm_forward_logits(rt, 0), logits + P.off[p] + (size_t) (P.len[p] - 1) * V, V);
            if (d > worst_prefill) worst_prefill = d;
            d = max_abs(llm_forward_embedding(rt, 0), embed + (size_t) orig[p] * H, H);
            if (d > worst_emb) worst_emb = d;
        }
        llm_seq_close(rt, slot);
    }
    ok(worst_prefill < TOL, "%s: prefill logits match (max abs %.2g)", name, worst_prefill);
    ok(worst_emb < TOL, "%s: embeddings match (max abs %.2g)", name, worst_emb);

    /* 2. every position: a prefix chunk, then one token per call through the KV cache */
    for (p = 0; p < P.n_prompts; p++) {
        int first = P.len[p] > 6 ? 5 : 1;
        llm_batch_item it = { 0, P.ids[p], first, 1, 0 };
        slot = llm_seq_open(rt);
        it.slot = slot;
        for (i = first; ; i++) {
            if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { ok(0, "%s", err); break; }
            {
                double d = max_abs(llm_forward_logits(rt, 0), logits + P.off[p] + (size_t) (i - 1) * V, V);
                if (d > worst_decode) worst_decode = d;
            }
            if (i >= P.len[p]) break;
            it.tokens = &P.ids[p][i];
            it.n_tokens = 1;
        }
        is_int(llm_seq_len(rt, slot), P.len[p], "%s: prompt %d cached length", name, p);
        llm_seq_close(rt, slot);
    }
    ok(worst_decode < TOL, "%s: logits of every position via the KV cache (max abs %.2g)", name, worst_decode);

    /* 3. all prompts in one call (different lengths), then one decode token each plus a fresh prompt */
    {
        llm_batch_item items[6];
        int slots[6], n = P.n_prompts;
        float *solo = malloc((size_t) V * 4 * n);
        int32_t seven = 7;
        for (p = 0; p < n; p++) {
            slots[p] = llm_seq_open(rt);
            items[p] = (llm_batch_item) { slots[p], P.ids[p], P.len[p], 1, 0 };
        }
        if (llm_forward(rt, items, n, err, sizeof(err)) == 0) {
            for (p = 0; p < n; p++) {
                double d = max_abs(llm_forward_logits(rt, p), logits + P.off[p] + (size_t) (P.len[p] - 1) * V, V);
                if (d > worst_batch) worst_batch = d;
            }
        } else {
            ok(0, "%s", err);
        }
        ok(worst_batch < TOL, "%s: batched prompts of lengths %d..%d match (max abs %.2g)",
           name, P.len[0], P.len[n - 1], worst_batch);
        /* unbatched reference for "prompt + token 7" */
        for (p = 0; p < n; p++) {
            int s2 = llm_seq_open(rt);
            llm_batch_item a = { s2, P.ids[p], P.len[p], 0, 0 }, b = { s2, &seven, 1, 1, 0 };
            llm_forward(rt, &a, 1, err, sizeof(err));
            llm_forward(rt, &b, 1, err, sizeof(err));
            memcpy(solo + (size_t) p * V, llm_forward_logits(rt, 0), (size_t) V * 4);
            llm_seq_close(rt, s2);
        }
        {
            double d = 0;
            int fresh = llm_seq_open(rt);
            for (p = 0; p < n; p++) items[p] = (llm_batch_item) { slots[p], &seven, 1, 1, 0 };
            items[n] = (llm_batch_item) { fresh, P.ids[n - 1], P.len[n - 1], 1, 0 };
            if (llm_forward(rt, items, n + 1, err, sizeof(err)) == 0) {
                for (p = 0; p < n; p++) {
                    double e = max_abs(llm_forward_logits(rt, p), solo + (size_t) p * V, V);
                    if (e > d) d = e;
                }
                ok(d < 1e-5, "%s: batched decode equals unbatched (max abs %.2g)", name, d);
                d = max_abs(llm_forward_logits(rt, n), logits + P.off[n - 1] + (size_t) (P.len[n - 1] - 1) * V, V);
                ok(d < TOL, "%s: prefill mixed with decodes matches (max abs %.2g)", name, d);
            } else {
                ok(0, "%s", err);
            }
            llm_seq_close(rt, fresh);
        }
        for (p = 0; p < n; p++) llm_seq_close(rt, slots[p]);
        free(solo);
    }

    /* 5. float16 and Q8_0 KV caches: every position of the longest prompt, looser bounds */
    for (kt = 0; kt < 2; kt++) {
        llm_kv_type kv = kt == 0 ? LLM_KV_F16 : LLM_KV_Q8_0;
        const char *kn = kt == 0 ? "float16" : "Q8_0";
        double rel = kt == 0 ? KV16_REL : KVQ8_REL;
        llm_runtime *r16 = llm_runtime_create_kv(m, 2, kv16_ctx, 1, kv, err, sizeof(err));
        double d = 0, scale = 0, pd[64];
        int pl = P.n_prompts - 1, over = 0;
        if (kv == LLM_KV_Q8_0 && in->head_dim % 32 != 0) {
            /* a block of 32 would straddle two heads: refused, and said why */
            ok(r16 == NULL && strstr(err, "kv=q8_0 needs a head size that is a multiple of 32") != NULL,
               "%s: kv=q8_0 refused for heads of %d (%s)", name, in->head_dim, err);
            if (r16) llm_runtime_free(r16);
            continue;
        }
        if (r16) {
            llm_batch_item it = { llm_seq_open(r16), P.ids[pl], 1, 1, 0 };
            for (i = 1; i <= P.len[pl]; i++) {
                llm_forward(r16, &it, 1, err, sizeof(err));
                const float *want = logits + P.off[pl] + (size_t) (i - 1) * V;
                int z;
                pd[i - 1] = max_abs(llm_forward_logits(r16, 0), want, V);
                d = fmax(d, pd[i - 1]);
                for (z = 0; z < V; z++) scale = fmax(scale, fabs(want[z]));
                it.tokens = &P.ids[pl][i];
            }
            for (i = 0; i < P.len[pl]; i++) over += pd[i] >= rel * scale;
            /*
             * float16 keeps 11 significant bits, Q8_0 about 8 (a value is
             * within half a step, max|block| / 254, plus the float16 scale's
             * rounding): bound the error relative to the logits' size.  With
             * experts, the rounding can flip a nearly tied expert choice at a
             * position (random tiny routers have such ties), which changes
             * that position's logits wholesale: there the bound must hold at
             * three positions in four.
             */
            if (in->n_experts == 0) {
                ok(d < rel * scale, "%s: %s KV cache within %g of max |logit| %.1f (max abs %.2g)",
                   name, kn, rel, scale, d);
            } else {
                ok(over * 4 <= P.len[pl], "%s: %s KV cache within %g of max |logit| %.1f at %d of %d "
                   "positions (max abs %.2g)", name, kn, rel, scale, P.len[pl] - over, P.len[pl], d);
            }
            /* whole blocks of LLM_KV_BLOCK positions: 2 or 34/32 bytes a value; keys and values,
             * or latent attention's one row of both */
            {
                long long vals = (m->mla_kv_rank ? 1LL : 2LL) * m->n_kv_layers * ((kv16_ctx + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK * LLM_KV_BLOCK)
                                 * in->n_kv_heads * in->head_dim;
                is_int((long long) llm_runtime_kv_bytes(r16), kt == 0 ? vals * 2 : vals / 32 * 34,
                       "%s: %s KV bytes", name, kn);
            }
            llm_runtime_free(r16);
        } else {
            ok(0, "%s", err);
        }
    }

    /* 4. greedy continuations */
    greedy = json_object_get(ref, "greedy");
    for (gi = 0; gi < json_array_size(greedy); gi++) {
        json_t *g = json_array_get(greedy, gi), *toks = json_object_get(g, "tokens");
        json_t *margins = json_object_get(g, "margins");
        int pi = -1, want_pi = (int) json_integer_value(json_object_get(g, "prompt"));
        int32_t cur;
        int steps = (int) json_array_size(toks), same = 1, step;
        llm_batch_item it;
        for (p = 0; p < P.n_prompts; p++) if (orig[p] == want_pi) pi = p;
        if (pi < 0) continue;     /* that prompt belongs to another regime */
        slot = llm_seq_open(rt);
        it = (llm_batch_item) { slot, P.ids[pi], P.len[pi], 1, 0 };
        for (step = 0; step < steps; step++) {
            int want = (int) json_integer_value(json_array_get(toks, step));
            if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { same = 0; diag(err); break; }
            cur = argmax(llm_forward_logits(rt, 0), V);
            if (cur != want) {
                double margin = json_number_value(json_array_get(margins, step));
                char msg[160];
                snprintf(msg, sizeof(msg), "step %d: got %d want %d (reference top-2 margin %.3g)",
                         step, cur, want, margin);
                diag(msg);
                same = 0;
                break;
            }
            it.tokens = &cur;
            it.n_tokens = 1;
        }
        ok(same, "%s: greedy continuation of prompt %d (%d tokens) identical", name, want_pi, steps);
        llm_seq_close(rt, slot);
    }

    llm_runtime_free(rt);
}

/*
 * reference "long": a prompt longer than one forward chunk (LLM_CHUNK) and
 * than the sliding window: its logits at the listed positions, reached in one
 * call (the last) and in calls ending at each listed position (through the KV
 * cache), in a batch beside a short prompt, and its greedy continuation.
 */
static void
test_long(const char *name, llm_model *m, json_t *ref, const char *dir)
{
    json_t *lg = json_object_get(ref, "long"), *pr, *at, *gr;
    char path[320], err[512];
    float *want;
    size_t nw;
    int32_t *ids, cur;
    int n, V = llm_model_get_info(m)->n_vocab, i, k, from = 0, same = 1, slot;
    double worst = 0, d;
    llm_runtime *rt;

    if (lg == NULL) return;
    pr = json_object_get(lg, "prompt");
    at = json_object_get(lg, "positions");
    gr = json_object_get(lg, "greedy");
    n = (int) json_array_size(pr);
    snprintf(path, sizeof(path), "%s/reference_long.f32", dir);
    want = read_f32(path, &nw);
    ids = calloc((size_t) n + 1, sizeof(*ids));
    if (!ok(want && ids && nw == json_array_size(at) * (size_t) V && n > 256, "%s: long prompt reference (%d tokens)",
            name, n)) {
        free(want);
        free(ids);
        return;
    }
    for (i = 0; i < n; i++) ids[i] = (int32_t) json_integer_value(json_array_get(pr, i));
    rt = llm_runtime_create(m, 2, n + 16, 2, err, sizeof(err));
    if (!ok(rt != NULL, "%s: long runtime", name)) {
        diag(err);
        free(want);
        free(ids);
        return;
    }
    /* the whole prompt in one call, beside a short one */
    {
        int s0 = llm_seq_open(rt), s1 = llm_seq_open(rt);
        llm_batch_item it[2] = { { s0, ids + 3, 5, 1, 0 }, { s1, ids, n, 1, 0 } };
        if (llm_forward(rt, it, 2, err, sizeof(err)) == 0) {
            d = max_abs(llm_forward_logits(rt, 1), want + (json_array_size(at) - 1) * (size_t) V, V);
            ok(d < TOL, "%s: %d-token prompt in one call beside another, last logits match (max abs %.2g)",
               name, n, d);
        } else {
            ok(0, "%s", err);
        }
        llm_seq_close(rt, s0);
        llm_seq_close(rt, s1);
    }
    /* calls ending at each listed position */
    slot = llm_seq_open(rt);
    for (k = 0; k < (int) json_array_size(at); k++) {
        int to = (int) json_integer_value(json_array_get(at, k));
        llm_batch_item it = { slot, ids + from, to + 1 - from, 1, 0 };
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { ok(0, "%s", err); break; }
        d = max_abs(llm_forward_logits(rt, 0), want + (size_t) k * V, V);
        if (d > worst) worst = d;
        from = to + 1;
    }
    ok(worst < TOL, "%s: long prompt's logits at %d positions across the window and chunk boundaries, "
       "through the KV cache (max abs %.2g)", name, (int) json_array_size(at), worst);
    for (k = 0; k < (int) json_array_size(gr); k++) {
        llm_batch_item it = { slot, &cur, 1, 1, 0 };
        cur = argmax(llm_forward_logits(rt, 0), V);
        if (cur != (int) json_integer_value(json_array_get(gr, k))) {
            same = 0;
            break;
        }
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { same = 0; break; }
    }
    ok(same, "%s: greedy continuation of the long prompt (%d tokens) identical", name, (int) json_array_size(gr));
    llm_seq_close(rt, slot);
    llm_runtime_free(rt);
    free(want);
    free(ids);
}

static void
test_model(const char *name, const char *ref_name)
{
    char dir[256], rdir[256], path[320], err[512];
    llm_model *m;
    const llm_model_info *in;
    json_t *ref, *pr;
    json_error_t jerr;
    prompts_t P;
    float *logits, *embed;
    size_t nl, ne, off = 0;
    int V, p, i, rope_switch;

    snprintf(dir, sizeof(dir), "%s/%s", FIX, name);
    snprintf(rdir, sizeof(rdir), "%s/%s", FIX, ref_name);
    m = llm_model_load(dir, err, sizeof(err));
    if (!ok(m != NULL, "%s: loads", name)) {
        diag(err);
        return;
    }
    in = llm_model_get_info(m);
    V = in->n_vocab;
    snprintf(path, sizeof(path), "%s/reference.json", rdir);
    ref = json_load_file(path, 0, &jerr);
    snprintf(path, sizeof(path), "%s/reference_logits.f32", rdir);
    logits = read_f32(path, &nl);
    snprintf(path, sizeof(path), "%s/reference_embed.f32", rdir);
    embed = read_f32(path, &ne);
    if (!ok(ref && logits && embed, "%s: reference files", name)) {
        llm_model_free(m);
        json_decref(ref);
        free(logits);
        free(embed);
        return;
    }
    is_str(in->architecture, json_string_value(json_object_get(ref, "architecture")), "%s: architecture", name);
    is_int(V, json_integer_value(json_object_get(ref, "vocab")), "%s: vocab", name);

    memset(&P, 0, sizeof(P));
    pr = json_object_get(ref, "prompts");
    P.n_prompts = (int) json_array_size(pr);
    for (p = 0; p < P.n_prompts; p++) {
        json_t *a = json_array_get(pr, p);
        P.len[p] = (int) json_array_size(a);
        for (i = 0; i < P.len[p]; i++) P.ids[p][i] = (int32_t) json_integer_value(json_array_get(a, i));
        P.off[p] = off;
        off += (size_t) P.len[p] * V;
    }
    is_int((long long) nl, (long long) off, "%s: logits file size", name);

    rope_switch = (int) json_integer_value(json_object_get(ref, "rope_switch"));
    if (rope_switch > 0) {
        /* short factors: runtime of rope_switch positions; long factors: longer prompts in one of 96 */
        run_regime(name, m, ref, logits, embed, &P, 0, rope_switch, rope_switch, rope_switch, "short rope");
        run_regime(name, m, ref, logits, embed, &P, rope_switch + 1, 64, 96, 64, "long rope");
    } else {
        run_regime(name, m, ref, logits, embed, &P, 0, 64, 96, 64, NULL);
    }
    test_long(name, m, ref, rdir);
    llm_model_free(m);
    json_decref(ref);
    free(logits);
    free(embed);
}

/* llm_model_tensors callback: {name: FNV-1a of the tensor's values as f32, every slice and part} */
static int
hash_tensor(void *arg, const llm_tensor_spec *s)
{
    json_t *out = arg;
    uint64_t h = 0xcbf29ce484222325ull;
    char hex[17];
    int k, i, r;
    size_t b;

    if (s->cols == 0) {
        if (*s->vec == NULL) return 0;
        for (b = 0; b < (size_t) s->rows * 4; b++) h = (h ^ ((const unsigned char *) *s->vec)[b]) * 0x100000001b3ull;
    } else {
        float *row = malloc((size_t) s->cols * sizeof(float));
        for (k = 0; k < (s->n_stack > 0 ? s->n_stack : 1); k++) {
            for (i = 0; i < s->n_parts; i++) {
                const llm_mat *m = s->part[i] + k;
                size_t rb = llm_wtype_row_bytes(m->type, m->cols);
                for (r = 0; r < m->rows; r++) {
                    llm_dequant_row(m->type, (const char *) m->data + (size_t) r * rb, row, m->cols);
                    for (b = 0; b < (size_t) m->cols * 4; b++) h = (h ^ ((unsigned char *) row)[b]) * 0x100000001b3ull;
                }
            }
        }
        free(row);
    }
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long) h);
    json_object_set_new(out, s->name, json_string(hex));
    return 0;
}

static void
test_same_as(const char *name, const char *ref_name, const char *quant)
{
    llm_model_opts opts;
    char dir[256], rdir[256], path[320], err[512];
    llm_model *m, *r;
    json_t *hm = json_object(), *hr = json_object(), *ref = NULL, *pr;
    json_error_t jerr;
    float *logits = NULL;
    size_t nl, off = 0;
    int V, p, i, n_differ = 0;
    const char *key;
    json_t *v;
    double worst = 0, scale = 0;

    snprintf(dir, sizeof(dir), "%s", name);
    snprintf(rdir, sizeof(rdir), "%s/%s", FIX, ref_name);
    memset(&opts, 0, sizeof(opts));
    opts.quant = quant;
    m = llm_model_load_opts(dir, &opts, err, sizeof(err));
    if (!ok(m != NULL, "%s%s%s: loads", name, quant ? " quant=" : "", quant ? quant : "")) diag(err);
    r = llm_model_load(rdir, err, sizeof(err));
    if (!ok(r != NULL, "%s: loads", ref_name)) diag(err);
    if (m == NULL || r == NULL) goto out;
    if (quant == NULL) {
        llm_model_tensors(m, hash_tensor, hm);
        llm_model_tensors(r, hash_tensor, hr);
        json_object_foreach(hr, key, v) {
            if (!json_equal(v, json_object_get(hm, key)) && n_differ++ == 0) diag(key);
        }
        ok(n_differ == 0 && json_object_size(hm) == json_object_size(hr) && json_object_size(hr) > 0,
           "%s: all %d tensors hold the values of %s's (%d differ)", name, (int) json_object_size(hr), ref_name,
           n_differ);
    }
    ok(strcmp(llm_model_get_info(m)->dtype, llm_model_get_info(r)->dtype) != 0, "%s: held as %s (%s: %s)", name,
       llm_model_get_info(m)->dtype, ref_name, llm_model_get_info(r)->dtype);

    snprintf(path, sizeof(path), "%s/reference.json", rdir);
    ref = json_load_file(path, 0, &jerr);
    snprintf(path, sizeof(path), "%s/reference_logits.f32", rdir);
    logits = read_f32(path, &nl);
    if (!ok(ref && logits, "%s: reference files", name)) goto out;
    V = llm_model_get_info(m)->n_vocab;
    pr = json_object_get(ref, "prompts");
    {
        llm_runtime *rt = llm_runtime_create(m, 2, 64, 1, err, sizeof(err));
        for (p = 0; rt && p < (int) json_array_size(pr); p++) {
            json_t *a = json_array_get(pr, p);
            int n = (int) json_array_size(a);
            int32_t ids[64];
            llm_batch_item it = { llm_seq_open(rt), ids, n, 1, 0 };
            const float *want;
            for (i = 0; i < n; i++) ids[i] = (int32_t) json_integer_value(json_array_get(a, i));
            off += (size_t) n * V;
            want = logits + off - V;
            if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) { ok(0, "%s", err); break; }
            worst = fmax(worst, max_abs(llm_forward_logits(rt, 0), want, V));
            for (i = 0; i < V; i++) scale = fmax(scale, fabs(want[i]));
            llm_seq_close(rt, it.slot);
        }
        ok(rt != NULL && worst < QUANT_REL * scale, "%s: prefill logits within %g of max |logit| %.1f of %s's "
           "references (max abs %.2g)", name, QUANT_REL, scale, ref_name, worst);
        llm_runtime_free(rt);
    }
out:
    llm_model_free(m);
    llm_model_free(r);
    json_decref(hm);
    json_decref(hr);
    json_decref(ref);
    free(logits);
}

int
main(void)
{
    size_t i;
    for (i = 0; i < sizeof(models) / sizeof(models[0]); i++) test_model(models[i], models[i]);
    for (i = 0; i < sizeof(same_as) / sizeof(same_as[0]); i++) {
        test_same_as(same_as[i].dir, same_as[i].ref, same_as[i].quant);
    }
    return done_testing();
}
