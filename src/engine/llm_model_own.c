/*
 * The buffers a model makes at load (f32 vectors, quantized and repacked
 * matrices), freed with it.  Its own file: the passes that fill a loaded
 * model (llm_quantize.c, llm_repack.c) use it without depending on the loader.
 */
#include <stdlib.h>

#include "engine/llm_model_impl.h"

int
llm_model_own(llm_model *m, void *p)
{
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? m->cap_owned * 2 : 64;
        void **o = realloc(m->owned, (size_t) cap * sizeof(*o));
        if (o == NULL) return -1;
        m->owned = o;
        m->cap_owned = cap;
    }
    m->owned[m->n_owned++] = p;
    return 0;
}
