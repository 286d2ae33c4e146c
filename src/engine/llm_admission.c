/* Admission arithmetic of one scheduler: see llm_admission.h. */
#include "engine/llm_admission.h"

void
llm_admission_init(llm_admission *a, size_t slots, size_t queue)
{
    a->slots = slots;
    a->queue = queue;
    a->held = 0;
}

size_t
llm_admission_capacity(const llm_admission *a)
{
    return a->slots + a->queue;
}

size_t
llm_admission_free(const llm_admission *a)
{
    size_t cap = llm_admission_capacity(a);

    return a->held < cap ? cap - a->held : 0;
}

llm_admit
llm_admission_reserve(llm_admission *a, size_t min, size_t want, size_t *granted)
{
    size_t n, room;

    *granted = 0;
    if (min == 0) min = 1;
    if (want < min) want = min;
    if (min > llm_admission_capacity(a)) return LLM_ADMIT_NEVER;

    room = llm_admission_free(a);
    if (room < min) return LLM_ADMIT_BUSY;

    n = want < room ? want : room;
    a->held += n;
    *granted = n;
    return LLM_ADMIT_OK;
}

void
llm_admission_release(llm_admission *a, size_t n)
{
    a->held = n < a->held ? a->held - n : 0;
}
