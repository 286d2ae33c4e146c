/* Responses API objects and streaming events (llm_responses.h). */
#include "api/llm_api_json.h"
#include "api/llm_reasoning_seal.h"
#include "api/llm_responses.h"

#include <stdlib.h>
#include <string.h>

/* Item ids: a prefix and this many random characters. */
#define RESPONSES_ITEM_ID_RANDOM  24

/* The response fields after "output", in OpenAI's order, from the echo;
 * those the echo lacks are null. */
static const char *const echo_before[] = {
    "instructions", "max_output_tokens", NULL
};
static const char *const echo_after[] = {
    "parallel_tool_calls", "reasoning", "temperature", "text", "tool_choice",
    "tools", "top_p", "truncation", "previous_response_id", "store", NULL
};

static void
copy_echo(json_t *o, const json_t *echo, const char *const *keys)
{
    const json_t *v;

    for (; *keys; keys++) {
        v = echo ? json_object_get(echo, *keys) : NULL;
        json_object_set_new(o, *keys, v ? json_deep_copy(v) : json_null());
    }
}

static json_t *
usage_json(const llm_usage *u)
{
    return json_pack("{s:I,s:{s:I},s:I,s:{s:I},s:I}",
        "input_tokens", (json_int_t) u->prompt_tokens,
        "input_tokens_details",
            "cached_tokens", (json_int_t) u->cached_tokens,
        "output_tokens", (json_int_t) u->completion_tokens,
        "output_tokens_details",
            "reasoning_tokens", (json_int_t) u->reasoning_tokens,
        "total_tokens",
            (json_int_t) (u->prompt_tokens + u->completion_tokens));
}

/*
 * The response object.  status: "in_progress", "completed", "incomplete"
 * or "failed"; output: taken; usage NULL -> null; error: taken or NULL.
 */
static json_t *
response_json(const llm_responses_meta *m, const char *status,
    json_t *output, const llm_usage *usage, json_t *error)
{
    json_t       *o = json_object();
    const json_t *echo = m->echo;
    const json_t *v;

    json_object_set_new(o, "id", llm_api_jstr_or_null(m->id));
    json_object_set_new(o, "object", json_string("response"));
    json_object_set_new(o, "created_at", json_integer(m->created));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "background", json_false());
    json_object_set_new(o, "error", error ? error : json_null());
    json_object_set_new(o, "incomplete_details",
        strcmp(status, "incomplete") == 0
        ? json_pack("{s:s}", "reason", "max_output_tokens") : json_null());
    copy_echo(o, echo, echo_before);
    json_object_set_new(o, "model", llm_api_jstr_or_null(m->model));
    json_object_set_new(o, "output", output);
    copy_echo(o, echo, echo_after);
    if (!json_is_boolean(json_object_get(o, "store"))) {
        json_object_set_new(o, "store", json_false());  /* not kept */
    }
    json_object_set_new(o, "usage", usage ? usage_json(usage) : json_null());
    v = echo ? json_object_get(echo, "user") : NULL;
    json_object_set_new(o, "user", v ? json_deep_copy(v) : json_null());
    v = echo ? json_object_get(echo, "metadata") : NULL;
    json_object_set_new(o, "metadata", v ? json_deep_copy(v) : json_object());
    return o;
}

static const char *
final_status(llm_finish f)
{
    return f == LLM_FINISH_LENGTH ? "incomplete" : "completed";
}

static json_t *
item_id(const char *prefix)
{
    char id[64];

    llm_random_id(id, sizeof(id), prefix, RESPONSES_ITEM_ID_RANDOM);
    return json_string(id);
}

static json_t *
text_part(const char *text, size_t len)
{
    json_t *p = json_object();

    json_object_set_new(p, "type", json_string("output_text"));
    json_object_set_new(p, "text", llm_api_jstring(text ? text : "", len));
    json_object_set_new(p, "annotations", json_array());
    json_object_set_new(p, "logprobs", json_array());
    return p;
}

static json_t *
reasoning_part(const char *text, size_t len)
{
    json_t *p = json_object();

    json_object_set_new(p, "type", json_string("reasoning_text"));
    json_object_set_new(p, "text", llm_api_jstring(text ? text : "", len));
    return p;
}

/* Items with content: [] (an added event) or with the text part. */
static json_t *
message_item(json_t *id, const char *status, json_t *part)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", id);
    json_object_set_new(o, "type", json_string("message"));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "role", json_string("assistant"));
    json_object_set_new(o, "content", json_array());
    if (part) {
        json_array_append_new(json_object_get(o, "content"), part);
    }
    return o;
}

/*
 * A reasoning item: without its text (an added event), or with it, and then
 * with the text sealed as encrypted_content when the request included it.
 * NULL when out of memory (or without random bytes to seal with).
 */
static json_t *
reasoning_item(const llm_responses_meta *m, json_t *id, const char *text,
    size_t len, int with_text)
{
    char   *sealed;
    json_t *o = json_object();

    json_object_set_new(o, "id", id);
    json_object_set_new(o, "type", json_string("reasoning"));
    json_object_set_new(o, "summary", json_array());
    if (!with_text) {
        return o;
    }
    json_object_set_new(o, "content", json_array());
    json_array_append_new(json_object_get(o, "content"),
                          reasoning_part(text, len));
    if (m->seal_key) {
        sealed = llm_reasoning_seal(m->seal_key, text, len);
        if (sealed == NULL
            || json_object_set_new(o, "encrypted_content",
                                   json_string(sealed)) != 0)
        {
            free(sealed);
            json_decref(o);
            return NULL;
        }
        free(sealed);
    }
    return o;
}

/*
 * "name" (and "namespace") of a call of the function the model knows as
 * `flat`: a function of a namespace tool in the request (echo's "tools")
 * was offered as "<namespace>__<name>" and goes back split, so that the
 * client finds its handler under (namespace, name).
 */
static void
set_call_name(json_t *o, const json_t *echo, const char *flat)
{
    const json_t *t, *f, *ns, *name;
    size_t        i, j, n;

    json_array_foreach(echo ? json_object_get(echo, "tools") : NULL, i, t) {
        ns = json_object_get(t, "name");
        if (!json_is_string(json_object_get(t, "type"))
            || strcmp(json_string_value(json_object_get(t, "type")),
                      "namespace") != 0
            || !json_is_string(ns) || flat == NULL)
        {
            continue;
        }
        n = json_string_length(ns);
        if (strncmp(flat, json_string_value(ns), n) != 0
            || strncmp(flat + n, LLM_RESPONSES_NS_SEP,
                       sizeof(LLM_RESPONSES_NS_SEP) - 1) != 0)
        {
            continue;
        }
        json_array_foreach(json_object_get(t, "tools"), j, f) {
            name = json_object_get(f, "name");
            if (json_is_string(name)
                && strcmp(flat + n + sizeof(LLM_RESPONSES_NS_SEP) - 1,
                          json_string_value(name)) == 0)
            {
                json_object_set_new(o, "namespace", json_deep_copy(ns));
                json_object_set_new(o, "name", json_deep_copy(name));
                return;
            }
        }
    }
    json_object_set_new(o, "name", llm_api_jstr_or_null(flat));
}

static json_t *
call_item(const json_t *echo, json_t *id, const char *status,
    const char *call_id, const char *name, const char *args, size_t args_len)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", id);
    json_object_set_new(o, "type", json_string("function_call"));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "call_id", llm_api_jstr_or_null(call_id));
    set_call_name(o, echo, name);
    json_object_set_new(o, "arguments",
                        llm_api_jstring(args ? args : "", args_len));
    return o;
}

/* Output items of a finished result: reasoning, message, function calls.
 * A result with nothing at all still has its (empty) message. */
static json_t *
output_json(const llm_responses_meta *m, const llm_result *r)
{
    json_t     *out = json_array(), *item;
    size_t      i;
    const char *status;

    if (r->reasoning && r->reasoning[0]) {
        item = reasoning_item(m, item_id("rs_"), r->reasoning,
                              strlen(r->reasoning), 1);
        if (item == NULL) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, item);
    }
    status = r->finish == LLM_FINISH_LENGTH ? "incomplete" : "completed";
    if ((r->content && r->content[0]) || r->n_tool_calls == 0) {
        json_array_append_new(out, message_item(item_id("msg_"), status,
            text_part(r->content, r->content ? strlen(r->content) : 0)));
    }
    for (i = 0; i < r->n_tool_calls; i++) {
        const llm_tool_call *tc = &r->tool_calls[i];

        json_array_append_new(out, call_item(m->echo, item_id("fc_"),
            "completed", tc->id, tc->name, tc->arguments,
            tc->arguments ? strlen(tc->arguments) : 0));
    }
    return out;
}

json_t *
llm_responses_object(const llm_responses_meta *m, const llm_result *r,
    const llm_usage *usage)
{
    json_t *output;

    output = output_json(m, r);
    if (output == NULL) {
        return NULL;
    }
    return response_json(m, final_status(r->finish), output, usage, NULL);
}

int
llm_responses_response(llm_buf *b, const llm_responses_meta *m,
    const llm_result *r, const llm_usage *usage)
{
    json_t *root;
    int     rc;

    root = llm_responses_object(m, r, usage);
    if (root == NULL) {
        b->failed = 1;
        return -1;
    }
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}

/* ---- streaming ---- */

void
llm_responses_stream_init(llm_responses_stream *s,
    const llm_responses_meta *m)
{
    memset(s, 0, sizeof(*s));
    s->meta = m;
    s->open_tool = -1;
    llm_buf_init(&s->text);
}

void
llm_responses_stream_free(llm_responses_stream *s)
{
    llm_buf_free(&s->text);
    free(s->call_name);
    json_decref(s->output);
    json_decref(s->final);
    s->call_name = NULL;
    s->output = NULL;
    s->final = NULL;
}

/* event: NAME / data: {"type":NAME,"sequence_number":N, ...obj}; takes obj. */
static int
event(llm_responses_stream *s, llm_buf *b, const char *name, json_t *obj)
{
    json_t     *o = json_object();
    json_t     *v;
    const char *k;

    json_object_set_new(o, "type", json_string(name));
    json_object_set_new(o, "sequence_number", json_integer(s->seq++));
    json_object_foreach(obj, k, v) {
        json_object_set(o, k, v);
    }
    json_decref(obj);
    return llm_api_sse(b, name, o);
}

static size_t
output_index(const llm_responses_stream *s)
{
    return json_array_size(s->output);
}

/* {"item_id","output_index"[,"content_index"]} for the open item. */
static json_t *
at(const llm_responses_stream *s, int with_content)
{
    json_t *o = json_object();

    json_object_set_new(o, "item_id", json_string(s->item_id));
    json_object_set_new(o, "output_index", json_integer(output_index(s)));
    if (with_content) {
        json_object_set_new(o, "content_index", json_integer(0));
    }
    return o;
}

int
llm_responses_stream_start(llm_responses_stream *s, llm_buf *b)
{
    if (s->started) {
        return 0;
    }
    s->started = 1;
    if (s->output == NULL && (s->output = json_array()) == NULL) {
        return -1;
    }
    event(s, b, "response.created", json_pack("{s:o}", "response",
        response_json(s->meta, "in_progress", json_array(), NULL, NULL)));
    event(s, b, "response.in_progress", json_pack("{s:o}", "response",
        response_json(s->meta, "in_progress", json_array(), NULL, NULL)));
    return b->failed ? -1 : 0;
}

/* The .added events of a new item; item is taken. */
static int
item_added(llm_responses_stream *s, llm_buf *b, llm_responses_item kind,
    json_t *item)
{
    json_t *o;

    snprintf(s->item_id, sizeof(s->item_id), "%s",
             json_string_value(json_object_get(item, "id")));
    s->open = kind;
    llm_buf_reset(&s->text);
    o = json_object();
    json_object_set_new(o, "output_index", json_integer(output_index(s)));
    json_object_set_new(o, "item", item);
    event(s, b, "response.output_item.added", o);
    if (kind == LLM_RESPONSES_ITEM_MESSAGE
        || kind == LLM_RESPONSES_ITEM_REASONING)
    {
        o = at(s, 1);
        json_object_set_new(o, "part",
            kind == LLM_RESPONSES_ITEM_MESSAGE ? text_part("", 0)
                                               : reasoning_part("", 0));
        event(s, b, "response.content_part.added", o);
    }
    return b->failed ? -1 : 0;
}

/* The .done events of the open item, which joins the output. */
static int
item_done(llm_responses_stream *s, llm_buf *b, const char *status)
{
    json_t     *o, *item, *id;
    const char *text = s->text.data ? s->text.data : "";
    size_t      len = s->text.len;

    if (s->open == LLM_RESPONSES_ITEM_NONE) {
        return 0;
    }
    id = json_string(s->item_id);
    switch (s->open) {
    case LLM_RESPONSES_ITEM_MESSAGE:
        o = at(s, 1);
        json_object_set_new(o, "text", llm_api_jstring(text, len));
        json_object_set_new(o, "logprobs", json_array());
        event(s, b, "response.output_text.done", o);
        o = at(s, 1);
        json_object_set_new(o, "part", text_part(text, len));
        event(s, b, "response.content_part.done", o);
        item = message_item(id, status, text_part(text, len));
        break;
    case LLM_RESPONSES_ITEM_REASONING:
        o = at(s, 1);
        json_object_set_new(o, "text", llm_api_jstring(text, len));
        event(s, b, "response.reasoning_text.done", o);
        o = at(s, 1);
        json_object_set_new(o, "part", reasoning_part(text, len));
        event(s, b, "response.content_part.done", o);
        item = reasoning_item(s->meta, id, text, len, 1);
        if (item == NULL) {
            b->failed = 1;
            return -1;
        }
        break;
    default:
        o = at(s, 0);
        set_call_name(o, s->meta->echo, s->call_name);
        json_object_set_new(o, "arguments", llm_api_jstring(text, len));
        event(s, b, "response.function_call_arguments.done", o);
        item = call_item(s->meta->echo, id, "completed", s->call_id,
                         s->call_name, text, len);
        break;
    }
    o = json_object();
    json_object_set_new(o, "output_index", json_integer(output_index(s)));
    json_object_set(o, "item", item);
    event(s, b, "response.output_item.done", o);
    json_array_append_new(s->output, item);
    s->open = LLM_RESPONSES_ITEM_NONE;
    s->open_tool = -1;
    free(s->call_name);
    s->call_name = NULL;
    return b->failed ? -1 : 0;
}

/* A text delta of the open message or reasoning item. */
static int
text_delta(llm_responses_stream *s, llm_buf *b, const char *name,
    const llm_event *ev)
{
    json_t *o = at(s, 1);

    json_object_set_new(o, "delta", llm_api_jstring(ev->text, ev->len));
    if (s->open == LLM_RESPONSES_ITEM_MESSAGE) {
        json_object_set_new(o, "logprobs", json_array());
    }
    llm_buf_append(&s->text, ev->text, ev->len);
    return event(s, b, name, o) != 0 || s->text.failed ? -1 : 0;
}

int
llm_responses_stream_event(llm_responses_stream *s, llm_buf *b,
    const llm_event *ev)
{
    json_t *o;

    if (s->finished) {
        return 0;
    }
    if (!s->started && llm_responses_stream_start(s, b) != 0) {
        return -1;
    }
    switch (ev->type) {
    case LLM_EV_CONTENT:
        if (ev->len == 0) {
            return 0;
        }
        if (s->open != LLM_RESPONSES_ITEM_MESSAGE
            && (item_done(s, b, "completed") != 0
                || item_added(s, b, LLM_RESPONSES_ITEM_MESSAGE,
                              message_item(item_id("msg_"), "in_progress",
                                           NULL)) != 0))
        {
            return -1;
        }
        return text_delta(s, b, "response.output_text.delta", ev);
    case LLM_EV_REASONING:
        if (ev->len == 0) {
            return 0;
        }
        if (s->open != LLM_RESPONSES_ITEM_REASONING
            && (item_done(s, b, "completed") != 0
                || item_added(s, b, LLM_RESPONSES_ITEM_REASONING,
                              reasoning_item(s->meta, item_id("rs_"), NULL, 0,
                                             0)) != 0))
        {
            return -1;
        }
        return text_delta(s, b, "response.reasoning_text.delta", ev);
    case LLM_EV_TOOL_BEGIN:
        if (item_done(s, b, "completed") != 0) {
            return -1;
        }
        snprintf(s->call_id, sizeof(s->call_id), "%s", ev->id ? ev->id : "");
        s->call_name = strdup(ev->name ? ev->name : "");
        if (s->call_name == NULL) {
            return -1;
        }
        if (item_added(s, b, LLM_RESPONSES_ITEM_CALL,
                       call_item(s->meta->echo, item_id("fc_"), "in_progress",
                                 s->call_id, s->call_name, "", 0)) != 0)
        {
            return -1;
        }
        s->open_tool = ev->index;
        return 0;
    case LLM_EV_TOOL_ARGS:
        if (ev->len == 0 || s->open != LLM_RESPONSES_ITEM_CALL
            || s->open_tool != ev->index)
        {
            return 0;     /* arguments of a call that is not open */
        }
        o = at(s, 0);
        json_object_set_new(o, "delta", llm_api_jstring(ev->text, ev->len));
        llm_buf_append(&s->text, ev->text, ev->len);
        return event(s, b, "response.function_call_arguments.delta", o) != 0
               || s->text.failed ? -1 : 0;
    case LLM_EV_TOOL_END:
        if (s->open == LLM_RESPONSES_ITEM_CALL && s->open_tool == ev->index) {
            return item_done(s, b, "completed");
        }
        return 0;
    }
    return 0;
}

int
llm_responses_stream_finish(llm_responses_stream *s, llm_buf *b,
    const llm_result *r, const llm_usage *usage)
{
    const char *status = final_status(r->finish);
    json_t     *output;

    if (s->finished) {
        return 0;
    }
    if (!s->started && llm_responses_stream_start(s, b) != 0) {
        return -1;
    }
    if (item_done(s, b, status) != 0) {
        return -1;
    }
    if (json_array_size(s->output) == 0) {
        /* as the response object: an answer of nothing is an empty message */
        if (item_added(s, b, LLM_RESPONSES_ITEM_MESSAGE,
                       message_item(item_id("msg_"), "in_progress", NULL))
            != 0 || item_done(s, b, status) != 0)
        {
            return -1;
        }
    }
    s->finished = 1;
    output = json_deep_copy(s->output);
    s->final = response_json(s->meta, status, output, usage, NULL);
    event(s, b, strcmp(status, "incomplete") == 0 ? "response.incomplete"
                                                  : "response.completed",
          json_pack("{s:O}", "response", s->final));
    return b->failed || s->final == NULL ? -1 : 0;
}

int
llm_responses_stream_error(llm_responses_stream *s, llm_buf *b,
    const llm_api_error *err)
{
    json_t *e;

    if (s->finished) {
        return 0;
    }
    if (!s->started && llm_responses_stream_start(s, b) != 0) {
        return -1;
    }
    s->finished = 1;
    e = json_object();
    json_object_set_new(e, "code", json_string(
        err->code ? err->code : err->status >= 500 ? "server_error"
                                                   : "invalid_request"));
    json_object_set_new(e, "message", llm_api_jstr_or_null(err->message));
    event(s, b, "response.failed", json_pack("{s:o}", "response",
        response_json(s->meta, "failed", json_deep_copy(s->output), NULL,
                      e)));
    return b->failed ? -1 : 0;
}
