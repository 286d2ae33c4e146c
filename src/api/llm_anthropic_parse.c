/*
 * /v1/messages and /v1/messages/count_tokens request -> llm_request.
 * Content blocks are mapped into the Hugging Face template shape shared
 * with the OpenAI front end (core/llm_ir.h).
 */
#include "api/llm_anthropic.h"
#include "api/llm_openai_common.h"
#include "api/llm_thinking_sig.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define OOM(err) llm_api_error_set(err, 500, "api_error", NULL, NULL, \
                                   "Out of memory while reading the request.")
#define INT_ANY_MAX ((long long) ((~0ULL) >> 1))

static int
media_block(const char *type)
{
    return strcmp(type, "image") == 0 || strcmp(type, "document") == 0
           || strcmp(type, "search_result") == 0;
}

/* The "type" of block i of `param`, or NULL with err filled. */
static const char *
block_type(const json_t *blk, const char *param, size_t i, llm_api_error *err)
{
    char          path[128];
    const json_t *t;

    llm_api_path(path, sizeof(path), "%s[%zu]", param, i);
    if (!json_is_object(blk)) {
        llm_api_type_error(err, path, "a content block object", blk);
        return NULL;
    }
    llm_api_path(path, sizeof(path), "%s[%zu].type", param, i);
    t = json_object_get(blk, "type");
    if (!json_is_string(t)) {
        llm_api_type_error(err, path, "a string", t);
        return NULL;
    }
    return json_string_value(t);
}

/* A required string field of block i. */
static const json_t *
block_string(const json_t *blk, const char *key, const char *param, size_t i,
    llm_api_error *err)
{
    char          path[128];
    const json_t *v = json_object_get(blk, key);

    if (!json_is_string(v)) {
        llm_api_path(path, sizeof(path), "%s[%zu].%s", param, i, key);
        if (v == NULL || json_is_null(v)) {
            llm_api_bad_request(err, "missing_required_parameter", path,
                "Missing required parameter: '%s'.", path);
        } else {
            llm_api_type_error(err, path, "a string", v);
        }
        return NULL;
    }
    return v;
}

static int
unsupported_block(const char *param, size_t i, const char *type,
    const char *where, llm_api_error *err)
{
    char path[128];

    llm_api_path(path, sizeof(path), "%s[%zu].type", param, i);
    if (media_block(type)) {
        return llm_api_bad_request(err, "unsupported_value", path,
            "Invalid value for '%s': unsupported content block type '%s'; "
            "this server reads text only.", path, type);
    }
    return llm_api_bad_request(err, "invalid_value", path,
        "Invalid value for '%s': content block type '%.64s' is not allowed "
        "in %s.", path, type, where);
}

/* Text of a string or an array of text blocks, joined with "\n". */
static int
text_blocks(const json_t *c, const char *param, const char *where,
    llm_buf *out, llm_api_error *err)
{
    const json_t *blk, *text;
    const char   *type;
    size_t        i;

    if (json_is_string(c)) {
        llm_buf_append(out, json_string_value(c), json_string_length(c));
        return out->failed ? OOM(err) : 0;
    }
    if (!json_is_array(c)) {
        return llm_api_type_error(err, param,
            "a string or an array of text blocks", c);
    }
    json_array_foreach(c, i, blk) {
        if ((type = block_type(blk, param, i, err)) == NULL) {
            return -1;
        }
        if (strcmp(type, "text") != 0) {
            return unsupported_block(param, i, type, where, err);
        }
        if ((text = block_string(blk, "text", param, i, err)) == NULL) {
            return -1;
        }
        if (i > 0) {
            llm_buf_putc(out, '\n');
        }
        llm_buf_append(out, json_string_value(text), json_string_length(text));
    }
    return out->failed ? OOM(err) : 0;
}

static json_t *
new_message(json_t *out, const char *role, const llm_buf *text)
{
    json_t *m = json_object();

    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", json_stringn_nocheck(
        text->data ? text->data : "", text->len));
    if (json_array_append_new(out, m) != 0) {
        return NULL;
    }
    return m;
}

/* User turn: tool_result blocks become "tool" messages (in order), the
 * text that remains one user message after them. */
static int
user_in(const json_t *c, const char *param, size_t max_results, json_t *out,
    llm_api_error *err)
{
    const json_t *blk, *id, *rc, *is_err;
    const char   *type;
    json_t       *m;
    llm_buf       text, res;
    char          path[128];
    size_t        i, n_results = 0;
    int           n_text = 0, rcode = 0;

    llm_buf_init(&text);
    if (json_is_string(c)) {
        llm_buf_append(&text, json_string_value(c), json_string_length(c));
        n_text = 1;
    } else if (!json_is_array(c)) {
        return llm_api_type_error(err, param,
            "a string or an array of content blocks", c);
    } else {
        json_array_foreach(c, i, blk) {
            if ((type = block_type(blk, param, i, err)) == NULL) {
                rcode = -1;
                break;
            }
            if (strcmp(type, "text") == 0) {
                const json_t *t = block_string(blk, "text", param, i, err);
                if (t == NULL) {
                    rcode = -1;
                    break;
                }
                if (n_text++) {
                    llm_buf_putc(&text, '\n');
                }
                llm_buf_append(&text, json_string_value(t),
                               json_string_length(t));
            } else if (strcmp(type, "tool_result") == 0) {
                /* each becomes a message: bounded like tool calls */
                if (++n_results > max_results) {
                    rcode = llm_api_bad_request(err, "too_many_tool_calls",
                        param, "Invalid '%s': at most %zu tool_result blocks "
                        "are supported in one message.", param, max_results);
                    break;
                }
                if ((id = block_string(blk, "tool_use_id", param, i, err))
                    == NULL)
                {
                    rcode = -1;
                    break;
                }
                llm_api_path(path, sizeof(path), "%s[%zu].is_error", param,
                             i);
                is_err = json_object_get(blk, "is_error");
                if (is_err && !json_is_null(is_err)
                    && !json_is_boolean(is_err))
                {
                    rcode = llm_api_type_error(err, path, "a boolean",
                                               is_err);
                    break;
                }
                llm_api_path(path, sizeof(path), "%s[%zu].content", param, i);
                rc = json_object_get(blk, "content");
                llm_buf_init(&res);
                if (rc && !json_is_null(rc)
                    && text_blocks(rc, path, "a tool_result", &res, err) < 0)
                {
                    llm_buf_free(&res);
                    rcode = -1;
                    break;
                }
                m = new_message(out, "tool", &res);
                llm_buf_free(&res);
                if (m == NULL) {
                    rcode = OOM(err);
                    break;
                }
                json_object_set(m, "tool_call_id", (json_t *) id);
            } else {
                rcode = unsupported_block(param, i, type, "a user message",
                                          err);
                break;
            }
        }
    }
    if (rcode == 0 && n_text > 0 && new_message(out, "user", &text) == NULL) {
        rcode = OOM(err);
    }
    if (rcode == 0 && text.failed) {
        rcode = OOM(err);
    }
    llm_buf_free(&text);
    return rcode;
}

/*
 * A thinking block sent back carries the signature this server gave its
 * text (llm_thinking_sig.h) when key is set: a missing one is a 400 as
 * with Anthropic, and so is one that does not verify.
 */
static int
thinking_signed(const json_t *blk, const json_t *thinking,
    const llm_thinking_key *key, const char *param, size_t i,
    llm_api_error *err)
{
    const json_t *sig;
    char          path[128];

    if (key == NULL) {
        return 0;
    }
    if ((sig = block_string(blk, "signature", param, i, err)) == NULL) {
        return -1;
    }
    if (llm_thinking_verify(key, json_string_value(thinking),
                            json_string_length(thinking),
                            json_string_value(sig), json_string_length(sig)))
    {
        return 0;
    }
    llm_api_path(path, sizeof(path), "%s[%zu].signature", param, i);
    return llm_api_bad_request(err, "invalid_value", path,
        "Invalid 'signature' in 'thinking' block at '%s': it is not the "
        "signature this server gave that thinking (a block must be sent back "
        "unchanged; signatures of another server, or of this one before its "
        "key changed, do not verify).", path);
}

/* Assistant turn: text, thinking and tool_use blocks -> one message. */
static int
assistant_in(const json_t *c, const char *param, size_t max_calls,
    const llm_thinking_key *key, json_t *out, llm_api_error *err)
{
    const json_t *blk, *v, *name, *id;
    const char   *type;
    json_t       *m, *calls = NULL, *call, *fn;
    llm_buf       text, thinking;
    char          path[128];
    size_t        i;
    int           rcode = 0, n_text = 0;

    llm_buf_init(&text);
    llm_buf_init(&thinking);
    if (json_is_string(c)) {
        llm_buf_append(&text, json_string_value(c), json_string_length(c));
    } else if (!json_is_array(c)) {
        return llm_api_type_error(err, param,
            "a string or an array of content blocks", c);
    } else {
        calls = json_array();
        json_array_foreach(c, i, blk) {
            if ((type = block_type(blk, param, i, err)) == NULL) {
                rcode = -1;
                break;
            }
            if (strcmp(type, "text") == 0) {
                if ((v = block_string(blk, "text", param, i, err)) == NULL) {
                    rcode = -1;
                    break;
                }
                if (n_text++) {
                    llm_buf_putc(&text, '\n');
                }
                llm_buf_append(&text, json_string_value(v),
                               json_string_length(v));
            } else if (strcmp(type, "thinking") == 0) {
                if ((v = block_string(blk, "thinking", param, i, err))
                    == NULL
                    || thinking_signed(blk, v, key, param, i, err) != 0)
                {
                    rcode = -1;
                    break;
                }
                llm_buf_append(&thinking, json_string_value(v),
                               json_string_length(v));
            } else if (strcmp(type, "redacted_thinking") == 0) {
                continue;             /* opaque; nothing to show a model */
            } else if (strcmp(type, "tool_use") == 0) {
                if (json_array_size(calls) >= max_calls) {
                    rcode = llm_api_bad_request(err, "too_many_tool_calls",
                        param, "Invalid '%s': at most %zu tool_use blocks "
                        "are supported in one message.", param, max_calls);
                    break;
                }
                if ((id = block_string(blk, "id", param, i, err)) == NULL
                    || (name = block_string(blk, "name", param, i, err))
                       == NULL)
                {
                    rcode = -1;
                    break;
                }
                v = json_object_get(blk, "input");
                llm_api_path(path, sizeof(path), "%s[%zu].input", param, i);
                if (v != NULL && !json_is_null(v) && !json_is_object(v)) {
                    rcode = llm_api_type_error(err, path, "an object", v);
                    break;
                }
                fn = json_object();
                json_object_set(fn, "name", (json_t *) name);
                json_object_set_new(fn, "arguments", json_is_object(v)
                                    ? json_deep_copy(v) : json_object());
                call = json_object();
                json_object_set(call, "id", (json_t *) id);
                json_object_set_new(call, "type", json_string("function"));
                json_object_set_new(call, "function", fn);
                json_array_append_new(calls, call);
            } else {
                rcode = unsupported_block(param, i, type,
                                          "an assistant message", err);
                break;
            }
        }
    }
    if (rcode == 0) {
        m = new_message(out, "assistant", &text);
        if (m == NULL || text.failed || thinking.failed) {
            rcode = OOM(err);
        } else {
            if (thinking.len) {
                json_object_set_new(m, "reasoning_content",
                    json_stringn_nocheck(thinking.data, thinking.len));
            }
            if (calls && json_array_size(calls)) {
                json_object_set(m, "tool_calls", calls);
            }
        }
    }
    json_decref(calls);
    llm_buf_free(&text);
    llm_buf_free(&thinking);
    return rcode;
}

/*
 * A block's cache_control breakpoint (a retention hint): {"type":
 * "ephemeral", "ttl": "5m" | "1h"}; the cached prefix ends after the first
 * `upto` messages of the request.
 */
static int
cache_control_in(const json_t *blk, const char *path, size_t upto,
    llm_request *req, llm_api_error *err)
{
    const json_t *cc, *type, *ttl;
    char          p[160];
    int           secs = 300;

    cc = json_is_object(blk) ? json_object_get(blk, "cache_control") : NULL;
    if (cc == NULL || json_is_null(cc)) {
        return 0;
    }
    llm_api_path(p, sizeof(p), "%s.cache_control", path);
    if (!json_is_object(cc)) {
        return llm_api_type_error(err, p, "an object", cc);
    }
    type = json_object_get(cc, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "ephemeral"))
    {
        llm_api_path(p, sizeof(p), "%s.cache_control.type", path);
        return llm_api_bad_request(err, "invalid_value", p,
            "Invalid value for '%s': expected 'ephemeral'.", p);
    }
    ttl = json_object_get(cc, "ttl");
    if (ttl && !json_is_null(ttl)) {
        if (json_is_string(ttl) && strcmp(json_string_value(ttl), "1h") == 0) {
            secs = 3600;
        } else if (!json_is_string(ttl)
                   || strcmp(json_string_value(ttl), "5m") != 0)
        {
            llm_api_path(p, sizeof(p), "%s.cache_control.ttl", path);
            return llm_api_bad_request(err, "invalid_value", p,
                "Invalid value for '%s': expected '5m' or '1h'.", p);
        }
    }
    if ((long) upto > req->cache_messages) {
        req->cache_messages = (long) upto;
    }
    if (secs > req->cache_ttl) {
        req->cache_ttl = secs;
    }
    return 0;
}

/* The breakpoints among an array of content blocks. */
static int
blocks_cache_control(const json_t *c, const char *param, size_t upto,
    llm_request *req, llm_api_error *err)
{
    const json_t *blk;
    char          path[160];
    size_t        i;

    if (!json_is_array(c)) {
        return 0;
    }
    json_array_foreach(c, i, blk) {
        llm_api_path(path, sizeof(path), "%s[%zu]", param, i);
        if (cache_control_in(blk, path, upto, req, err) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A system message: a string or text blocks, one "system" message. */
static int
system_message_in(const json_t *c, const char *param, json_t *out,
    llm_api_error *err)
{
    llm_buf text;
    int     rc = 0;

    llm_buf_init(&text);
    if (text_blocks(c, param, "a system message", &text, err) < 0) {
        rc = -1;
    } else if (new_message(out, "system", &text) == NULL) {
        rc = OOM(err);
    }
    llm_buf_free(&text);
    return rc;
}

static int
system_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *sys = json_object_get(root, "system");
    llm_buf       text;
    int           rc = 0;

    if (sys == NULL || json_is_null(sys)) {
        return 0;
    }
    llm_buf_init(&text);
    if (text_blocks(sys, "system", "the system prompt", &text, err) < 0) {
        rc = -1;
    } else if (text.len > 0 && new_message(req->messages, "system", &text)
                                == NULL)
    {
        rc = OOM(err);
    } else {
        rc = blocks_cache_control(sys, "system",
                                  json_array_size(req->messages), req, err);
    }
    llm_buf_free(&text);
    return rc;
}

/*
 * A final assistant message with text and no tool call is a prefill: the
 * answer continues it (and does not repeat it), as Anthropic's does.  Its
 * trailing white space is dropped (Anthropic refuses it; the chat
 * template would not keep it).
 */
static void
prefill_in(llm_request *req)
{
    json_t     *last;
    const char *role, *c;

    last = json_array_get(req->messages, json_array_size(req->messages) - 1);
    role = json_string_value(json_object_get(last, "role"));
    c = json_string_value(json_object_get(last, "content"));
    if (role == NULL || strcmp(role, "assistant") != 0 || c == NULL
        || json_object_get(last, "tool_calls") != NULL
        || c[strspn(c, " \t\r\n")] == '\0')
    {
        return;
    }
    req->continue_final_message = 1;
    req->add_generation_prompt = 0;
}

static int
messages_in(const json_t *root, const llm_api_limits *lim, llm_request *req,
    llm_api_error *err)
{
    const json_t *ms = json_object_get(root, "messages");
    const json_t *m, *role, *c;
    const char   *r;
    char          path[128];
    size_t        i;

    if (llm_api_messages_array(ms, lim, err) != 0) {
        return -1;
    }
    json_array_foreach(ms, i, m) {
        llm_api_path(path, sizeof(path), "messages[%zu]", i);
        if (!json_is_object(m)) {
            return llm_api_type_error(err, path, "an object", m);
        }
        llm_api_path(path, sizeof(path), "messages[%zu].role", i);
        role = json_object_get(m, "role");
        if (!json_is_string(role)) {
            if (role == NULL || json_is_null(role)) {
                return llm_api_bad_request(err, "missing_required_parameter",
                    path, "Missing required parameter: '%s'.", path);
            }
            return llm_api_type_error(err, path, "a string", role);
        }
        r = json_string_value(role);
        llm_api_path(path, sizeof(path), "messages[%zu].content", i);
        c = json_object_get(m, "content");
        if (c == NULL || json_is_null(c)) {
            return llm_api_bad_request(err, "missing_required_parameter",
                path, "Missing required parameter: '%s'.", path);
        }
        if (strcmp(r, "user") == 0) {
            if (user_in(c, path, lim && lim->max_tool_calls
                                 ? lim->max_tool_calls
                                 : LLM_API_DEFAULT_MAX_TOOL_CALLS,
                        req->messages, err) < 0)
            {
                return -1;
            }
        } else if (strcmp(r, "assistant") == 0) {
            if (assistant_in(c, path, lim && lim->max_tool_calls
                                      ? lim->max_tool_calls
                                      : LLM_API_DEFAULT_MAX_TOOL_CALLS,
                             lim ? lim->thinking_key : NULL,
                             req->messages, err) < 0)
            {
                return -1;
            }
        } else if (strcmp(r, "system") == 0) {
            /* a mid-conversation system message (current models take
             * them; agent CLIs send one): a system turn in place */
            if (system_message_in(c, path, req->messages, err) < 0) {
                return -1;
            }
        } else {
            llm_api_path(path, sizeof(path), "messages[%zu].role", i);
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': expected 'user', 'assistant' or "
                "'system', but got '%.64s'.", path, r);
        }
        llm_api_path(path, sizeof(path), "messages[%zu].content", i);
        if (blocks_cache_control(c, path, json_array_size(req->messages),
                                 req, err) < 0)
        {
            return -1;
        }
    }
    prefill_in(req);
    return 0;
}

/* 1 when the request's first message is its system prompt. */
static size_t
lead_system(const llm_request *req)
{
    const json_t *role = json_object_get(json_array_get(req->messages, 0),
                                         "role");

    return json_is_string(role) && strcmp(json_string_value(role), "system")
                                   == 0;
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
        /* the tools render with the system prompt: the prefix ends after it */
        if (cache_control_in(t, path, lead_system(req), req, err) < 0) {
            return -1;
        }
        type = json_object_get(t, "type");
        if (type && !json_is_null(type)
            && !(json_is_string(type)
                 && strcmp(json_string_value(type), "custom") == 0))
        {
            llm_api_path(path, sizeof(path), "tools[%zu].type", i);
            return llm_api_bad_request(err, "unsupported_value", path,
                "Invalid value for '%s': server tools ('%.64s') are not "
                "supported; define a custom tool with name, description "
                "and input_schema.", path,
                json_is_string(type) ? json_string_value(type) : "?");
        }
        if (llm_api_function_tool(t, path, "input_schema", 1, req, err) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
tool_choice_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *tc = json_object_get(root, "tool_choice");
    const json_t *t, *name, *tool;
    const char   *type;
    size_t        i;
    int           b, rc;

    if (tc == NULL || json_is_null(tc)) {
        return 0;
    }
    if (!json_is_object(tc)) {
        return llm_api_type_error(err, "tool_choice", "an object", tc);
    }
    t = json_object_get(tc, "type");
    if (!json_is_string(t)) {
        return llm_api_type_error(err, "tool_choice.type", "a string", t);
    }
    type = json_string_value(t);
    if ((rc = llm_api_opt_bool(tc, "disable_parallel_tool_use",
                               "tool_choice.disable_parallel_tool_use", &b,
                               err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->parallel_tool_calls = !b;
    }
    if (strcmp(type, "auto") == 0) {
        req->tool_choice = LLM_TOOL_CHOICE_AUTO;
        return 0;
    }
    if (strcmp(type, "none") == 0) {
        req->tool_choice = LLM_TOOL_CHOICE_NONE;
        return 0;
    }
    if (strcmp(type, "any") != 0 && strcmp(type, "tool") != 0) {
        return llm_api_bad_request(err, "invalid_value", "tool_choice.type",
            "Invalid value for 'tool_choice.type': expected one of 'auto', "
            "'any', 'tool', 'none', but got '%.64s'.", type);
    }
    if (req->tools == NULL) {
        return llm_api_bad_request(err, "invalid_value", "tool_choice.type",
            "Invalid value for 'tool_choice.type': '%s' needs 'tools' to be "
            "given.", type);
    }
    if (type[1] == 'n') {
        req->tool_choice = LLM_TOOL_CHOICE_REQUIRED;
        return 0;
    }
    name = json_object_get(tc, "name");
    if (!json_is_string(name)) {
        return llm_api_type_error(err, "tool_choice.name", "a string", name);
    }
    json_array_foreach(req->tools, i, tool) {
        if (json_equal(json_object_get(json_object_get(tool, "function"),
                                       "name"), (json_t *) name))
        {
            req->tool_choice = LLM_TOOL_CHOICE_NAMED;
            req->tool_choice_name = llm_api_strdup(json_string_value(name),
                                                   err);
            return req->tool_choice_name ? 0 : -1;
        }
    }
    return llm_api_bad_request(err, "invalid_value", "tool_choice.name",
        "Invalid value for 'tool_choice.name': no tool named '%.80s' is "
        "defined in 'tools'.", json_string_value(name));
}

static int
thinking_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    const json_t *th = json_object_get(root, "thinking");
    const json_t *t;
    const char   *type, *display;
    long long     budget;
    int           rc;

    if (th == NULL || json_is_null(th)) {
        req->reasoning = 0;     /* as Anthropic: no thinking unless enabled */
        return 0;
    }
    if (!json_is_object(th)) {
        return llm_api_type_error(err, "thinking", "an object", th);
    }
    t = json_object_get(th, "type");
    if (!json_is_string(t)) {
        return llm_api_type_error(err, "thinking.type", "a string", t);
    }
    type = json_string_value(t);
    if (strcmp(type, "disabled") == 0) {
        req->reasoning = 0;
        return 0;
    }
    if (strcmp(type, "adaptive") == 0) {
        /* the model decides how much to think: reasoning on, as
         * reasoning_effort low/medium/high is (output_config.effort is
         * checked in output_config_in) */
        if (llm_api_opt_string(th, "display", "thinking.display", &display,
                               err) < 0)
        {
            return -1;
        }
        req->reasoning = 1;
        return 0;
    }
    if (strcmp(type, "enabled") != 0) {
        return llm_api_bad_request(err, "invalid_value", "thinking.type",
            "Invalid value for 'thinking.type': expected 'enabled', "
            "'adaptive' or 'disabled', but got '%.64s'.", type);
    }
    rc = llm_api_opt_int(th, "budget_tokens", "thinking.budget_tokens", 1024,
                         INT_ANY_MAX, &budget, err);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        return llm_api_bad_request(err, "missing_required_parameter",
            "thinking.budget_tokens",
            "Missing required parameter: 'thinking.budget_tokens'.");
    }
    /* budget < max_tokens depends on the anthropic-beta header:
     * llm_anthropic_check_thinking_budget */
    req->thinking_budget = budget > LONG_MAX ? LONG_MAX : (long) budget;
    req->reasoning = 1;
    return 0;
}

/* 1 when a comma-separated anthropic-beta value names an
 * interleaved-thinking-* beta. */
static int
interleaved_thinking(const char *beta, size_t len)
{
    static const char  want[] = "interleaved-thinking-";
    size_t             n = sizeof(want) - 1, i = 0, start, end;

    while (beta && i < len) {
        while (i < len && (beta[i] == ' ' || beta[i] == '\t' || beta[i] == ',')) {
            i++;
        }
        start = i;
        while (i < len && beta[i] != ',') {
            i++;
        }
        end = i;
        while (end > start && (beta[end - 1] == ' ' || beta[end - 1] == '\t')) {
            end--;
        }
        if (end - start > n && strncmp(beta + start, want, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int
llm_anthropic_check_thinking_budget(const llm_request *req, const char *beta,
    size_t len, llm_api_error *err)
{
    if (req->api != LLM_API_MESSAGES || req->thinking_budget < 0
        || req->max_tokens <= 0 || req->thinking_budget < req->max_tokens
        || interleaved_thinking(beta, len))
    {
        return 0;
    }
    return llm_api_bad_request(err, "invalid_value", "thinking.budget_tokens",
        "Invalid value for 'thinking.budget_tokens': it must be less than "
        "'max_tokens' (%ld), but got %ld (an anthropic-beta "
        "interleaved-thinking-* header lifts this).", req->max_tokens,
        req->thinking_budget);
}

/* output_config.effort: low / medium / high / max (a thinking budget
 * when thinking is on without budget_tokens: adaptive).  Other
 * output_config members are left to their own readers. */
static int
output_config_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    static const struct {
        const char            *name;
        llm_reasoning_effort   effort;
    } efforts[] = {
        { "low", LLM_EFFORT_LOW }, { "medium", LLM_EFFORT_MEDIUM },
        { "high", LLM_EFFORT_HIGH }, { "max", LLM_EFFORT_MAX },
    };
    size_t  k;

    const json_t *oc = json_object_get(root, "output_config");
    const char   *effort;
    int           rc;

    if (oc == NULL || json_is_null(oc)) {
        return 0;
    }
    if (!json_is_object(oc)) {
        return llm_api_type_error(err, "output_config", "an object", oc);
    }
    rc = llm_api_opt_string(oc, "effort", "output_config.effort", &effort,
                            err);
    if (rc <= 0) {
        return rc;
    }
    for (k = 0; k < sizeof(efforts) / sizeof(efforts[0]); k++) {
        if (strcmp(effort, efforts[k].name) == 0) {
            req->reasoning_effort = efforts[k].effort;
            return 0;
        }
    }
    return llm_api_bad_request(err, "invalid_value", "output_config.effort",
        "Invalid value for 'output_config.effort': expected one of "
        "'low', 'medium', 'high', 'max', but got '%.64s'.", effort);
}

static int
messages_request_in(const json_t *root, const llm_api_limits *lim,
    void *ctx, llm_request *req, llm_api_error *err)
{
    int  count_only = req->api == LLM_API_COUNT_TOKENS;

    const char   *s;
    const json_t *md;
    long long     i;
    int           b, rc;

    if ((rc = llm_api_opt_string(root, "model", "model", &s, err)) < 0) {
        return -1;
    }
    if (rc && (req->model = llm_api_strdup(s, err)) == NULL) {
        return -1;
    }
    if (!count_only) {
        rc = llm_api_opt_int(root, "max_tokens", "max_tokens", 1, INT_ANY_MAX,
                             &i, err);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            return llm_api_bad_request(err, "missing_required_parameter",
                "max_tokens", "Missing required parameter: 'max_tokens'.");
        }
        req->max_tokens = (long) i;
    }
    req->messages = json_array();
    if (req->messages == NULL) {
        return OOM(err);
    }
    if (system_in(root, req, err) < 0
        || messages_in(root, lim, req, err) < 0
        || tools_in(root, lim, req, err) < 0
        || tool_choice_in(root, req, err) < 0
        || thinking_in(root, req, err) < 0
        || output_config_in(root, req, err) < 0)
    {
        return -1;
    }
    if (llm_api_parse_stop(json_object_get(root, "stop_sequences"),
            "stop_sequences",
            lim && lim->max_stop ? lim->max_stop : LLM_API_DEFAULT_MAX_STOP,
            0, req, err) < 0)
    {
        return -1;
    }
    if (llm_api_parse_sampling(root, LLM_ANTHROPIC_TEMPERATURE_MAX, req, err)
        < 0)
    {
        return -1;
    }
    if ((rc = llm_api_opt_int(root, "top_k", "top_k", 0, INT_ANY_MAX, &i,
                              err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.top_k = (int) (i > 1 << 30 ? 1 << 30 : i);
        req->sampling.set |= LLM_SAMPLING_SET_TOP_K;
    }
    if (llm_api_opt_speculation(root, req, err) < 0) {
        return -1;
    }
    md = json_object_get(root, "metadata");
    if (md && !json_is_null(md)) {
        if (!json_is_object(md)) {
            return llm_api_type_error(err, "metadata", "an object", md);
        }
        req->metadata = json_deep_copy(md);
    }
    if ((rc = llm_api_opt_bool(root, "stream", "stream", &b, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->stream = b;
    }
    return 0;
}

static int
parse(const char *body, size_t len, const llm_api_limits *lim,
    llm_api_kind api, llm_request *req, llm_api_error *err)
{
    return llm_api_parse_body(body, len, lim, api, messages_request_in, NULL,
                              req, err);
}

int
llm_anthropic_parse_messages(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    return parse(body, len, lim, LLM_API_MESSAGES, req, err);
}

int
llm_anthropic_parse_count_tokens(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    return parse(body, len, lim, LLM_API_COUNT_TOKENS, req, err);
}
