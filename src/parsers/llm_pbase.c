/*
 * Call bookkeeping shared by all parser families: name validation against
 * the request's tools, parallel_tool_calls, ids, and what happens to the
 * markup of a call that turns out not to be one (it becomes content).
 */
#include "parsers/llm_parser_impl.h"

#include <string.h>

void
llm_pb_init(llm_pbase *b, const llm_parser_env *env)
{
    memset(b, 0, sizeof(*b));
    b->emit = env->emit;
    b->ctx = env->ctx;
    b->tools = (env->tools && json_is_array(env->tools)) ? env->tools : NULL;
    b->parallel = env->parallel_tool_calls;
}

void
llm_pb_free(llm_pbase *b)
{
    llm_pbuf_free(&b->held);
}

static void
pb_text(llm_pbase *b, llm_event_type t, const char *s, size_t n)
{
    llm_event ev;

    if (n == 0) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = t;
    ev.text = s;
    ev.len = n;
    b->emit(b->ctx, &ev);
}

void
llm_pb_content(llm_pbase *b, const char *s, size_t n)
{
    pb_text(b, LLM_EV_CONTENT, s, n);
}

void
llm_pb_reasoning(llm_pbase *b, const char *s, size_t n)
{
    pb_text(b, LLM_EV_REASONING, s, n);
}

void
llm_pb_raw(llm_pbase *b, const char *s, size_t n)
{
    switch (b->mode) {
    case LLM_PB_IDLE:
        llm_pbuf_add(&b->held, s, n);
        break;
    case LLM_PB_REJECTED:
        pb_text(b, LLM_EV_CONTENT, s, n);
        break;
    default:
        break;
    }
}

void
llm_pb_tail(llm_pbase *b, const char *s, size_t n)
{
    if (b->mode != LLM_PB_IDLE) {
        llm_pb_raw(b, s, n);
    } else if (b->last == LLM_PB_REJECTED) {
        pb_text(b, LLM_EV_CONTENT, s, n);
    }
}

void
llm_pb_release(llm_pbase *b)
{
    pb_text(b, LLM_EV_CONTENT, b->held.p, b->held.len);
    llm_pbuf_reset(&b->held);
    if (b->mode == LLM_PB_IDLE) {
        b->mode = LLM_PB_REJECTED;
    }
}

void
llm_pb_discard(llm_pbase *b)
{
    llm_pbuf_reset(&b->held);
}

static const json_t *
pb_tool_fn(const json_t *tool)
{
    const json_t *fn = json_object_get(tool, "function");

    return json_is_object(fn) ? fn : tool;
}

static const json_t *
pb_find_tool(const llm_pbase *b, const char *name)
{
    size_t        i;
    const json_t *t;

    if (b->tools == NULL) {
        return NULL;
    }
    json_array_foreach(b->tools, i, t) {
        const char *tn = json_string_value(json_object_get(pb_tool_fn(t),
                                                           "name"));
        if (tn && strcmp(tn, name) == 0) {
            return t;
        }
    }
    return NULL;
}

int
llm_pb_known_tool(const llm_pbase *b, const char *name)
{
    return pb_find_tool(b, name) != NULL;
}

static int
pb_name_ok(const char *name, size_t n)
{
    size_t i;

    if (n == 0 || n > 256) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char) name[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '<'
            || c == '>' || c == '{' || c == '}' || c == '(' || c == ')')
        {
            return 0;
        }
    }
    return 1;
}

llm_pb_mode
llm_pb_call_name(llm_pbase *b, const char *name, size_t n, int strict)
{
    char       nm[260];
    llm_event  ev;

    if (b->mode != LLM_PB_IDLE) {
        return b->mode;
    }
    if (!pb_name_ok(name, n)) {
        llm_pb_release(b);
        return b->mode;
    }
    memcpy(nm, name, n);
    nm[n] = '\0';

    b->tool = pb_find_tool(b, nm);
    if (b->tool == NULL && strncmp(nm, "functions.", 10) == 0
        && pb_find_tool(b, nm + 10))
    {
        /* "functions.f": the namespace some models copy from prompts */
        memmove(nm, nm + 10, n - 10 + 1);
        b->tool = pb_find_tool(b, nm);
    }
    if (b->tool == NULL && (b->tools != NULL || strict)) {
        llm_pb_release(b);
        return b->mode;
    }
    llm_pbuf_reset(&b->held);
    b->n_valid++;
    if (!b->parallel && b->n_valid > 1) {
        b->mode = LLM_PB_DROPPED;
        return b->mode;
    }

    b->mode = LLM_PB_ACTIVE;
    b->args_sent = 0;
    llm_random_id(b->id, sizeof(b->id), "call_", 24);
    memset(&ev, 0, sizeof(ev));
    ev.type = LLM_EV_TOOL_BEGIN;
    ev.index = b->n_calls;
    ev.id = b->id;
    ev.name = nm;
    b->emit(b->ctx, &ev);
    return b->mode;
}

void
llm_pb_call_args(llm_pbase *b, const char *s, size_t n)
{
    llm_event ev;

    if (b->mode != LLM_PB_ACTIVE || n == 0) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = LLM_EV_TOOL_ARGS;
    ev.index = b->n_calls;
    ev.text = s;
    ev.len = n;
    b->args_sent = 1;
    b->emit(b->ctx, &ev);
}

void
llm_pb_call_end(llm_pbase *b)
{
    llm_event ev;

    if (b->mode == LLM_PB_ACTIVE) {
        if (!b->args_sent) {
            llm_pb_call_args(b, "{}", 2);
        }
        memset(&ev, 0, sizeof(ev));
        ev.type = LLM_EV_TOOL_END;
        ev.index = b->n_calls;
        b->emit(b->ctx, &ev);
        b->n_calls++;
    }
    b->last = b->mode;
    b->mode = LLM_PB_IDLE;
    b->tool = NULL;
}

const char *
llm_pb_param_type(llm_pbase *b, const char *param)
{
    const json_t *fn, *schema, *props;

    if (b->tool == NULL) {
        return NULL;
    }
    fn = pb_tool_fn(b->tool);
    schema = json_object_get(fn, "parameters");
    if (schema == NULL) {
        schema = json_object_get(fn, "input_schema");
    }
    props = json_object_get(schema, "properties");
    return llm_param_type(json_object_get(props, param));
}

const char *
llm_param_type(const json_t *p)
{
    const json_t *type = json_object_get(p, "type");

    if (json_is_string(type)) {
        return json_string_value(type);
    }
    if (json_is_array(type)) {       /* ["integer", "null"]: first non-null */
        size_t        i;
        const json_t *t;
        const char   *first = NULL;
        int           nullable = 0;

        json_array_foreach(type, i, t) {
            if (!json_is_string(t)) {
                continue;
            }
            if (strcmp(json_string_value(t), "null") == 0) {
                nullable = 1;
            } else if (first == NULL) {
                first = json_string_value(t);
            }
        }
        if (first && nullable && strcmp(first, "string") == 0) {
            return LLM_TYPE_STRING_OR_NULL;
        }
        if (first) {
            return first;
        }
    }
    if (json_is_object(p) && (json_object_get(p, "properties")
                              || json_object_get(p, "additionalProperties")))
    {
        return "object";
    }
    if (json_is_object(p) && json_object_get(p, "items")) {
        return "array";
    }
    return NULL;
}
