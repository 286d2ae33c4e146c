/*
 * OpenAI protocol: /v1/chat/completions, /v1/completions, /v1/models.
 *
 * Parsing: body bytes -> llm_request.  On success returns 0 and the caller
 * owns *req (llm_request_free).  On failure returns -1, fills *err (status
 * 400, type "invalid_request_error", param = JSON path of the field) and
 * leaves *req freed and re-initialised.
 *
 * Formatting: everything is appended to an llm_buf; functions return 0, or
 * -1 when the buffer could not grow.
 */
#ifndef LLM_OPENAI_H
#define LLM_OPENAI_H

#include "api/llm_api.h"

int llm_openai_parse_chat(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/* prompt: string, [string], [int, ...] or [[int, ...]] (one prompt per
 * request); echo; suffix is refused.  max_tokens defaults to 16 as in
 * OpenAI's API. */
int llm_openai_parse_completions(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/* What every response and chunk of one request shares.  The strings must
 * outlive every formatter call that uses this struct. */
typedef struct {
    const char         *id;            /* "chatcmpl-..." / "cmpl-..." */
    long long           created;       /* unix seconds */
    const char         *model;
    const char         *fingerprint;   /* system_fingerprint; NULL -> null */
    /* logprobs output: token bytes come from the glue's detokenizer */
    llm_token_bytes_fn  token_bytes;
    void               *token_ctx;
    int                 top_logprobs;  /* alternatives to print per token */
} llm_openai_meta;

/* ---- chat, non-streaming ----
 * {"id","object":"chat.completion","created","model","system_fingerprint",
 *  "choices":[{"index","message":{"role","content","reasoning_content"?,
 *  "tool_calls"?},"logprobs","finish_reason"}],"usage":{...}}
 * logprobs: NULL, or an array of n lists (one per choice).  Usage is
 * prompt/cached from choices[0] and completion summed over choices. */
int llm_openai_chat_response(llm_buf *b, const llm_openai_meta *m,
    const llm_result *choices, size_t n, const llm_logprobs_list *logprobs);

/* ---- chat, streaming: one state per choice ---- */
typedef struct {
    const llm_openai_meta *meta;
    int                    index;          /* choice index */
    int                    include_usage;  /* add "usage":null to chunks */
    int                    logprobs;       /* add logprobs to content chunks */
    int                    started;        /* role chunk sent */
    int                    finished;
} llm_openai_chat_stream;

void llm_openai_chat_stream_init(llm_openai_chat_stream *s,
    const llm_openai_meta *m, int index, int include_usage, int logprobs);
/* The first chunk: delta {"role":"assistant","content":""}.  Sent by the
 * first event automatically; call it early to flush headers sooner. */
int llm_openai_chat_stream_start(llm_openai_chat_stream *s, llm_buf *b);
/* One event -> zero or one "data: {chunk}\n\n".  lp: logprob records of
 * the tokens behind a CONTENT event (NULL when none). */
int llm_openai_chat_stream_event(llm_openai_chat_stream *s, llm_buf *b,
    const llm_event *ev, const llm_logprobs_list *lp);
/* Finish chunk: empty delta with finish_reason. */
int llm_openai_chat_stream_finish(llm_openai_chat_stream *s, llm_buf *b,
    llm_finish finish);
/* With stream_options.include_usage: the chunk with "choices":[] and usage
 * (object "chat.completion.chunk", or "text_completion" for completions). */
int llm_openai_stream_usage(llm_buf *b, const llm_openai_meta *m,
    const char *object, const llm_usage *usage);
/* A failure after the stream began: "data: {"error":{...}}\n\n"; follow
 * it with llm_openai_stream_done. */
int llm_openai_stream_error(llm_buf *b, const llm_api_error *err);
/* "data: [DONE]\n\n" */
int llm_openai_stream_done(llm_buf *b);

/* ---- completions ----
 * {"id","object":"text_completion","created","model","system_fingerprint",
 *  "choices":[{"text","index","logprobs","finish_reason"}],"usage"}
 * echo: prompt text to put before each choice's text (NULL: none).
 * Logprobs use the legacy shape {tokens, token_logprobs, top_logprobs,
 * text_offset}. */
int llm_openai_completion_response(llm_buf *b, const llm_openai_meta *m,
    const llm_result *choices, size_t n, const llm_logprobs_list *logprobs,
    const char *echo, size_t echo_len);

typedef struct {
    const llm_openai_meta *meta;
    int                    index;
    int                    include_usage;
    int                    logprobs;
    long                   text_offset;   /* bytes of text sent so far */
    int                    finished;
} llm_openai_completion_stream;

void llm_openai_completion_stream_init(llm_openai_completion_stream *s,
    const llm_openai_meta *m, int index, int include_usage, int logprobs);
/* A text chunk (CONTENT events; also the echoed prompt, first). */
int llm_openai_completion_stream_text(llm_openai_completion_stream *s,
    llm_buf *b, const char *text, size_t len, const llm_logprobs_list *lp);
int llm_openai_completion_stream_finish(llm_openai_completion_stream *s,
    llm_buf *b, llm_finish finish);

#endif
