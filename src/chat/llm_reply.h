/*
 * The output side of a session: the choices of one response, each
 *
 *   token -> detokenizer (complete UTF-8 only) -> stream processor
 *         (reasoning + tool-call parsers, stop strings) -> events
 *         -> the protocol's formatter -> bytes
 *
 * A streaming reply writes its bytes as they come (take them with
 * llm_reply_out and reset the buffer once sent); a non-streaming one writes
 * one JSON body at the end, built from each choice's result.  What the
 * reply keeps in memory is counted token by token against
 * llm_max_response_size (api/llm_response_budget.h).
 *
 * No nginx and no scheduler: the caller feeds the tokens a sequence
 * produced and says when a choice ended.  One thread at a time.
 */
#ifndef LLM_REPLY_H
#define LLM_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "api/llm_formatter.h"
#include "engine/llm_tokenizer.h"
#include "parsers/llm_parser.h"

typedef struct llm_reply llm_reply;

typedef struct {
    const llm_request    *req;            /* borrowed; outlives the reply */
    const llm_tokenizer  *tok;
    const llm_parser_def *tool;           /* the model's and location's; */
    const llm_parser_def *reasoning;      /* NULL: none (see llm_reply_parsers) */
    int                   starts_in_reasoning;
    const char           *model;          /* the name the response carries */
    const char           *fingerprint;    /* OpenAI system_fingerprint */
    long long             created;        /* unix seconds */
    char                 *echo;           /* completions echo; the reply frees it */
    size_t                echo_len;
    size_t                n_prompt;       /* prompt tokens, for usage */
    size_t                max_held;       /* llm_max_response_size, bytes */
    const struct llm_thinking_key *thinking_key;  /* Anthropic thinking
                                             signatures; NULL: "" */
} llm_reply_config;

/* What llm_reply_token asks of the caller. */
typedef enum {
    LLM_REPLY_MORE = 0,    /* keep generating */
    LLM_REPLY_STOP,        /* a stop string matched: finish this choice's
                              sequence and call llm_reply_choice_done with
                              LLM_FINISH_STOP_SEQ */
    LLM_REPLY_FULL,        /* the reply reached max_held: end every choice
                              with LLM_FINISH_LENGTH */
    LLM_REPLY_NO_MEMORY    /* end every choice with LLM_FINISH_ERROR */
} llm_reply_status;

/*
 * The parsers a request's output goes through: none for completions; a
 * tool parser only when tools are offered and tool_choice is not none.
 * tool and reasoning are what the location and model chose.
 */
void llm_reply_parsers(const llm_request *req, const llm_parser_def **tool,
    const llm_parser_def **reasoning);

/* req->n choices (at least 1) with their own id; NULL when out of memory
 * (cfg->echo is freed either way). */
llm_reply *llm_reply_create(const llm_reply_config *cfg);
void llm_reply_free(llm_reply *r);

size_t llm_reply_n_choices(const llm_reply *r);
const char *llm_reply_id(const llm_reply *r);
/* Bytes written and not yet taken; llm_buf_reset it once they are sent. */
llm_buf *llm_reply_out(llm_reply *r);

/* Streaming: the stream's opening bytes.  0, -1 when out of memory. */
int llm_reply_start(llm_reply *r);

/* Streaming, while no token has come: bytes every client skips (an SSE
 * comment, Anthropic's ping).  0, -1 when out of memory. */
int llm_reply_keepalive(llm_reply *r);

/* A token choice generated, with its logprobs when asked for (else NULL). */
llm_reply_status llm_reply_token(llm_reply *r, size_t choice, int32_t token,
    const llm_token_logprobs *lp);

/*
 * The choice ended for `reason`; generated = its tokens (usage and
 * return_token_ids; kept by pointer until llm_reply_finish).  Ending a
 * choice twice does nothing.  Returns 1 when every choice has ended, 0
 * while some run, -1 when out of memory.
 */
int llm_reply_choice_done(llm_reply *r, size_t choice, llm_finish reason,
    const int32_t *generated, size_t n_generated);
int llm_reply_choice_is_done(const llm_reply *r, size_t choice);

/*
 * The prompt has been read (the first step of choice 0's sequence ran):
 * n_cached prompt tokens came from the prefix cache and n_cache_written were
 * written up to the request's last cache_control breakpoint
 * (llm_seq_n_cached, llm_seq_n_cache_written).  Both go into the usage of the
 * end; a stream that says them at its start (Anthropic's message_start)
 * writes its opening now.  Once: later calls do nothing.  0, -1 when out of
 * memory.
 */
int llm_reply_prompt_read(llm_reply *r, size_t n_cached, size_t n_cache_written);

/*
 * The end of the response: the stream's last bytes (its error event when
 * error is set), or the whole non-streaming body, with the usage
 * llm_reply_prompt_read gave (none read from the cache without it).  A
 * non-streaming reply that failed writes nothing: answer with
 * llm_reply_failure instead.  0, -1 when out of memory.
 */
int llm_reply_finish(llm_reply *r, const char *error);

/*
 * After a successful llm_reply_finish: what a response store keeps of this
 * response (llm_formatter_record): 1 with it appended to b, 0 when nothing
 * is to be kept, -1 when out of memory.
 */
int llm_reply_record(llm_reply *r, llm_buf *b);

/* The 500 of a generation that failed part-way, typed for the protocol. */
void llm_reply_failure(const llm_reply *r, const char *error,
    llm_api_error *err);

/* Tokens generated by every choice that ended. */
long llm_reply_completion_tokens(const llm_reply *r);

#endif
