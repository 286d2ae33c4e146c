/*
 * Response formatters: one table of functions per protocol (like
 * llm_parser_def for parsers), so the layers above never switch on the
 * protocol.  A formatter holds the protocol state of every choice of one
 * response and writes bytes into the caller's buffer:
 *
 *   streaming      start, prompt_read once the prompt's cache reads are
 *                  known, then event* per choice, finish_choice per choice,
 *                  then finish (or error once the stream has begun)
 *   non-streaming  response, with every choice's result
 *
 * OpenAI chat, completions and responses, and Anthropic messages, are fed the same
 * llm_event stream and llm_result values.  No nginx, no engine.
 */
#ifndef LLM_FORMATTER_H
#define LLM_FORMATTER_H

#include "api/llm_api.h"

typedef struct llm_formatter llm_formatter;

typedef struct {
    const char         *id;            /* response id, with its prefix */
    long long           created;       /* unix seconds */
    const char         *model;
    const char         *fingerprint;   /* OpenAI system_fingerprint */
    size_t              n_choices;
    int                 stream;
    int                 include_usage; /* OpenAI stream_options */
    int                 logprobs;      /* logprobs asked for */
    int                 top_logprobs;
    llm_token_bytes_fn  token_bytes;   /* raw bytes of a token, for logprobs */
    void               *token_ctx;
    const char         *echo;          /* completions echo: the prompt text */
    size_t              echo_len;
    const json_t       *fields;        /* llm_request.response_fields: what the response
                                          repeats (Responses API) */
    const struct llm_thinking_key *thinking_key;  /* signs Anthropic thinking
                                          blocks; NULL: signatures are "" */
    int                 seal_reasoning;  /* Responses reasoning items carry
                                          encrypted_content (with thinking_key) */
    const json_t       *response_input;  /* llm_request.response_input: the
                                          items kept with the response; NULL:
                                          it is not kept */
} llm_formatter_config;

typedef struct {
    const char *name;
    const char *id_prefix;      /* "chatcmpl-", "cmpl-", "msg_", "resp_" */
    const char *server_error;   /* the error type of a 500 in this protocol */
    int (*start)(llm_formatter *f, llm_buf *b);
    /* usage's prompt, cached and cache_creation tokens are known; NULL:
       the protocol has nothing to say until the end */
    int (*prompt_read)(llm_formatter *f, llm_buf *b, const llm_usage *usage);
    /* lp: the logprobs of the tokens behind a CONTENT event, or NULL */
    int (*event)(llm_formatter *f, llm_buf *b, size_t choice,
                 const llm_event *ev, const llm_logprobs_list *lp);
    int (*finish_choice)(llm_formatter *f, llm_buf *b, size_t choice,
                         const llm_result *r);
    int (*finish)(llm_formatter *f, llm_buf *b, const llm_result *results,
                  const llm_usage *usage);
    int (*error)(llm_formatter *f, llm_buf *b, const llm_api_error *err);
    /* bytes that keep an idle stream alive and that clients ignore */
    int (*keepalive)(llm_formatter *f, llm_buf *b);
    int (*response)(llm_formatter *f, llm_buf *b, const llm_result *results,
                    const llm_logprobs_list *lps);
    /* what a response store keeps of the finished response; NULL: the
       protocol keeps nothing */
    int (*record)(llm_formatter *f, llm_buf *b);
} llm_formatter_def;

/* The table of a protocol (CHAT, COMPLETIONS, MESSAGES, RESPONSES), or NULL. */
const llm_formatter_def *llm_formatter_find(llm_api_kind api);

/* cfg's strings are borrowed and must outlive the formatter.  NULL: no memory. */
llm_formatter *llm_formatter_create(const llm_formatter_def *def,
    const llm_formatter_config *cfg);
void llm_formatter_free(llm_formatter *f);

/* Each returns 0, or -1 when out of memory (the output is then incomplete). */
int llm_formatter_start(llm_formatter *f, llm_buf *b);
/*
 * Streaming, once and before the first event: the prompt has been read,
 * and usage says how (prompt_tokens, cached_tokens read from the prefix
 * cache, cache_creation_tokens written at cache_control breakpoints).
 * Anthropic's message_start carries them, so it is written here and not at
 * start: a stream that waits in the queue sends only keepalives before it.
 */
int llm_formatter_prompt_read(llm_formatter *f, llm_buf *b,
    const llm_usage *usage);
int llm_formatter_event(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_event *ev, const llm_logprobs_list *lp);
int llm_formatter_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r);
/* The end of a stream: results of every choice, usage of the whole request. */
int llm_formatter_finish(llm_formatter *f, llm_buf *b,
    const llm_result *results, const llm_usage *usage);
/* A failure after the stream began: the protocol's error event, then its end. */
int llm_formatter_error(llm_formatter *f, llm_buf *b, const llm_api_error *err);
/*
 * While a stream waits for its first token (queued, prefilling): Anthropic's
 * "event: ping", an SSE comment for OpenAI; clients skip both.
 */
int llm_formatter_keepalive(llm_formatter *f, llm_buf *b);
/* The whole non-streaming body; lps per choice, or NULL without logprobs. */
int llm_formatter_response(llm_formatter *f, llm_buf *b,
    const llm_result *results, const llm_logprobs_list *lps);

/*
 * After finish (streaming) or response: the record a response store keeps
 * (the Responses API's, llm_responses.h, when cfg.response_input is set):
 * 1 with it appended to b, 0 when nothing is to be kept (another protocol,
 * store false, no store, the response failed), -1 when out of memory.
 */
int llm_formatter_record(llm_formatter *f, llm_buf *b);

/*
 * The 500 of a generation that failed part-way, typed for the protocol
 * ("server_error" for OpenAI, "api_error" for Anthropic).
 */
void llm_formatter_generation_error(const llm_formatter *f, llm_api_error *err,
    const char *what);

#endif
