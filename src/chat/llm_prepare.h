/*
 * A request made ready to answer, below the glue: body -> the protocol's IR
 * -> the model it names -> what the request needs before anything runs:
 *
 *   chat, completions, messages, responses                 prompt token ids
 *                                                          (chat/llm_session.h)
 *   count_tokens, tokenize, detokenize                     the whole answer
 *   embeddings                                             every input's ids,
 *                                                          bounded in total
 *
 * The server runs it as a thread task (the glue's _prepare.c) so that a
 * large body, a template render or a long prompt never stalls the event
 * loop: it reads only the body, its inputs and model-scoped objects that are
 * shared read-only, and writes the prepared request (malloc'd; free it with
 * llm_prepared_free).  No nginx.
 */
#ifndef LLM_PREPARE_H
#define LLM_PREPARE_H

#include <stddef.h>
#include <stdint.h>

#include "api/llm_api.h"
#include "api/llm_api_tokenize.h"
#include "api/llm_openai_embeddings.h"
#include "api/llm_volatile.h"
#include "chat/llm_session.h"

/* A model the request may name, as the server found it. */
typedef struct {
    void                 *owner;        /* the server's own handle */
    const char           *alias;
    const llm_model      *model;
    const llm_tokenizer  *tok;
    const llm_chat       *chat;         /* NULL: no chat template */
    const char           *reasoning_parser;
    long                  context_length;
} llm_prepare_model;

/* What the server gives every request. */
typedef struct {
    llm_api_kind             api;            /* COUNT_TOKENS for .../count_tokens */
    const char              *anthropic_beta; /* the header's value, or NULL */
    size_t                   anthropic_beta_len;
    const llm_volatile_set  *prompt_strip;   /* llm_prompt_strip; NULL: the default */
    int                      split_special_tokens;
    size_t                   embeddings_max_tokens;
    /* Anthropic thinking blocks sent back are verified with it
     * (api/llm_thinking_sig.h); NULL: not checked */
    const struct llm_thinking_key *thinking_key;
    /* kept responses for previous_response_id (api/llm_api.h); NULL: none */
    const llm_response_lookup *responses;
    /* the model called name (NULL or "": none named): 0 with *m, or -1 */
    int                    (*find_model)(void *data, const char *name,
                                         llm_prepare_model *m);
    void                    *find_data;
} llm_prepare_config;

typedef struct {
    llm_api_error        err;           /* err.status: answer with it */
    const char          *internal;      /* set: what failed (err is its 500) */
    llm_prepare_model    model;         /* model.owner NULL: none found */
    llm_request          req;           /* generation, tokenize, detokenize */
    llm_session_prompt   prompt;        /* its ids */
    llm_tokenize_opts    tokenize;
    llm_buf              answer;        /* count_tokens, tokenize, detokenize:
                                           the 200's body (len 0: none) */
    llm_embed_request    ereq;          /* embeddings */
    size_t               n_inputs;
    int32_t            **input_ids;     /* tokenized text inputs, else NULL */
    size_t              *input_n;       /* every input's token count */
} llm_prepared;

/* Call before llm_prepare (and so before llm_prepared_free). */
void llm_prepared_init(llm_prepared *p);

/* Prepares body; the outcome is in *p (err, internal, or the results). */
void llm_prepare(const llm_prepare_config *cfg, const char *body, size_t len,
    llm_prepared *p);

void llm_prepared_free(llm_prepared *p);

#endif
