/*
 * Loader and runtime contracts: model info, clear errors for bad model
 * directories (never a crash), synth round trip, sequence slots, prefix
 * reuse through llm_seq_truncate, llm_forward argument errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "engine/llm_engine.h"
#include "engine/llm_hugepages.h"
#include "engine/llm_model_impl.h"

#define FIX "t/fixtures/models"

static char tmp[256];

static int
copy_file(const char *from, const char *to, long limit)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[65536];
    long total = 0;
    size_t n;

    if (!a || !b) {
        if (a) fclose(a);
        if (b) fclose(b);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof(buf), a)) > 0) {
        if (limit >= 0 && total + (long) n > limit) n = (size_t) (limit - total);
        fwrite(buf, 1, n, b);
        total += (long) n;
        if (limit >= 0 && total >= limit) break;
    }
    fclose(a);
    fclose(b);
    return 0;
}

static void
write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A scratch model dir: the llama_f32 fixture with its config replaced and/or weights truncated. */
static const char *
scratch(const char *name, const char *config, long weight_bytes)
{
    static char dir[320];
    char a[400], b[400];

    snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
    mkdir(dir, 0755);
    snprintf(b, sizeof(b), "%s/config.json", dir);
    if (config) {
        write_text(b, config);
    } else {
        snprintf(a, sizeof(a), "%s/llama_f32/config.json", FIX);
        copy_file(a, b, -1);
    }
    snprintf(a, sizeof(a), "%s/llama_f32/model.safetensors", FIX);
    snprintf(b, sizeof(b), "%s/model.safetensors", dir);
    copy_file(a, b, weight_bytes);
    return dir;
}

static void
expect_error(const char *dir, const char *needle, const char *what)
{
    char err[512] = "";
    llm_model *m = llm_model_load(dir, err, sizeof(err));
    if (!ok(m == NULL && strstr(err, needle) != NULL, "%s: error mentions \"%s\"", what, needle)) {
        diag(err);
    }
    llm_model_free(m);
}

#define LLAMA_CFG(extra) "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128," \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"vocab_size\":256," \
    "\"max_position_embeddings\":256" extra "}"

static void
test_errors(void)
{
    char err[512];

    ok(llm_model_load("/nonexistent/model", err, sizeof(err)) == NULL && strstr(err, "config.json"),
       "missing directory: error names config.json");
    expect_error(scratch("arch", "{\"architectures\":[\"GPT2LMHeadModel\"]}", -1),
                 "unsupported architecture \"GPT2LMHeadModel\"", "unsupported architecture");
    expect_error(scratch("json", "{\"architectures\": [", -1), "config.json", "malformed config.json");
    expect_error(scratch("trunc", NULL, 300000), "truncated", "truncated safetensors");
    expect_error(scratch("tiny", NULL, 5), "too short", "5-byte safetensors");
    expect_error(scratch("layers", LLAMA_CFG(",\"num_hidden_layers\":3"), -1),
                 "\"model.layers.2.input_layernorm.weight\" is missing", "config with more layers than the file");
    expect_error(scratch("shape", LLAMA_CFG(",\"intermediate_size\":100"), -1),
                 "config says [100, 64]", "shape mismatch");
    expect_error(scratch("tied", LLAMA_CFG(",\"vocab_size\":300"), -1), "model.embed_tokens.weight", "vocab mismatch");
    expect_error(scratch("rope", LLAMA_CFG(",\"rope_scaling\":{\"type\":\"dynamic\",\"factor\":2}"), -1),
                 "unsupported rope type \"dynamic\"", "unsupported rope type");
    expect_error(scratch("act", LLAMA_CFG(",\"hidden_act\":\"gelu\""), -1), "hidden_act", "unsupported activation");
    expect_error(scratch("heads", LLAMA_CFG(",\"num_key_value_heads\":3"), -1), "inconsistent sizes", "heads not divisible");
    {
        /* header length larger than the file */
        char path[400];
        const char *dir = scratch("hdr", NULL, 0);
        FILE *f;
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        f = fopen(path, "wb");
        fwrite("\xff\xff\xff\x00\x00\x00\x00\x00{}", 1, 10, f);
        fclose(f);
        expect_error(dir, "bad header length", "header length past the end");
        f = fopen(path, "wb");
        fwrite("\x08\x00\x00\x00\x00\x00\x00\x00[1,2,3] ", 1, 16, f);
        fclose(f);
        expect_error(dir, "not a JSON object", "header not an object");
    }
}

static void
test_info(void)
{
    char err[512];
    llm_model *m = llm_model_load(FIX "/qwen2_bf16", err, sizeof(err));
    const llm_model_info *in;

    if (!ok(m != NULL, "qwen2_bf16 loads")) { diag(err); return; }
    in = llm_model_get_info(m);
    is_str(in->model_type, "qwen2", "model_type");
    is_str(in->dtype, "bfloat16", "dtype");
    is_int(in->tie_word_embeddings, 1, "tied embeddings");
    ok(in->n_eos == 2 && in->eos_ids[0] == 2 && in->eos_ids[1] == 4, "eos ids from generation_config.json");
    ok(llm_model_is_eos(m, 4) && !llm_model_is_eos(m, 3), "llm_model_is_eos");
    is_int(in->bos_id, 1, "bos id");
    ok(in->has_temperature && fabs(in->temperature - 0.7) < 1e-9 && in->has_top_k && in->top_k == 20,
       "sampling defaults from generation_config.json");
    is_near(in->rope_theta, 1e6, 0, "rope_theta");
    is_int(in->max_position_embeddings, 256, "max_position_embeddings");
    llm_model_free(m);

    m = llm_model_load(FIX "/qwen2_sharded_f32", err, sizeof(err));
    if (!ok(m != NULL, "sharded model loads")) { diag(err); return; }
    in = llm_model_get_info(m);
    /* the numbers transformers wrote into the index metadata */
    is_int((long long) in->n_params, 107072, "n_params equals transformers' total_parameters");
    is_int((long long) in->weight_bytes, 428288, "weight bytes equal the index total_size");
    llm_model_free(m);

    m = llm_model_load(FIX "/qwen3_f32", err, sizeof(err));
    in = llm_model_get_info(m);
    ok(in && in->head_dim == 32 && in->n_heads == 4 && in->hidden == 64, "qwen3 head_dim from config (not hidden/heads)");
    llm_model_free(m);
    m = llm_model_load(FIX "/mistral_sw_bf16", err, sizeof(err));
    in = llm_model_get_info(m);
    ok(in && in->sliding_window == 8, "mistral sliding window");
    llm_model_free(m);
}

static void
test_synth(void)
{
    char err[512], cfg[400], out[400];
    llm_model *m;
    llm_runtime *rt;

    snprintf(cfg, sizeof(cfg), "%s/qwen3_f32/config.json", FIX);
    snprintf(out, sizeof(out), "%s/synth", tmp);
    if (!ok(llm_model_synth(cfg, out, "bf16", 7, err, sizeof(err)) == 0, "synth of the qwen3 config")) diag(err);
    m = llm_model_load(out, err, sizeof(err));
    if (!ok(m != NULL, "synth output loads")) { diag(err); return; }
    is_str(llm_model_get_info(m)->dtype, "bfloat16", "synth dtype");
    rt = llm_runtime_create(m, 1, 16, 1, err, sizeof(err));
    {
        int32_t ids[3] = { 5, 6, 7 };
        llm_batch_item it = { llm_seq_open(rt), ids, 3, 1, 0 };
        int finite = 1, i;
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) == 0, "synth model runs");
        for (i = 0; i < 256; i++) if (!isfinite(llm_forward_logits(rt, 0)[i])) finite = 0;
        ok(finite, "synth logits are finite");
    }
    llm_runtime_free(rt);
    llm_model_free(m);
    ok(llm_model_synth(cfg, out, "q4", 7, err, sizeof(err)) != 0 && strstr(err, "dtype"), "synth rejects unknown dtype");
}

/* in one of the model's mapped files */
static int
in_map(const llm_model *m, const void *p)
{
    int i;
    for (i = 0; i < m->n_files; i++) {
        const char *map = m->files[i].map;
        if (map && (const char *) p >= map && (const char *) p < map + m->files[i].size) return 1;
    }
    return 0;
}

/* Dense matrices of at least 2 MiB are copied out of the file map into huge-page memory at load,
 * byte for byte; smaller ones are read in place. */
static void
test_resident(void)
{
    char err[512], cfg[400], out[400];
    llm_model *m;
    const llm_layer *L;
    const llm_st_tensor *t;

    snprintf(cfg, sizeof(cfg), "%s/resident.json", tmp);
    write_text(cfg, "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":256,\"intermediate_size\":2048,"
               "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"vocab_size\":256,"
               "\"max_position_embeddings\":64,\"tie_word_embeddings\":true}");
    snprintf(out, sizeof(out), "%s/resident", tmp);
    if (!ok(llm_model_synth(cfg, out, "f32", 3, err, sizeof(err)) == 0, "synth of a model with 2 MiB matrices")) {
        diag(err);
        return;
    }
    m = llm_model_load(out, err, sizeof(err));
    if (!ok(m != NULL, "it loads")) { diag(err); return; }
    L = &m->layers[0];
    ok((size_t) L->w_gate.rows * (size_t) L->w_gate.cols * 4 >= LLM_HUGE_PAGE && !in_map(m, L->w_gate.data)
       && !in_map(m, L->w_up.data) && !in_map(m, L->w_down.data), "the 2 MiB MLP matrices left the file map");
    ok(in_map(m, L->wq.data), "a 256 KiB matrix is read in place");
    ok(((uintptr_t) L->w_gate.data & (LLM_HUGE_PAGE - 1)) == 0, "copies start on a 2 MiB boundary");
    t = llm_st_find_in(m->files, m->n_files, "model.layers.0.mlp.down_proj.weight");
    ok(t != NULL && t->nbytes == (size_t) L->w_down.rows * (size_t) L->w_down.cols * 4
       && memcmp(t->data, L->w_down.data, t->nbytes) == 0, "the copy holds the file's bytes");
    llm_model_free(m);
}

static void
test_runtime(void)
{
    char err[512];
    llm_model *m = llm_model_load(FIX "/llama_f32", err, sizeof(err));
    llm_runtime *rt;
    int32_t ids[20], bad = 256;
    float full[256];
    int s0, s1, s2, i;

    if (m == NULL) { ok(0, "%s", err); return; }
    rt = llm_runtime_create(m, 2, 32, 2, err, sizeof(err));
    if (!ok(rt != NULL, "runtime")) { diag(err); return; }
    /* 2 layers x 32 positions x (2 kv heads x 16) x 4 bytes x K,V x 2 slots */
    is_int((long long) llm_runtime_kv_bytes(rt), 2LL * 32 * 32 * 4 * 2 * 2, "KV bytes");
    for (i = 0; i < 20; i++) ids[i] = (int32_t) ((i * 37 + 11) % 256);
    s0 = llm_seq_open(rt);
    s1 = llm_seq_open(rt);
    s2 = llm_seq_open(rt);
    ok(s0 >= 0 && s1 >= 0 && s0 != s1 && s2 == -1, "two slots, third open fails");
    is_int(llm_seq_len(rt, s0), 0, "new slot is empty");
    {
        llm_batch_item it = { s0, ids, 20, 1, 0 };
        llm_forward(rt, &it, 1, err, sizeof(err));
        memcpy(full, llm_forward_logits(rt, 0), sizeof(full));
        is_int(llm_seq_len(rt, s0), 20, "length after prefill");
        /* prefix reuse: keep 12 cached positions, recompute the rest */
        llm_seq_truncate(rt, s0, 12);
        is_int(llm_seq_len(rt, s0), 12, "truncate keeps 12");
        llm_seq_truncate(rt, s0, 30);
        is_int(llm_seq_len(rt, s0), 12, "truncate never grows");
        it.tokens = ids + 12;
        it.n_tokens = 8;
        llm_forward(rt, &it, 1, err, sizeof(err));
        {
            double d = 0;
            for (i = 0; i < 256; i++) d = fmax(d, fabs(llm_forward_logits(rt, 0)[i] - full[i]));
            ok(d < 1e-5, "logits after prefix reuse equal a full prefill (%.2g)", d);
        }
    }
    {
        llm_batch_item two[2] = { { s0, ids, 1, 1, 0 }, { s0, ids, 1, 1, 0 } };
        llm_batch_item it = { s1, ids, 5, 1, 0 };
        ok(llm_forward(rt, two, 2, err, sizeof(err)) != 0 && strstr(err, "twice"), "same slot twice is an error");
        it.tokens = &bad;
        it.n_tokens = 1;
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) != 0 && strstr(err, "outside the vocabulary"), "token id out of range");
        it.tokens = ids;
        it.n_tokens = 13;
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) == 0, "13 tokens into slot 1");
        it.n_tokens = 20;
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) != 0 && strstr(err, "exceed the context"), "context overflow");
        is_int(llm_seq_len(rt, s1), 13, "failed call leaves the length unchanged");
        llm_seq_close(rt, s1);
        it.slot = s1;
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) != 0 && strstr(err, "not open"), "closed slot is an error");
        ok(llm_forward_logits(rt, 0) == NULL, "no logits after a failed call");
        is_int(llm_seq_open(rt), s1, "closed slot is reused");
    }
    llm_runtime_free(rt);
    llm_model_free(m);
}

/*
 * One bad item never fails the others of a step: a token outside the
 * vocabulary or a prompt beyond the slot's context is reported for that item
 * alone, and the good items' logits and embeddings equal those of a batch
 * without the bad ones.
 */
static void
test_item_errors(void)
{
    char err[512];
    llm_model *m = llm_model_load(FIX "/llama_f32", err, sizeof(err));
    llm_runtime *rt;
    int32_t ids[8] = { 5, 17, 42, 99, 7, 3, 200, 11 }, bad[3] = { 4, 256, 9 };
    float alone[256], emb_alone[64];
    double d = 0, de = 0;
    int i, rc, h;

    if (m == NULL) { ok(0, "%s", err); return; }
    h = llm_model_get_info(m)->hidden;
    if (h > 64) { ok(0, "fixture hidden size %d", h); llm_model_free(m); return; }
    rt = llm_runtime_create(m, 2, 16, 4, err, sizeof(err));
    if (!ok(rt != NULL, "runtime with 4 slots")) { diag(err); llm_model_free(m); return; }
    for (i = 0; i < 4; i++) llm_seq_open(rt);
    {
        llm_batch_item good[2] = { { 0, ids, 8, 1, 0 }, { 1, ids, 4, 0, 1 } };
        ok(llm_forward(rt, good, 2, err, sizeof(err)) == 0, "a batch of good items runs");
        memcpy(alone, llm_forward_logits(rt, 0), sizeof(alone));
        memcpy(emb_alone, llm_forward_embedding(rt, 1), (size_t) h * sizeof(float));
        llm_seq_truncate(rt, 0, 0);
        llm_seq_truncate(rt, 1, 0);
    }
    {
        llm_batch_item mixed[4] = {
            { 2, bad, 3, 1, 0 },        /* token 256 of a 256-token vocabulary */
            { 0, ids, 8, 1, 0 },
            { 3, ids, 17, 1, 0 },       /* 17 tokens into a 16-token context */
            { 1, ids, 4, 0, 1 },
        };
        rc = llm_forward(rt, mixed, 4, err, sizeof(err));
        is_int(rc, 2, "two of four items fail on their own");
        ok(strstr(err, "item 0") && strstr(err, "outside the vocabulary"), "err names the first failure: %s", err);
        ok(llm_forward_item_error(rt, 0) && strstr(llm_forward_item_error(rt, 0), "token id 256"),
           "item 0: bad token id");
        ok(llm_forward_item_error(rt, 2) && strstr(llm_forward_item_error(rt, 2), "exceed the context"),
           "item 2: context overflow");
        ok(llm_forward_item_error(rt, 1) == NULL && llm_forward_item_error(rt, 3) == NULL,
           "the good items have no error");
        ok(llm_forward_logits(rt, 0) == NULL && llm_forward_logits(rt, 2) == NULL, "failed items have no logits");
        if (ok(llm_forward_logits(rt, 1) != NULL && llm_forward_embedding(rt, 3) != NULL,
               "the good items have their results")) {
            for (i = 0; i < 256; i++) d = fmax(d, fabs(llm_forward_logits(rt, 1)[i] - alone[i]));
            for (i = 0; i < h; i++) de = fmax(de, fabs(llm_forward_embedding(rt, 3)[i] - emb_alone[i]));
        }
        ok(d < 1e-5 && de < 1e-5, "good items equal a batch without the bad ones (%.2g, %.2g)", d, de);
        is_int(llm_seq_len(rt, 0), 8, "good item advanced its slot");
        is_int(llm_seq_len(rt, 2), 0, "bad token: slot unchanged");
        is_int(llm_seq_len(rt, 3), 0, "context overflow: slot unchanged");
    }
    {
        llm_batch_item next = { 0, ids + 7, 1, 1, 0 };
        ok(llm_forward(rt, &next, 1, err, sizeof(err)) == 0 && llm_forward_item_error(rt, 0) == NULL,
           "the next call starts with no item errors");
    }
    llm_runtime_free(rt);
    llm_model_free(m);
}

/* Prompts longer than one internal chunk: one call equals many small calls. */
static void
test_long_prompt(const char *name)
{
    char err[512], dir[256];
    llm_model *m;
    llm_runtime *rt;
    int32_t ids[600];
    float one[256];
    double d = 0;
    int i, a, b, V;

    snprintf(dir, sizeof(dir), "%s/%s", FIX, name);
    m = llm_model_load(dir, err, sizeof(err));
    if (m == NULL) { ok(0, "%s", err); return; }
    V = llm_model_get_info(m)->n_vocab;
    rt = llm_runtime_create(m, 2, 640, 2, err, sizeof(err));
    for (i = 0; i < 600; i++) ids[i] = (int32_t) ((i * 7919 + 13) % V);
    a = llm_seq_open(rt);
    b = llm_seq_open(rt);
    {
        llm_batch_item it = { a, ids, 600, 1, 0 };
        ok(llm_forward(rt, &it, 1, err, sizeof(err)) == 0, "%s: 600-token prompt in one call", name);
        memcpy(one, llm_forward_logits(rt, 0), sizeof(float) * V);
    }
    for (i = 0; i < 600; i += 100) {
        llm_batch_item it = { b, ids + i, 100, 1, 0 };
        llm_forward(rt, &it, 1, err, sizeof(err));
    }
    for (i = 0; i < V; i++) d = fmax(d, fabs(llm_forward_logits(rt, 0)[i] - one[i]));
    ok(d < 1e-4, "%s: one call across chunks equals six calls (max abs %.2g)", name, d);
    is_int(llm_seq_len(rt, a), 600, "%s: cached length 600", name);
    llm_runtime_free(rt);
    llm_model_free(m);
}

/* A FIFO or directory in place of a model file is refused at once, never waited on. */
static void
test_not_regular(void)
{
    char path[400], err[512];
    const char *dir = scratch("fifo", NULL, -1);
    llm_model *m;

    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    unlink(path);
    if (!ok(mkfifo(path, 0644) == 0, "mkfifo")) return;
    alarm(20);    /* before the fix the open blocked until a writer came */
    expect_error(dir, "model.safetensors is not a regular file (a FIFO)", "a FIFO as the weights");
    unlink(path);
    mkdir(path, 0755);
    expect_error(dir, "model.safetensors is not a regular file (a directory)", "a directory as the weights");
    rmdir(path);

    dir = scratch("fifocfg", NULL, -1);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    unlink(path);
    mkfifo(path, 0644);
    m = llm_model_load(dir, err, sizeof(err));
    ok(m == NULL && strstr(err, "config.json is not a regular file (a FIFO)") != NULL, "a FIFO as config.json: %s", err);
    llm_model_free(m);
    alarm(0);
}

/* Weights rewritten in place under a loaded model are noticed before use. */
static void
test_files_changed(void)
{
    char path[400], err[512] = "";
    const char *dir = scratch("rewrite", NULL, -1);
    llm_model *m;
    struct stat st;
    FILE *f;

    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    m = llm_model_load(dir, err, sizeof(err));
    if (!ok(m != NULL, "scratch model loads: %s", err)) return;
    ok(llm_model_files_changed(m, err, sizeof(err)) == 0, "unchanged files are not a change");

    /* same size, new bytes and a new modification time (cp over the file) */
    f = fopen(path, "r+b");
    fseek(f, -4, SEEK_END);
    fwrite("\1\2\3\4", 1, 4, f);
    fclose(f);
    stat(path, &st);
    {
        struct timespec ts[2] = { st.st_atim, st.st_mtim };
        ts[1].tv_sec += 10;
        utimensat(AT_FDCWD, path, ts, 0);
    }
    ok(llm_model_files_changed(m, err, sizeof(err)) == 1 && strstr(err, path) != NULL
       && strstr(err, "rewritten in place") != NULL, "a rewrite in place is noticed and names the file: %s", err);
    llm_model_free(m);

    m = llm_model_load(dir, err, sizeof(err));
    if (!ok(m != NULL, "reloads after the rewrite: %s", err)) return;
    ok(truncate(path, 1000) == 0 && llm_model_files_changed(m, err, sizeof(err)) == 1
       && strstr(err, "size changed from") != NULL && strstr(err, "to 1000 bytes") != NULL,
       "truncation is noticed: %s", err);
    llm_model_free(m);

    /* the safe update: a new file renamed over the old path keeps the mapped inode intact */
    scratch("rename", NULL, -1);
    snprintf(path, sizeof(path), "%s/rename", tmp);
    m = llm_model_load(path, err, sizeof(err));
    if (m != NULL) {
        char from[400], to[400];
        snprintf(from, sizeof(from), "%s/llama_f32/model.safetensors", FIX);
        snprintf(to, sizeof(to), "%s/rename/model.safetensors.new", tmp);
        copy_file(from, to, -1);
        snprintf(path, sizeof(path), "%s/rename/model.safetensors", tmp);
        ok(rename(to, path) == 0 && llm_model_files_changed(m, err, sizeof(err)) == 0,
           "a file replaced by rename is not a change of the loaded model");
    }
    llm_model_free(m);
}

int
main(void)
{
    char cmd[300];

    snprintf(tmp, sizeof(tmp), "/tmp/llm_engine_load_XXXXXX");
    if (mkdtemp(tmp) == NULL) return skip_all("cannot create a temporary directory");
    test_errors();
    test_not_regular();
    test_files_changed();
    test_info();
    test_synth();
    test_resident();
    test_runtime();
    test_item_errors();
    test_long_prompt("llama_f32");
    test_long_prompt("mistral_sw_bf16");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0) diag("could not remove the temporary directory");
    return done_testing();
}
