/*
 * An embeddings request below the glue: every input becomes an
 * embedding-only sequence in the model's scheduler (nothing is sampled);
 * the scheduler pools each (engine/llm_sched.h: the L2-normalised mean of
 * its final hidden states) and the response carries them in input order.
 *
 * Inputs go through the admission places the request got up front: when
 * one ends its place is free again at once (the scheduler gives it back
 * before on_done) and the next input takes it, so a request that was
 * admitted is never refused half-way, however busy the scheduler gets.
 *
 * The glue and a test drive it alike; every call and event is on the thread
 * that drives the scheduler's steps.  No nginx.
 */
#ifndef LLM_EMBEDDING_H
#define LLM_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "api/llm_api.h"
#include "api/llm_openai_embeddings.h"
#include "engine/llm_sched.h"

typedef struct llm_embedding llm_embedding;

/* How the request ended. */
typedef enum {
    LLM_EMBEDDING_OK = 0,    /* llm_embedding_out holds the response body */
    LLM_EMBEDDING_FAILED,    /* an input failed: error says why */
    LLM_EMBEDDING_BROKEN     /* out of memory writing the response */
} llm_embedding_end;

typedef struct {
    /* Once; the driver may free the embedding from here. */
    void (*done)(void *data, llm_embedding_end end, const char *error);
} llm_embedding_events;

/*
 * The embeddings of req (taken: freed with the embedding) whose inputs'
 * ids are input_ids[i] (NULL: req's own ids for that input) with input_n[i]
 * tokens.  model: the name the response carries when req names none.
 * 0 with *out, or -1 with err: a 400 for a dimensions the model does not
 * produce or an input empty or longer than the context (nothing made),
 * status 0 when out of memory.
 */
int llm_embedding_create(llm_sched *s, const char *model,
    llm_embed_request *req, int32_t *const *input_ids, const size_t *input_n,
    const llm_embedding_events *ev, void *data, llm_embedding **out,
    llm_api_error *err);

/*
 * Admission: at least one place (else BUSY, nothing queued), up to
 * `parallel` inputs at a time; the rest follow as places come back.
 */
llm_admit llm_embedding_submit(llm_embedding *e, size_t parallel);

/* The inputs' tokens in all (usage). */
long llm_embedding_prompt_tokens(const llm_embedding *e);
llm_buf *llm_embedding_out(llm_embedding *e);

/* Releases the sequences and frees; safe from inside done. */
void llm_embedding_free(llm_embedding *e);

#endif
