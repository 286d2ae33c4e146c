/* OpenAI embeddings: {"input": str | [str] | [int] | [[int]], ...}. */
#include "api/llm_openai_embeddings.h"
#include "api/llm_api_json.h"
#include "core/llm_base64.h"

#include <stdlib.h>
#include <string.h>


static int
parse_ids(const json_t *arr, const char *param, llm_embed_input *in,
    llm_api_error *err)
{
    size_t   i;
    json_t  *v;

    in->n_ids = json_array_size(arr);
    in->ids = malloc((in->n_ids ? in->n_ids : 1) * sizeof(int32_t));
    if (in->ids == NULL) {
        return llm_api_error_set(err, 500, "server_error", NULL, NULL,
                                 "out of memory");
    }

    json_array_foreach(arr, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0
            || json_integer_value(v) > INT32_MAX)
        {
            return llm_api_bad_request(err, "invalid_value", param,
                                       "%s[%zu] must be a non-negative token "
                                       "id.", param, i);
        }
        in->ids[i] = (int32_t) json_integer_value(v);
    }

    return 0;
}


static int
parse_text(const json_t *v, llm_embed_input *in, llm_api_error *err)
{
    in->text_len = json_string_length(v);
    in->text = malloc(in->text_len + 1);
    if (in->text == NULL) {
        return llm_api_error_set(err, 500, "server_error", NULL, NULL,
                                 "out of memory");
    }
    memcpy(in->text, json_string_value(v), in->text_len + 1);
    return 0;
}


int
llm_openai_parse_embeddings(const char *body, size_t len,
    const llm_api_limits *lim, llm_embed_request *req, llm_api_error *err)
{
    int          rc;
    char         param[64];
    size_t       i, n;
    json_t      *root, *input, *v, *fmt, *dims, *model;

    memset(req, 0, sizeof(*req));

    root = llm_api_decode_body(body, len, lim, err);
    if (root == NULL) {
        return -1;
    }

    rc = -1;

    model = json_object_get(root, "model");
    if (model && !json_is_string(model)) {
        llm_api_type_error(err, "model", "a string", model);
        goto done;
    }
    if (model) {
        req->model = strdup(json_string_value(model));
    }

    fmt = json_object_get(root, "encoding_format");
    if (fmt && !json_is_null(fmt)) {
        if (!json_is_string(fmt)
            || (strcmp(json_string_value(fmt), "float") != 0
                && strcmp(json_string_value(fmt), "base64") != 0))
        {
            llm_api_bad_request(err, "invalid_value", "encoding_format",
                                "encoding_format must be \"float\" or "
                                "\"base64\".");
            goto done;
        }
        req->base64 = strcmp(json_string_value(fmt), "base64") == 0;
    }

    dims = json_object_get(root, "dimensions");
    if (dims && !json_is_null(dims)) {
        if (!json_is_integer(dims) || json_integer_value(dims) < 1) {
            llm_api_bad_request(err, "invalid_value", "dimensions",
                                "dimensions must be a positive integer.");
            goto done;
        }
        req->dimensions = (long) json_integer_value(dims);
    }

    input = json_object_get(root, "input");
    if (input == NULL) {
        llm_api_bad_request(err, "missing_required_parameter", "input",
                            "input is required.");
        goto done;
    }

    /* one string, one id list, a list of strings, a list of id lists */
    if (json_is_string(input)
        || (json_is_array(input) && json_array_size(input) > 0
            && json_is_integer(json_array_get(input, 0))))
    {
        n = 1;
    } else if (json_is_array(input)) {
        n = json_array_size(input);
    } else {
        llm_api_type_error(err, "input",
                           "a string, an array of strings or token arrays",
                           input);
        goto done;
    }

    if (n == 0 || n > LLM_EMBED_MAX_INPUTS) {
        llm_api_bad_request(err, "invalid_value", "input",
                            "input must hold 1 to %d items.",
                            LLM_EMBED_MAX_INPUTS);
        goto done;
    }

    req->inputs = calloc(n, sizeof(llm_embed_input));
    if (req->inputs == NULL) {
        llm_api_error_set(err, 500, "server_error", NULL, NULL,
                          "out of memory");
        goto done;
    }
    req->n_inputs = n;

    if (json_is_string(input)) {
        if (parse_text(input, &req->inputs[0], err) != 0) {
            goto done;
        }
    } else if (json_is_integer(json_array_get(input, 0))) {
        if (parse_ids(input, "input", &req->inputs[0], err) != 0) {
            goto done;
        }
    } else {
        json_array_foreach(input, i, v) {
            snprintf(param, sizeof(param), "input[%zu]", i);
            if (json_is_string(v)) {
                if (parse_text(v, &req->inputs[i], err) != 0) {
                    goto done;
                }
            } else if (json_is_array(v)) {
                if (parse_ids(v, param, &req->inputs[i], err) != 0) {
                    goto done;
                }
            } else {
                llm_api_type_error(err, param, "a string or a token array",
                                   v);
                goto done;
            }
        }
    }

    for (i = 0; i < n; i++) {
        if (req->inputs[i].text ? req->inputs[i].text_len == 0
                                : req->inputs[i].n_ids == 0)
        {
            snprintf(param, sizeof(param), n == 1 ? "input" : "input[%zu]", i);
            llm_api_bad_request(err, "invalid_value", param,
                                "%s must not be empty.", param);
            goto done;
        }
    }

    rc = 0;

done:

    json_decref(root);
    if (rc != 0) {
        llm_embed_request_free(req);
    }
    return rc;
}


void
llm_embed_request_free(llm_embed_request *req)
{
    size_t  i;

    for (i = 0; i < req->n_inputs; i++) {
        free(req->inputs[i].text);
        free(req->inputs[i].ids);
    }
    free(req->inputs);
    free(req->model);
    memset(req, 0, sizeof(*req));
}


/* In pieces of 48 bytes (64 characters), through the one encoder. */
static int
put_base64(llm_buf *b, const unsigned char *p, size_t n)
{
    char    out[LLM_BASE64_LEN(48) + 1];
    size_t  k;

    while (n > 0) {
        k = n < 48 ? n : 48;
        if (llm_buf_append(b, out, llm_base64_encode(p, k, out)) != 0) {
            return -1;
        }
        p += k;
        n -= k;
    }
    return 0;
}


int
llm_openai_embeddings_response(llm_buf *b, const char *model,
    const float *vectors, size_t n, size_t dim, int base64,
    long prompt_tokens)
{
    size_t   i, d;
    json_t  *name;
    char    *s;

    /* written by hand: thousands of floats per row, in input order */
    if (llm_buf_puts(b, "{\"object\":\"list\",\"data\":[")) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (llm_buf_printf(b, "%s{\"object\":\"embedding\",\"index\":%zu,"
                              "\"embedding\":", i ? "," : "", i))
        {
            return -1;
        }

        if (base64) {
            if (llm_buf_putc(b, '"')
                || put_base64(b, (const unsigned char *) (vectors + i * dim),
                              dim * sizeof(float))
                || llm_buf_putc(b, '"'))
            {
                return -1;
            }

        } else {
            if (llm_buf_putc(b, '[')) {
                return -1;
            }
            for (d = 0; d < dim; d++) {
                if (llm_buf_printf(b, d ? ",%.9g" : "%.9g",
                                   (double) vectors[i * dim + d]))
                {
                    return -1;
                }
            }
            if (llm_buf_putc(b, ']')) {
                return -1;
            }
        }

        if (llm_buf_putc(b, '}')) {
            return -1;
        }
    }

    name = json_string(model ? model : "");
    s = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    if (s == NULL) {
        return -1;
    }

    d = llm_buf_printf(b, "],\"model\":%s,\"usage\":{\"prompt_tokens\":%ld,"
                          "\"total_tokens\":%ld}}", s, prompt_tokens,
                       prompt_tokens);
    free(s);

    return d ? -1 : 0;
}
