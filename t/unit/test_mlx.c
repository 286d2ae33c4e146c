/*
 * MLX affine-quantized folders (t/fixtures/mlx, written by
 * t/fixtures/gen/make_mlx_fixtures.py, an independent numpy quantizer and
 * packer):
 *   - every tensor the engine binds dequantizes to exactly the values the
 *     writer computed (FNV-1a hashes in dequant.json): 2, 3, 4, 5, 6 and 8
 *     bits, groups of 32, 64 and 128, f16 / bf16 / f32 scales, quantized
 *     embedding and lm_head, per-module overrides (other bits, not quantized);
 *   - 4- and 5-bit matrices with f16-exact scales become Q4_1 / Q5_1, the
 *     others AQ8;
 *   - logits are within a stated tolerance of transformers on the
 *     dequantized float32 weights (reference.json, accelerator machine);
 *   - broken folders fail with a message naming the tensor or setting.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "weights_check.h"
#include "engine/llm_engine.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

#define FIX "t/fixtures/mlx"

/*
 * max |ours - ref| / max |ref| allowed: every MLX matrix is read with 32-value
 * int8 activation blocks (Q4_1, Q5_1, AQ8), so the allowance is the one
 * test_gguf.c states for the 32-value GGUF types (0.12 on 64-wide random
 * models of std 0.2, 0.04 on the 256-wide ones), whatever the width: the
 * activation rounding does not depend on the weight bits.  Float matrices
 * left unquantized (overrides) are exact up to summation order.  Measured
 * 2026-11-24 (references from transformers 5.17.0 on the accelerator
 * machine): 2 bits 0.046, 3 bits 0.046, 4 bits 0.033 (f32 scales, AQ8) and
 * 0.051 (mixed), 5 bits 0.067, 6 bits 0.041, 8 bits 0.088; k256 3 and 4
 * bits 0.012 and 0.011.
 */
static double
tolerance(const char *folder)
{
    return strncmp(folder, "k256_", 5) == 0 ? 0.04 : 0.12;
}

static const char *
type_of(const llm_mat *w)
{
    return llm_wtype_info(w->type)->name;
}

static void
check_logits(llm_model *m, const char *folder, json_t *ref, FILE *lf)
{
    double worst = reference_error(m, json_object_get(ref, "folders"), json_object_get(ref, "prompts"),
                                   lf, folder, 256);

    if (worst < 0) {
        ok(0, "%s: in reference.json", folder);
        return;
    }
    ok(worst <= tolerance(folder), "%s: logits within %.3g of transformers on the dequantized weights "
       "(max |diff| / max |logit| = %.3g)", folder, tolerance(folder), worst);
}

static void
test_folders(void)
{
    json_t *hashes, *ref = NULL, *v;
    json_error_t je;
    const char *folder;
    FILE *lf = NULL;
    int n_ok = 0;

    hashes = json_load_file(FIX "/dequant.json", 0, &je);
    if (!ok(hashes != NULL, "dequant.json loads")) return;
    if (access(FIX "/reference.json", R_OK) == 0) {
        ref = json_load_file(FIX "/reference.json", 0, &je);
        lf = fopen(FIX "/reference_logits.f32", "rb");
    } else {
        diag("no reference.json: logits against transformers not checked");
    }
    json_object_foreach(hashes, folder, v) {
        char path[512], err[512];
        llm_model *m;
        hash_ctx c;

        snprintf(path, sizeof(path), FIX "/%s", folder);
        m = llm_model_load(path, err, sizeof(err));
        if (!ok(m != NULL, "%s loads", folder)) {
            diag(err);
            continue;
        }
        memset(&c, 0, sizeof(c));
        c.want = v;
        llm_model_tensors(m, check_tensor, &c);
        ok(c.bad == 0 && c.checked == (int) json_object_size(v),
           "%s: %d of %d tensors dequantize to the writer's values%s%s", folder, c.checked - c.bad,
           (int) json_object_size(v), c.bad ? ", first differing: " : "", c.first_bad);
        if (ref && lf) check_logits(m, folder, ref, lf);
        if (strcmp(folder, "llama_4bit_g64_mixed") == 0) {
            const llm_layer *L0 = &m->layers[0], *L1 = &m->layers[1];
            ok(strcmp(type_of(&m->embed), "Q4_1") == 0 && strcmp(type_of(&m->lm_head), "Q4_1") == 0
               && strcmp(type_of(&L0->wq), "Q4_1") == 0, "bf16 scales: 4-bit embedding, lm_head, q_proj are Q4_1 "
               "(%s %s %s)", type_of(&m->embed), type_of(&m->lm_head), type_of(&L0->wq));
            ok(strcmp(type_of(&L0->wk), "BF16") == 0, "override false: layer 0 k_proj stays BF16 (%s)",
               type_of(&L0->wk));
            ok(strcmp(type_of(&L1->w_down), "AQ8") == 0 && strcmp(type_of(&L0->w_down), "Q4_1") == 0,
               "override 8 bits / 128: layer 1 down_proj is AQ8, layer 0's Q4_1 (%s, %s)",
               type_of(&L1->w_down), type_of(&L0->w_down));
        } else if (strcmp(folder, "llama_5bit_g64") == 0) {
            ok(strcmp(type_of(&m->layers[0].w_up), "Q5_1") == 0, "5 bits with f16 scales: Q5_1 (%s)",
               type_of(&m->layers[0].w_up));
        } else if (strcmp(folder, "llama_4bit_g32_f32") == 0) {
            ok(strcmp(type_of(&m->layers[0].w_up), "AQ8") == 0, "4 bits with f32 scales (not f16-exact): AQ8 (%s)",
               type_of(&m->layers[0].w_up));
        }
        n_ok++;
        llm_model_free(m);
    }
    ok(n_ok == 9, "%d fixture folders checked", n_ok);
    if (lf) fclose(lf);
    json_decref(ref);
    json_decref(hashes);
}

/* a scratch copy of a fixture folder with its config.json's "quantization" replaced */
static int
scratch(char *dir, const char *folder, const char *quant_json, const char *drop_tensor)
{
    char cmd[1024], path[512];
    json_t *cfg, *q;
    json_error_t je;

    if (mkdtemp(dir) == NULL) return -1;
    snprintf(cmd, sizeof(cmd), "cp " FIX "/%s/* %s/", folder, dir);
    if (system(cmd) != 0) return -1;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    cfg = json_load_file(path, 0, &je);
    if (cfg == NULL) return -1;
    if (quant_json) {
        q = json_loads(quant_json, JSON_DECODE_ANY, &je);
        if (q == NULL || json_is_null(q)) json_object_del(cfg, "quantization");
        else json_object_set_new(cfg, "quantization", q);
        if (json_is_null(q)) json_decref(q);
    }
    json_dump_file(cfg, path, 0);
    json_decref(cfg);
    if (drop_tensor) {
        /* rename the tensor inside the header: same length, another name */
        FILE *f;
        size_t n;
        char *b, *hit;
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        f = fopen(path, "r+b");
        if (f == NULL) return -1;
        b = calloc(1, 65536);
        n = fread(b, 1, 65535, f);
        hit = memmem(b, n, drop_tensor, strlen(drop_tensor));
        if (hit == NULL) {
            fclose(f);
            free(b);
            return -1;
        }
        hit[strlen(drop_tensor) - 1] = 'X';
        fseek(f, 0, SEEK_SET);
        fwrite(b, 1, n, f);
        fclose(f);
        free(b);
    }
    return 0;
}

static void
expect_error(const char *folder, const char *quant_json, const char *drop, const char *needle, const char *what)
{
    char dir[] = "/tmp/llm_mlx_XXXXXX", err[512] = "", cmd[600];
    llm_model *m = NULL;

    if (scratch(dir, folder, quant_json, drop) == 0) m = llm_model_load(dir, err, sizeof(err));
    if (!ok(m == NULL && strstr(err, needle) != NULL, "%s: refused with \"%s\"", what, needle)) diag(err);
    llm_model_free(m);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) diag("could not remove a scratch folder");
}

static void
test_errors(void)
{
    expect_error("llama_4bit_g64_mixed", "null", NULL, "has type U32",
                 "U32 weights without config.json \"quantization\"");
    expect_error("llama_4bit_g64_mixed", "{\"group_size\": 64, \"bits\": 7}", NULL,
                 "with 7 bits is not supported", "7 bits");
    expect_error("llama_4bit_g64_mixed", "{\"group_size\": 48, \"bits\": 4}", NULL,
                 "group size 48 is not supported", "a group size that is not a multiple of 32");
    expect_error("llama_4bit_g64_mixed", "{\"group_size\": 32, \"bits\": 4}", NULL,
                 "has dtype BF16 and shape [256, 1]; the weight needs [256, 2]",
                 "scales that do not match the group size");
    expect_error("llama_4bit_g64_mixed", "{\"group_size\": 64, \"bits\": 4, \"mode\": \"mxfp4\"}", NULL,
                 "quantization mode mxfp4 is not supported", "a quantization mode other than affine");
    expect_error("llama_4bit_g64_mixed", "{\"group_size\": 64, \"bits\": 4, \"lm_head\": false}", NULL,
                 "tensor \"lm_head.weight\" is U32 but config.json \"quantization\" says \"lm_head\" is not quantized",
                 "a U32 weight whose module is marked not quantized");
    expect_error("llama_4bit_g64_mixed", "{\"bits\": 4}", NULL, "no integer \"bits\" and \"group_size\"",
                 "no group size");
    expect_error("llama_4bit_g64_mixed", NULL, "lm_head.biases",
                 "\"lm_head.biases\" is missing", "a quantized module without biases");
}

int
main(void)
{
    test_folders();
    test_errors();
    return done_testing();
}
