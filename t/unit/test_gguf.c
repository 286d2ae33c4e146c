/*
 * GGUF models (t/fixtures/gguf, written by t/fixtures/gen/make_gguf_fixtures.py,
 * an independent numpy implementation of the block layouts):
 *   - every tensor the engine binds dequantizes to exactly the values the
 *     writer computed (FNV-1a hashes in dequant.json), the llama
 *     architecture's Q/K rows back in Hugging Face order;
 *   - logits are within a stated tolerance of transformers on the
 *     dequantized float32 weights (reference.json, computed on the
 *     accelerator machine), the tolerance being the int8 activation rounding;
 *   - a split file reads as the single file does; broken files fail with a
 *     message naming the problem (truncation, magic, an unsupported type by
 *     tensor and type name);
 *   - the tokenizer made from tokenizer.ggml.* encodes as tokenizer.json
 *     does (the fixtures' byte tokenizer here; real Qwen3, Llama 3 and
 *     Llama 2 tokenizers when t/.cache/tokenizers has them), and the chat
 *     template comes from tokenizer.chat_template.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "weights_check.h"
#include "chat/llm_chat.h"
#include "engine/llm_engine.h"
#include "engine/llm_model_impl.h"
#include "engine/llm_tokenizer.h"
#include "kernels/cpu/llm_quant.h"

#define FIX "t/fixtures/gguf"
/* the other architectures: made from the Hugging Face fixtures by t/make-gguf-models.sh */
#define FIX_ARCHS "t/.cache/gguf-archs"

/*
 * max |ours - ref| / max |ref| allowed per type: float types exact up to
 * summation order; quantized types differ by the int8 rounding of the
 * activations (per 32 values for the 32-value block types, per 256 for the
 * K-quants, as llama.cpp's kernels round them).  Measured on these fixtures
 * (random weights of std 0.2, which amplify it): up to 0.094 (Q5_0) and 0.020
 * (Q2_K); quantizing the weights themselves moves the same logits by 0.02
 * (Q8_0) to 0.46 (MXFP4).
 */
static double
tolerance(const char *file)
{
    if (strstr(file, "_f16") || strstr(file, "_bf16")) return 1e-4;
    if (strncmp(file, "k256_", 5) == 0) return 0.04;
    return 0.12;
}

static void
test_files(void)
{
    json_t *hashes, *ref = NULL, *files = NULL, *prompts = NULL, *v;
    json_error_t je;
    const char *file;
    FILE *lf = NULL;
    int vocab = 256, n_ok = 0;

    hashes = json_load_file(FIX "/dequant.json", 0, &je);
    if (!ok(hashes != NULL, "dequant.json loads")) return;
    if (access(FIX "/reference.json", R_OK) == 0) {
        ref = json_load_file(FIX "/reference.json", 0, &je);
        files = json_object_get(ref, "files");
        prompts = json_object_get(ref, "prompts");
        lf = fopen(FIX "/reference_logits.f32", "rb");
    } else {
        diag("no reference.json: logits against transformers not checked");
    }
    json_object_foreach(hashes, file, v) {
        char path[512], err[512];
        llm_model *m;
        hash_ctx c;

        snprintf(path, sizeof(path), FIX "/%s", file);
        m = llm_model_load(path, err, sizeof(err));
        if (!ok(m != NULL, "%s loads", file)) {
            diag(err);
            continue;
        }
        memset(&c, 0, sizeof(c));
        c.want = v;
        llm_model_tensors(m, check_tensor, &c);
        ok(c.bad == 0 && c.checked == (int) json_object_size(v),
           "%s: %d of %d tensors dequantize to the writer's values%s%s", file, c.checked - c.bad,
           (int) json_object_size(v), c.bad ? ", first differing: " : "", c.first_bad);
        if (files && lf) {
            double worst = reference_error(m, files, prompts, lf, file, vocab);
            if (worst >= 0) {
                ok(worst <= tolerance(file), "%s: logits within %.3g of transformers on the dequantized "
                   "weights (max |diff| / max |logit| = %.3g)", file, tolerance(file), worst);
            }
        }
        n_ok++;
        llm_model_free(m);
    }
    ok(n_ok >= 18, "%d fixture files checked", n_ok);
    if (lf) fclose(lf);
    json_decref(ref);
    json_decref(hashes);
}

/*
 * Granite, OLMo 2, GLM-4, Phi-3, Gemma 2 / 3, SmolLM3, Mixtral (llama with
 * experts) and Qwen3-MoE as llama.cpp names them (make_gguf_fixtures.py
 * --archs: their float32 Hugging Face fixtures, the ones test_engine holds
 * to transformers, written as F32 GGUF): the same logits at every position
 * from either, so the architecture, its keys (Granite's multipliers, GLM-4's
 * rotary part, Phi-3's window and LongRoPE with its factor tensors) and its
 * tensor names (post-norms, fused Q/K/V and gate/up, Granite's Q/K row
 * order, Gemma's stored 1 + w norms, experts stacked in ffn_*_exps) are read
 * as the folder is.  For Gemma
 * and SmolLM3, whose sliding pattern, attention scale, local RoPE base and
 * NoPE step llama.cpp fixes rather than reads, the folder's weights are
 * loaded with that config (<name>.config.json, by the writer).  The runtime
 * holds 64 positions, past Phi-3's original 20: its long factors are used.
 */
static void
test_archs(void)
{
    static const char *const names[] = { "granite_f32", "olmo2_f32", "glm4_f32", "phi3_f32",
                                         "gemma2_f32", "gemma3_f32", "smollm3_f32", "mixtral_bf16",
                                         "qwen3moe_f32", "gptoss_mxfp4" };
    static const int32_t prompt[] = { 3, 40, 41, 42, 101, 102, 7, 250, 9, 9, 60, 61 };
    const int n = (int) (sizeof(prompt) / sizeof(prompt[0])), vocab = 256;
    size_t k;

    for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char path[256], err[512];
        llm_model *g, *h;
        float *a = malloc((size_t) n * vocab * sizeof(float)), *b = malloc((size_t) n * vocab * sizeof(float));
        double md = 0, mx = 0;
        int i, computed = 0;

        snprintf(path, sizeof(path), FIX_ARCHS "/%s.gguf", names[k]);
        g = llm_model_load(path, err, sizeof(err));
        if (!ok(g != NULL, "%s.gguf loads", names[k])) diag(err);
        snprintf(path, sizeof(path), FIX_ARCHS "/%s.config.json", names[k]);
        if (access(path, R_OK) == 0) {
            /* the config llama.cpp gives the file (what it fixes itself) over the same weights */
            char dir[] = "/tmp/llm_gguf_arch_XXXXXX", cmd[1024];
            if (mkdtemp(dir) == NULL) dir[0] = '\0';
            snprintf(cmd, sizeof(cmd), "cp %s %s/config.json && ln -s \"$PWD\"/t/fixtures/models/%s/model.safetensors %s/",
                     path, dir, names[k], dir);
            h = dir[0] && system(cmd) == 0 ? llm_model_load(dir, err, sizeof(err)) : NULL;
            snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
            if (dir[0] && system(cmd) != 0) diag("temporary folder not removed");
        } else {
            /* Qwen3-MoE: a model of the writer's, every layer sparse (llama.cpp has no dense ones) */
            if (strcmp(names[k], "qwen3moe_f32") == 0) snprintf(path, sizeof(path), FIX_ARCHS "/qwen3moe_src");
            /* gpt-oss: its experts in MXFP4, against the MXFP4 checkpoint of the same weights */
            else if (strcmp(names[k], "gptoss_mxfp4") == 0) snprintf(path, sizeof(path), FIX_ARCHS "/gptoss_mxfp4");
            else snprintf(path, sizeof(path), "t/fixtures/models/%s", names[k]);
            h = llm_model_load(path, err, sizeof(err));
        }
        if (h == NULL) diag(err);
        if (g && h && prompt_logits(g, prompt, n, a, vocab) == 0 && prompt_logits(h, prompt, n, b, vocab) == 0) {
            computed = 1;
            for (i = 0; i < n * vocab; i++) {
                if (fabs(b[i]) > mx) mx = fabs(b[i]);
                if (fabs(a[i] - b[i]) > md) md = fabs(a[i] - b[i]);
            }
        }
        ok(computed && mx > 0 && md <= 1e-5, "%s.gguf: logits of all %d positions equal the Hugging Face folder's "
           "(max |diff| %.3g, max |logit| %.3g)", names[k], n, md, mx);
        llm_model_free(g);
        llm_model_free(h);
        free(a);
        free(b);
    }
}

static void
test_split(void)
{
    char err[512];
    llm_model *a = llm_model_load(FIX "/llama_q8_0.gguf", err, sizeof(err));
    llm_model *b = llm_model_load(FIX "/llama_q8_0_split-00002-of-00002.gguf", err, sizeof(err));
    int32_t ids[4] = { 1, 7, 99, 200 };
    float la[4 * 256], lb[4 * 256];

    if (!ok(a && b, "a split file loads from any of its parts")) {
        diag(err);
    } else {
        ok(prompt_logits(a, ids, 4, la, 256) == 0 && prompt_logits(b, ids, 4, lb, 256) == 0
           && memcmp(la, lb, sizeof(la)) == 0, "the split file gives the single file's logits");
    }
    llm_model_free(a);
    llm_model_free(b);
}

static unsigned char *
slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long len;
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t) len);
    if (fread(b, 1, (size_t) len, f) != (size_t) len) len = 0;
    fclose(f);
    *n = (size_t) len;
    return b;
}

static void
spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

static void
expect_error(const char *path, const char *needle, const char *what)
{
    char err[512] = "";
    llm_model *m = llm_model_load(path, err, sizeof(err));
    if (!ok(m == NULL && strstr(err, needle) != NULL, "%s: refused with \"%s\"", what, needle)) diag(err);
    llm_model_free(m);
}

static void
test_errors(void)
{
    size_t n = 0, i;
    unsigned char *b = slurp(FIX "/llama_q8_0.gguf", &n);
    char dir[] = "/tmp/llm_gguf_XXXXXX", path[256];

    if (!ok(b != NULL && mkdtemp(dir) != NULL, "scratch copies")) return;
    snprintf(path, sizeof(path), "%s/trunc.gguf", dir);
    spit(path, b, n - 1000);
    expect_error(path, "lies outside the file", "a truncated file");
    spit(path, b, 100);
    expect_error(path, "truncated GGUF header", "a file cut in its header");
    b[0] = 'X';
    snprintf(path, sizeof(path), "%s/magic.gguf", dir);
    spit(path, b, n);
    expect_error(path, "bad magic", "a file that is not GGUF");
    b[0] = 'G';
    /* the type of token_embd.weight (after name, n_dims, ne0, ne1) becomes IQ2_XXS (16) */
    for (i = 0; i + 17 < n; i++) {
        if (memcmp(b + i, "token_embd.weight", 17) == 0) {
            uint32_t t = 16;
            memcpy(b + i + 17 + 4 + 16, &t, 4);
            break;
        }
    }
    snprintf(path, sizeof(path), "%s/type.gguf", dir);
    spit(path, b, n);
    expect_error(path, "tensor \"model.embed_tokens.weight\" has type IQ2_XXS, which is not supported",
                 "an unsupported tensor type");
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    if (system(path) != 0) diag("could not remove the scratch directory");
    free(b);
}

static int
same_ids(llm_tokenizer *a, llm_tokenizer *b, const char *text)
{
    int32_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same;
    llm_tokenizer_encode(a, text, strlen(text), 1, &x, &nx);
    llm_tokenizer_encode(b, text, strlen(text), 1, &y, &ny);
    same = nx == ny && (nx == 0 || memcmp(x, y, nx * sizeof(int32_t)) == 0);
    free(x);
    free(y);
    return same;
}

static const char *TEXTS[] = {
    "Hello world! 123456 don't I'll  spaces\n\ttabs",
    "naïve café ünïcödé 日本語 🙂 <|im_start|>user\nhi<|im_end|>",
    "   leading spaces and a trailing one ",
};

static void
compare_tokenizers(const char *hf_dir, const char *gguf, const char *what)
{
    char err[512];
    llm_tokenizer *a = llm_tokenizer_load(hf_dir, err, sizeof(err));
    llm_tokenizer *b = llm_tokenizer_load(gguf, err, sizeof(err));
    size_t i;
    int same = a && b;

    for (i = 0; same && i < sizeof(TEXTS) / sizeof(TEXTS[0]); i++) same = same_ids(a, b, TEXTS[i]);
    if (!ok(same, "%s: the tokenizer from GGUF metadata encodes as tokenizer.json does", what) && !b) diag(err);
    llm_tokenizer_free(a);
    llm_tokenizer_free(b);
}

static void
test_tokenizers(void)
{
    static const char *real[] = { "qwen3", "llama3", "llama2" };
    char err[512], cmd[1024], dir[] = "/tmp/llm_gguf_tok_XXXXXX";
    llm_tokenizer *t;
    llm_chat *c;
    int absent;
    size_t i;

    compare_tokenizers("t/fixtures/models/llama_f32", FIX "/llama_q8_0.gguf", "byte-level fixture tokenizer");
    t = llm_tokenizer_load(FIX "/llama_q8_0.gguf", err, sizeof(err));
    c = t ? llm_chat_open(FIX "/llama_q8_0.gguf", t, &absent, err, sizeof(err)) : NULL;
    ok(c != NULL && strstr(llm_chat_source(c), "message.role") != NULL,
       "the chat template comes from tokenizer.chat_template");
    llm_chat_free(c);
    llm_tokenizer_free(t);

    if (access("t/.cache/tokenizers/qwen3/tokenizer.json", R_OK) != 0 || mkdtemp(dir) == NULL) {
        diag("t/.cache/tokenizers missing: real tokenizers not compared (t/fetch-tokenizers.sh)");
        return;
    }
    for (i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
        char gguf[256], src[256], what[64];
        snprintf(src, sizeof(src), "t/.cache/tokenizers/%s", real[i]);
        snprintf(gguf, sizeof(gguf), "%s/%s.gguf", dir, real[i]);
        snprintf(cmd, sizeof(cmd), "python3 t/fixtures/gen/make_gguf.py --tokenizer-only %s %s llama", src, gguf);
        snprintf(what, sizeof(what), "%s tokenizer", real[i]);
        if (!ok(system(cmd) == 0, "tokenizer-only GGUF of %s written", real[i])) continue;
        compare_tokenizers(src, gguf, what);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) diag("could not remove the scratch directory");
}

int
main(void)
{
    test_files();
    test_archs();
    test_split();
    test_errors();
    test_tokenizers();
    return done_testing();
}
