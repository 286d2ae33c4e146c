/*
 * Model files: safetensors headers and model.safetensors.index.json.
 * Input byte 0 picks the mode:
 *   even: the rest is a .safetensors file, opened with llm_st_open and
 *         every tensor's range read (so a bad bound shows as a fault);
 *   odd:  the rest is model.safetensors.index.json beside the sharded
 *         fixture's config and shards, loaded with llm_model_load.
 */
#include "llm_fuzz.h"
#include "engine/llm_engine.h"
#include "engine/llm_safetensors.h"

static char model_dir[600];
static const char *const shards[] = {
    "model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors",
    "model-00003-of-00005.safetensors", "model-00004-of-00005.safetensors",
    "model-00005-of-00005.safetensors", "config.json",
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char src[1024], dst[1024];
    size_t i;

    (void) argc; (void) argv;
    snprintf(model_dir, sizeof(model_dir), "%s/model", llm_fuzz_dir());
    (void) mkdir(model_dir, 0700);
    for (i = 0; i < sizeof(shards) / sizeof(shards[0]); i++) {
        snprintf(src, sizeof(src), "%s/t/fixtures/models/qwen2_sharded_f32/%s", LLM_FUZZ_ROOT, shards[i]);
        snprintf(dst, sizeof(dst), "%s/%s", model_dir, shards[i]);
        (void) unlink(dst);
        if (symlink(src, dst) != 0) { perror(dst); exit(1); }
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[700], err[512];
    volatile unsigned sum = 0;

    if (size == 0) return 0;
    if ((data[0] & 1) == 0) {
        llm_st_file f;
        int i;
        size_t j;

        if (llm_fuzz_write(llm_fuzz_dir(), "x.safetensors", data + 1, size - 1) != 0) return 0;
        snprintf(path, sizeof(path), "%s/x.safetensors", llm_fuzz_dir());
        memset(&f, 0, sizeof(f));
        if (llm_st_open(&f, path, err, sizeof(err)) != 0) {
            /* as the model loader does: close releases a half-open file */
            llm_st_close(&f);
            if (err[0] == '\0') __builtin_trap();
            return 0;
        }
        for (i = 0; i < f.n; i++) {
            const llm_st_tensor *t = &f.t[i];
            for (j = 0; j < t->nbytes; j += 97) sum += ((const uint8_t *) t->data)[j];
            if (t->nbytes) sum += ((const uint8_t *) t->data)[t->nbytes - 1];
            if (llm_st_find(&f, t->name) == NULL) __builtin_trap();
        }
        llm_st_close(&f);
    } else {
        llm_model *m;
        if (llm_fuzz_write(model_dir, "model.safetensors.index.json", data + 1, size - 1) != 0) return 0;
        m = llm_model_load(model_dir, err, sizeof(err));
        if (m == NULL && err[0] == '\0') __builtin_trap();
        llm_model_free(m);
    }
    (void) sum;
    return 0;
}
