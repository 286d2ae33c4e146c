/* text_completion responses and streams (legacy /v1/completions). */
#include "api/llm_openai_fmt.h"

#include <string.h>

static json_t *
choice_json(const char *text, size_t len, int index, json_t *logprobs,
    llm_finish finish)
{
    json_t *ch = json_object();

    json_object_set_new(ch, "text", llm_api_jstring(text ? text : "",
                                                    text ? len : 0));
    json_object_set_new(ch, "index", json_integer(index));
    json_object_set_new(ch, "logprobs", logprobs ? logprobs : json_null());
    json_object_set_new(ch, "finish_reason",
                        llm_api_jstr_or_null(llm_finish_openai(finish)));
    return ch;
}

int
llm_openai_completion_response(llm_buf *b, const llm_openai_meta *m,
    const llm_result *choices, size_t n, const llm_logprobs_list *logprobs,
    const char *echo, size_t echo_len)
{
    json_t    *root, *arr, *lp, *ch;
    llm_buf    text;
    llm_usage  u;
    size_t     i;
    long       offset;
    int        rc;

    root = llm_openai_envelope_json(m, "text_completion");
    arr = json_array();
    llm_buf_init(&text);
    for (i = 0; i < n; i++) {
        llm_buf_reset(&text);
        if (echo) {
            llm_buf_append(&text, echo, echo_len);
        }
        if (choices[i].content) {
            llm_buf_puts(&text, choices[i].content);
        }
        lp = NULL;
        if (logprobs) {
            offset = echo ? (long) echo_len : 0;
            lp = llm_openai_legacy_logprobs(m, &logprobs[i], &offset);
        }
        ch = choice_json(text.data, text.len, (int) i, lp, choices[i].finish);
        llm_openai_choice_token_ids(ch, &choices[i]);
        json_array_append_new(arr, ch);
    }
    rc = text.failed ? -1 : 0;
    llm_buf_free(&text);
    json_object_set_new(root, "choices", arr);
    u = llm_openai_total_usage(choices, n);
    json_object_set_new(root, "usage", llm_openai_usage_json(&u));
    if (llm_api_dump(b, root) != 0) {
        rc = -1;
    }
    json_decref(root);
    return rc;
}

void
llm_openai_completion_stream_init(llm_openai_completion_stream *s,
    const llm_openai_meta *m, int index, int include_usage, int logprobs)
{
    memset(s, 0, sizeof(*s));
    s->meta = m;
    s->index = index;
    s->include_usage = include_usage;
    s->logprobs = logprobs;
}

static int
chunk(llm_openai_completion_stream *s, llm_buf *b, json_t *choice)
{
    json_t *root = llm_openai_envelope_json(s->meta, "text_completion");
    json_t *arr = json_array();

    json_array_append_new(arr, choice);
    json_object_set_new(root, "choices", arr);
    if (s->include_usage) {
        json_object_set_new(root, "usage", json_null());
    }
    return llm_api_sse(b, NULL, root);
}

int
llm_openai_completion_stream_text(llm_openai_completion_stream *s,
    llm_buf *b, const char *text, size_t len, const llm_logprobs_list *lp)
{
    json_t *lpj = NULL;

    if (s->finished || (len == 0 && !(s->logprobs && lp && lp->n))) {
        return 0;
    }
    if (s->logprobs && lp && lp->n) {
        long offset = s->text_offset;
        lpj = llm_openai_legacy_logprobs(s->meta, lp, &offset);
    }
    s->text_offset += (long) len;
    return chunk(s, b, choice_json(text, len, s->index, lpj,
                                   LLM_FINISH_NONE));
}

int
llm_openai_completion_stream_finish(llm_openai_completion_stream *s,
    llm_buf *b, llm_finish finish)
{
    if (s->finished) {
        return 0;
    }
    s->finished = 1;
    return chunk(s, b, choice_json("", 0, s->index, NULL,
                 finish == LLM_FINISH_NONE ? LLM_FINISH_STOP : finish));
}
