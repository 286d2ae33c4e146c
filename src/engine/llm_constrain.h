/*
 * Grammar-constrained sampling for one sequence: the engine side of
 * src/grammar.  The glue (or a session) compiles a grammar once, indexes it
 * against the model's vocabulary (llm_constrain_vocab, built once per model),
 * and gives each constrained sequence an llm_constraint; per step it calls
 * llm_constraint_sample instead of llm_sampler_sample, then
 * llm_constraint_accept with the token it keeps, and may append the tokens
 * llm_constraint_forced returns without sampling (jump-forward).
 */
#ifndef LLM_CONSTRAIN_H
#define LLM_CONSTRAIN_H

#include <stdint.h>

#include "engine/llm_engine.h"
#include "engine/llm_tokenizer.h"
#include "grammar/llm_grammar.h"

/* Every token by its bytes; added tokens (special or not) and the stop ids
 * are left out, so a grammar reaches them only as stop ids or as a format's
 * marker ids. */
llm_gvocab *llm_constrain_vocab(const llm_tokenizer *tok, const int32_t *stop_ids,
                                size_t n_stop, char *err, size_t errlen);

typedef struct llm_constraint llm_constraint;

/*
 * A marker the grammar waits for (tool_choice auto; a reasoning block to
 * close first).  Triggers form stages that must appear in order; a trigger
 * flagged LLM_TRIGGER_OR is an alternative of the one before it (the same
 * stage: the earliest to appear wins).  An ANCHORED trigger counts only as
 * the first text since the previous stage (blanks skipped): a format whose
 * call can only open the output (pythonic's "[", glm4_0414's name line);
 * once every trigger of the last stage can no longer appear the output
 * stays free.  With KEEP the marker is the grammar's first text (fed to it)
 * instead of coming before it.  Texts are shorter than 256 bytes.
 */
enum { LLM_TRIGGER_OR = 1, LLM_TRIGGER_ANCHORED = 2, LLM_TRIGGER_KEEP = 4 };

typedef struct {
    const char *text;
    unsigned    flags;         /* LLM_TRIGGER_* */
} llm_trigger;

/*
 * Holds a reference to x (llm_gindex_retain) until freed.  triggers (may be
 * none): see llm_trigger; the grammar applies from the last stage's marker
 * on.  NULL on allocation failure.
 */
llm_constraint *llm_constraint_create(llm_gindex *x, const llm_tokenizer *tok,
    const llm_trigger *triggers, size_t n_triggers);
void llm_constraint_free(llm_constraint *c);

/*
 * Next token under the grammar.  Without logprobs the sampler's own pick is
 * kept when the grammar allows it (no mask computed: the common case for a
 * model that follows the format); otherwise, and whenever logprobs are
 * asked for, the pick is drawn from the masked distribution.  -1 when the
 * grammar allows nothing (cannot happen for a grammar whose rules all end).
 */
int32_t llm_constraint_sample(llm_constraint *c, llm_sampler *s, const float *logits,
    llm_token_logprobs *lp, int n_top);
/*
 * The grammar's mask of the next token over n_vocab ids (valid until the
 * next call): *bits NULL while the grammar does not apply (every token
 * allowed).  -1 on allocation failure or when the grammar allows nothing.
 */
int llm_constraint_mask(llm_constraint *c, int n_vocab, const uint64_t **bits);
/* A copy that advances on its own (a draft's tentative tokens); NULL when out of memory. */
llm_constraint *llm_constraint_clone(const llm_constraint *c);
/* Advance by the kept token; -1 if the grammar refuses it. */
int llm_constraint_accept(llm_constraint *c, int32_t id);
/*
 * Jump-forward: up to max tokens the grammar forces from here (the forced
 * bytes tokenized as the model's tokenizer would, the last one held back
 * when more text follows so the model may merge it), already accepted.
 * Returns their count.
 */
int llm_constraint_forced(llm_constraint *c, int32_t *ids, int max);
/*
 * The same tokens without accepting them (the constraint is unchanged): for
 * a speculative proposer, which may offer them as a draft that needs no
 * verification -- they are the only continuation the grammar allows.
 */
int llm_constraint_peek_forced(llm_constraint *c, int32_t *ids, int max);
/* 1 once a stop id was accepted; 1 when the text is a complete sentence. */
int llm_constraint_done(const llm_constraint *c);
int llm_constraint_complete(const llm_constraint *c);
/* 1 while the grammar applies (all triggers seen); 1 when the text that
 * followed a trigger left the grammar (it is then not enforced). */
int llm_constraint_active(const llm_constraint *c);
int llm_constraint_broken(const llm_constraint *c);
/* Mask calls that had to be computed or copied (the fast path avoids them). */
long llm_constraint_n_masks(const llm_constraint *c);

#endif
