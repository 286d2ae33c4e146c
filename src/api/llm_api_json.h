/*
 * JSON helpers shared by the protocol parsers and formatters: bounded body
 * decoding, typed optional-field readers that fill llm_api_error with the
 * field's path, and output helpers (UTF-8-safe strings, compact dumps, SSE).
 */
#ifndef LLM_API_JSON_H
#define LLM_API_JSON_H

#include <jansson.h>

#include "api/llm_api.h"

/* Decode a request body into a JSON object, enforcing lim->max_depth first.
 * NULL with err filled on any failure. */
json_t *llm_api_decode_body(const char *body, size_t len,
    const llm_api_limits *lim, llm_api_error *err);

/*
 * The frame of every request parser: req initialised for api, the body
 * decoded (bounded) and read by in(root, lim, ctx, req, err), which fills
 * err and returns -1 on a bad request.  On any failure req is left
 * initialised and empty again (for api), so callers free it either way.
 */
/* An array of token ids (each 0..INT32_MAX) into req->prompt_ids; param
 * names it in errors.  An empty array is a 400 unless allow_empty. */
int llm_api_token_ids_in(const json_t *arr, const char *param,
    int allow_empty, llm_request *req, llm_api_error *err);

typedef int (*llm_api_request_in)(const json_t *root,
    const llm_api_limits *lim, void *ctx, llm_request *req,
    llm_api_error *err);

int llm_api_parse_body(const char *body, size_t len,
    const llm_api_limits *lim, llm_api_kind api, llm_api_request_in in,
    void *ctx, llm_request *req, llm_api_error *err);

/* Deepest nesting of arrays/objects in body, stopping once it passes
 * `stop_after` (so the scan is cheap on hostile input). */
int llm_api_json_depth(const char *body, size_t len, int stop_after);

/* "a string", "an integer", "null", ... for error messages. */
const char *llm_api_type_name(const json_t *v);

/* Format a path such as "messages[2].content" into out. */
const char *llm_api_path(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int llm_api_type_error(llm_api_error *err, const char *param,
    const char *expected, const json_t *got);

/* "messages" is present, an array, not empty and within lim->max_messages. */
int llm_api_messages_array(const json_t *ms, const llm_api_limits *lim,
    llm_api_error *err);

/*
 * Optional-field readers.  A missing key or JSON null counts as absent.
 * Return 1 when the value was read into *out, 0 when absent, -1 on a
 * validation error (err filled, param = path).
 */
int llm_api_opt_bool(const json_t *obj, const char *key, const char *param,
    int *out, llm_api_error *err);
int llm_api_opt_string(const json_t *obj, const char *key, const char *param,
    const char **out, llm_api_error *err);
/* Number within [lo,hi]; lo_open/hi_open make that end exclusive;
 * hi >= 1e300 means no upper bound. */
int llm_api_opt_number(const json_t *obj, const char *key, const char *param,
    double lo, int lo_open, double hi, int hi_open, double *out,
    llm_api_error *err);
/* Integer (an integral real is accepted) within [lo,hi]. */
int llm_api_opt_int(const json_t *obj, const char *key, const char *param,
    long long lo, long long hi, long long *out, llm_api_error *err);

/*
 * The "speculation" extension (speculative decoding for this request):
 * "auto", "on" or "off" (true / false for on / off) into req->speculation.
 * 0 when absent, -1 on a validation error.
 */
int llm_api_opt_speculation(const json_t *root, llm_request *req,
    llm_api_error *err);

/* A JSON string for bytes that may be invalid UTF-8 (bad bytes -> U+FFFD). */
json_t *llm_api_jstring(const char *s, size_t len);
/* Same, for a NUL-terminated string; JSON null for NULL. */
json_t *llm_api_jstr_or_null(const char *s);

/* A JSON number for a log-probability (-inf and NaN -> -9999). */
json_t *llm_api_jlogprob(float lp);

/* Append the compact JSON text of v. */
int llm_api_dump(llm_buf *b, const json_t *v);
/* Append an SSE frame: ["event: NAME\n"] "data: JSON\n\n".  Takes v's
 * reference (decrefs it) so callers can build inline. */
int llm_api_sse(llm_buf *b, const char *event, json_t *v);

#endif
