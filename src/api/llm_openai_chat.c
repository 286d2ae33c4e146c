/*
 * /v1/chat/completions request -> llm_request.  Messages are rewritten into
 * the shape Hugging Face chat templates expect (core/llm_ir.h): content as
 * one string, developer -> system, tool-call arguments parsed to objects.
 */
#include "api/llm_openai.h"
#include "api/llm_openai_common.h"

#include <stdlib.h>
#include <string.h>

#define OOM(err) llm_api_error_set(err, 500, "api_error", NULL, NULL, \
                                   "Out of memory while reading the request.")

/* Text of a content value: a string or an array of parts whose text parts
 * are joined with "\n".  Media parts are refused: no model here reads them. */
static int
content_text(const json_t *c, const char *param, int allow_null,
    llm_buf *out, llm_api_error *err)
{
    char          path[128];
    const json_t *part, *t, *text;
    const char   *type;
    size_t        i;
    int           first = 1;

    if (c == NULL || json_is_null(c)) {
        if (allow_null) {
            return 0;
        }
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
        if (strcmp(type, "text") == 0 || strcmp(type, "refusal") == 0) {
            const char *key = type[0] == 't' ? "text" : "refusal";

            text = json_object_get(part, key);
            llm_api_path(path, sizeof(path), "%s[%zu].%s", param, i, key);
            if (!json_is_string(text)) {
                return llm_api_type_error(err, path, "a string", text);
            }
            if (!first) {
                llm_buf_putc(out, '\n');
            }
            llm_buf_append(out, json_string_value(text),
                           json_string_length(text));
            first = 0;
        } else if (strcmp(type, "image_url") == 0
                   || strcmp(type, "input_audio") == 0
                   || strcmp(type, "file") == 0
                   || strcmp(type, "image") == 0
                   || strcmp(type, "audio") == 0)
        {
            return llm_api_bad_request(err, "unsupported_value", path,
                "Invalid value for '%s': unsupported content part type "
                "'%s'; only 'text' parts are supported by this server.",
                path, type);
        } else {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': unsupported content part type "
                "'%.64s'; expected 'text'.", path, type);
        }
    }
    return out->failed ? OOM(err) : 0;
}

static int
set_string(json_t *obj, const char *key, const char *s, size_t len,
    llm_api_error *err)
{
    json_t *v = json_stringn_nocheck(s ? s : "", s ? len : 0);

    if (v == NULL || json_object_set_new(obj, key, v) != 0) {
        return OOM(err);
    }
    return 0;
}

/* Assistant tool_calls -> [{"id","type":"function","function":{"name",
 * "arguments":{object}}}]. */
static int
tool_calls_in(const json_t *tcs, size_t mi, const llm_api_limits *lim,
    json_t *msg, llm_api_error *err)
{
    char          path[128];
    const json_t *tc, *id, *type, *fn, *name, *args;
    json_t       *out, *call, *f, *argobj;
    size_t        j;

    llm_api_path(path, sizeof(path), "messages[%zu].tool_calls", mi);
    if (!json_is_array(tcs)) {
        return llm_api_type_error(err, path, "an array", tcs);
    }
    if (json_array_size(tcs) == 0) {
        return 0;
    }
    if (json_array_size(tcs) > (lim && lim->max_tool_calls
                                ? lim->max_tool_calls
                                : LLM_API_DEFAULT_MAX_TOOL_CALLS))
    {
        return llm_api_bad_request(err, "too_many_tool_calls", path,
            "Invalid '%s': at most %zu tool calls are supported in one "
            "message, but got %zu.", path, lim && lim->max_tool_calls
            ? lim->max_tool_calls : (size_t) LLM_API_DEFAULT_MAX_TOOL_CALLS,
            json_array_size(tcs));
    }
    out = json_array();
    json_object_set_new(msg, "tool_calls", out);

    json_array_foreach(tcs, j, tc) {
        llm_api_path(path, sizeof(path), "messages[%zu].tool_calls[%zu]",
                     mi, j);
        if (!json_is_object(tc)) {
            return llm_api_type_error(err, path, "an object", tc);
        }
        type = json_object_get(tc, "type");
        if (type && !json_is_null(type)
            && !(json_is_string(type)
                 && strcmp(json_string_value(type), "function") == 0))
        {
            llm_api_path(path, sizeof(path),
                         "messages[%zu].tool_calls[%zu].type", mi, j);
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': expected 'function'.", path);
        }
        id = json_object_get(tc, "id");
        if (!json_is_string(id)) {
            llm_api_path(path, sizeof(path),
                         "messages[%zu].tool_calls[%zu].id", mi, j);
            return llm_api_type_error(err, path, "a string", id);
        }
        fn = json_object_get(tc, "function");
        if (!json_is_object(fn)) {
            llm_api_path(path, sizeof(path),
                         "messages[%zu].tool_calls[%zu].function", mi, j);
            return llm_api_type_error(err, path, "an object", fn);
        }
        name = json_object_get(fn, "name");
        if (!json_is_string(name)) {
            llm_api_path(path, sizeof(path),
                         "messages[%zu].tool_calls[%zu].function.name", mi, j);
            return llm_api_type_error(err, path, "a string", name);
        }
        args = json_object_get(fn, "arguments");
        llm_api_path(path, sizeof(path),
                     "messages[%zu].tool_calls[%zu].function.arguments",
                     mi, j);
        if (args == NULL || json_is_null(args)) {
            argobj = json_object();
        } else if (json_is_string(args)) {
            argobj = llm_api_parse_arguments(json_string_value(args),
                         json_string_length(args), path, lim, err);
            if (argobj == NULL) {
                return -1;
            }
        } else if (json_is_object(args)) {
            argobj = json_deep_copy(args);   /* lenient: already an object */
        } else {
            return llm_api_type_error(err, path,
                "a string holding a JSON object", args);
        }
        f = json_object();
        json_object_set(f, "name", (json_t *) name);
        json_object_set_new(f, "arguments", argobj);
        call = json_object();
        json_object_set(call, "id", (json_t *) id);
        json_object_set_new(call, "type", json_string("function"));
        json_object_set_new(call, "function", f);
        if (json_array_append_new(out, call) != 0) {
            return OOM(err);
        }
    }
    return 0;
}

static const char *const roles[] = {
    "system", "developer", "user", "assistant", "tool", NULL
};

static int
message_in(const json_t *m, size_t i, const llm_api_limits *lim,
    json_t *out, llm_api_error *err)
{
    char          path[128];
    const json_t *role_v, *v;
    const char   *role;
    json_t       *msg;
    llm_buf       text;
    int           k, is_assistant, has_calls;

    llm_api_path(path, sizeof(path), "messages[%zu]", i);
    if (!json_is_object(m)) {
        return llm_api_type_error(err, path, "an object", m);
    }
    llm_api_path(path, sizeof(path), "messages[%zu].role", i);
    role_v = json_object_get(m, "role");
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
            "Invalid value for '%s': expected one of 'system', 'developer', "
            "'user', 'assistant', 'tool', but got '%.64s'.", path, role);
    }
    if (strcmp(role, "developer") == 0) {
        role = "system";
    }
    is_assistant = strcmp(role, "assistant") == 0;

    msg = json_object();
    if (msg == NULL || json_array_append_new(out, msg) != 0) {
        return OOM(err);
    }
    json_object_set_new(msg, "role", json_string(role));

    v = json_object_get(m, "tool_calls");
    has_calls = is_assistant && v && !json_is_null(v);

    llm_buf_init(&text);
    llm_api_path(path, sizeof(path), "messages[%zu].content", i);
    if (content_text(json_object_get(m, "content"), path, is_assistant,
                     &text, err) < 0
        || set_string(msg, "content", text.data, text.len, err) < 0)
    {
        llm_buf_free(&text);
        return -1;
    }
    llm_buf_free(&text);

    llm_api_path(path, sizeof(path), "messages[%zu].name", i);
    v = json_object_get(m, "name");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v)) {
            return llm_api_type_error(err, path, "a string", v);
        }
        json_object_set(msg, "name", (json_t *) v);
    }

    if (is_assistant) {
        const char *rkey = json_object_get(m, "reasoning_content")
                           ? "reasoning_content" : "reasoning";

        v = json_object_get(m, rkey);
        llm_api_path(path, sizeof(path), "messages[%zu].%s", i, rkey);
        if (v && !json_is_null(v)) {
            if (!json_is_string(v)) {
                return llm_api_type_error(err, path, "a string", v);
            }
            json_object_set(msg, "reasoning_content", (json_t *) v);
        }
        if (has_calls
            && tool_calls_in(json_object_get(m, "tool_calls"), i, lim, msg,
                             err) < 0)
        {
            return -1;
        }
    }

    if (strcmp(role, "tool") == 0) {
        llm_api_path(path, sizeof(path), "messages[%zu].tool_call_id", i);
        v = json_object_get(m, "tool_call_id");
        if (v == NULL || json_is_null(v)) {
            return llm_api_bad_request(err, "missing_required_parameter",
                path, "Missing required parameter: '%s'; a tool message "
                "must name the tool call it answers.", path);
        }
        if (!json_is_string(v)) {
            return llm_api_type_error(err, path, "a string", v);
        }
        json_object_set(msg, "tool_call_id", (json_t *) v);
    }
    return 0;
}

static int
messages_in(const json_t *root, const llm_api_limits *lim, llm_request *req,
    llm_api_error *err)
{
    const json_t *ms = json_object_get(root, "messages");
    const json_t *m;
    size_t        i;

    if (llm_api_messages_array(ms, lim, err) != 0) {
        return -1;
    }
    req->messages = json_array();
    if (req->messages == NULL) {
        return OOM(err);
    }
    json_array_foreach(ms, i, m) {
        if (message_in(m, i, lim, req->messages, err) < 0) {
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
        if (!json_is_string(type)
            || strcmp(json_string_value(type), "function") != 0)
        {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': expected 'function'%s.", path,
                json_is_string(type) ? "" : ", the only supported tool type");
        }
        llm_api_path(path, sizeof(path), "tools[%zu].function", i);
        if (!json_is_object(json_object_get(t, "function"))) {
            return llm_api_type_error(err, path, "an object",
                json_object_get(t, "function"));
        }
        if (llm_api_function_tool(json_object_get(t, "function"), path,
                                  "parameters", 0, req, err) < 0)
        {
            return -1;
        }
    }
    return 0;
}

static int
tool_choice_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *tc = json_object_get(root, "tool_choice");
    const json_t *type, *fn, *name;
    const char   *s;

    if (tc == NULL || json_is_null(tc)) {
        return 0;
    }
    if (json_is_string(tc)) {
        s = json_string_value(tc);
        if (strcmp(s, "auto") == 0) {
            req->tool_choice = LLM_TOOL_CHOICE_AUTO;
            return 0;
        }
        if (strcmp(s, "none") == 0) {
            req->tool_choice = LLM_TOOL_CHOICE_NONE;
            return 0;
        }
        if (strcmp(s, "required") != 0) {
            return llm_api_bad_request(err, "invalid_value", "tool_choice",
                "Invalid value for 'tool_choice': expected 'none', 'auto', "
                "'required' or an object naming a function, but got "
                "'%.64s'.", s);
        }
        if (req->tools == NULL) {
            return llm_api_bad_request(err, "invalid_value", "tool_choice",
                "Invalid value for 'tool_choice': 'required' needs 'tools' "
                "to be given.");
        }
        req->tool_choice = LLM_TOOL_CHOICE_REQUIRED;
        return 0;
    }
    if (!json_is_object(tc)) {
        return llm_api_type_error(err, "tool_choice", "a string or an object",
            tc);
    }
    type = json_object_get(tc, "type");
    if (!json_is_string(type)
        || strcmp(json_string_value(type), "function") != 0)
    {
        return llm_api_bad_request(err, "invalid_value", "tool_choice.type",
            "Invalid value for 'tool_choice.type': expected 'function'.");
    }
    fn = json_object_get(tc, "function");
    if (!json_is_object(fn)) {
        return llm_api_type_error(err, "tool_choice.function", "an object",
            fn);
    }
    name = json_object_get(fn, "name");
    if (!json_is_string(name)) {
        return llm_api_type_error(err, "tool_choice.function.name",
            "a string", name);
    }
    if (req->tools == NULL
        || !llm_api_has_tool(req->tools, json_string_value(name)))
    {
        return llm_api_bad_request(err, "invalid_value",
            "tool_choice.function.name",
            "Invalid value for 'tool_choice.function.name': no tool named "
            "'%.80s' is defined in 'tools'.", json_string_value(name));
    }
    req->tool_choice = LLM_TOOL_CHOICE_NAMED;
    req->tool_choice_name = llm_api_strdup(json_string_value(name), err);
    return req->tool_choice_name ? 0 : -1;
}

static int
reasoning_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *kw = json_object_get(root, "chat_template_kwargs");
    const json_t *et;
    const char   *effort;
    int           rc;

    rc = llm_api_opt_string(root, "reasoning_effort", "reasoning_effort",
                            &effort, err);
    if (rc < 0) {
        return -1;
    }
    if (rc && llm_api_reasoning_effort(effort, "reasoning_effort", req, err)
              < 0)
    {
        return -1;
    }
    if (kw == NULL || json_is_null(kw)) {
        return 0;
    }
    if (!json_is_object(kw)) {
        return llm_api_type_error(err, "chat_template_kwargs", "an object",
            kw);
    }
    et = json_object_get(kw, "enable_thinking");
    if (et && !json_is_null(et)) {
        if (!json_is_boolean(et)) {
            return llm_api_type_error(err,
                "chat_template_kwargs.enable_thinking", "a boolean", et);
        }
        req->reasoning = json_is_true(et);   /* explicit switch wins */
    }
    req->template_kwargs = json_deep_copy(kw);
    return req->template_kwargs ? 0 : OOM(err);
}

/*
 * vLLM's extensions: continue_final_message (the final assistant message is
 * continued, not closed) and add_generation_prompt; both true is a 400, as
 * there.
 */
static int
continue_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *last;
    const char   *role;
    int           b, rc, agp = -1;

    if ((rc = llm_api_opt_bool(root, "add_generation_prompt",
                               "add_generation_prompt", &b, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->add_generation_prompt = agp = b;
    }
    if ((rc = llm_api_opt_bool(root, "continue_final_message",
                               "continue_final_message", &b, err)) < 0)
    {
        return -1;
    }
    if (!rc || !b) {
        return 0;
    }
    if (agp == 1) {
        return llm_api_bad_request(err, "invalid_value",
            "continue_final_message",
            "Invalid value for 'continue_final_message': it cannot be true "
            "together with 'add_generation_prompt': true.");
    }
    last = json_array_get(req->messages, json_array_size(req->messages) - 1);
    role = json_string_value(json_object_get(last, "role"));
    if (role == NULL || strcmp(role, "assistant") != 0) {
        return llm_api_bad_request(err, "invalid_value",
            "continue_final_message",
            "Invalid value for 'continue_final_message': the last message "
            "must be an assistant message to continue.");
    }
    req->continue_final_message = 1;
    req->add_generation_prompt = 0;
    return 0;
}

static int
chat_in(const json_t *root, const llm_api_limits *lim, void *ctx,
    llm_request *req, llm_api_error *err)
{
    long long i;
    int       b, rc, top_given;

    if (messages_in(root, lim, req, err) < 0
        || llm_openai_parse_common(root, lim, req, err) < 0
        || tools_in(root, lim, req, err) < 0
        || tool_choice_in(root, req, err) < 0)
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
    if ((rc = llm_api_opt_bool(root, "logprobs", "logprobs", &b, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->sampling.logprobs = b;
    }
    top_given = llm_api_opt_int(root, "top_logprobs", "top_logprobs", 0,
                                LLM_MAX_TOP_LOGPROBS, &i, err);
    if (top_given < 0) {
        return -1;
    }
    if (top_given) {
        /* 0 without logprobs is a harmless default some clients send */
        if (!req->sampling.logprobs && i > 0) {
            return llm_api_bad_request(err, "invalid_value", "top_logprobs",
                "Invalid value for 'top_logprobs': it requires 'logprobs' "
                "to be true.");
        }
        req->sampling.top_logprobs = (int) i;
    }
    if (continue_in(root, req, err) < 0) {
        return -1;
    }
    return reasoning_in(root, req, err);
}

int
llm_openai_parse_chat(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    return llm_api_parse_body(body, len, lim, LLM_API_CHAT, chat_in, NULL,
                              req, err);
}
