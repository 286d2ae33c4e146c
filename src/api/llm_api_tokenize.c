/* /tokenize and /detokenize bodies (llm_api_tokenize.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/llm_api_json.h"
#include "api/llm_api_tokenize.h"
#include "api/llm_openai.h"
#include "api/llm_openai_common.h"

#define OOM(err) llm_api_error_set(err, 500, "api_error", NULL, NULL, \
                                   "out of memory")

/* The longest piece a token may print as (llm_tokenizer_token_bytes). */
#define LLM_TOKENIZE_PIECE_MAX  256


/* Optional booleans into *out (left as is when absent); -1 on a bad type. */
static int
bool_in(const json_t *root, const char *key, int *out, llm_api_error *err)
{
    return llm_api_opt_bool(root, key, key, out, err) < 0 ? -1 : 0;
}


static int
model_in(const json_t *root, llm_request *req, llm_api_error *err)
{
    int          rc;
    const char  *s;

    if ((rc = llm_api_opt_string(root, "model", "model", &s, err)) < 0) {
        return -1;
    }
    if (rc && (req->model = llm_api_strdup(s, err)) == NULL) {
        return -1;
    }
    return 0;
}


/* Text to tokenize: "prompt" (vLLM) or "content" (llama-server). */
static int
text_in(const json_t *root, const char *key, llm_request *req,
    llm_api_error *err)
{
    const json_t  *v = json_object_get(root, key);
    size_t         len;

    if (!json_is_string(v)) {
        return llm_api_type_error(err, key, "a string", v);
    }
    len = json_string_length(v);
    req->prompt = malloc(len + 1);
    if (req->prompt == NULL) {
        return OOM(err);
    }
    memcpy(req->prompt, json_string_value(v), len + 1);
    req->prompt_len = len;
    return 0;
}


/* what tokenize_in reads beside the decoded body */
typedef struct {
    const char         *body;    /* the body again: messages are parsed as chat */
    size_t              len;
    llm_tokenize_opts  *opts;
} tokenize_ctx;


static int
tokenize_in(const json_t *root, const llm_api_limits *lim, void *ctx,
    llm_request *req, llm_api_error *err)
{
    const char         *body = ((tokenize_ctx *) ctx)->body;
    size_t              len = ((tokenize_ctx *) ctx)->len;
    llm_tokenize_opts  *o = ((tokenize_ctx *) ctx)->opts;

    memset(o, 0, sizeof(*o));
    o->parse_special = 1;

    if (json_object_get(root, "messages")) {
        /* a chat request: the template's prompt, as chat would run it */
        if (llm_openai_parse_chat(body, len, lim, req, err) != 0) {
            return -1;
        }
        o->shape = LLM_TOKENIZE_VLLM;
        o->add_special = 0;
        if (bool_in(root, "add_special_tokens", &o->add_special, err) < 0
            || bool_in(root, "return_token_strs", &o->with_pieces, err) < 0)
        {
            return -1;
        }
        return 0;
    }

    req->api = LLM_API_COMPLETIONS;
    if (model_in(root, req, err) < 0) {
        return -1;
    }

    if (json_object_get(root, "content")) {
        o->shape = LLM_TOKENIZE_LLAMA;
        o->add_special = 0;
        if (text_in(root, "content", req, err) < 0
            || bool_in(root, "add_special", &o->add_special, err) < 0
            || bool_in(root, "parse_special", &o->parse_special, err) < 0
            || bool_in(root, "with_pieces", &o->with_pieces, err) < 0)
        {
            return -1;
        }
        return 0;
    }

    if (json_object_get(root, "prompt")) {
        o->shape = LLM_TOKENIZE_VLLM;
        o->add_special = 1;
        if (text_in(root, "prompt", req, err) < 0
            || bool_in(root, "add_special_tokens", &o->add_special, err) < 0
            || bool_in(root, "return_token_strs", &o->with_pieces, err) < 0)
        {
            return -1;
        }
        return 0;
    }

    return llm_api_bad_request(err, "missing_required_parameter", "prompt",
        "Give the text to tokenize as 'prompt' (or 'content'), or chat "
        "'messages'.");
}


int
llm_api_parse_tokenize(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_tokenize_opts *opts,
    llm_api_error *err)
{
    tokenize_ctx  ctx = { body, len, opts };

    return llm_api_parse_body(body, len, lim, LLM_API_COMPLETIONS, tokenize_in,
                              &ctx, req, err);
}


static int
detokenize_in(const json_t *root, const llm_api_limits *lim, void *ctx,
    llm_request *req, llm_api_error *err)
{
    const json_t  *arr;

    if (model_in(root, req, err) < 0) {
        return -1;
    }

    arr = json_object_get(root, "tokens");
    if (arr == NULL) {
        return llm_api_bad_request(err, "missing_required_parameter",
                                   "tokens", "Missing required parameter: "
                                   "'tokens' (an array of token ids).");
    }
    if (!json_is_array(arr)) {
        return llm_api_type_error(err, "tokens", "an array of token ids", arr);
    }

    return llm_api_token_ids_in(arr, "tokens", 1, req, err);
}


int
llm_api_parse_detokenize(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err)
{
    return llm_api_parse_body(body, len, lim, LLM_API_COMPLETIONS,
                              detokenize_in, NULL, req, err);
}


/* 1 when s[0..n) is valid UTF-8 (a piece that prints as itself). */
static int
utf8_valid(const unsigned char *s, size_t n)
{
    size_t  i = 0, k, need;

    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        need = (s[i] & 0xE0) == 0xC0 ? 1 : (s[i] & 0xF0) == 0xE0 ? 2
             : (s[i] & 0xF8) == 0xF0 ? 3 : 0;
        if (need == 0 || (need == 1 && s[i] < 0xC2) || i + need >= n) {
            return 0;
        }
        for (k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += need + 1;
    }
    return 1;
}


/* A token's piece: a string, or (llama-server) its byte values. */
static json_t *
piece_json(const llm_tokenize_opts *o, int32_t id,
    llm_token_bytes_fn token_bytes, void *token_ctx)
{
    int      i, n;
    char     buf[LLM_TOKENIZE_PIECE_MAX];
    json_t  *bytes;

    n = token_bytes(token_ctx, id, buf, sizeof(buf));
    if (n < 0) {
        n = 0;
    }
    if (o->shape == LLM_TOKENIZE_VLLM
        || utf8_valid((const unsigned char *) buf, (size_t) n))
    {
        return llm_api_jstring(buf, (size_t) n);
    }

    bytes = json_array();
    for (i = 0; bytes && i < n; i++) {
        json_array_append_new(bytes, json_integer((unsigned char) buf[i]));
    }
    return bytes;
}


int
llm_api_tokenize_json(llm_buf *b, const llm_tokenize_opts *o,
    const int32_t *ids, size_t n, long max_model_len,
    llm_token_bytes_fn token_bytes, void *token_ctx)
{
    int      rc;
    size_t   i;
    json_t  *root, *tokens, *strs, *t;

    root = json_object();
    tokens = json_array();
    strs = o->shape == LLM_TOKENIZE_VLLM && o->with_pieces ? json_array()
                                                           : NULL;

    for (i = 0; i < n; i++) {
        if (o->shape == LLM_TOKENIZE_LLAMA && o->with_pieces) {
            t = json_object();
            json_object_set_new(t, "id", json_integer(ids[i]));
            json_object_set_new(t, "piece",
                                piece_json(o, ids[i], token_bytes, token_ctx));
            json_array_append_new(tokens, t);
            continue;
        }
        json_array_append_new(tokens, json_integer(ids[i]));
        if (strs) {
            json_array_append_new(strs,
                                  piece_json(o, ids[i], token_bytes, token_ctx));
        }
    }

    if (o->shape == LLM_TOKENIZE_VLLM) {
        json_object_set_new(root, "count", json_integer((json_int_t) n));
        json_object_set_new(root, "max_model_len",
                            json_integer(max_model_len));
        json_object_set_new(root, "tokens", tokens);
        json_object_set_new(root, "token_strs", strs ? strs : json_null());
    } else {
        json_object_set_new(root, "tokens", tokens);
    }

    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}


int
llm_api_detokenize_json(llm_buf *b, const char *text, size_t len)
{
    int      rc;
    json_t  *root;

    root = json_object();
    json_object_set_new(root, "prompt", llm_api_jstring(text, len));
    json_object_set_new(root, "content", llm_api_jstring(text, len));
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}
