/*
 * Arguments written as separate key and value texts (qwen3_coder's
 * <parameter=k>v</parameter>, glm4's <arg_key>/<arg_value>) are turned into
 * one JSON object.  String values stream as they are generated; values of
 * other schema types are converted when complete.
 */
#include "parsers/llm_parser_impl.h"

#include <string.h>

void
llm_xargs_init(llm_xargs *x, llm_pbase *pb, int strip_nl, int try_json)
{
    x->pb = pb;
    x->nkeys = 0;
    x->strip_nl = strip_nl;
    x->try_json = try_json;
    x->in_val = 0;
    llm_pbuf_reset(&x->key);
    llm_pbuf_reset(&x->val);
    llm_pbuf_reset(&x->tmp);
}

void
llm_xargs_free(llm_xargs *x)
{
    llm_pbuf_free(&x->key);
    llm_pbuf_free(&x->val);
    llm_pbuf_free(&x->tmp);
}

/* tmp = ("{" | ",") "\"key\":" */
static void
xa_prefix(llm_xargs *x)
{
    llm_pbuf_reset(&x->tmp);
    llm_pbuf_addc(&x->tmp, x->nkeys ? ',' : '{');
    llm_pbuf_addc(&x->tmp, '"');
    llm_pbuf_json_escape(&x->tmp, x->key.p, x->key.len);
    llm_pbuf_add(&x->tmp, "\":", 2);
    x->nkeys++;
}

static void
xa_start_string(llm_xargs *x)
{
    xa_prefix(x);
    llm_pbuf_addc(&x->tmp, '"');
    llm_pb_call_args(x->pb, x->tmp.p, x->tmp.len);
}

/*
 * A value of unknown type that may be JSON is buffered; one whose first
 * byte cannot start JSON is a string and streams from there on.
 */
static void
xa_decide(llm_xargs *x, char c)
{
    x->undecided = 0;
    if (strchr("{[\"-0123456789tfnTFN", c) == NULL) {
        x->is_str = 1;
        xa_start_string(x);
    }
}

void
llm_xargs_begin(llm_xargs *x, const char *key, size_t n)
{
    if (x->in_val) {
        llm_xargs_end(x);
    }
    while (n && llm_is_space(*key)) {
        key++;
        n--;
    }
    while (n && llm_is_space(key[n - 1])) {
        n--;
    }
    llm_pbuf_reset(&x->key);
    llm_pbuf_add(&x->key, key, n);
    llm_pbuf_reset(&x->val);
    x->type = llm_pb_param_type(x->pb, llm_pbuf_str(&x->key));
    x->is_str = (x->type && strcmp(x->type, "string") == 0)
                || (x->type == NULL && !x->try_json);
    x->undecided = (x->type == NULL && x->try_json);
    x->in_val = 1;
    x->first = 1;
    x->nl_held = 0;
    if (x->is_str) {
        xa_start_string(x);
    }
}

static void
xa_out(llm_xargs *x, const char *s, size_t n)
{
    if (x->is_str) {
        llm_pbuf_reset(&x->tmp);
        llm_pbuf_json_escape(&x->tmp, s, n);
        llm_pb_call_args(x->pb, x->tmp.p, x->tmp.len);
    } else {
        llm_pbuf_add(&x->val, s, n);
    }
}

void
llm_xargs_bytes(llm_xargs *x, const char *s, size_t n)
{
    size_t i, from = 0;

    if (!x->in_val || n == 0) {
        return;
    }
    if (x->undecided) {
        xa_decide(x, s[0]);
    }
    if (!x->strip_nl) {
        xa_out(x, s, n);
        return;
    }
    for (i = 0; i < n; i++) {
        if (x->first) {
            x->first = 0;
            if (s[i] == '\n') {
                from = i + 1;
                continue;
            }
        }
        if (s[i] == '\n' || x->nl_held) {
            xa_out(x, s + from, i - from);
            from = i;
            if (x->nl_held) {
                xa_out(x, "\n", 1);
                x->nl_held = 0;
            }
            if (s[i] == '\n') {
                x->nl_held = 1;
                from = i + 1;
            }
        }
    }
    xa_out(x, s + from, n - from);
}

void
llm_xargs_end(llm_xargs *x)
{
    if (!x->in_val) {
        return;
    }
    x->in_val = 0;
    if (x->is_str) {
        llm_pb_call_args(x->pb, "\"", 1);
        return;
    }
    xa_prefix(x);
    llm_typed_value(&x->tmp, x->val.p ? x->val.p : "", x->val.len, x->type,
                    x->try_json);
    llm_pb_call_args(x->pb, x->tmp.p, x->tmp.len);
}

void
llm_xargs_close(llm_xargs *x)
{
    llm_xargs_end(x);
    if (x->nkeys) {
        llm_pb_call_args(x->pb, "}", 1);
    }
}
