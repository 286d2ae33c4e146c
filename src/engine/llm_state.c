/* Snapshots of recurrent state, keyed by the prefix they follow. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/llm_kv.h"
#include "engine/llm_state.h"

typedef struct {
    uint64_t parent;                 /* chain hash of the full blocks before the partial one */
    uint64_t used;                   /* s->clock when made or last taken */
    int      len;                    /* tokens the state follows; 0: empty */
    int32_t  tail[LLM_KV_BLOCK];     /* the len % LLM_KV_BLOCK tokens after the full blocks */
} snap_key;

struct llm_state_snaps {
    int       n;
    size_t    floats;
    uint64_t  clock;
    uint64_t  made, restored;        /* puts, and takes that found an entry, since creation */
    snap_key *keys;                  /* [n] */
    float    *states;                /* [n][floats] */
};

size_t
llm_state_snaps_bytes(int n, size_t floats)
{
    return sizeof(llm_state_snaps) + (size_t) n * sizeof(snap_key) + (size_t) n * floats * sizeof(float);
}

llm_state_snaps *
llm_state_snaps_create(int n, size_t floats)
{
    llm_state_snaps *s = calloc(1, sizeof(*s));
    size_t bytes, i, page = (size_t) sysconf(_SC_PAGESIZE);

    if (s == NULL || n <= 0) {
        free(s);
        return NULL;
    }
    s->n = n;
    s->floats = floats;
    s->keys = calloc((size_t) n, sizeof(snap_key));
    s->states = calloc((size_t) n * (floats ? floats : 1), sizeof(float));
    if (s->keys == NULL || s->states == NULL) {
        llm_state_snaps_free(s);
        return NULL;
    }
    /* committed now, as the KV blocks are (llm_runtime_memory counted it) */
    bytes = (size_t) n * (floats ? floats : 1) * sizeof(float);
    for (i = 0; i < bytes; i += page) ((volatile unsigned char *) s->states)[i] = 0;
    return s;
}

void
llm_state_snaps_free(llm_state_snaps *s)
{
    if (s == NULL) return;
    free(s->keys);
    free(s->states);
    free(s);
}

void
llm_state_snaps_get_stats(const llm_state_snaps *s, llm_state_stats *st)
{
    int i;

    memset(st, 0, sizeof(*st));
    if (s == NULL) return;
    st->capacity = (uint64_t) s->n;
    for (i = 0; i < s->n; i++) st->held += s->keys[i].len > 0;
    st->made = s->made;
    st->restored = s->restored;
}

static int
same_key(const snap_key *k, uint64_t parent, int len, const int32_t *tail)
{
    return k->len == len && k->parent == parent
           && memcmp(k->tail, tail, (size_t) (len & (LLM_KV_BLOCK - 1)) * sizeof(int32_t)) == 0;
}

void
llm_state_snaps_put(llm_state_snaps *s, uint64_t parent, int len, const int32_t *tail, const float *state)
{
    int i, at = 0;

    if (s == NULL || len <= 0) return;
    for (i = 0; i < s->n; i++) {
        if (same_key(&s->keys[i], parent, len, tail)) {
            at = i;
            break;
        }
        if (s->keys[i].used < s->keys[at].used) at = i;
    }
    s->keys[at].parent = parent;
    s->keys[at].len = len;
    memset(s->keys[at].tail, 0, sizeof(s->keys[at].tail));
    if (len & (LLM_KV_BLOCK - 1)) memcpy(s->keys[at].tail, tail, (size_t) (len & (LLM_KV_BLOCK - 1)) * sizeof(int32_t));
    s->keys[at].used = ++s->clock;
    s->made++;
    memcpy(s->states + (size_t) at * s->floats, state, s->floats * sizeof(float));
}

int
llm_state_snaps_take(llm_state_snaps *s, const uint64_t *chain, const int32_t *tokens, int max_len, float *dst)
{
    int i, best = -1;

    for (i = 0; s && i < s->n; i++) {
        const snap_key *k = &s->keys[i];
        int full = k->len >> LLM_KV_BLOCK_SHIFT;
        if (k->len <= 0 || k->len > max_len || (best >= 0 && k->len <= s->keys[best].len)) continue;
        if (k->parent != (full == 0 ? LLM_KV_ROOT : chain[full - 1])) continue;
        if (memcmp(k->tail, tokens + ((size_t) full << LLM_KV_BLOCK_SHIFT),
                   (size_t) (k->len & (LLM_KV_BLOCK - 1)) * sizeof(int32_t)) != 0) continue;
        best = i;
    }
    if (best < 0) return 0;
    s->keys[best].used = ++s->clock;
    s->restored++;
    memcpy(dst, s->states + (size_t) best * s->floats, s->floats * sizeof(float));
    return s->keys[best].len;
}
