/*
 * A generation request below the glue: the reply (chat/llm_reply.h) and one
 * scheduler sequence per choice, and what passes between them.
 *
 *   prompt ids -> new-token limit, parsers, structured-output plan ->
 *   one llm_seq per choice (sampler parameters, logprobs, cache retention,
 *   speculation, grammar constraint, thinking budget) -> admission -> tokens ->
 *   llm_reply (detokenizer, stream processor, formatter) -> bytes
 *
 * The server's glue and `llm chat` drive the same object: they run the
 * scheduler's steps, send what llm_generation_out holds when told to, and
 * answer when the generation is done.  Every call and event is on the thread
 * that drives the scheduler's steps (nginx's event loop).  No nginx.
 */
#ifndef LLM_GENERATION_H
#define LLM_GENERATION_H

#include <stddef.h>

#include "api/llm_api.h"
#include "chat/llm_reply.h"
#include "chat/llm_session.h"
#include "chat/llm_structured.h"
#include "engine/llm_sched.h"
#include "engine/llm_spec.h"

typedef struct llm_generation llm_generation;

/* How a generation ended (llm_generation_events.done). */
typedef enum {
    LLM_GENERATION_OK = 0,   /* llm_generation_out holds the stream's last
                                bytes or the whole non-streaming body */
    LLM_GENERATION_FAILED,   /* a non-streaming response failed: answer with
                                the error instead */
    LLM_GENERATION_BROKEN    /* out of memory ending the response: nothing
                                can be sent (noted first) */
} llm_generation_end;

/* What the driver may log: the response ended early, or memory ran out. */
typedef enum {
    LLM_GENERATION_FULL = 0,         /* reached max_response_size: every
                                        choice ends with finish_reason length */
    LLM_GENERATION_NO_MEMORY_TOKEN,  /* formatting a token */
    LLM_GENERATION_NO_MEMORY_CHOICE, /* ending a choice */
    LLM_GENERATION_NO_MEMORY_END     /* ending the response */
} llm_generation_note;

typedef struct {
    /* A token of `choice` came, before it is formatted (timing). May be NULL. */
    void (*token)(void *data, size_t choice);
    /* A choice ended (logs). May be NULL. */
    void (*choice_done)(void *data, size_t choice, llm_finish reason,
        const char *error);
    /* Streaming: bytes wait in llm_generation_out after a step. */
    void (*flush)(void *data);
    /* Something to log before the response ends, in the words to log
       (text). May be NULL. */
    void (*note)(void *data, llm_generation_note note, const char *text);
    /*
     * The response is complete (once): err is set with FAILED.  The driver
     * may free the generation from here.
     */
    void (*done)(void *data, llm_generation_end end, const llm_api_error *err);
} llm_generation_events;

/* What one model and the server's configuration give every request. */
typedef struct {
    llm_sched            *sched;
    const llm_tokenizer  *tok;
    const llm_model_info *info;         /* generation_config.json defaults */
    llm_structured       *structured;   /* the model's grammars */
    const llm_parser_def *tool;         /* the location's or model's parsers */
    const llm_parser_def *reasoning;    /* (NULL: none) */
    const char           *model;        /* the name when the request has none */
    const char           *fingerprint;  /* OpenAI system_fingerprint */
    long long             created;      /* unix seconds */
    size_t                max_tokens;   /* llm_max_tokens; 0: none */
    size_t                max_response_size;   /* llm_max_response_size */
    llm_spec_mode         speculation;  /* unless the request sets it */
    const struct llm_thinking_key *thinking_key;  /* signs Anthropic thinking
                                           blocks (NULL: "") */
} llm_generation_config;

/*
 * A generation of req (borrowed: it outlives the generation) after prompt
 * (its ids are copied; its echo is taken).  0 with *out, or -1 with err:
 * status 4xx for the request's fault (a prompt that fills the context, a
 * max_tokens above the cap, a constraint that cannot be enforced), status 0
 * when out of memory.  Nothing is queued until llm_generation_submit.
 */
int llm_generation_create(const llm_generation_config *cfg, llm_request *req,
    llm_session_prompt *prompt, const llm_generation_events *ev, void *data,
    llm_generation **out, llm_api_error *err);

/*
 * Admission: every choice gets a place, or none does (nothing is refused
 * half-way).  LLM_ADMIT_OK: the sequences are queued; BUSY: retry later;
 * NEVER: n is more than the scheduler can hold.
 */
llm_admit llm_generation_submit(llm_generation *g);

/* Releases the sequences (no more events) and frees; safe from inside an event. */
void llm_generation_free(llm_generation *g);

llm_reply *llm_generation_reply(llm_generation *g);
/* Bytes waiting to be sent: llm_buf_reset them once sent. */
llm_buf *llm_generation_out(llm_generation *g);
size_t llm_generation_n_choices(const llm_generation *g);
size_t llm_generation_max_new(const llm_generation *g);
int llm_generation_finished(const llm_generation *g);

/*
 * Backpressure, after each write: unsent is the response's bytes the client
 * has not taken yet.  From LLM_GENERATION_BACKLOG of them every choice's
 * sequence pauses (keeping its slot and KV cache, generating nothing) until
 * the client has taken half; 1 when this call paused or resumed them, else
 * 0; *paused: whether they are paused now.
 */
#define LLM_GENERATION_BACKLOG  (64 * 1024)

int llm_generation_backlog(llm_generation *g, size_t unsent, int *paused);

#endif
