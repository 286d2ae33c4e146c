/*
 * /v1/responses request -> llm_request (llm_responses.h).  Input items
 * become the chat-template conversation of core/llm_ir.h: a message item
 * is a message, function_call items join the assistant turn they follow
 * (or open one), a function_call_output is a tool message named after
 * the call it answers, and a reasoning item is the reasoning_content of
 * the assistant turn that follows it.
 */
#include "api/llm_openai_common.h"
#include "api/llm_reasoning_seal.h"
#include "api/llm_responses.h"
#include "grammar/llm_grammar.h"

#include <stdlib.h>
#include <string.h>

#define OOM(err) llm_api_error_set(err, 500, "api_error", NULL, NULL, \
                                   "Out of memory while reading the request.")

#define INT_ANY_MAX ((long long) ((~0ULL) >> 1))

/* The most metadata pairs and the longest value, as OpenAI bounds them. */
#define RESPONSES_MAX_METADATA        16
#define RESPONSES_MAX_METADATA_VALUE  512

/* The conversation being built from `instructions` and `input`. */
typedef struct {
    json_t               *messages;
    json_t               *assistant;   /* the open assistant turn, or NULL */
    llm_buf               reasoning;   /* a reasoning item's text, waiting
                                          for the assistant turn */
    int                   has_reasoning;
    const llm_api_limits *lim;
} conv;

static int
unsupported(llm_api_error *err, const char *param, const char *fmt,
    const char *what)
{
    char msg[400];

    snprintf(msg, sizeof(msg), fmt, what);
    return llm_api_bad_request(err, "unsupported_value", param, "%s", msg);
}

/*
 * Text of a message's content: a string, or parts whose text is joined
 * with "\n".  input_text / output_text carry "text", refusal "refusal";
 * media parts are refused (no model here reads them).
 */
static int
content_text(const json_t *c, const char *param, llm_buf *out,
    llm_api_error *err)
{
    char          path[128];
    const json_t *part, *t, *text;
    const char   *type, *key;
    size_t        i;
    int           first = 1;

    if (c == NULL || json_is_null(c)) {
        return llm_api_bad_request(err, "missing_required_parameter", param,
            "Missing required parameter: '%s'.", param);
    }
    if (json_is_string(c)) {
        llm_buf_append(out, json_string_value(c), json_string_length(c));
        return out->failed ? OOM(err) : 0;
    }
    if (!json_is_array(c)) {
        return llm_api_type_error(err, param,
            "a string or an array of content parts", c);
    }
    json_array_foreach(c, i, part) {
        llm_api_path(path, sizeof(path), "%s[%zu]", param, i);
        if (!json_is_object(part)) {
            return llm_api_type_error(err, path, "a content part object",
                part);
        }
        llm_api_path(path, sizeof(path), "%s[%zu].type", param, i);
        t = json_object_get(part, "type");
        if (!json_is_string(t)) {
            return llm_api_type_error(err, path, "a string", t);
        }
        type = json_string_value(t);
        if (strcmp(type, "input_text") == 0
            || strcmp(type, "output_text") == 0 || strcmp(type, "text") == 0)
        {
            key = "text";
        } else if (strcmp(type, "refusal") == 0) {
            key = "refusal";
        } else if (strcmp(type, "input_image") == 0
                   || strcmp(type, "input_file") == 0
                   || strcmp(type, "input_audio") == 0)
        {
            return llm_api_bad_request(err, "unsupported_value", path,
                "Invalid value for '%s': content parts of type '%s' are not "
                "supported by this server; only text parts are.", path, type);
        } else {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': unsupported content part type "
                "'%.64s'; expected 'input_text' or 'output_text'.", path,
                type);
        }
        text = json_object_get(part, key);
        llm_api_path(path, sizeof(path), "%s[%zu].%s", param, i, key);
        if (!json_is_string(text)) {
            return llm_api_type_error(err, path, "a string", text);
        }
        if (!first) {
            llm_buf_putc(out, '\n');
        }
        llm_buf_append(out, json_string_value(text), json_string_length(text));
        first = 0;
    }
    return out->failed ? OOM(err) : 0;
}

static json_t *
add_message(conv *cv, const char *role, const char *text, size_t len,
    llm_api_error *err)
{
    json_t *msg = json_object();

    if (msg == NULL || json_array_append_new(cv->messages, msg) != 0
        || json_object_set_new(msg, "role", json_string(role)) != 0
        || json_object_set_new(msg, "content",
                               json_stringn_nocheck(text ? text : "",
                                                    text ? len : 0)) != 0)
    {
        OOM(err);
        return NULL;
    }
    return msg;
}

/* An assistant turn, carrying the reasoning item that came before it. */
static json_t *
open_assistant(conv *cv, const char *text, size_t len, llm_api_error *err)
{
    json_t *msg = add_message(cv, "assistant", text, len, err);

    if (msg == NULL) {
        return NULL;
    }
    if (cv->has_reasoning
        && json_object_set_new(msg, "reasoning_content",
               json_stringn_nocheck(cv->reasoning.data ? cv->reasoning.data
                                                       : "",
                                    cv->reasoning.len)) != 0)
    {
        OOM(err);
        return NULL;
    }
    cv->has_reasoning = 0;
    llm_buf_reset(&cv->reasoning);
    cv->assistant = msg;
    return msg;
}

static const char *const roles[] = {
    "user", "system", "developer", "assistant", NULL
};

static int
message_item(conv *cv, const json_t *item, size_t i, llm_api_error *err)
{
    char          path[128];
    const json_t *role_v;
    const char   *role;
    llm_buf       text;
    json_t       *msg;
    int           k;

    llm_api_path(path, sizeof(path), "input[%zu].role", i);
    role_v = json_object_get(item, "role");
    if (role_v == NULL || json_is_null(role_v)) {
        return llm_api_bad_request(err, "missing_required_parameter", path,
            "Missing required parameter: '%s'.", path);
    }
    if (!json_is_string(role_v)) {
        return llm_api_type_error(err, path, "a string", role_v);
    }
    role = json_string_value(role_v);
    for (k = 0; roles[k]; k++) {
        if (strcmp(role, roles[k]) == 0) {
            break;
        }
    }
    if (roles[k] == NULL) {
        return llm_api_bad_request(err, "invalid_value", path,
            "Invalid value for '%s': expected one of 'user', 'system', "
            "'developer', 'assistant', but got '%.64s'.", path, role);
    }
    if (strcmp(role, "developer") == 0) {
        role = "system";
    }

    llm_buf_init(&text);
    llm_api_path(path, sizeof(path), "input[%zu].content", i);
    if (content_text(json_object_get(item, "content"), path, &text, err) < 0)
    {
        llm_buf_free(&text);
        return -1;
    }
    if (strcmp(role, "assistant") == 0) {
        msg = open_assistant(cv, text.data, text.len, err);
    } else {
        /* reasoning is kept only for the assistant turn right after it */
        cv->has_reasoning = 0;
        llm_buf_reset(&cv->reasoning);
        cv->assistant = NULL;
        msg = add_message(cv, role, text.data, text.len, err);
    }
    llm_buf_free(&text);
    return msg ? 0 : -1;
}

static int
required_string(const json_t *item, const char *key, size_t i,
    const json_t **out, llm_api_error *err)
{
    char          path[128];
    const json_t *v = json_object_get(item, key);

    llm_api_path(path, sizeof(path), "input[%zu].%s", i, key);
    if (v == NULL || json_is_null(v)) {
        return llm_api_bad_request(err, "missing_required_parameter", path,
            "Missing required parameter: '%s'.", path);
    }
    if (!json_is_string(v)) {
        return llm_api_type_error(err, path, "a string", v);
    }
    *out = v;
    return 0;
}

static int add_call(conv *cv, const json_t *item, size_t i,
    const json_t *call_id, const json_t *name, llm_api_error *err);

static int
function_call_item(conv *cv, const json_t *item, size_t i,
    llm_api_error *err)
{
    char          path[128];
    const json_t *call_id, *name, *ns;
    json_t       *flat;
    int           rc;

    if (required_string(item, "call_id", i, &call_id, err) < 0
        || required_string(item, "name", i, &name, err) < 0)
    {
        return -1;
    }
    /* a call of a namespace's function: the name the model was offered */
    ns = json_object_get(item, "namespace");
    if (ns == NULL || json_is_null(ns)) {
        return add_call(cv, item, i, call_id, name, err);
    }
    llm_api_path(path, sizeof(path), "input[%zu].namespace", i);
    if (!json_is_string(ns)) {
        return llm_api_type_error(err, path, "a string", ns);
    }
    flat = json_sprintf("%s" LLM_RESPONSES_NS_SEP "%s",
                        json_string_value(ns), json_string_value(name));
    if (flat == NULL) {
        return OOM(err);
    }
    rc = add_call(cv, item, i, call_id, flat, err);
    json_decref(flat);
    return rc;
}

/* The call joins the assistant turn before it, or opens one. */
static int
add_call(conv *cv, const json_t *item, size_t i, const json_t *call_id,
    const json_t *name, llm_api_error *err)
{
    char          path[128];
    const json_t *args;
    json_t       *calls, *call, *fn, *argobj;
    size_t        max;

    llm_api_path(path, sizeof(path), "input[%zu].arguments", i);
    args = json_object_get(item, "arguments");
    if (args == NULL || json_is_null(args)) {
        argobj = json_object();
    } else if (json_is_string(args)) {
        argobj = llm_api_parse_arguments(json_string_value(args),
                     json_string_length(args), path, cv->lim, err);
        if (argobj == NULL) {
            return -1;
        }
    } else {
        return llm_api_type_error(err, path,
            "a string holding a JSON object", args);
    }

    if (cv->assistant == NULL && open_assistant(cv, NULL, 0, err) == NULL) {
        json_decref(argobj);
        return -1;
    }
    calls = json_object_get(cv->assistant, "tool_calls");
    if (calls == NULL) {
        calls = json_array();
        if (calls == NULL
            || json_object_set_new(cv->assistant, "tool_calls", calls) != 0)
        {
            json_decref(argobj);
            return OOM(err);
        }
    }
    max = cv->lim && cv->lim->max_tool_calls ? cv->lim->max_tool_calls
                                              : LLM_API_DEFAULT_MAX_TOOL_CALLS;
    if (json_array_size(calls) >= max) {
        json_decref(argobj);
        llm_api_path(path, sizeof(path), "input[%zu]", i);
        return llm_api_bad_request(err, "too_many_tool_calls", path,
            "Invalid '%s': at most %zu function calls are supported in one "
            "assistant turn.", path, max);
    }
    fn = json_object();
    call = json_object();
    if (fn == NULL || call == NULL
        || json_object_set(fn, "name", (json_t *) name) != 0
        || json_object_set_new(fn, "arguments", argobj) != 0
        || json_object_set(call, "id", (json_t *) call_id) != 0
        || json_object_set_new(call, "type", json_string("function")) != 0
        || json_object_set_new(call, "function", fn) != 0
        || json_array_append_new(calls, call) != 0)
    {
        return OOM(err);
    }
    return 0;
}

/* The name of the function call with this id, from the turns so far. */
static const json_t *
call_name(const conv *cv, const char *call_id)
{
    const json_t *m, *c;
    size_t        i, j;

    for (i = json_array_size(cv->messages); i-- > 0; ) {
        m = json_array_get(cv->messages, i);
        json_array_foreach(json_object_get(m, "tool_calls"), j, c) {
            if (strcmp(json_string_value(json_object_get(c, "id")), call_id)
                == 0)
            {
                return json_object_get(json_object_get(c, "function"),
                                       "name");
            }
        }
    }
    return NULL;
}

static int
function_output_item(conv *cv, const json_t *item, size_t i,
    llm_api_error *err)
{
    char          path[128];
    const json_t *call_id, *name;
    json_t       *msg;
    llm_buf       text;

    if (required_string(item, "call_id", i, &call_id, err) < 0) {
        return -1;
    }
    name = call_name(cv, json_string_value(call_id));
    if (name == NULL) {
        llm_api_path(path, sizeof(path), "input[%zu].call_id", i);
        return llm_api_bad_request(err, "invalid_value", path,
            "Invalid value for '%s': no function_call item with call_id "
            "'%.100s' comes before this output.", path,
            json_string_value(call_id));
    }
    llm_buf_init(&text);
    llm_api_path(path, sizeof(path), "input[%zu].output", i);
    if (content_text(json_object_get(item, "output"), path, &text, err) < 0)
    {
        llm_buf_free(&text);
        return -1;
    }
    cv->assistant = NULL;
    msg = add_message(cv, "tool", text.data, text.len, err);
    llm_buf_free(&text);
    if (msg == NULL
        || json_object_set(msg, "tool_call_id", (json_t *) call_id) != 0
        || json_object_set(msg, "name", (json_t *) name) != 0)
    {
        return msg ? OOM(err) : -1;
    }
    return 0;
}

/*
 * The text of a reasoning item: what its encrypted_content seals (this
 * server's own, llm_reasoning_seal.h: exactly what the model thought), else
 * its reasoning_text content, else its summary.  Without a key (the CLI)
 * encrypted_content is ignored.
 */
static int
reasoning_item(conv *cv, const json_t *item, size_t i, llm_api_error *err)
{
    static const char *const keys[] = { "content", "summary" };
    static const char *const types[] = { "reasoning_text", "summary_text" };
    char          path[128];
    const json_t *list, *part, *t, *text, *sealed;
    size_t        k, j, before;

    sealed = json_object_get(item, "encrypted_content");
    llm_api_path(path, sizeof(path), "input[%zu].encrypted_content", i);
    if (sealed && !json_is_null(sealed) && !json_is_string(sealed)) {
        return llm_api_type_error(err, path, "a string", sealed);
    }
    if (json_is_string(sealed) && cv->lim && cv->lim->thinking_key) {
        if (cv->reasoning.len > 0) {
            llm_buf_putc(&cv->reasoning, '\n');
        }
        if (llm_reasoning_open(cv->lim->thinking_key,
                               json_string_value(sealed),
                               json_string_length(sealed), &cv->reasoning)
            != 0)
        {
            if (cv->reasoning.failed) {
                return OOM(err);
            }
            return llm_api_bad_request(err, "invalid_encrypted_content", path,
                "Invalid '%s': it is not reasoning this server sealed (an "
                "item must be sent back unchanged; items of another server, "
                "or of this one before its key changed, do not open).", path);
        }
        cv->has_reasoning = cv->reasoning.len > 0;
        return 0;
    }

    before = cv->reasoning.len;
    for (k = 0; k < 2; k++) {
        list = json_object_get(item, keys[k]);
        llm_api_path(path, sizeof(path), "input[%zu].%s", i, keys[k]);
        if (list == NULL || json_is_null(list)) {
            continue;
        }
        if (!json_is_array(list)) {
            return llm_api_type_error(err, path, "an array", list);
        }
        json_array_foreach(list, j, part) {
            llm_api_path(path, sizeof(path), "input[%zu].%s[%zu]", i,
                         keys[k], j);
            t = json_object_get(part, "type");
            text = json_object_get(part, "text");
            if (!json_is_object(part) || !json_is_string(t)
                || strcmp(json_string_value(t), types[k]) != 0
                || !json_is_string(text))
            {
                return llm_api_bad_request(err, "invalid_value", path,
                    "Invalid value for '%s': expected {\"type\": \"%s\", "
                    "\"text\": string}.", path, types[k]);
            }
            if (k == 1 && cv->reasoning.len > before) {
                break;      /* the full text was given: no summary */
            }
            if (cv->reasoning.len > 0) {
                llm_buf_putc(&cv->reasoning, '\n');
            }
            llm_buf_append(&cv->reasoning, json_string_value(text),
                           json_string_length(text));
        }
    }
    if (cv->reasoning.failed) {
        return OOM(err);
    }
    cv->has_reasoning = cv->reasoning.len > 0;
    return 0;
}

/* One input item (the i-th of `input`, or of the kept ones before it). */
static int
item_in(conv *cv, const json_t *item, size_t i, llm_api_error *err)
{
    char          path[128];
    const json_t *t;
    const char   *type;

    llm_api_path(path, sizeof(path), "input[%zu]", i);
    if (!json_is_object(item)) {
        return llm_api_type_error(err, path, "an input item object", item);
    }
    t = json_object_get(item, "type");
    llm_api_path(path, sizeof(path), "input[%zu].type", i);
    if (t == NULL || json_is_null(t)) {
        type = "message";         /* {"role", "content"} */
    } else if (!json_is_string(t)) {
        return llm_api_type_error(err, path, "a string", t);
    } else {
        type = json_string_value(t);
    }
    if (strcmp(type, "message") == 0) {
        return message_item(cv, item, i, err);
    }
    if (strcmp(type, "function_call") == 0) {
        return function_call_item(cv, item, i, err);
    }
    if (strcmp(type, "function_call_output") == 0) {
        return function_output_item(cv, item, i, err);
    }
    if (strcmp(type, "reasoning") == 0) {
        return reasoning_item(cv, item, i, err);
    }
    if (strcmp(type, "item_reference") == 0) {
        return llm_api_bad_request(err, "unsupported_value", path,
            "Invalid value for '%s': item references are not supported: "
            "send the items themselves, or continue a kept response with "
            "'previous_response_id'.", path);
    }
    return llm_api_bad_request(err, "unsupported_value", path,
        "Invalid value for '%s': input items of type '%.64s' are not "
        "supported by this server; expected 'message', "
        "'function_call', 'function_call_output' or 'reasoning'.",
        path, type);
}

/*
 * The kept items of previous_response_id (prior, or NULL), then `input`.
 * Errors name input[i] by the index in `input` (the kept items were read
 * once already and are what this server wrote).
 */
static int
input_in(const json_t *root, const json_t *prior, conv *cv,
    llm_api_error *err)
{
    const json_t *in = json_object_get(root, "input");
    const json_t *item;
    size_t        i, max;

    if (in == NULL || json_is_null(in)) {
        return llm_api_bad_request(err, "missing_required_parameter",
            "input", "Missing required parameter: 'input'.");
    }
    json_array_foreach(prior, i, item) {
        if (item_in(cv, item, i, err) < 0) {
            return -1;
        }
    }
    if (json_is_string(in)) {
        return add_message(cv, "user", json_string_value(in),
                           json_string_length(in), err) ? 0 : -1;
    }
    if (!json_is_array(in)) {
        return llm_api_type_error(err, "input",
            "a string or an array of input items", in);
    }
    max = cv->lim && cv->lim->max_messages ? cv->lim->max_messages
                                           : LLM_API_DEFAULT_MAX_MESSAGES;
    if (json_array_size(in) == 0) {
        return llm_api_bad_request(err, "empty_array", "input",
            "Invalid 'input': empty array. Expected a string or at least one "
            "input item.");
    }
    if (json_array_size(in) > max) {
        return llm_api_bad_request(err, "array_above_max_length", "input",
            "Invalid 'input': at most %zu items are supported, but got %zu.",
            max, json_array_size(in));
    }
    json_array_foreach(in, i, item) {
        if (item_in(cv, item, i, err) < 0) {
            return -1;
        }
    }
    if (json_array_size(cv->messages) == 0) {
        return llm_api_bad_request(err, "invalid_value", "input",
            "Invalid 'input': it holds no message or function call, only "
            "reasoning.");
    }
    return 0;
}

/*
 * Tools that OpenAI's servers run themselves (the model asks, the API
 * executes and feeds the result back within the same response).  This
 * server cannot run them, and a client that sends one by default (Codex CLI
 * sends web_search) gets on without it: they are left out of what the model
 * is offered, and the response's "tools" still lists them as sent.
 */
static int
hosted_tool(const char *type)
{
    static const char *const hosted[] = {
        "file_search", "code_interpreter", "image_generation", "mcp", NULL
    };
    size_t i;

    if (strncmp(type, "web_search", 10) == 0) {    /* and its dated aliases */
        return 1;
    }
    for (i = 0; hosted[i]; i++) {
        if (strcmp(type, hosted[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * A "namespace" tool groups function tools under a name ({"type":
 * "namespace", "name", "description", "tools": [function tools]}; Codex CLI
 * sends its MCP servers' tools and its multi-agent tools so).  The model is
 * offered each function as LLM_RESPONSES_NS_SEP-joined "namespace__name",
 * and a call of it comes back as {"namespace", "name"} again
 * (llm_responses_format.c), which is how the client finds its handler.
 */
static int
namespace_tool(const json_t *t, size_t i, llm_request *req,
    llm_api_error *err)
{
    char          path[128], flat[160];
    const json_t *ns, *fns, *f, *type, *name;
    json_t       *copy;
    size_t        j;
    int           rc;

    llm_api_path(path, sizeof(path), "tools[%zu].name", i);
    ns = json_object_get(t, "name");
    if (!json_is_string(ns) || json_string_length(ns) == 0) {
        return llm_api_type_error(err, path, "a non-empty string", ns);
    }
    llm_api_path(path, sizeof(path), "tools[%zu].tools", i);
    fns = json_object_get(t, "tools");
    if (!json_is_array(fns)) {
        return llm_api_type_error(err, path, "an array of function tools",
                                  fns);
    }
    json_array_foreach(fns, j, f) {
        llm_api_path(path, sizeof(path), "tools[%zu].tools[%zu].type", i, j);
        type = json_object_get(f, "type");
        if (!json_is_object(f) || !json_is_string(type)
            || strcmp(json_string_value(type), "function") != 0)
        {
            return llm_api_bad_request(err, "unsupported_value", path,
                "Invalid value for '%s': a namespace holds function tools "
                "only.", path);
        }
        llm_api_path(path, sizeof(path), "tools[%zu].tools[%zu].name", i, j);
        name = json_object_get(f, "name");
        if (!json_is_string(name)) {
            return llm_api_type_error(err, path, "a string", name);
        }
        snprintf(flat, sizeof(flat), "%s" LLM_RESPONSES_NS_SEP "%s",
                 json_string_value(ns), json_string_value(name));
        copy = json_copy((json_t *) f);
        if (copy == NULL
            || json_object_set_new(copy, "name", json_string(flat)) != 0)
        {
            json_decref(copy);
            return OOM(err);
        }
        llm_api_path(path, sizeof(path), "tools[%zu].tools[%zu]", i, j);
        rc = llm_api_function_tool(copy, path, "parameters", 0, req, err);
        json_decref(copy);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

static int
tools_in(const json_t *root, const llm_api_limits *lim, llm_request *req,
    llm_api_error *err)
{
    const json_t *ts, *t, *type;
    const char   *s;
    char          path[128];
    size_t        i;

    if (llm_api_tools_array(root, lim, req, &ts, err) < 0) {
        return -1;
    }
    json_array_foreach(ts, i, t) {
        llm_api_path(path, sizeof(path), "tools[%zu]", i);
        if (!json_is_object(t)) {
            return llm_api_type_error(err, path, "an object", t);
        }
        llm_api_path(path, sizeof(path), "tools[%zu].type", i);
        type = json_object_get(t, "type");
        if (!json_is_string(type)) {
            return llm_api_type_error(err, path, "a string", type);
        }
        s = json_string_value(type);
        if (hosted_tool(s)) {
            continue;
        }
        if (strcmp(s, "namespace") == 0) {
            if (namespace_tool(t, i, req, err) < 0) {
                return -1;
            }
            continue;
        }
        if (strcmp(s, "function") != 0) {
            return llm_api_bad_request(err, "unsupported_value", path,
                "Invalid value for '%s': tools of type '%.64s' are not "
                "supported by this server; 'function' and 'namespace' tools "
                "are (and hosted tools such as 'web_search' are left out).",
                path, s);
        }
        llm_api_path(path, sizeof(path), "tools[%zu]", i);
        if (llm_api_function_tool(t, path, "parameters", 0, req, err) < 0) {
            return -1;
        }
    }
    if (req->tools && json_array_size(req->tools) == 0) {
        json_decref(req->tools);        /* only hosted tools: none offered */
        req->tools = NULL;
    }
    return 0;
}

/* "auto" | "none" | "required" | {"type": "function", "name"}. */
static int
tool_choice_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *tc = json_object_get(root, "tool_choice");
    const json_t *type, *name;
    const char   *s;

    if (tc == NULL || json_is_null(tc)) {
        return 0;
    }
    if (json_is_string(tc)) {
        s = json_string_value(tc);
        if (strcmp(s, "auto") == 0) {
            req->tool_choice = LLM_TOOL_CHOICE_AUTO;
        } else if (strcmp(s, "none") == 0) {
            req->tool_choice = LLM_TOOL_CHOICE_NONE;
        } else if (strcmp(s, "required") == 0) {
            if (req->tools == NULL) {
                return llm_api_bad_request(err, "invalid_value",
                    "tool_choice", "Invalid value for 'tool_choice': "
                    "'required' needs 'tools' to be given.");
            }
            req->tool_choice = LLM_TOOL_CHOICE_REQUIRED;
        } else {
            return llm_api_bad_request(err, "invalid_value", "tool_choice",
                "Invalid value for 'tool_choice': expected 'none', 'auto', "
                "'required' or an object naming a function, but got "
                "'%.64s'.", s);
        }
        return 0;
    }
    if (!json_is_object(tc)) {
        return llm_api_type_error(err, "tool_choice", "a string or an object",
            tc);
    }
    type = json_object_get(tc, "type");
    if (!json_is_string(type)) {
        return llm_api_type_error(err, "tool_choice.type", "a string", type);
    }
    if (strcmp(json_string_value(type), "function") != 0) {
        return unsupported(err, "tool_choice.type",
            "Invalid value for 'tool_choice.type': '%.64s' is not supported "
            "by this server; expected 'function'.", json_string_value(type));
    }
    name = json_object_get(tc, "name");
    if (!json_is_string(name)) {
        return llm_api_type_error(err, "tool_choice.name", "a string", name);
    }
    if (req->tools == NULL
        || !llm_api_has_tool(req->tools, json_string_value(name)))
    {
        return llm_api_bad_request(err, "invalid_value", "tool_choice.name",
            "Invalid value for 'tool_choice.name': no function named "
            "'%.80s' is defined in 'tools'.", json_string_value(name));
    }
    req->tool_choice = LLM_TOOL_CHOICE_NAMED;
    req->tool_choice_name = llm_api_strdup(json_string_value(name), err);
    return req->tool_choice_name ? 0 : -1;
}

/* text.format -> chat's response_format, enforced by the same grammar. */
static int
text_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *text = json_object_get(root, "text");
    const json_t *fmt, *t, *schema, *name, *strict;
    const char   *type;
    json_t       *rf, *js;
    llm_grammar  *g;
    char          msg[300];

    if (text == NULL || json_is_null(text)) {
        return 0;
    }
    if (!json_is_object(text)) {
        return llm_api_type_error(err, "text", "an object", text);
    }
    fmt = json_object_get(text, "format");
    if (fmt == NULL || json_is_null(fmt)) {
        return 0;
    }
    if (!json_is_object(fmt)) {
        return llm_api_type_error(err, "text.format", "an object", fmt);
    }
    t = json_object_get(fmt, "type");
    if (!json_is_string(t)) {
        return llm_api_type_error(err, "text.format.type", "a string", t);
    }
    type = json_string_value(t);
    if (strcmp(type, "text") == 0) {
        return 0;
    }
    rf = json_object();
    if (rf == NULL) {
        return OOM(err);
    }
    req->response_format = rf;
    if (strcmp(type, "json_object") == 0) {
        return json_object_set_new(rf, "type", json_string("json_object"))
               ? OOM(err) : 0;
    }
    if (strcmp(type, "json_schema") != 0) {
        return llm_api_bad_request(err, "invalid_value", "text.format.type",
            "Invalid value for 'text.format.type': expected one of 'text', "
            "'json_object', 'json_schema', but got '%.100s'.", type);
    }
    name = json_object_get(fmt, "name");
    if (name && !json_is_null(name) && !json_is_string(name)) {
        return llm_api_type_error(err, "text.format.name", "a string", name);
    }
    strict = json_object_get(fmt, "strict");
    if (strict && !json_is_null(strict) && !json_is_boolean(strict)) {
        return llm_api_type_error(err, "text.format.strict", "a boolean",
            strict);
    }
    schema = json_object_get(fmt, "schema");
    if (schema == NULL || json_is_null(schema)) {
        return llm_api_bad_request(err, "missing_required_parameter",
            "text.format.schema",
            "Missing required parameter: 'text.format.schema'.");
    }
    if (!json_is_object(schema) && !json_is_boolean(schema)) {
        return llm_api_type_error(err, "text.format.schema", "an object",
            schema);
    }
    /* the schema is enforced: what cannot be is refused now */
    g = llm_grammar_from_json_schema(schema, msg, sizeof(msg));
    if (g == NULL) {
        return llm_api_bad_request(err, "invalid_value", "text.format.schema",
            "Invalid 'text.format.schema': %s.", msg);
    }
    llm_grammar_free(g);
    js = json_object();
    if (js == NULL
        || json_object_set_new(rf, "type", json_string("json_schema")) != 0
        || json_object_set_new(rf, "json_schema", js) != 0
        || json_object_set_new(js, "schema", json_deep_copy(schema)) != 0
        || (json_is_string(name)
            && json_object_set(js, "name", (json_t *) name) != 0)
        || (json_is_boolean(strict)
            && json_object_set(js, "strict", (json_t *) strict) != 0))
    {
        return OOM(err);
    }
    return 0;
}

/* reasoning.effort: none / minimal turn reasoning off, low / medium /
 * high on (as chat's reasoning_effort); summary is accepted. */
static int
reasoning_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *r = json_object_get(root, "reasoning");
    const char   *effort, *summary;
    int           rc;

    if (r == NULL || json_is_null(r)) {
        return 0;
    }
    if (!json_is_object(r)) {
        return llm_api_type_error(err, "reasoning", "an object", r);
    }
    rc = llm_api_opt_string(r, "effort", "reasoning.effort", &effort, err);
    if (rc < 0) {
        return -1;
    }
    if (rc && llm_api_reasoning_effort(effort, "reasoning.effort", req, err)
              < 0)
    {
        return -1;
    }
    rc = llm_api_opt_string(r, "summary", "reasoning.summary", &summary, err);
    if (rc < 0) {
        return -1;
    }
    if (rc && strcmp(summary, "auto") != 0 && strcmp(summary, "concise") != 0
        && strcmp(summary, "detailed") != 0)
    {
        return llm_api_bad_request(err, "invalid_value", "reasoning.summary",
            "Invalid value for 'reasoning.summary': expected one of 'auto', "
            "'concise', 'detailed', but got '%.64s'.", summary);
    }
    return 0;
}

/* metadata: at most 16 string values of at most 512 characters. */
static int
metadata_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *md = json_object_get(root, "metadata");
    const char   *key;
    json_t       *v;
    char          path[128];

    if (md == NULL || json_is_null(md)) {
        return 0;
    }
    if (!json_is_object(md)) {
        return llm_api_type_error(err, "metadata", "an object", md);
    }
    if (json_object_size(md) > RESPONSES_MAX_METADATA) {
        return llm_api_bad_request(err, "invalid_value", "metadata",
            "Invalid 'metadata': at most %d pairs are allowed, but got %zu.",
            RESPONSES_MAX_METADATA, json_object_size(md));
    }
    json_object_foreach((json_t *) md, key, v) {
        llm_api_path(path, sizeof(path), "metadata.%.64s", key);
        if (!json_is_string(v)) {
            return llm_api_type_error(err, path, "a string", v);
        }
        if (json_string_length(v) > RESPONSES_MAX_METADATA_VALUE) {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid '%s': values are at most %d characters long.", path,
                RESPONSES_MAX_METADATA_VALUE);
        }
    }
    req->metadata = json_deep_copy(md);
    return req->metadata ? 0 : OOM(err);
}

/* Fields that would need state this server does not keep. */
static int
stateless(const json_t *root, const llm_api_limits *lim, llm_api_error *err)
{
    const json_t *v;
    int           b, rc;

    v = json_object_get(root, "previous_response_id");
    if (v && !json_is_null(v) && (lim == NULL || lim->responses == NULL)) {
        return llm_api_bad_request(err, "unsupported_parameter",
            "previous_response_id",
            "Unsupported parameter: 'previous_response_id'. This server keeps "
            "no responses (no llm_responses_store is configured): send the "
            "whole conversation in 'input', including the output items of "
            "earlier responses.");
    }
    v = json_object_get(root, "conversation");
    if (v && !json_is_null(v)) {
        return llm_api_bad_request(err, "unsupported_parameter",
            "conversation",
            "Unsupported parameter: 'conversation'. This server keeps no "
            "conversations: send the whole conversation in 'input', or "
            "continue a kept response with 'previous_response_id'.");
    }
    v = json_object_get(root, "prompt");
    if (v && !json_is_null(v)) {
        return llm_api_bad_request(err, "unsupported_parameter", "prompt",
            "Unsupported parameter: 'prompt'. This server has no stored "
            "prompt templates: send 'instructions' and 'input'.");
    }
    rc = llm_api_opt_bool(root, "background", "background", &b, err);
    if (rc < 0) {
        return -1;
    }
    if (rc && b) {
        return llm_api_bad_request(err, "unsupported_value", "background",
            "Invalid value for 'background': background responses are not "
            "supported by this server (it runs no response in the "
            "background to poll).");
    }
    return 0;
}

/*
 * previous_response_id: *prior = the items kept with it (its input, then
 * its output), or NULL without the field.  An id no kept response has is a
 * 404, as OpenAI answers it.
 */
static int
previous_in(const json_t *root, const llm_api_limits *lim, json_t **prior,
    llm_api_error *err)
{
    const char *id;
    llm_buf     rec;
    int         rc;

    *prior = NULL;
    rc = llm_api_opt_string(root, "previous_response_id",
                            "previous_response_id", &id, err);
    if (rc <= 0) {
        return rc;
    }
    llm_buf_init(&rec);
    rc = lim->responses->get(lim->responses->ctx, id, strlen(id), &rec);
    if (rc == 1) {
        *prior = llm_responses_record_items(rec.data, rec.len);
    }
    llm_buf_free(&rec);
    if (rc == 0) {
        return llm_responses_error_not_found(err, "previous_response_id",
                                             id, strlen(id));
    }
    if (*prior == NULL) {
        return llm_api_error_set(err, 500, "api_error", NULL,
            "previous_response_id",
            "The kept response '%.128s' could not be read.", id);
    }
    return 0;
}

/*
 * store (default true): with kept responses, the items to keep with this
 * response (the prior ones, then input as items) go to req->response_input.
 */
static int
store_in(const json_t *root, const llm_api_limits *lim, const json_t *prior,
    llm_request *req, llm_api_error *err)
{
    const json_t *in = json_object_get(root, "input");
    json_t       *keep, *msg;
    int           store = 1, rc;

    rc = llm_api_opt_bool(root, "store", "store", &store, err);
    if (rc < 0) {
        return -1;
    }
    if (!store || lim == NULL || lim->responses == NULL) {
        return 0;
    }
    keep = prior ? json_copy((json_t *) prior) : json_array();
    if (keep == NULL) {
        return OOM(err);
    }
    if (json_is_string(in)) {
        msg = json_pack("{s:s,s:s,s:O}", "type", "message", "role", "user",
                        "content", in);
        rc = msg ? json_array_append_new(keep, msg) : -1;
    } else {
        rc = json_array_extend(keep, (json_t *) in);
    }
    if (rc != 0) {
        json_decref(keep);
        return OOM(err);
    }
    req->response_input = keep;
    return 0;
}

/* What the response repeats: as sent, or the API's defaults. */
static int
echo_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    static const char *const keys[] = {
        "instructions", "max_output_tokens", "tool_choice", "tools",
        "temperature", "top_p", "text", "reasoning", "truncation", "user",
        "parallel_tool_calls", "previous_response_id", NULL
    };
    const json_t *v;
    json_t       *echo, *dflt;
    size_t        k;

    echo = json_object();
    if (echo == NULL) {
        return OOM(err);
    }
    req->response_fields = echo;
    for (k = 0; keys[k]; k++) {
        v = json_object_get(root, keys[k]);
        if (json_object_set_new(echo, keys[k],
                                v ? json_deep_copy(v) : json_null()) != 0)
        {
            return OOM(err);
        }
    }
    if ((json_is_null(json_object_get(echo, "tool_choice"))
         && json_object_set_new(echo, "tool_choice", json_string("auto")))
        || (json_is_null(json_object_get(echo, "tools"))
            && json_object_set_new(echo, "tools", json_array()))
        || (json_is_null(json_object_get(echo, "truncation"))
            && json_object_set_new(echo, "truncation",
                                   json_string("disabled")))
        || json_object_set_new(echo, "parallel_tool_calls",
                               json_boolean(req->parallel_tool_calls)) != 0
        || json_object_set_new(echo, "store",
                               json_boolean(req->response_input != NULL)) != 0
        || json_object_set_new(echo, "metadata",
                               req->metadata ? json_deep_copy(req->metadata)
                                             : json_object()) != 0)
    {
        return OOM(err);
    }
    if (json_is_null(json_object_get(echo, "text"))) {
        dflt = json_pack("{s:{s:s}}", "format", "type", "text");
        if (dflt == NULL || json_object_set_new(echo, "text", dflt) != 0) {
            return OOM(err);
        }
    }
    if (json_is_null(json_object_get(echo, "reasoning"))) {
        dflt = json_pack("{s:n,s:n}", "effort", "summary");
        if (dflt == NULL || json_object_set_new(echo, "reasoning", dflt) != 0) {
            return OOM(err);
        }
    }
    return 0;
}

/*
 * include: "reasoning.encrypted_content" seals reasoning items' text into
 * them (llm_reasoning_seal.h); the other values name outputs of tools this
 * server does not run, or logprobs it does not give here, and change
 * nothing.
 */
static int
include_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    char          path[64];
    size_t        i;
    const json_t *v, *e;

    v = json_object_get(root, "include");
    if (v == NULL || json_is_null(v)) {
        return 0;
    }
    if (!json_is_array(v)) {
        return llm_api_type_error(err, "include", "an array of strings", v);
    }
    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            llm_api_path(path, sizeof(path), "include[%zu]", i);
            return llm_api_type_error(err, path, "a string", e);
        }
        if (strcmp(json_string_value(e), "reasoning.encrypted_content") == 0) {
            req->seal_reasoning = 1;
        }
    }
    return 0;
}

static int
responses_in(const json_t *root, const llm_api_limits *lim, void *ctx,
    llm_request *req, llm_api_error *err)
{
    const char   *s;
    const json_t *v, *so;
    long long     i;
    int           b, rc;
    conv          cv;
    json_t       *prior;

    if (stateless(root, lim, err) < 0
        || previous_in(root, lim, &prior, err) < 0)
    {
        return -1;
    }
    if ((rc = llm_api_opt_string(root, "model", "model", &s, err)) < 0) {
        return -1;
    }
    if (rc && (req->model = llm_api_strdup(s, err)) == NULL) {
        return -1;
    }

    memset(&cv, 0, sizeof(cv));
    cv.lim = lim;
    llm_buf_init(&cv.reasoning);
    cv.messages = req->messages = json_array();
    if (cv.messages == NULL) {
        return OOM(err);
    }
    v = json_object_get(root, "instructions");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v)) {
            return llm_api_type_error(err, "instructions", "a string", v);
        }
        if (add_message(&cv, "system", json_string_value(v),
                        json_string_length(v), err) == NULL)
        {
            return -1;
        }
    }
    rc = input_in(root, prior, &cv, err);
    llm_buf_free(&cv.reasoning);
    if (rc == 0) {
        rc = store_in(root, lim, prior, req, err);
    }
    json_decref(prior);
    if (rc < 0) {
        return -1;
    }

    if (tools_in(root, lim, req, err) < 0
        || tool_choice_in(root, req, err) < 0
        || text_in(root, req, err) < 0
        || reasoning_in(root, req, err) < 0
        || metadata_in(root, req, err) < 0)
    {
        return -1;
    }
    if ((rc = llm_api_opt_bool(root, "parallel_tool_calls",
                               "parallel_tool_calls", &b, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->parallel_tool_calls = b;
    }
    if ((rc = llm_api_opt_int(root, "max_output_tokens", "max_output_tokens",
                              1, INT_ANY_MAX, &i, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->max_tokens = (long) i;
    }
    if (llm_api_parse_sampling(root, LLM_OPENAI_TEMPERATURE_MAX, req, err) < 0) {
        return -1;
    }
    if ((rc = llm_api_opt_bool(root, "stream", "stream", &b, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->stream = b;
    }
    so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so) && !json_is_object(so)) {
        return llm_api_type_error(err, "stream_options", "an object", so);
    }
    if ((rc = llm_api_opt_string(root, "truncation", "truncation", &s, err))
        < 0)
    {
        return -1;
    }
    if (rc && strcmp(s, "disabled") != 0 && strcmp(s, "auto") != 0) {
        return llm_api_bad_request(err, "invalid_value", "truncation",
            "Invalid value for 'truncation': expected 'disabled' or 'auto', "
            "but got '%.64s'.", s);
    }
    if (llm_api_opt_string(root, "user", "user", &s, err) < 0) {
        return -1;
    }
    if (include_in(root, req, err) < 0) {
        return -1;
    }
    if (llm_api_opt_speculation(root, req, err) < 0) {
        return -1;
    }
    return echo_in(root, req, err);
}

int
llm_responses_parse(const char *body, size_t len, const llm_api_limits *lim,
    llm_request *req, llm_api_error *err)
{
    return llm_api_parse_body(body, len, lim, LLM_API_RESPONSES, responses_in,
                              NULL, req, err);
}
