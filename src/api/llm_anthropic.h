/*
 * Anthropic protocol: /v1/messages and /v1/messages/count_tokens.
 *
 * Parsing follows llm_openai.h's contract (0, or -1 with err and an empty
 * *req).  Messages come out in the same Hugging Face template shape as the
 * OpenAI ones: assistant blocks become content / reasoning_content /
 * tool_calls, user tool_result blocks become "tool" messages.
 *
 * Formatting appends to an llm_buf and returns 0, or -1 when it could not
 * grow.  Errors use llm_anthropic_error_json (llm_api.h).
 */
#ifndef LLM_ANTHROPIC_H
#define LLM_ANTHROPIC_H

#include "api/llm_api.h"
#include "api/llm_thinking_sig.h"

int llm_anthropic_parse_messages(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);
/* Same fields without max_tokens; req->api = LLM_API_COUNT_TOKENS. */
int llm_anthropic_parse_count_tokens(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/*
 * thinking.budget_tokens must be less than max_tokens, unless the request's
 * anthropic-beta header (beta, len: its comma-separated value, NULL when
 * absent) names an interleaved-thinking-* beta, where the budget spans all
 * thinking blocks of the turn.  The parser sees only the body, so the glue
 * calls this after llm_anthropic_parse_messages: 0, or -1 with a 400.
 */
int llm_anthropic_check_thinking_budget(const llm_request *req,
    const char *beta, size_t len, llm_api_error *err);

typedef struct {
    const char *id;       /* "msg_..." */
    const char *model;
    /* thinking blocks' signatures (llm_thinking_sig.h); NULL: "" */
    const llm_thinking_key *thinking_key;
} llm_anthropic_meta;

/*
 * {"id","type":"message","role":"assistant","model","content":[thinking,
 *  text, tool_use...],"stop_reason","stop_sequence","usage":{"input_tokens",
 *  "output_tokens","cache_read_input_tokens","cache_creation_input_tokens"}}
 * input_tokens counts the prompt tokens not read from the prefix cache, as
 * Anthropic's usage does.  Tool ids "call_X" are written "toolu_X".
 */
int llm_anthropic_message_response(llm_buf *b, const llm_anthropic_meta *m,
    const llm_result *r);

/* {"input_tokens": n} */
int llm_anthropic_count_tokens_json(llm_buf *b, long n);

/* Streaming: named SSE events in generation order. */
typedef struct {
    const llm_anthropic_meta *meta;
    int                       started;     /* message_start sent */
    int                       n_blocks;    /* content blocks opened so far */
    int                       open;        /* LLM_ANTHROPIC_BLOCK_* */
    int                       open_tool;   /* event index of the open tool */
    int                       pinged;
    int                       finished;
    llm_thinking_signer       signer;      /* of the open thinking block */
} llm_anthropic_stream;

enum {
    LLM_ANTHROPIC_BLOCK_NONE = 0,
    LLM_ANTHROPIC_BLOCK_TEXT,
    LLM_ANTHROPIC_BLOCK_THINKING,
    LLM_ANTHROPIC_BLOCK_TOOL
};

void llm_anthropic_stream_init(llm_anthropic_stream *s,
    const llm_anthropic_meta *m);
/* event: message_start (empty content, usage.input_tokens).  Sent by the
 * first event automatically; call it early to flush headers sooner. */
int llm_anthropic_stream_start(llm_anthropic_stream *s, llm_buf *b,
    const llm_usage *usage);
/* content_block_start / ping / content_block_delta / content_block_stop */
int llm_anthropic_stream_event(llm_anthropic_stream *s, llm_buf *b,
    const llm_event *ev);
/* Closes the open block, then message_delta (stop_reason, stop_sequence,
 * usage: input_tokens not read from the cache, cache_creation_input_tokens,
 * cache_read_input_tokens, output_tokens, as the non-streamed response) and
 * message_stop. */
int llm_anthropic_stream_finish(llm_anthropic_stream *s, llm_buf *b,
    llm_finish finish, const char *stop_sequence, const llm_usage *usage);
/* event: error, for a failure after the stream began. */
int llm_anthropic_stream_error(llm_buf *b, const llm_api_error *err);
/* event: ping, as Anthropic sends to keep a stream alive. */
int llm_anthropic_stream_ping(llm_buf *b);

#endif
