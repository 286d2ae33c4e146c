/*
 * Admission arithmetic of one scheduler: how many sequences it may hold at
 * once (running in a slot or waiting for one), and which requests get in.
 *
 * A request reserves a place for each sequence before any work is done, all
 * or nothing, so it is either refused up front (busy: retry later; never:
 * it asks for more than the scheduler can ever hold) or admitted for good:
 * nothing it started is refused half-way.  A place is given back the moment
 * its sequence ends (finished, failed or cancelled), not when its slot is
 * next recycled, so a step in flight never makes the scheduler look fuller
 * than it is.  No nginx, no engine: plain counting, unit-tested.
 */
#ifndef LLM_ADMISSION_H
#define LLM_ADMISSION_H

#include <stddef.h>

typedef struct {
    size_t slots;    /* sequences that run at once (parallel=) */
    size_t queue;    /* sequences that may wait for a slot (queue=) */
    size_t held;     /* places held by admitted sequences */
} llm_admission;

typedef enum {
    LLM_ADMIT_OK = 0,   /* places reserved */
    LLM_ADMIT_BUSY,     /* fewer than min places are free now: retry later */
    LLM_ADMIT_NEVER     /* min exceeds slots + queue: retrying cannot help */
} llm_admit;

void llm_admission_init(llm_admission *a, size_t slots, size_t queue);

/* slots + queue: the most sequences ever held at once. */
size_t llm_admission_capacity(const llm_admission *a);

/* Places not held now. */
size_t llm_admission_free(const llm_admission *a);

/*
 * Reserves between min and want places (as many as are free, up to want):
 * LLM_ADMIT_OK with *granted set, or BUSY / NEVER with nothing reserved.
 * min = want = n for a request whose n sequences must run together;
 * min = 1 for work that may go through fewer places one after another.
 */
llm_admit llm_admission_reserve(llm_admission *a, size_t min, size_t want,
    size_t *granted);

/* Gives n places back (never more than are held). */
void llm_admission_release(llm_admission *a, size_t n);

#endif
