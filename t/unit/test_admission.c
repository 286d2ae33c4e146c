/*
 * Admission arithmetic (engine/llm_admission.h): requests of n sequences fit
 * exactly up to parallel + queue, bigger ones are refused for good (not
 * "busy"), places come back when sequences end, and partial grants for work
 * that can go through fewer places.
 */
#include "tap.h"
#include "engine/llm_admission.h"

int
main(void)
{
    llm_admission a;
    size_t g;

    llm_admission_init(&a, 2, 1);
    is_int(llm_admission_capacity(&a), 3, "capacity is parallel + queue");
    is_int(llm_admission_free(&a), 3, "an idle scheduler has every place free");

    /* n = parallel + queue fits an idle scheduler exactly */
    is_int(llm_admission_reserve(&a, 3, 3, &g), LLM_ADMIT_OK, "n = parallel + queue is admitted when idle");
    is_int(g, 3, "all three places granted");
    is_int(llm_admission_reserve(&a, 1, 1, &g), LLM_ADMIT_BUSY, "a full scheduler is busy");
    is_int(g, 0, "busy grants nothing");
    llm_admission_release(&a, 3);
    is_int(llm_admission_free(&a), 3, "released places are free again");

    /* more than the capacity can never be admitted: not busy, never */
    is_int(llm_admission_reserve(&a, 4, 4, &g), LLM_ADMIT_NEVER, "n > parallel + queue is never admitted");
    is_int(llm_admission_free(&a), 3, "a refused request holds nothing");

    /* all or nothing while busy */
    is_int(llm_admission_reserve(&a, 2, 2, &g), LLM_ADMIT_OK, "two places");
    is_int(llm_admission_reserve(&a, 2, 2, &g), LLM_ADMIT_BUSY, "two more do not fit while one is free");
    is_int(llm_admission_free(&a), 1, "a busy refusal holds nothing");

    /* partial grants: up to want, at least min */
    is_int(llm_admission_reserve(&a, 1, 8, &g), LLM_ADMIT_OK, "work that can share places gets what is free");
    is_int(g, 1, "one place granted of eight wanted");
    llm_admission_release(&a, 3);
    is_int(llm_admission_reserve(&a, 1, 2, &g), LLM_ADMIT_OK, "want bounds the grant");
    is_int(g, 2, "two places granted of three free");

    /* release never underflows */
    llm_admission_release(&a, 10);
    is_int(a.held, 0, "over-release clamps at zero");
    is_int(llm_admission_reserve(&a, 0, 0, &g), LLM_ADMIT_OK, "min 0 counts as 1");
    is_int(g, 1, "one place");

    return done_testing();
}
