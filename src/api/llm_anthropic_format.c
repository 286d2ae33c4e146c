/* Anthropic message bodies and streaming events. */
#include "api/llm_anthropic.h"
#include "api/llm_api_json.h"

#include <string.h>

/* Tool ids: the parsers mint "call_X"; Anthropic clients expect "toolu_X". */
static json_t *
tool_id(const char *id)
{
    char buf[160];

    if (id == NULL || id[0] == '\0') {
        llm_random_id(buf, sizeof(buf), "toolu_", 24);
    } else if (strncmp(id, "toolu_", 6) == 0) {
        return llm_api_jstr_or_null(id);
    } else {
        snprintf(buf, sizeof(buf), "toolu_%.140s",
                 strncmp(id, "call_", 5) == 0 ? id + 5 : id);
    }
    return llm_api_jstr_or_null(buf);
}

static json_t *
usage_json(const llm_usage *u, int with_output)
{
    json_t *o = json_object();
    long    cached = u ? u->cached_tokens : 0;
    long    created = u ? u->cache_creation_tokens : 0;
    long    prompt = u ? u->prompt_tokens : 0;

    /* the three add up to the prompt: read, written at breakpoints, the rest */
    json_object_set_new(o, "input_tokens",
                        json_integer(prompt > cached + created
                                     ? prompt - cached - created : 0));
    json_object_set_new(o, "cache_creation_input_tokens",
                        json_integer(created));
    json_object_set_new(o, "cache_read_input_tokens", json_integer(cached));
    json_object_set_new(o, "output_tokens",
                        json_integer(with_output && u ? u->completion_tokens
                                                      : 0));
    return o;
}

static json_t *
stop_sequence_json(llm_finish f, const char *seq)
{
    return f == LLM_FINISH_STOP_SEQ && seq ? llm_api_jstr_or_null(seq)
                                           : json_null();
}

/* Tool-call arguments as an object; text that is not one becomes {}. */
static json_t *
input_json(const char *args)
{
    json_t *v = args ? json_loads(args, 0, NULL) : NULL;

    if (!json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

static json_t *
message_json(const llm_anthropic_meta *m, json_t *content)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", llm_api_jstr_or_null(m->id));
    json_object_set_new(o, "type", json_string("message"));
    json_object_set_new(o, "role", json_string("assistant"));
    json_object_set_new(o, "model", llm_api_jstr_or_null(m->model));
    json_object_set_new(o, "content", content);
    return o;
}

int
llm_anthropic_message_response(llm_buf *b, const llm_anthropic_meta *m,
    const llm_result *r)
{
    json_t *root, *content, *blk;
    size_t  i;
    int     rc;
    char    sig[LLM_THINKING_SIG_LEN + 1];

    content = json_array();
    if (r->reasoning && r->reasoning[0]) {
        llm_thinking_sign(m->thinking_key, r->reasoning, strlen(r->reasoning),
                          sig);
        blk = json_object();
        json_object_set_new(blk, "type", json_string("thinking"));
        json_object_set_new(blk, "thinking",
                            llm_api_jstr_or_null(r->reasoning));
        json_object_set_new(blk, "signature", json_string(sig));
        json_array_append_new(content, blk);
    }
    if (r->content && r->content[0]) {
        blk = json_object();
        json_object_set_new(blk, "type", json_string("text"));
        json_object_set_new(blk, "text", llm_api_jstr_or_null(r->content));
        json_array_append_new(content, blk);
    }
    for (i = 0; i < r->n_tool_calls; i++) {
        blk = json_object();
        json_object_set_new(blk, "type", json_string("tool_use"));
        json_object_set_new(blk, "id", tool_id(r->tool_calls[i].id));
        json_object_set_new(blk, "name",
                            llm_api_jstr_or_null(r->tool_calls[i].name));
        json_object_set_new(blk, "input",
                            input_json(r->tool_calls[i].arguments));
        json_array_append_new(content, blk);
    }
    root = message_json(m, content);
    json_object_set_new(root, "stop_reason",
                        llm_api_jstr_or_null(llm_finish_anthropic(
                            r->finish == LLM_FINISH_NONE ? LLM_FINISH_STOP
                                                         : r->finish)));
    json_object_set_new(root, "stop_sequence",
                        stop_sequence_json(r->finish, r->stop_sequence));
    json_object_set_new(root, "usage", usage_json(&r->usage, 1));
    rc = llm_api_dump(b, root);
    json_decref(root);
    return rc;
}

int
llm_anthropic_count_tokens_json(llm_buf *b, long n)
{
    return llm_buf_printf(b, "{\"input_tokens\":%ld}", n);
}

/* ---- streaming ---- */

void
llm_anthropic_stream_init(llm_anthropic_stream *s,
    const llm_anthropic_meta *m)
{
    memset(s, 0, sizeof(*s));
    s->meta = m;
    s->open_tool = -1;
}

/* event: NAME / data: {"type":NAME, ...}; takes obj. */
static int
event(llm_buf *b, const char *name, json_t *obj)
{
    json_t *o = json_object();
    json_t *v;
    const char *k;

    json_object_set_new(o, "type", json_string(name));
    json_object_foreach(obj, k, v) {
        json_object_set(o, k, v);
    }
    json_decref(obj);
    return llm_api_sse(b, name, o);
}

int
llm_anthropic_stream_start(llm_anthropic_stream *s, llm_buf *b,
    const llm_usage *usage)
{
    json_t *msg, *o;

    if (s->started) {
        return 0;
    }
    s->started = 1;
    msg = message_json(s->meta, json_array());
    json_object_set_new(msg, "stop_reason", json_null());
    json_object_set_new(msg, "stop_sequence", json_null());
    json_object_set_new(msg, "usage", usage_json(usage, 0));
    o = json_object();
    json_object_set_new(o, "message", msg);
    return event(b, "message_start", o);
}

static int
block_stop(llm_anthropic_stream *s, llm_buf *b)
{
    json_t *o, *d;
    char    sig[LLM_THINKING_SIG_LEN + 1];

    if (s->open == LLM_ANTHROPIC_BLOCK_NONE) {
        return 0;
    }
    if (s->open == LLM_ANTHROPIC_BLOCK_THINKING) {
        /* thinking blocks end with their signature, over the deltas' text */
        llm_thinking_signer_final(&s->signer, sig);
        d = json_object();
        json_object_set_new(d, "type", json_string("signature_delta"));
        json_object_set_new(d, "signature", json_string(sig));
        o = json_object();
        json_object_set_new(o, "index", json_integer(s->n_blocks - 1));
        json_object_set_new(o, "delta", d);
        event(b, "content_block_delta", o);
    }
    s->open = LLM_ANTHROPIC_BLOCK_NONE;
    s->open_tool = -1;
    o = json_object();
    json_object_set_new(o, "index", json_integer(s->n_blocks - 1));
    return event(b, "content_block_stop", o);
}

/* Close what is open and start a block; a ping follows the first one. */
static int
block_start(llm_anthropic_stream *s, llm_buf *b, int kind, json_t *blk)
{
    json_t *o;

    block_stop(s, b);
    o = json_object();
    json_object_set_new(o, "index", json_integer(s->n_blocks));
    json_object_set_new(o, "content_block", blk);
    event(b, "content_block_start", o);
    s->n_blocks++;
    s->open = kind;
    if (!s->pinged) {
        s->pinged = 1;
        event(b, "ping", json_object());
    }
    return b->failed ? -1 : 0;
}

static int
delta(llm_anthropic_stream *s, llm_buf *b, const char *type, const char *key,
    const char *text, size_t len)
{
    json_t *o, *d;

    d = json_object();
    json_object_set_new(d, "type", json_string(type));
    json_object_set_new(d, key, llm_api_jstring(text, len));
    o = json_object();
    json_object_set_new(o, "index", json_integer(s->n_blocks - 1));
    json_object_set_new(o, "delta", d);
    return event(b, "content_block_delta", o);
}

int
llm_anthropic_stream_event(llm_anthropic_stream *s, llm_buf *b,
    const llm_event *ev)
{
    json_t *blk;

    if (s->finished) {
        return 0;
    }
    if (!s->started && llm_anthropic_stream_start(s, b, NULL) != 0) {
        return -1;
    }
    switch (ev->type) {
    case LLM_EV_CONTENT:
        if (ev->len == 0) {
            return 0;
        }
        if (s->open != LLM_ANTHROPIC_BLOCK_TEXT) {
            blk = json_object();
            json_object_set_new(blk, "type", json_string("text"));
            json_object_set_new(blk, "text", json_string(""));
            block_start(s, b, LLM_ANTHROPIC_BLOCK_TEXT, blk);
        }
        return delta(s, b, "text_delta", "text", ev->text, ev->len);
    case LLM_EV_REASONING:
        if (ev->len == 0) {
            return 0;
        }
        if (s->open != LLM_ANTHROPIC_BLOCK_THINKING) {
            blk = json_object();
            json_object_set_new(blk, "type", json_string("thinking"));
            json_object_set_new(blk, "thinking", json_string(""));
            json_object_set_new(blk, "signature", json_string(""));
            block_start(s, b, LLM_ANTHROPIC_BLOCK_THINKING, blk);
            llm_thinking_signer_init(&s->signer, s->meta->thinking_key);
        }
        llm_thinking_signer_update(&s->signer, ev->text, ev->len);
        return delta(s, b, "thinking_delta", "thinking", ev->text, ev->len);
    case LLM_EV_TOOL_BEGIN:
        blk = json_object();
        json_object_set_new(blk, "type", json_string("tool_use"));
        json_object_set_new(blk, "id", tool_id(ev->id));
        json_object_set_new(blk, "name", llm_api_jstr_or_null(ev->name));
        json_object_set_new(blk, "input", json_object());
        block_start(s, b, LLM_ANTHROPIC_BLOCK_TOOL, blk);
        s->open_tool = ev->index;
        return b->failed ? -1 : 0;
    case LLM_EV_TOOL_ARGS:
        if (ev->len == 0 || s->open != LLM_ANTHROPIC_BLOCK_TOOL
            || s->open_tool != ev->index)
        {
            return 0;     /* arguments of a call that is not open */
        }
        return delta(s, b, "input_json_delta", "partial_json", ev->text,
                     ev->len);
    case LLM_EV_TOOL_END:
        if (s->open == LLM_ANTHROPIC_BLOCK_TOOL && s->open_tool == ev->index) {
            return block_stop(s, b);
        }
        return 0;
    }
    return 0;
}

int
llm_anthropic_stream_finish(llm_anthropic_stream *s, llm_buf *b,
    llm_finish finish, const char *stop_sequence, const llm_usage *usage)
{
    json_t *o, *d, *u;

    if (s->finished) {
        return 0;
    }
    if (!s->started) {
        llm_anthropic_stream_start(s, b, usage);
    }
    block_stop(s, b);
    s->finished = 1;
    d = json_object();
    json_object_set_new(d, "stop_reason", llm_api_jstr_or_null(
        llm_finish_anthropic(finish == LLM_FINISH_NONE ? LLM_FINISH_STOP
                                                       : finish)));
    json_object_set_new(d, "stop_sequence",
                        stop_sequence_json(finish, stop_sequence));
    /* the whole usage, as Anthropic's message_delta carries it: the
     * message_start went out before the prefix cache was consulted, so
     * this is where cache reads (and the uncached input) are known */
    u = usage_json(usage, 1);
    o = json_object();
    json_object_set_new(o, "delta", d);
    json_object_set_new(o, "usage", u);
    event(b, "message_delta", o);
    event(b, "message_stop", json_object());
    return b->failed ? -1 : 0;
}

int
llm_anthropic_stream_ping(llm_buf *b)
{
    return event(b, "ping", json_object());
}


int
llm_anthropic_stream_error(llm_buf *b, const llm_api_error *err)
{
    llm_buf_puts(b, "event: error\ndata: ");
    llm_anthropic_error_json(b, err, NULL);
    llm_buf_puts(b, "\n\n");
    return b->failed ? -1 : 0;
}
