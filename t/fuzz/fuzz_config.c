/*
 * config.json (and generation_config.json) parsing of a model directory.
 * Input: config.json text, optionally followed by a 0x00 byte and a
 * generation_config.json text.  Accepted sizes must be the ones the
 * loader promises to check (positive, bounded, heads divisible).
 */
#include "llm_fuzz.h"
#include "engine/llm_model_impl.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llm_fuzz_in in = { data, size };
    const char *s, *dir = llm_fuzz_dir();
    size_t len;
    char path[600], msg[512];
    llm_model *m;

    len = llm_fuzz_chunk(&in, 0, &s);
    if (llm_fuzz_write(dir, "config.json", s, len) != 0) return 0;
    snprintf(path, sizeof(path), "%s/generation_config.json", dir);
    if (in.n > 0 || (len < size)) {
        if (llm_fuzz_write(dir, "generation_config.json", in.p, in.n) != 0) return 0;
    } else {
        (void) unlink(path);
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) return 0;
    if (llm_model_parse_config(m, dir, msg, sizeof(msg)) == 0) {
        const llm_model_info *i = &m->info;
        if (i->n_vocab <= 0 || i->hidden <= 0 || i->n_layers <= 0 || i->n_heads <= 0
            || i->n_kv_heads <= 0 || i->head_dim <= 0 || i->n_heads % i->n_kv_heads != 0
            || i->n_eos < 0 || i->n_eos > LLM_MAX_EOS)
        {
            fprintf(stderr, "accepted inconsistent sizes\n");
            __builtin_trap();
        }
        if (m->rot_dim <= 0 || m->rot_dim > i->head_dim || m->rot_dim % 2 != 0 || m->n_rope < 1
            || m->n_rope > LLM_MAX_ROPE)
        {
            fprintf(stderr, "accepted inconsistent rotary dims\n");
            __builtin_trap();
        }
        {
            float inv[512], ms = 0;
            int r;
            for (r = 0; r < m->n_rope; r++) {
                llm_rope_inv_freq(&m->rope[r], m->rot_dim, 4096, inv, &ms);
            }
        }
    } else if (msg[0] == '\0') {
        __builtin_trap();
    }
    llm_model_free(m);
    return 0;
}
