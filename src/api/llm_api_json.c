/* JSON helpers for the protocol layer (see llm_api_json.h). */
#include "api/llm_api_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
llm_api_json_depth(const char *body, size_t len, int stop_after)
{
    size_t  i;
    int     depth = 0, deepest = 0;

    for (i = 0; i < len; i++) {
        switch (body[i]) {
        case '"':
            /* skip the string; escapes may hide quotes and brackets */
            for (i++; i < len && body[i] != '"'; i++) {
                if (body[i] == '\\') {
                    i++;
                }
            }
            break;
        case '[':
        case '{':
            if (++depth > deepest) {
                deepest = depth;
                if (deepest > stop_after) {
                    return deepest;
                }
            }
            break;
        case ']':
        case '}':
            depth--;
            break;
        default:
            break;
        }
    }
    return deepest;
}

json_t *
llm_api_decode_body(const char *body, size_t len, const llm_api_limits *lim,
    llm_api_error *err)
{
    json_error_t  jerr;
    json_t       *root;
    int           max_depth;

    max_depth = lim && lim->max_depth > 0 ? lim->max_depth
                                          : LLM_API_DEFAULT_MAX_DEPTH;
    if (body == NULL || len == 0) {
        llm_api_bad_request(err, NULL, NULL,
            "We could not parse the JSON body of your request: the body is "
            "empty; a JSON object was expected.");
        return NULL;
    }
    if (llm_api_json_depth(body, len, max_depth) > max_depth) {
        llm_api_bad_request(err, "json_too_deep", NULL,
            "The JSON body of your request nests arrays and objects more "
            "than %d levels deep, which is the limit.", max_depth);
        return NULL;
    }
    root = json_loadb(body, len, 0, &jerr);
    if (root == NULL) {
        llm_api_bad_request(err, NULL, NULL,
            "We could not parse the JSON body of your request: %s "
            "(line %d, column %d). The body must be one JSON object.",
            jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        llm_api_bad_request(err, "invalid_type", NULL,
            "The JSON body of your request must be an object, but it is %s.",
            llm_api_type_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}


int
llm_api_token_ids_in(const json_t *arr, const char *param, int allow_empty,
    llm_request *req, llm_api_error *err)
{
    const json_t *v;
    char          path[128];
    size_t        i, n = json_array_size(arr);
    json_int_t    id;

    if (n == 0 && !allow_empty) {
        return llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': the token id array is empty.", param);
    }
    req->prompt_ids = malloc((n ? n : 1) * sizeof(int32_t));
    if (req->prompt_ids == NULL) {
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
                                 "Out of memory while reading the request.");
    }
    json_array_foreach(arr, i, v) {
        llm_api_path(path, sizeof(path), "%s[%zu]", param, i);
        if (!json_is_integer(v)) {
            return llm_api_type_error(err, path, "a token id (integer)", v);
        }
        id = json_integer_value(v);
        if (id < 0 || id > INT32_MAX) {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': expected a token id of at least 0, "
                "but got %lld.", path, (long long) id);
        }
        req->prompt_ids[i] = (int32_t) id;
    }
    req->n_prompt_ids = n;
    return 0;
}


int
llm_api_parse_body(const char *body, size_t len, const llm_api_limits *lim,
    llm_api_kind api, llm_api_request_in in, void *ctx, llm_request *req,
    llm_api_error *err)
{
    json_t  *root;
    int      rc;

    llm_request_init(req);
    req->api = api;
    root = llm_api_decode_body(body, len, lim, err);
    if (root == NULL) {
        return -1;
    }
    rc = in(root, lim, ctx, req, err);
    json_decref(root);
    if (rc < 0) {
        llm_request_free(req);
        llm_request_init(req);
        req->api = api;
        return -1;
    }
    return 0;
}

const char *
llm_api_type_name(const json_t *v)
{
    if (v == NULL) {
        return "nothing";
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:  return "an object";
    case JSON_ARRAY:   return "an array";
    case JSON_STRING:  return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL:    return "a number";
    case JSON_TRUE:
    case JSON_FALSE:   return "a boolean";
    case JSON_NULL:    return "null";
    }
    return "an unknown value";
}

const char *
llm_api_path(char *out, size_t outlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
    return out;
}

int
llm_api_type_error(llm_api_error *err, const char *param,
    const char *expected, const json_t *got)
{
    return llm_api_bad_request(err, "invalid_type", param,
        "Invalid type for '%s': expected %s, but got %s.",
        param, expected, llm_api_type_name(got));
}

static const json_t *
opt_get(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);

    return (v == NULL || json_is_null(v)) ? NULL : v;
}

int
llm_api_opt_bool(const json_t *obj, const char *key, const char *param,
    int *out, llm_api_error *err)
{
    const json_t *v = opt_get(obj, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_boolean(v)) {
        return llm_api_type_error(err, param, "a boolean", v);
    }
    *out = json_is_true(v);
    return 1;
}

int
llm_api_opt_string(const json_t *obj, const char *key, const char *param,
    const char **out, llm_api_error *err)
{
    const json_t *v = opt_get(obj, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_string(v)) {
        return llm_api_type_error(err, param, "a string", v);
    }
    *out = json_string_value(v);
    return 1;
}

int
llm_api_opt_speculation(const json_t *root, llm_request *req,
    llm_api_error *err)
{
    const json_t  *v = opt_get(root, "speculation");
    const char    *s;

    if (v == NULL) {
        return 0;
    }
    if (json_is_boolean(v)) {
        req->speculation = json_is_true(v) ? LLM_SPECULATION_ON
                                           : LLM_SPECULATION_OFF;
        return 1;
    }
    s = json_is_string(v) ? json_string_value(v) : NULL;
    if (s && strcmp(s, "auto") == 0) {
        req->speculation = LLM_SPECULATION_AUTO;
    } else if (s && strcmp(s, "on") == 0) {
        req->speculation = LLM_SPECULATION_ON;
    } else if (s && strcmp(s, "off") == 0) {
        req->speculation = LLM_SPECULATION_OFF;
    } else {
        return llm_api_bad_request(err, "invalid_value", "speculation",
            "Invalid value for 'speculation': expected \"auto\", \"on\", "
            "\"off\" or a boolean.");
    }
    return 1;
}


int
llm_api_opt_number(const json_t *obj, const char *key, const char *param,
    double lo, int lo_open, double hi, int hi_open, double *out,
    llm_api_error *err)
{
    const json_t *v = opt_get(obj, key);
    double        d;

    if (v == NULL) {
        return 0;
    }
    if (!json_is_number(v)) {
        return llm_api_type_error(err, param, "a number", v);
    }
    d = json_number_value(v);
    if (!isfinite(d) || (lo_open ? d <= lo : d < lo)
        || (hi_open ? d >= hi : d > hi))
    {
        if (hi >= 1e300) {               /* no upper bound */
            return llm_api_bad_request(err, "invalid_value", param,
                "Invalid value for '%s': expected a number %s %g, but got "
                "%g.", param, lo_open ? "greater than" : "of at least", lo,
                d);
        }
        if (!lo_open && !hi_open) {
            return llm_api_bad_request(err, "invalid_value", param,
                "Invalid value for '%s': expected a number from %g to %g, "
                "but got %g.", param, lo, hi, d);
        }
        return llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': expected a number %s %g and %s %g, "
            "but got %g.", param,
            lo_open ? "greater than" : "at least", lo,
            hi_open ? "less than" : "at most", hi, d);
    }
    *out = d;
    return 1;
}

int
llm_api_opt_int(const json_t *obj, const char *key, const char *param,
    long long lo, long long hi, long long *out, llm_api_error *err)
{
    const json_t *v = opt_get(obj, key);
    long long     i;
    double        d;

    if (v == NULL) {
        return 0;
    }
    if (json_is_integer(v)) {
        i = json_integer_value(v);
    } else if (json_is_real(v)) {
        d = json_real_value(v);
        if (d != floor(d) || d < -9.0e18 || d > 9.0e18) {
            return llm_api_type_error(err, param, "an integer", v);
        }
        i = (long long) d;
    } else {
        return llm_api_type_error(err, param, "an integer", v);
    }
    if (i < lo || i > hi) {
        if (hi == (long long) ((~0ULL) >> 1)) {
            return llm_api_bad_request(err, "invalid_value", param,
                "Invalid value for '%s': expected an integer of at least "
                "%lld, but got %lld.", param, lo, i);
        }
        return llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': expected an integer from %lld to %lld, "
            "but got %lld.", param, lo, hi, i);
    }
    *out = i;
    return 1;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    size_t        n, i;
    uint32_t      cp;

    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2; cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3; cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4; cp = c & 0x07;
    } else {
        return 0;
    }
    if (n > len) {
        return 0;
    }
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
        || (cp >= 0xd800 && cp <= 0xdfff))
    {
        return 0;
    }
    return n;
}

json_t *
llm_api_jstring(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *) s;
    llm_buf              fixed;
    json_t              *v;
    size_t               i, n;

    if (len == 0) {
        return json_string("");
    }
    for (i = 0; i < len; i += n) {
        n = utf8_seq(u + i, len - i);
        if (n == 0) {
            break;
        }
    }
    if (i == len) {
        return json_stringn_nocheck(s, len);
    }

    llm_buf_init(&fixed);
    for (i = 0; i < len; i += n) {
        n = utf8_seq(u + i, len - i);
        if (n == 0) {
            llm_buf_append(&fixed, "\xef\xbf\xbd", 3);
            n = 1;
        } else {
            llm_buf_append(&fixed, s + i, n);
        }
    }
    v = fixed.failed ? NULL : json_stringn_nocheck(fixed.data, fixed.len);
    llm_buf_free(&fixed);
    return v;
}

json_t *
llm_api_jstr_or_null(const char *s)
{
    return s ? llm_api_jstring(s, strlen(s)) : json_null();
}

json_t *
llm_api_jlogprob(float lp)
{
    return json_real(isfinite(lp) && lp > -9999.0f ? (double) lp : -9999.0);
}

static int
dump_cb(const char *p, size_t n, void *data)
{
    return llm_buf_append(data, p, n);
}

int
llm_api_dump(llm_buf *b, const json_t *v)
{
    if (v == NULL) {
        b->failed = 1;
        return -1;
    }
    /* 9 significant digits print any float exactly and no noise */
    if (json_dump_callback(v, dump_cb, b,
                           JSON_COMPACT | JSON_REAL_PRECISION(9)) != 0)
    {
        b->failed = 1;
        return -1;
    }
    return b->failed ? -1 : 0;
}

int
llm_api_sse(llm_buf *b, const char *event, json_t *v)
{
    int rc;

    if (event) {
        llm_buf_printf(b, "event: %s\n", event);
    }
    llm_buf_puts(b, "data: ");
    rc = llm_api_dump(b, v);
    llm_buf_puts(b, "\n\n");
    json_decref(v);
    return (rc != 0 || b->failed) ? -1 : 0;
}


int
llm_api_messages_array(const json_t *ms, const llm_api_limits *lim,
    llm_api_error *err)
{
    size_t  max;

    max = lim && lim->max_messages ? lim->max_messages
                                   : LLM_API_DEFAULT_MAX_MESSAGES;
    if (ms == NULL || json_is_null(ms)) {
        return llm_api_bad_request(err, "missing_required_parameter",
            "messages", "Missing required parameter: 'messages'.");
    }
    if (!json_is_array(ms)) {
        return llm_api_type_error(err, "messages", "an array", ms);
    }
    if (json_array_size(ms) == 0) {
        return llm_api_bad_request(err, "invalid_value", "messages",
            "Invalid value for 'messages': expected a non-empty array of "
            "messages, but got an empty array.");
    }
    if (json_array_size(ms) > max) {
        return llm_api_bad_request(err, "too_many_messages", "messages",
            "Invalid value for 'messages': at most %zu messages are allowed, "
            "but got %zu.", max, json_array_size(ms));
    }
    return 0;
}
