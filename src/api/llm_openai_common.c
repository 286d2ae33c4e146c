/* Sampling and stream fields shared by /v1/chat/completions and
 * /v1/completions. */
#include "api/llm_openai_common.h"
#include "grammar/llm_grammar.h"

#include <stdlib.h>
#include <string.h>

#define INT_ANY_MAX ((long long) ((~0ULL) >> 1))

char *
llm_api_strdup(const char *s, llm_api_error *err)
{
    char *p = strdup(s);

    if (p == NULL) {
        llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    return p;
}

int
llm_api_valid_tool_name(const char *name)
{
    size_t i;

    for (i = 0; name[i]; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-'))
        {
            return 0;
        }
    }
    return i >= 1 && i <= 64;
}

int
llm_api_tool_name(const json_t *name, const char *path, const json_t *tools,
    size_t n, llm_api_error *err)
{
    size_t        j;
    const json_t *prev;

    if (!json_is_string(name)) {
        return llm_api_type_error(err, path, "a string", name);
    }
    if (!llm_api_valid_tool_name(json_string_value(name))) {
        return llm_api_bad_request(err, "invalid_value", path,
            "Invalid value for '%s': expected a name of 1 to 64 "
            "characters from a-z, A-Z, 0-9, '_' and '-', but got "
            "'%.80s'.", path, json_string_value(name));
    }
    for (j = 0; j < n; j++) {
        prev = json_object_get(json_object_get(json_array_get(tools, j),
                                               "function"), "name");
        if (json_equal((json_t *) prev, (json_t *) name)) {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': the tool name '%s' is already "
                "used by tools[%zu].", path, json_string_value(name), j);
        }
    }
    return 0;
}

int
llm_api_tools_array(const json_t *root, const llm_api_limits *lim,
    llm_request *req, const json_t **out, llm_api_error *err)
{
    const json_t *ts = json_object_get(root, "tools");
    size_t        max;

    *out = NULL;
    max = lim && lim->max_tools ? lim->max_tools : LLM_API_DEFAULT_MAX_TOOLS;
    if (ts == NULL || json_is_null(ts)) {
        return 0;
    }
    if (!json_is_array(ts)) {
        return llm_api_type_error(err, "tools", "an array", ts);
    }
    if (json_array_size(ts) > max) {
        return llm_api_bad_request(err, "too_many_tools", "tools",
            "Invalid value for 'tools': at most %zu tools are allowed, but "
            "got %zu.", max, json_array_size(ts));
    }
    if (json_array_size(ts) == 0) {
        return 0;                       /* same as no tools */
    }
    req->tools = json_array();
    if (req->tools == NULL) {
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    *out = ts;
    return 0;
}

int
llm_api_function_tool(const json_t *obj, const char *base,
    const char *schema_key, int schema_required, llm_request *req,
    llm_api_error *err)
{
    char          path[160];
    const json_t *name, *desc, *schema;
    json_t       *f, *tool;

    llm_api_path(path, sizeof(path), "%s.name", base);
    name = json_object_get(obj, "name");
    if (llm_api_tool_name(name, path, req->tools,
                          json_array_size(req->tools), err) != 0)
    {
        return -1;
    }
    llm_api_path(path, sizeof(path), "%s.description", base);
    desc = json_object_get(obj, "description");
    if (desc && !json_is_null(desc) && !json_is_string(desc)) {
        return llm_api_type_error(err, path, "a string", desc);
    }
    llm_api_path(path, sizeof(path), "%s.%s", base, schema_key);
    schema = json_object_get(obj, schema_key);
    if (schema == NULL || json_is_null(schema)) {
        if (schema_required) {
            return llm_api_bad_request(err, "missing_required_parameter",
                path, "Missing required parameter: '%s'.", path);
        }
    } else if (!json_is_object(schema)) {
        return llm_api_type_error(err, path, "a JSON Schema object", schema);
    }
    f = json_object();
    tool = json_object();
    if (f == NULL || tool == NULL
        || json_object_set(f, "name", (json_t *) name) != 0
        || (json_is_string(desc)
            && json_object_set(f, "description", (json_t *) desc) != 0)
        || (json_is_object(schema)
            && json_object_set_new(f, "parameters", json_deep_copy(schema))
               != 0)
        || json_object_set_new(tool, "type", json_string("function")) != 0
        || json_object_set_new(tool, "function", f) != 0)
    {
        json_decref(f);
        json_decref(tool);
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    if (json_array_append_new(req->tools, tool) != 0) {
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    return 0;
}

int
llm_api_has_tool(const json_t *tools, const char *name)
{
    const json_t *t;
    size_t        i;

    json_array_foreach(tools, i, t) {
        const json_t *n = json_object_get(json_object_get(t, "function"),
                                          "name");
        if (json_is_string(n) && strcmp(json_string_value(n), name) == 0) {
            return 1;
        }
    }
    return 0;
}

int
llm_api_reasoning_effort(const char *effort, const char *param,
    llm_request *req, llm_api_error *err)
{
    if (strcmp(effort, "none") == 0 || strcmp(effort, "minimal") == 0) {
        req->reasoning = 0;
    } else if (strcmp(effort, "low") == 0) {
        req->reasoning = 1;
        req->reasoning_effort = LLM_EFFORT_LOW;
    } else if (strcmp(effort, "medium") == 0) {
        req->reasoning = 1;
        req->reasoning_effort = LLM_EFFORT_MEDIUM;
    } else if (strcmp(effort, "high") == 0) {
        req->reasoning = 1;
        req->reasoning_effort = LLM_EFFORT_HIGH;
    } else {
        return llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': expected one of 'none', 'minimal', "
            "'low', 'medium', 'high', but got '%.64s'.", param, effort);
    }
    return 0;
}

int
llm_api_parse_sampling(const json_t *root, double temperature_max,
    llm_request *req, llm_api_error *err)
{
    double d;
    int    rc;

    if ((rc = llm_api_opt_number(root, "temperature", "temperature",
                                 0, 0, temperature_max, 0, &d, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.temperature = d;
        req->sampling.set |= LLM_SAMPLING_SET_TEMPERATURE;
    }
    if ((rc = llm_api_opt_number(root, "top_p", "top_p", 0, 1, 1, 0, &d,
                                 err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.top_p = d;
        req->sampling.set |= LLM_SAMPLING_SET_TOP_P;
    }
    return 0;
}

json_t *
llm_api_parse_arguments(const char *text, size_t len, const char *param,
    const llm_api_limits *lim, llm_api_error *err)
{
    json_error_t  jerr;
    json_t       *v;
    size_t        i;
    int           max_depth;

    for (i = 0; i < len && strchr(" \t\r\n", text[i]); i++) {
        /* skip blanks */
    }
    if (i == len) {
        return json_object();       /* a call without arguments */
    }
    max_depth = lim && lim->max_depth > 0 ? lim->max_depth
                                          : LLM_API_DEFAULT_MAX_DEPTH;
    if (llm_api_json_depth(text, len, max_depth) > max_depth) {
        llm_api_bad_request(err, "json_too_deep", param,
            "Invalid value for '%s': the arguments nest more than %d levels "
            "deep, which is the limit.", param, max_depth);
        return NULL;
    }
    v = json_loadb(text, len, 0, &jerr);
    if (v == NULL) {
        llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': expected a JSON object encoded as a "
            "string, but it could not be parsed: %s (column %d).",
            param, jerr.text, jerr.column);
        return NULL;
    }
    if (!json_is_object(v)) {
        llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': expected a JSON object encoded as a "
            "string, but it encodes %s.", param, llm_api_type_name(v));
        json_decref(v);
        return NULL;
    }
    return v;
}

int
llm_api_parse_stop(const json_t *v, const char *param, size_t max,
    int allow_string, llm_request *req, llm_api_error *err)
{
    char    path[128];
    size_t  i, n;

    if (v == NULL || json_is_null(v)) {
        return 0;
    }
    if (json_is_string(v) && allow_string) {
        if (json_string_length(v) == 0) {
            return llm_api_bad_request(err, "invalid_value", param,
                "Invalid value for '%s': a stop sequence must not be empty.",
                param);
        }
        req->stop = calloc(1, sizeof(char *));
        if (req->stop == NULL
            || (req->stop[0] = llm_api_strdup(json_string_value(v), err))
               == NULL)
        {
            return llm_api_error_set(err, 500, "api_error", NULL, NULL,
                "Out of memory while reading the request.");
        }
        req->n_stop = 1;
        return 1;
    }
    if (!json_is_array(v)) {
        return llm_api_type_error(err, param, allow_string
            ? "a string or an array of strings" : "an array of strings", v);
    }
    n = json_array_size(v);
    if (n > max) {
        return llm_api_bad_request(err, "invalid_value", param,
            "Invalid value for '%s': at most %zu stop sequences are "
            "allowed, but got %zu.", param, max, n);
    }
    for (i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, i);

        llm_api_path(path, sizeof(path), "%s[%zu]", param, i);
        if (!json_is_string(s)) {
            return llm_api_type_error(err, path, "a string", s);
        }
        if (json_string_length(s) == 0) {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': a stop sequence must not be "
                "empty.", path);
        }
    }
    if (n == 0) {
        return 0;
    }
    req->stop = calloc(n, sizeof(char *));
    if (req->stop == NULL) {
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    for (i = 0; i < n; i++) {
        req->stop[i] = llm_api_strdup(
            json_string_value(json_array_get(v, i)), err);
        if (req->stop[i] == NULL) {
            return -1;
        }
        req->n_stop = i + 1;
    }
    return 1;
}

/*
 * logit_bias: keys are token ids written in decimal, 0 .. INT32_MAX (a
 * larger key must not wrap around onto a real id), at most max entries,
 * biases from -100 to 100.  Ids beyond the vocabulary are refused once the
 * model is known (llm_api_check_token_ids).
 */
static int
parse_logit_bias(const json_t *root, size_t max, llm_request *req,
    llm_api_error *err)
{
    const json_t *lb = json_object_get(root, "logit_bias");
    const char     *key, *p;
    json_t         *val;
    char            path[128];
    double          d;
    llm_logit_bias *bias;
    size_t          n;

    if (lb == NULL || json_is_null(lb)) {
        return 0;
    }
    if (!json_is_object(lb)) {
        return llm_api_type_error(err, "logit_bias",
            "an object mapping token ids to biases", lb);
    }
    if (json_object_size(lb) > max) {
        return llm_api_bad_request(err, "invalid_value", "logit_bias",
            "Invalid 'logit_bias': at most %zu entries are supported, but "
            "got %zu.", max, json_object_size(lb));
    }
    if (json_object_size(lb) == 0) {
        return 1;
    }
    bias = malloc(json_object_size(lb) * sizeof(*bias));
    if (bias == NULL) {
        return llm_api_error_set(err, 500, "api_error", NULL, NULL,
            "Out of memory while reading the request.");
    }
    /* owned by req from here, so an error below frees it with req */
    free(req->sampling.logit_bias);
    req->sampling.logit_bias = bias;
    req->sampling.n_logit_bias = 0;
    n = 0;
    json_object_foreach((json_t *) lb, key, val) {
        llm_api_path(path, sizeof(path), "logit_bias.%.100s", key);
        for (p = key; *p >= '0' && *p <= '9'; p++) { /* void */ }
        if (p == key || *p != '\0' || p - key > 10
            || (p - key == 10 && strcmp(key, "2147483647") > 0))
        {
            return llm_api_bad_request(err, "invalid_value", "logit_bias",
                "Invalid key in 'logit_bias': expected a token id written "
                "as a decimal string from 0 to 2147483647, but got "
                "'%.100s'.", key);
        }
        if (!json_is_number(val)) {
            return llm_api_type_error(err, path, "a number", val);
        }
        d = json_number_value(val);
        if (d < -100 || d > 100) {
            return llm_api_bad_request(err, "invalid_value", path,
                "Invalid value for '%s': expected a number from -100 to "
                "100, but got %g.", path, d);
        }
        /* the digits were checked: 0 .. INT32_MAX */
        bias[n].id = (int32_t) strtol(key, NULL, 10);
        bias[n].bias = (float) d;
        req->sampling.n_logit_bias = ++n;
    }
    return 1;
}

/* Extensions: "grammar" (GBNF) and "regex", compiled now so that what
 * cannot be enforced is a 400 naming the problem. */
static int
parse_guide(const json_t *root, const char *key, char **out, llm_api_error *err)
{
    const json_t *v = json_object_get(root, key);
    char msg[300];
    llm_grammar *g;

    if (v == NULL || json_is_null(v)) {
        return 0;
    }
    if (!json_is_string(v)) {
        return llm_api_type_error(err, key, "a string", v);
    }
    g = key[0] == 'g'
        ? llm_grammar_from_gbnf(json_string_value(v), json_string_length(v), msg, sizeof(msg))
        : llm_grammar_from_regex(json_string_value(v), json_string_length(v), msg, sizeof(msg));
    if (g == NULL) {
        return llm_api_bad_request(err, "invalid_value", key,
            "Invalid '%s': %s.", key, msg);
    }
    llm_grammar_free(g);
    *out = llm_api_strdup(json_string_value(v), err);
    return *out ? 0 : -1;
}

static int
parse_response_format(const json_t *root, llm_request *req,
    llm_api_error *err)
{
    const json_t *rf = json_object_get(root, "response_format");
    const json_t *t, *js;
    const char   *type;

    if (rf == NULL || json_is_null(rf)) {
        return 0;
    }
    if (!json_is_object(rf)) {
        return llm_api_type_error(err, "response_format", "an object", rf);
    }
    t = json_object_get(rf, "type");
    if (!json_is_string(t)) {
        return llm_api_type_error(err, "response_format.type", "a string",
            t);
    }
    type = json_string_value(t);
    if (strcmp(type, "json_schema") == 0) {
        js = json_object_get(rf, "json_schema");
        if (!json_is_object(js)) {
            return llm_api_type_error(err, "response_format.json_schema",
                "an object", js);
        }
        {
            /* the schema is enforced: what cannot be is refused now */
            const json_t *schema = json_object_get(js, "schema");
            char msg[300];
            llm_grammar *g;
            if (schema != NULL && !json_is_object(schema) && !json_is_boolean(schema)) {
                return llm_api_type_error(err, "response_format.json_schema.schema",
                    "an object", schema);
            }
            g = llm_grammar_from_json_schema(schema, msg, sizeof(msg));
            if (g == NULL) {
                return llm_api_bad_request(err, "invalid_value",
                    "response_format.json_schema.schema",
                    "Invalid 'response_format.json_schema.schema': %s.", msg);
            }
            llm_grammar_free(g);
        }
    } else if (strcmp(type, "text") != 0 && strcmp(type, "json_object") != 0)
    {
        return llm_api_bad_request(err, "invalid_value",
            "response_format.type",
            "Invalid value for 'response_format.type': expected one of "
            "'text', 'json_object', 'json_schema', but got '%.100s'.", type);
    }
    req->response_format = json_deep_copy(rf);
    return 1;
}

int
llm_openai_parse_common(const json_t *root, const llm_api_limits *lim,
    llm_request *req, llm_api_error *err)
{
    const char   *s;
    long long     i;
    double        d;
    int           b, rc, max_n;
    const json_t *so;
    const char   *rft;

    max_n = lim && lim->max_n > 0 ? lim->max_n : LLM_API_DEFAULT_MAX_N;

    if ((rc = llm_api_opt_string(root, "model", "model", &s, err)) < 0) {
        return -1;
    }
    if (rc && (req->model = llm_api_strdup(s, err)) == NULL) {
        return -1;
    }

    if ((rc = llm_api_opt_int(root, "max_tokens", "max_tokens", 1,
                              INT_ANY_MAX, &i, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->max_tokens = (long) i;
    }
    rc = llm_api_opt_int(root, "max_completion_tokens",
                         "max_completion_tokens", 1, INT_ANY_MAX, &i, err);
    if (rc < 0) {
        return -1;
    }
    if (rc) {
        req->max_tokens = (long) i;   /* the newer name wins */
    }

    if (llm_api_parse_sampling(root, LLM_OPENAI_TEMPERATURE_MAX, req, err) < 0) {
        return -1;
    }
    if ((rc = llm_api_opt_int(root, "n", "n", 1, max_n, &i, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->n = (int) i;
    }
    if (llm_api_parse_stop(json_object_get(root, "stop"), "stop",
            lim && lim->max_stop ? lim->max_stop : LLM_API_DEFAULT_MAX_STOP,
            1, req, err) < 0)
    {
        return -1;
    }
    if ((rc = llm_api_opt_int(root, "seed", "seed", -INT_ANY_MAX - 1,
                              INT_ANY_MAX, &i, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.has_seed = 1;
        req->sampling.seed = (uint64_t) i;
    }
    if ((rc = llm_api_opt_number(root, "presence_penalty",
                                 "presence_penalty", -2, 0, 2, 0, &d, err))
        < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.presence_penalty = d;
    }
    if ((rc = llm_api_opt_number(root, "frequency_penalty",
                                 "frequency_penalty", -2, 0, 2, 0, &d, err))
        < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.frequency_penalty = d;
    }
    if (parse_logit_bias(root, lim && lim->max_logit_bias
                         ? lim->max_logit_bias : LLM_API_DEFAULT_MAX_LOGIT_BIAS,
                         req, err) < 0)
    {
        return -1;
    }
    if (llm_api_opt_string(root, "user", "user", &s, err) < 0) {
        return -1;
    }
    if ((rc = llm_api_opt_bool(root, "return_token_ids", "return_token_ids",
                               &b, err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->return_token_ids = b;
    }

    if ((rc = llm_api_opt_bool(root, "stream", "stream", &b, err)) < 0) {
        return -1;
    }
    if (rc) {
        req->stream = b;
    }
    so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) {
            return llm_api_type_error(err, "stream_options", "an object", so);
        }
        if (!req->stream) {
            return llm_api_bad_request(err, "invalid_value",
                "stream_options",
                "Invalid value for 'stream_options': it is only allowed "
                "when 'stream' is true.");
        }
        if ((rc = llm_api_opt_bool(so, "include_usage",
                                   "stream_options.include_usage", &b, err))
            < 0)
        {
            return -1;
        }
        if (rc) {
            req->include_usage = b;
        }
    }
    if (parse_response_format(root, req, err) < 0
        || parse_guide(root, "grammar", &req->grammar, err) < 0
        || parse_guide(root, "regex", &req->regex, err) < 0)
    {
        return -1;
    }
    rft = req->response_format
          ? json_string_value(json_object_get(req->response_format, "type")) : NULL;
    if ((req->grammar != NULL) + (req->regex != NULL)
        + (rft != NULL && strcmp(rft, "text") != 0) > 1)
    {
        return llm_api_bad_request(err, "invalid_value", "grammar",
            "Only one of 'response_format' (JSON), 'grammar' and 'regex' "
            "may be given.");
    }

    /* extensions beyond OpenAI's API (vLLM-compatible names) */
    if ((rc = llm_api_opt_int(root, "top_k", "top_k", -1, INT_ANY_MAX, &i,
                              err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.top_k = i < 0 ? 0 : (int) (i > 1 << 30 ? 1 << 30 : i);
        req->sampling.set |= LLM_SAMPLING_SET_TOP_K;
    }
    if ((rc = llm_api_opt_number(root, "min_p", "min_p", 0, 0, 1, 0, &d,
                                 err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.min_p = d;
    }
    if ((rc = llm_api_opt_number(root, "repetition_penalty",
                                 "repetition_penalty", 0, 1, 1e308, 0, &d,
                                 err)) < 0)
    {
        return -1;
    }
    if (rc) {
        req->sampling.repetition_penalty = d;
        req->sampling.set |= LLM_SAMPLING_SET_REPETITION_PENALTY;
    }
    if (llm_api_opt_speculation(root, req, err) < 0) {
        return -1;
    }
    return 0;
}
