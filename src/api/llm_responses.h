/*
 * OpenAI Responses API: POST /v1/responses (docs/api.md).
 *
 * Parsing: body bytes -> llm_request, stateless.  `input` (a string or a
 * list of items: messages with input_text / output_text parts,
 * function_call, function_call_output, reasoning) and `instructions`
 * become the conversation in the shape chat templates expect
 * (core/llm_ir.h); function tools, tool_choice, text.format (json_object /
 * json_schema, the same structured output as chat's response_format),
 * reasoning.effort, sampling and max_output_tokens map onto the chat
 * fields.  What the response repeats as sent (instructions, tools,
 * tool_choice, text, reasoning, metadata, ...) goes to req->response_fields.
 * A "namespace" tool's functions are offered to the model as
 * "<namespace>__<name>" (LLM_RESPONSES_NS_SEP), and a function_call item
 * with a "namespace" is read under that name; the model's calls of them
 * come back as {"namespace", "name"}.  Tools the API would run itself
 * (web_search*, file_search, code_interpreter, image_generation, mcp) are
 * left out of what the model is offered (echoed as sent).
 * A reasoning item's encrypted_content (llm_reasoning_seal.h) is opened
 * with lim->thinking_key and is its text; one this key did not seal is a
 * 400 (without a key it is ignored).
 * previous_response_id is read from the kept responses
 * (lim->responses, below): the items kept with it come before `input`;
 * unknown or expired ids are a 404; without kept responses the field is a
 * 400.  With kept responses and store not false, req->response_input holds
 * the items to keep with this response.  Item references, background mode,
 * conversation, prompt, other tool types and media parts are refused with a
 * 400 naming the field.  On failure returns -1
 * with *err filled and *req freed and re-initialised.
 *
 * Formatting: the response object, and the semantic SSE events of a
 * streamed response, each with its sequence_number:
 *   response.created, response.in_progress, then per output item
 *   response.output_item.added, [response.content_part.added,
 *   response.output_text.delta* / response.reasoning_text.delta*,
 *   response.output_text.done / response.reasoning_text.done,
 *   response.content_part.done] or [response.function_call_arguments.delta*,
 *   response.function_call_arguments.done], response.output_item.done;
 *   then response.completed (response.incomplete after a length stop).
 * With include ["reasoning.encrypted_content"] (meta.seal_key), a finished
 * reasoning item carries its text sealed as encrypted_content.
 * A failure after the stream began is response.failed.  Everything is
 * appended to an llm_buf; functions return 0, or -1 when out of memory.
 */
#ifndef LLM_RESPONSES_H
#define LLM_RESPONSES_H

#include "api/llm_api.h"

/* Joins a namespace and one of its functions into the name the model sees. */
#define LLM_RESPONSES_NS_SEP  "__"

int llm_responses_parse(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/*
 * Kept responses (api/llm_response_store.h keeps the bytes): a record is
 * {"input": [the items before the response: those kept with its
 * previous_response_id, then its own input], "response": {the response
 * object}}.  A later request's previous_response_id continues with the
 * record's input then the response's output items.
 */
int llm_responses_record(llm_buf *b, const json_t *input,
    const json_t *response);
/* A new array: the record's input then its response's output; NULL when
 * rec is not a record (or out of memory). */
json_t *llm_responses_record_items(const char *rec, size_t len);
/* The response object of a record (GET /v1/responses/{id}); -1 when rec is
 * not a record or out of memory. */
int llm_responses_record_response(llm_buf *b, const char *rec, size_t len);
/* DELETE's answer: {"id", "object": "response", "deleted": true}. */
int llm_responses_deleted(llm_buf *b, const char *id, size_t id_len);
/* 404 invalid_request_error for an id no kept response has: of
 * previous_response_id when param is set (code previous_response_not_found),
 * else of /v1/responses/{id} (code not_found).  Returns -1. */
int llm_responses_error_not_found(llm_api_error *err, const char *param,
    const char *id, size_t id_len);

/* What the response object of one request carries besides its output.
 * Borrowed; must outlive every call that uses it. */
typedef struct {
    const char   *id;          /* "resp_..." */
    long long     created;     /* unix seconds */
    const char   *model;
    const json_t *echo;        /* llm_request.response_fields, or NULL */
    /* reasoning items carry encrypted_content sealed with this key
     * (llm_reasoning_seal.h); NULL: they do not */
    const struct llm_thinking_key *seal_key;
} llm_responses_meta;

/* The response object of one result (new reference), NULL when out of
 * memory; llm_responses_response writes it. */
json_t *llm_responses_object(const llm_responses_meta *m, const llm_result *r,
    const llm_usage *usage);
/* The whole non-streamed response object, for one result. */
int llm_responses_response(llm_buf *b, const llm_responses_meta *m,
    const llm_result *r, const llm_usage *usage);

/* ---- streaming ---- */

typedef enum {
    LLM_RESPONSES_ITEM_NONE = 0,
    LLM_RESPONSES_ITEM_REASONING,
    LLM_RESPONSES_ITEM_MESSAGE,
    LLM_RESPONSES_ITEM_CALL
} llm_responses_item;

typedef struct {
    const llm_responses_meta *meta;
    long                      seq;        /* sequence_number of the next event */
    int                       started;
    int                       finished;
    llm_responses_item        open;       /* the item being written */
    int                       open_tool;  /* its tool-call index */
    char                      item_id[64];
    char                      call_id[160];
    char                     *call_name;
    llm_buf                   text;       /* the open item's text so far */
    json_t                   *output;     /* the items done, in order */
    json_t                   *final;      /* the response object of
                                             response.completed / incomplete */
} llm_responses_stream;

void llm_responses_stream_init(llm_responses_stream *s,
    const llm_responses_meta *m);
void llm_responses_stream_free(llm_responses_stream *s);

/* response.created and response.in_progress (once). */
int llm_responses_stream_start(llm_responses_stream *s, llm_buf *b);
int llm_responses_stream_event(llm_responses_stream *s, llm_buf *b,
    const llm_event *ev);
/* Closes the open item; response.completed, or response.incomplete for a
 * length stop, with the output and the usage. */
int llm_responses_stream_finish(llm_responses_stream *s, llm_buf *b,
    const llm_result *r, const llm_usage *usage);
/* response.failed with the error. */
int llm_responses_stream_error(llm_responses_stream *s, llm_buf *b,
    const llm_api_error *err);

#endif
