/*
 * A model's fingerprint: what names the KV blocks it computes on disk
 * (llm_kv_disk.h), so that blocks are only ever read by the same weights.
 *
 * Hashing every weight byte would read gigabytes at each worker start, so
 * the fingerprint covers what tells two models apart cheaply and surely
 * enough for a cache whose every file is verified anyway: the architecture,
 * the shape, the dtype after on-load quantization, and of each weight file
 * its size, its first 64 KiB (a safetensors or GGUF header: every tensor's
 * name, dtype, shape and offset) and 64 bytes at 64 places spread over it
 * (the weights themselves: two checkpoints of one architecture differ there).
 * Where the file is stored, its name and its times do not count: a copy of
 * the same weights finds the same blocks.
 */
#include <string.h>

#include "core/llm_fnv.h"
#include "engine/llm_model_impl.h"

#define HEAD_BYTES  65536
#define SAMPLES     64
#define SAMPLE_LEN  64


uint64_t
llm_model_fingerprint(const llm_model *m)
{
    const llm_model_info *in = &m->info;
    uint64_t h = LLM_FNV_BASIS, size;
    int32_t shape[8];
    int f, i;

    h = llm_fnv1a(h, m->architecture, strlen(m->architecture));
    h = llm_fnv1a(h, m->dtype, strlen(m->dtype));
    shape[0] = in->n_layers;
    shape[1] = in->hidden;
    shape[2] = in->n_heads;
    shape[3] = in->n_kv_heads;
    shape[4] = in->head_dim;
    shape[5] = in->intermediate;
    shape[6] = in->n_vocab;
    shape[7] = m->n_files;
    h = llm_fnv1a(h, shape, sizeof(shape));
    for (f = 0; f < m->n_files; f++) {
        const unsigned char *map = m->files[f].map;

        size = m->files[f].size;
        h = llm_fnv1a(h, &size, sizeof(size));
        if (map == NULL || size == 0) continue;
        h = llm_fnv1a(h, map, size < HEAD_BYTES ? size : HEAD_BYTES);
        if (size <= HEAD_BYTES + SAMPLE_LEN) continue;
        for (i = 0; i < SAMPLES; i++) {
            uint64_t at = HEAD_BYTES + (size - HEAD_BYTES - SAMPLE_LEN) / (SAMPLES - 1) * (uint64_t) i;
            h = llm_fnv1a(h, map + at, SAMPLE_LEN);
        }
    }
    return h;
}
