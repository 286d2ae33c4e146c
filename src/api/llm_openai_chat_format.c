/* Chat completion responses and chat.completion.chunk streams. */
#include "api/llm_openai_fmt.h"

#include <string.h>

json_t *
llm_openai_usage_json(const llm_usage *u)
{
    json_t *o = json_object(), *d = json_object(), *c = json_object();

    json_object_set_new(o, "prompt_tokens", json_integer(u->prompt_tokens));
    json_object_set_new(o, "completion_tokens",
                        json_integer(u->completion_tokens));
    json_object_set_new(o, "total_tokens",
                        json_integer(u->prompt_tokens + u->completion_tokens));
    json_object_set_new(d, "cached_tokens", json_integer(u->cached_tokens));
    json_object_set_new(o, "prompt_tokens_details", d);
    /* of completion_tokens, those written inside reasoning blocks */
    json_object_set_new(c, "reasoning_tokens",
                        json_integer(u->reasoning_tokens));
    json_object_set_new(o, "completion_tokens_details", c);
    return o;
}

void
llm_openai_choice_token_ids(json_t *choice, const llm_result *r)
{
    size_t   i;
    json_t  *ids;

    if (r->token_ids == NULL) {
        return;
    }

    ids = json_array();
    for (i = 0; i < r->n_token_ids; i++) {
        json_array_append_new(ids, json_integer(r->token_ids[i]));
    }
    json_object_set_new(choice, "token_ids", ids);
}

llm_usage
llm_openai_total_usage(const llm_result *choices, size_t n)
{
    llm_usage u = { 0 };
    size_t    i;

    if (n) {
        u.prompt_tokens = choices[0].usage.prompt_tokens;
        u.cached_tokens = choices[0].usage.cached_tokens;
    }
    for (i = 0; i < n; i++) {
        u.completion_tokens += choices[i].usage.completion_tokens;
        u.reasoning_tokens += choices[i].usage.reasoning_tokens;
    }
    return u;
}

json_t *
llm_openai_envelope_json(const llm_openai_meta *m, const char *object)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", llm_api_jstr_or_null(m->id));
    json_object_set_new(o, "object", json_string(object));
    json_object_set_new(o, "created", json_integer(m->created));
    json_object_set_new(o, "model", llm_api_jstr_or_null(m->model));
    json_object_set_new(o, "system_fingerprint",
                        llm_api_jstr_or_null(m->fingerprint));
    return o;
}

static json_t *
finish_json(llm_finish f)
{
    return llm_api_jstr_or_null(llm_finish_openai(f));
}

static json_t *
message_json(const llm_result *r)
{
    json_t *msg, *calls, *call, *fn;
    size_t  i;
    int     empty = r->content == NULL || r->content[0] == '\0';

    msg = json_object();
    json_object_set_new(msg, "role", json_string("assistant"));
    json_object_set_new(msg, "content", empty && r->n_tool_calls
                        ? json_null() : llm_api_jstr_or_null(
                              r->content ? r->content : ""));
    if (r->reasoning && r->reasoning[0]) {
        json_object_set_new(msg, "reasoning_content",
                            llm_api_jstr_or_null(r->reasoning));
    }
    json_object_set_new(msg, "refusal", json_null());
    if (r->n_tool_calls) {
        calls = json_array();
        for (i = 0; i < r->n_tool_calls; i++) {
            const llm_tool_call *tc = &r->tool_calls[i];

            fn = json_object();
            json_object_set_new(fn, "name", llm_api_jstr_or_null(tc->name));
            json_object_set_new(fn, "arguments", llm_api_jstr_or_null(
                tc->arguments ? tc->arguments : "{}"));
            call = json_object();
            json_object_set_new(call, "id", llm_api_jstr_or_null(tc->id));
            json_object_set_new(call, "type", json_string("function"));
            json_object_set_new(call, "function", fn);
            json_array_append_new(calls, call);
        }
        json_object_set_new(msg, "tool_calls", calls);
    }
    return msg;
}

int
llm_openai_chat_response(llm_buf *b, const llm_openai_meta *m,
    const llm_result *choices, size_t n, const llm_logprobs_list *logprobs)
{
    json_t    *root, *arr, *ch;
    llm_usage  u;
    size_t     i;
    int        rc;

    root = llm_openai_envelope_json(m, "chat.completion");
    arr = json_array();
    for (i = 0; i < n; i++) {
        ch = json_object();
        json_object_set_new(ch, "index", json_integer((json_int_t) i));
        json_object_set_new(ch, "message", message_json(&choices[i]));
        json_object_set_new(ch, "logprobs", logprobs
            ? llm_openai_chat_logprobs(m, &logprobs[i]) : json_null());
        json_object_set_new(ch, "finish_reason",
                            finish_json(choices[i].finish));
        llm_openai_choice_token_ids(ch, &choices[i]);
        json_array_append_new(arr, ch);
    }
    json_object_set_new(root, "choices", arr);
    u = llm_openai_total_usage(choices, n);
    json_object_set_new(root, "usage", llm_openai_usage_json(&u));
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}

/* ---- streaming ---- */

void
llm_openai_chat_stream_init(llm_openai_chat_stream *s,
    const llm_openai_meta *m, int index, int include_usage, int logprobs)
{
    memset(s, 0, sizeof(*s));
    s->meta = m;
    s->index = index;
    s->include_usage = include_usage;
    s->logprobs = logprobs;
}

/* data: {chunk with one choice carrying delta}\n\n; takes delta and lp. */
static int
chunk(llm_openai_chat_stream *s, llm_buf *b, json_t *delta, json_t *lp,
    llm_finish finish)
{
    json_t *root, *ch, *arr;

    root = llm_openai_envelope_json(s->meta, "chat.completion.chunk");
    ch = json_object();
    json_object_set_new(ch, "index", json_integer(s->index));
    json_object_set_new(ch, "delta", delta);
    json_object_set_new(ch, "logprobs", lp ? lp : json_null());
    json_object_set_new(ch, "finish_reason", finish_json(finish));
    arr = json_array();
    json_array_append_new(arr, ch);
    json_object_set_new(root, "choices", arr);
    if (s->include_usage) {
        json_object_set_new(root, "usage", json_null());
    }
    return llm_api_sse(b, NULL, root);
}

int
llm_openai_chat_stream_start(llm_openai_chat_stream *s, llm_buf *b)
{
    json_t *delta;

    if (s->started) {
        return 0;
    }
    s->started = 1;
    delta = json_object();
    json_object_set_new(delta, "role", json_string("assistant"));
    json_object_set_new(delta, "content", json_string(""));
    return chunk(s, b, delta, NULL, LLM_FINISH_NONE);
}

int
llm_openai_chat_stream_event(llm_openai_chat_stream *s, llm_buf *b,
    const llm_event *ev, const llm_logprobs_list *lp)
{
    json_t *delta, *calls, *call, *fn, *lpj = NULL;

    if (s->finished || llm_openai_chat_stream_start(s, b) != 0) {
        return b->failed ? -1 : 0;
    }
    delta = json_object();
    switch (ev->type) {
    case LLM_EV_CONTENT:
        if (ev->len == 0 && !(s->logprobs && lp && lp->n)) {
            json_decref(delta);
            return 0;
        }
        json_object_set_new(delta, "content",
                            llm_api_jstring(ev->text, ev->len));
        if (s->logprobs && lp && lp->n) {
            lpj = llm_openai_chat_logprobs(s->meta, lp);
        }
        break;
    case LLM_EV_REASONING:
        if (ev->len == 0) {
            json_decref(delta);
            return 0;
        }
        json_object_set_new(delta, "reasoning_content",
                            llm_api_jstring(ev->text, ev->len));
        break;
    case LLM_EV_TOOL_BEGIN:
    case LLM_EV_TOOL_ARGS:
        if (ev->type == LLM_EV_TOOL_ARGS && ev->len == 0) {
            json_decref(delta);
            return 0;
        }
        fn = json_object();
        call = json_object();
        json_object_set_new(call, "index", json_integer(ev->index));
        if (ev->type == LLM_EV_TOOL_BEGIN) {
            json_object_set_new(call, "id", llm_api_jstr_or_null(ev->id));
            json_object_set_new(call, "type", json_string("function"));
            json_object_set_new(fn, "name", llm_api_jstr_or_null(ev->name));
            json_object_set_new(fn, "arguments", json_string(""));
        } else {
            json_object_set_new(fn, "arguments",
                                llm_api_jstring(ev->text, ev->len));
        }
        json_object_set_new(call, "function", fn);
        calls = json_array();
        json_array_append_new(calls, call);
        json_object_set_new(delta, "tool_calls", calls);
        break;
    default:                       /* TOOL_END: nothing to say in OpenAI */
        json_decref(delta);
        return 0;
    }
    return chunk(s, b, delta, lpj, LLM_FINISH_NONE);
}

int
llm_openai_chat_stream_finish(llm_openai_chat_stream *s, llm_buf *b,
    llm_finish finish)
{
    if (s->finished) {
        return 0;
    }
    if (llm_openai_chat_stream_start(s, b) != 0) {
        return -1;
    }
    s->finished = 1;
    return chunk(s, b, json_object(), NULL,
                 finish == LLM_FINISH_NONE ? LLM_FINISH_STOP : finish);
}

int
llm_openai_stream_usage(llm_buf *b, const llm_openai_meta *m,
    const char *object, const llm_usage *usage)
{
    json_t *root = llm_openai_envelope_json(m,
                       object ? object : "chat.completion.chunk");

    json_object_set_new(root, "choices", json_array());
    json_object_set_new(root, "usage", llm_openai_usage_json(usage));
    return llm_api_sse(b, NULL, root);
}

int
llm_openai_stream_error(llm_buf *b, const llm_api_error *err)
{
    llm_buf_puts(b, "data: ");
    llm_openai_error_json(b, err, NULL);
    llm_buf_puts(b, "\n\n");
    return b->failed ? -1 : 0;
}

int
llm_openai_stream_done(llm_buf *b)
{
    return llm_buf_puts(b, "data: [DONE]\n\n");
}
