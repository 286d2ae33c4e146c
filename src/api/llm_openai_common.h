/*
 * Pieces shared by the OpenAI chat and completions parsers (and the stop
 * list by the Anthropic one).  Internal to src/api.
 */
#ifndef LLM_OPENAI_COMMON_H
#define LLM_OPENAI_COMMON_H

#include "api/llm_api_json.h"

/*
 * Fields both OpenAI endpoints accept: model, max_tokens,
 * max_completion_tokens, temperature, top_p, n, stop, seed, penalties,
 * logit_bias, user, stream, stream_options, response_format and the
 * top_k / min_p / repetition_penalty extensions.
 */
int llm_openai_parse_common(const json_t *root, const llm_api_limits *lim,
    llm_request *req, llm_api_error *err);

/* A stop string or list of non-empty strings into req->stop.  A lone
 * string is accepted when allow_string. */
int llm_api_parse_stop(const json_t *v, const char *param, size_t max,
    int allow_string, llm_request *req, llm_api_error *err);

/* Parse a JSON text that must hold an object (tool-call arguments),
 * bounded by lim->max_depth.  "" gives {}.  NULL with err on failure. */
json_t *llm_api_parse_arguments(const char *text, size_t len,
    const char *param, const llm_api_limits *lim, llm_api_error *err);

/* ^[a-zA-Z0-9_-]{1,64}$ */
int llm_api_valid_tool_name(const char *name);

/* A tool name at `path`: a string, a valid name, unique among the first n
 * entries of tools (already in the canonical {"function":{"name"}} shape). */
int llm_api_tool_name(const json_t *name, const char *path,
    const json_t *tools, size_t n, llm_api_error *err);

/*
 * The request's "tools" array: 0 with *out NULL when absent, null or empty
 * (no tools); 0 with *out the array, and req->tools created empty, when it
 * holds tools to read; -1 when it is not an array or holds more than
 * lim->max_tools.
 */
int llm_api_tools_array(const json_t *root, const llm_api_limits *lim,
    llm_request *req, const json_t **out, llm_api_error *err);

/*
 * Append to req->tools, in the canonical {"type":"function","function":
 * {name, description, parameters}} shape, the tool whose name, description
 * and schema (member schema_key: "parameters", Anthropic's "input_schema")
 * are members of obj, found at path `base`.  The name must be valid and new;
 * the schema an object (required when schema_required).
 */
int llm_api_function_tool(const json_t *obj, const char *base,
    const char *schema_key, int schema_required, llm_request *req,
    llm_api_error *err);

/* Does tools (canonical shape) define a function with this name? */
int llm_api_has_tool(const json_t *tools, const char *name);

/* OpenAI's reasoning effort at param: none / minimal turn reasoning off,
 * low / medium / high on with that effort (a thinking budget:
 * llm_session_reasoning_budget); anything else is a 400. */
int llm_api_reasoning_effort(const char *effort, const char *param,
    llm_request *req, llm_api_error *err);

/* The protocols' temperature ranges: OpenAI [0, 2], Anthropic [0, 1]. */
#define LLM_OPENAI_TEMPERATURE_MAX     2.0
#define LLM_ANTHROPIC_TEMPERATURE_MAX  1.0

/* temperature [0, temperature_max] and top_p [0, 1], recorded as set. */
int llm_api_parse_sampling(const json_t *root, double temperature_max,
    llm_request *req, llm_api_error *err);

/* Copy a string; NULL on allocation failure (err filled). */
char *llm_api_strdup(const char *s, llm_api_error *err);

#endif
