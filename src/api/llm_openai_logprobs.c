/* Logprobs output: token ids -> text through the glue's callback. */
#include "api/llm_openai_fmt.h"

#define TOKEN_BYTES_MAX 256

/* Bytes of one token; n = 0 when the callback is missing or fails. */
static size_t
token_bytes(const llm_openai_meta *m, int32_t id, char *out)
{
    int n;

    if (m->token_bytes == NULL) {
        return 0;
    }
    n = m->token_bytes(m->token_ctx, id, out, TOKEN_BYTES_MAX);
    if (n < 0) {
        return 0;
    }
    return (size_t) n > TOKEN_BYTES_MAX ? TOKEN_BYTES_MAX : (size_t) n;
}

static json_t *
chat_entry(const llm_openai_meta *m, const llm_logprob_entry *e)
{
    char    tb[TOKEN_BYTES_MAX];
    size_t  n, i;
    json_t *o, *bytes;

    n = token_bytes(m, e->id, tb);
    bytes = json_array();
    for (i = 0; i < n; i++) {
        json_array_append_new(bytes, json_integer((unsigned char) tb[i]));
    }
    o = json_object();
    json_object_set_new(o, "token", llm_api_jstring(tb, n));
    json_object_set_new(o, "logprob", llm_api_jlogprob(e->logprob));
    json_object_set_new(o, "bytes", bytes);
    return o;
}

static int
top_count(const llm_openai_meta *m, const llm_token_logprobs *t)
{
    int k = m->top_logprobs < t->n_top ? m->top_logprobs : t->n_top;

    if (k > LLM_MAX_TOP_LOGPROBS) {
        k = LLM_MAX_TOP_LOGPROBS;
    }
    return k < 0 ? 0 : k;
}

json_t *
llm_openai_chat_logprobs(const llm_openai_meta *m, const llm_logprobs_list *lp)
{
    json_t *root, *content, *entry, *top;
    size_t  i;
    int     k, ntop;

    content = json_array();
    for (i = 0; lp && i < lp->n; i++) {
        const llm_token_logprobs *t = &lp->tokens[i];

        entry = chat_entry(m, &t->chosen);
        top = json_array();
        ntop = top_count(m, t);
        for (k = 0; k < ntop; k++) {
            json_array_append_new(top, chat_entry(m, &t->top[k]));
        }
        json_object_set_new(entry, "top_logprobs", top);
        json_array_append_new(content, entry);
    }
    root = json_object();
    json_object_set_new(root, "content", content);
    json_object_set_new(root, "refusal", json_null());
    return root;
}

json_t *
llm_openai_legacy_logprobs(const llm_openai_meta *m,
    const llm_logprobs_list *lp, long *offset)
{
    char    tb[TOKEN_BYTES_MAX];
    json_t *root, *tokens, *lps, *tops, *offs, *top;
    size_t  i, n;
    int     k, ntop;

    tokens = json_array();
    lps = json_array();
    tops = json_array();
    offs = json_array();
    for (i = 0; lp && i < lp->n; i++) {
        const llm_token_logprobs *t = &lp->tokens[i];

        n = token_bytes(m, t->chosen.id, tb);
        json_array_append_new(tokens, llm_api_jstring(tb, n));
        json_array_append_new(lps, llm_api_jlogprob(t->chosen.logprob));
        json_array_append_new(offs, json_integer(*offset));
        *offset += (long) n;

        top = json_object();
        ntop = top_count(m, t);
        for (k = 0; k < ntop; k++) {
            json_t *key;

            n = token_bytes(m, t->top[k].id, tb);
            key = llm_api_jstring(tb, n);   /* keys must be valid UTF-8 */
            if (key) {
                json_object_set_new(top, json_string_value(key),
                                    llm_api_jlogprob(t->top[k].logprob));
                json_decref(key);
            }
        }
        json_array_append_new(tops, top);
    }
    root = json_object();
    json_object_set_new(root, "tokens", tokens);
    json_object_set_new(root, "token_logprobs", lps);
    json_object_set_new(root, "top_logprobs", tops);
    json_object_set_new(root, "text_offset", offs);
    return root;
}
