/*
 * The session below the glue, after the prompt: sampler parameters
 * (request over generation_config.json over the protocol's defaults), the
 * new-token limit and its 400s, and each choice's pipeline (token ->
 * detokenizer -> stream processor -> formatter bytes) for OpenAI chat,
 * completions and Anthropic messages, with stop strings and the response
 * size limit.  No nginx, no scheduler: tokens are fed as a sequence would.
 */
#define _GNU_SOURCE
#include "tap.h"

#include "chat/llm_reply.h"
#include "chat/llm_session.h"

#define MODEL "models/ngxllm-tiny"

static llm_tokenizer *tok;

static int
has(const llm_buf *b, const char *s)
{
    return b->len && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

static int
parse(llm_api_kind api, const char *body, llm_request *req)
{
    llm_api_error   err;
    llm_api_limits  lim;

    llm_api_limits_default(&lim);
    llm_request_init(req);
    memset(&err, 0, sizeof(err));
    if (llm_api_parse_request(api, body, strlen(body), &lim, req, &err) != 0) {
        diag(err.message);
        return -1;
    }
    return 0;
}

static void
test_sampler_params(void)
{
    llm_request         req;
    llm_sampler_params  sp;
    llm_model_info      info;

    memset(&info, 0, sizeof(info));
    info.has_temperature = 1;
    info.temperature = 0.3;
    info.has_top_k = 1;
    info.top_k = 20;
    info.has_top_p = 1;
    info.top_p = 0.9;
    info.has_repetition_penalty = 1;
    info.repetition_penalty = 1.05;

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
          "\"top_p\":0.5,\"seed\":7,\"n\":2,\"logit_bias\":{\"9\":-100}}", &req);

    llm_session_sampler_params(&req, &info, 1, &sp);
    is_near(sp.temperature, 0.3, 1e-6, "unset temperature: the model's generation_config.json");
    is_int(sp.top_k, 20, "unset top_k: the model's");
    is_near(sp.top_p, 0.5, 1e-6, "top_p the request set wins over the model's 0.9");
    is_near(sp.repetition_penalty, 1.05, 1e-6, "unset repetition_penalty: the model's");
    ok(sp.has_seed && sp.seed == 8, "choice 1 samples with seed + 1 (%llu)", (unsigned long long) sp.seed);
    ok(sp.n_logit_bias == 1 && sp.logit_bias[0].id == 9 && sp.logit_bias[0].bias == -100,
       "logit_bias from the request's parsed entries");

    llm_session_sampler_params(&req, NULL, 0, &sp);
    ok(sp.temperature == 1.0f && sp.top_k == 0 && sp.repetition_penalty == 1.0f,
       "a model without defaults: the protocol's (temperature 1, no top_k)");
    llm_request_free(&req);

    parse(LLM_API_MESSAGES, "{\"model\":\"m\",\"max_tokens\":4,\"temperature\":0,"
          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req);
    llm_session_sampler_params(&req, &info, 0, &sp);
    ok(sp.temperature == 0.0f && sp.top_k == 20, "Anthropic temperature 0 set: greedy over the model's 0.3");
    llm_request_free(&req);
}

static void
test_max_new_tokens(void)
{
    size_t              max_new = 0;
    int                 rc;
    llm_request         req;
    llm_api_error       err;
    llm_session_limits  lim = { 100, 50, 16 * 1024 * 1024, NULL };

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":30}", &req);
    /* called before ok(): its arguments, max_new among them, are read in no set order */
    rc = llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 30,
       "max_tokens under the server's cap and the room: as asked (%zu)", max_new);
    ok(llm_session_max_new_tokens(&req, 80, &lim, &max_new, &err) == 0 && max_new == 20,
       "capped by the room the context leaves");
    memset(&err, 0, sizeof(err));
    ok(llm_session_max_new_tokens(&req, 100, &lim, &max_new, &err) == -1 && err.status == 400
       && strcmp(err.code, "context_length_exceeded") == 0 && strcmp(err.param, "messages") == 0
       && strstr(err.message, "maximum context length is 100 tokens. However, your prompt has 100 tokens") != NULL,
       "a prompt that fills the context: 400 context_length_exceeded on messages");
    ok(llm_session_max_new_tokens(&req, 0, &lim, &max_new, &err) == -1 && strcmp(err.param, "prompt") == 0
       && strstr(err.message, "empty") != NULL, "an empty prompt is a 400");
    llm_request_free(&req);

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req);
    ok(llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err) == 0 && max_new == 50,
       "no max_tokens: the server's llm_max_tokens");
    lim.max_response_size = 64;
    ok(llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err) == 0 && max_new > 0 && max_new < 50,
       "the server's default is lowered to what llm_max_response_size holds");
    llm_request_free(&req);

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":50,"
          "\"logprobs\":true,\"top_logprobs\":20}", &req);
    memset(&err, 0, sizeof(err));
    ok(llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err) == -1 && err.status == 400
       && strcmp(err.param, "max_tokens") == 0 && strstr(err.message, "with logprobs") != NULL,
       "a max_tokens the client asked for that cannot be held is its 400: %s", err.message);
    llm_request_free(&req);

    /* issue 21 item 7: above an explicit cap a 400 naming it, never a clamp */
    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":51}", &req);
    lim.max_response_size = 16 * 1024 * 1024;
    lim.model = "tiny";
    memset(&err, 0, sizeof(err));
    ok(llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err) == -1 && err.status == 400
       && strcmp(err.param, "max_tokens") == 0
       && strcmp(err.message, "max_tokens is 51, more than this server allows for model "
                 "'tiny' (llm_max_tokens 50).") == 0,
       "max_tokens above llm_max_tokens: a 400 naming the cap: %s", err.message);
    lim.max_tokens = 0;
    max_new = 0;
    rc = llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 51, "no llm_max_tokens: as asked (%zu)", max_new);
    rc = llm_session_max_new_tokens(&req, 80, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 20, "no llm_max_tokens: lowered to the room (%zu)", max_new);
    llm_request_free(&req);

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req);
    rc = llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 90, "neither max_tokens nor llm_max_tokens: all the room (%zu)", max_new);
    llm_request_free(&req);

    parse(LLM_API_COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"x\"}", &req);
    rc = llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 16, "completions without max_tokens: the protocol's 16 (%zu)", max_new);
    lim.max_tokens = 3;
    rc = llm_session_max_new_tokens(&req, 10, &lim, &max_new, &err);
    ok(rc == 0 && max_new == 3, "an llm_max_tokens under 16 lowers that default (%zu)", max_new);
    lim.max_tokens = 50;
    ok(llm_session_max_new_tokens(&req, 100, &lim, &max_new, &err) == -1
       && strcmp(err.param, "prompt") == 0, "completions: context_length_exceeded names prompt");
    llm_request_free(&req);
}

/* Feeds text's tokens to choice c; the last status. */
static llm_reply_status
feed(llm_reply *r, size_t c, const char *text)
{
    int32_t          *ids;
    size_t            n, i;
    llm_reply_status  st = LLM_REPLY_MORE;

    if (llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n) != 0) {
        return LLM_REPLY_NO_MEMORY;
    }
    for (i = 0; i < n && st == LLM_REPLY_MORE; i++) {
        st = llm_reply_token(r, c, ids[i], NULL);
    }
    free(ids);
    return st;
}

static llm_reply *
make(const llm_request *req, size_t max_held, const char *echo)
{
    llm_reply_config  cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.req = req;
    cfg.tok = tok;
    cfg.tool = llm_tool_parser_find("hermes");
    cfg.reasoning = llm_reasoning_parser_find("think");
    llm_reply_parsers(req, &cfg.tool, &cfg.reasoning);
    cfg.model = "tiny";
    cfg.fingerprint = "fp";
    cfg.created = 1700000000;
    cfg.echo = echo ? strdup(echo) : NULL;
    cfg.echo_len = echo ? strlen(echo) : 0;
    cfg.n_prompt = 5;
    cfg.max_held = max_held;
    return llm_reply_create(&cfg);
}

#define TOOLS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\"," \
              "\"parameters\":{\"type\":\"object\"}}}]"
#define OUTPUT "<think>hm</think>Hi<tool_call>{\"name\":\"get\",\"arguments\":{\"c\":1}}</tool_call>"

static void
test_openai_stream(void)
{
    llm_request  req;
    llm_reply   *r;
    llm_buf     *out;

    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":true,"
          "\"stream_options\":{\"include_usage\":true}," TOOLS "}", &req);
    r = make(&req, 1 << 20, NULL);
    if (!ok(r != NULL, "an OpenAI chat reply")) {
        return;
    }
    out = llm_reply_out(r);
    ok(strncmp(llm_reply_id(r), "chatcmpl-", 9) == 0, "its id has the protocol's prefix");
    ok(llm_reply_start(r) == 0 && has(out, "\"role\":\"assistant\""), "the stream opens with the role");
    llm_buf_reset(out);

    ok(llm_reply_prompt_read(r, 2, 0) == 0 && out->len == 0,
       "OpenAI says nothing when the prompt has been read");
    is_int(feed(r, 0, OUTPUT), LLM_REPLY_MORE, "tokens flow through the pipeline");
    ok(has(out, "\"reasoning_content\":\"h") && !has(out, "\"content\":\"hm"), "reasoning split by the think parser");
    ok(has(out, "\"content\":\"Hi\""), "content delta");
    ok(has(out, "\"tool_calls\"") && has(out, "\"name\":\"get\""), "tool call deltas by the hermes parser");
    ok(!has(out, "<tool_call>") && !has(out, "<think>"), "no markers leak");
    llm_buf_reset(out);

    is_int(llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, 9), 1, "the only choice ended: all done");
    ok(has(out, "\"finish_reason\":\"tool_calls\""), "finish_reason tool_calls");
    llm_buf_reset(out);
    is_int(llm_reply_completion_tokens(r), 9, "completion tokens counted");
    ok(llm_reply_finish(r, NULL) == 0 && has(out, "\"prompt_tokens\":5")
       && has(out, "\"completion_tokens\":9") && has(out, "data: [DONE]"),
       "usage chunk, then [DONE]");
    ok(has(out, "\"cached_tokens\":2"), "with the cache reads prompt_read gave");
    llm_reply_free(r);
    llm_request_free(&req);
}

/* Tokens of text under the reply's tokenizer. */
static size_t
n_tokens(const char *text)
{
    int32_t *ids;
    size_t   n;

    if (llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n) != 0) {
        return 0;
    }
    free(ids);
    return n;
}

/*
 * The reasoning tokens of text, counted independently of the reply: a token
 * counts when it starts after the end of open and before the end of close
 * (the close marker's tokens count, the open marker's do not).
 */
static size_t
n_reasoning(const char *text, const char *open, const char *close)
{
    int32_t  *ids;
    size_t    n, i, at = 0, from, to, count = 0;
    char      piece[256];
    int       len;

    from = (size_t) (strstr(text, open) - text) + strlen(open);
    to = (size_t) (strstr(text, close) - text) + strlen(close);
    if (llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n) != 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        count += at >= from && at < to;
        len = llm_tokenizer_is_added(tok, ids[i])
              ? (int) strlen(llm_tokenizer_piece(tok, ids[i]))
              : llm_tokenizer_token_bytes(tok, ids[i], piece, sizeof(piece));
        at += len > 0 ? (size_t) len : 0;
    }
    free(ids);
    return count;
}

/* reasoning_tokens of a chat reply whose choices write t0 and t1. */
static long
chat_reasoning_tokens(const char *body, int starts_in_reasoning,
    const char *t0, const char *t1)
{
    long               rt;
    char              *usage;
    json_t            *o;
    llm_buf           *out;
    llm_reply         *r;
    llm_request        req;
    llm_reply_config   cfg;

    parse(LLM_API_CHAT, body, &req);
    memset(&cfg, 0, sizeof(cfg));
    cfg.req = &req;
    cfg.tok = tok;
    cfg.reasoning = llm_reasoning_parser_find("think");
    cfg.starts_in_reasoning = starts_in_reasoning;
    cfg.model = "tiny";
    cfg.n_prompt = 5;
    cfg.max_held = 1 << 20;
    r = llm_reply_create(&cfg);
    if (r == NULL) {
        llm_request_free(&req);
        return -1;
    }
    out = llm_reply_out(r);
    llm_reply_start(r);
    feed(r, 0, t0);
    llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, n_tokens(t0));
    feed(r, 1, t1);
    llm_reply_choice_done(r, 1, LLM_FINISH_STOP, NULL, n_tokens(t1));
    llm_reply_finish(r, NULL);

    /* the body, or the stream's last chunk: the usage one */
    usage = strstr(out->data, "{\"id\"");
    while (req.stream && usage && strstr(usage + 1, "data: {\"id\"")) {
        usage = strstr(usage + 1, "data: {\"id\"") + 6;
    }
    o = usage ? json_loadb(usage, strcspn(usage, "\n"), 0, NULL) : NULL;
    rt = (long) json_integer_value(json_object_get(json_object_get(
             json_object_get(o, "usage"), "completion_tokens_details"),
             "reasoning_tokens"));
    if (json_object_get(json_object_get(o, "usage"),
                        "completion_tokens_details") == NULL)
    {
        rt = -1;
    }
    json_decref(o);
    llm_reply_free(r);
    llm_request_free(&req);
    return rt;
}

/* Chat usage: completion_tokens_details.reasoning_tokens, every choice's,
 * exactly the tokens inside their reasoning blocks. */
static void
test_chat_reasoning_usage(void)
{
    const char  *a = "<think>hm, let me see</think>Hi there",
                *b = "<think>x</think>\n\nHello",
                *open = "So the answer is 4.</think>Four.";
    size_t       want = n_reasoning(a, "<think>", "</think>")
                        + n_reasoning(b, "<think>", "</think>");

    ok(want >= 4, "the two think blocks hold %zu tokens", want);
    is_int(chat_reasoning_tokens("{\"messages\":[{\"role\":\"user\","
               "\"content\":\"x\"}],\"n\":2}", 0, a, b), (long) want,
           "chat: reasoning_tokens of both choices, exactly");
    is_int(chat_reasoning_tokens("{\"messages\":[{\"role\":\"user\","
               "\"content\":\"x\"}],\"n\":2,\"stream\":true,"
               "\"stream_options\":{\"include_usage\":true}}", 0, a, b),
           (long) want, "chat stream: the usage chunk says the same");
    is_int(chat_reasoning_tokens("{\"messages\":[{\"role\":\"user\","
               "\"content\":\"x\"}],\"n\":2}", 1, open, open),
           (long) (2 * n_reasoning(open, "", "</think>")),
           "a prompt that opened the block: from the first token to the close");
    is_int(chat_reasoning_tokens("{\"messages\":[{\"role\":\"user\","
               "\"content\":\"x\"}],\"n\":2}", 0, "Hi", "Hello there"),
           0, "no reasoning: 0");
}

/* The Responses API through the same pipeline; usage counts the tokens
 * that reasoned. */
static void
test_responses_body(void)
{
    llm_request  req;
    llm_reply   *r;
    llm_buf     *out;
    size_t       n_all = n_tokens(OUTPUT),
                 n_think = n_reasoning(OUTPUT, "<think>", "</think>");
    json_t      *o, *u;
    long         rt;

    parse(LLM_API_RESPONSES, "{\"input\":\"x\",\"tools\":[{\"type\":"
          "\"function\",\"name\":\"get\",\"parameters\":{\"type\":"
          "\"object\"}}]}", &req);
    r = make(&req, 1 << 20, NULL);
    if (!ok(r != NULL, "a Responses reply")) {
        return;
    }
    ok(strncmp(llm_reply_id(r), "resp_", 5) == 0, "its id is resp_...");
    out = llm_reply_out(r);
    is_int(feed(r, 0, OUTPUT), LLM_REPLY_MORE, "tokens flow");
    llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, n_all);
    ok(llm_reply_finish(r, NULL) == 0, "the response body");
    o = json_loadb(out->data, out->len, 0, NULL);
    u = json_object_get(o, "usage");
    rt = (long) json_integer_value(json_object_get(json_object_get(u,
             "output_tokens_details"), "reasoning_tokens"));
    is_int(json_integer_value(json_object_get(u, "output_tokens")), n_all,
           "output_tokens: every generated token");
    ok(n_think >= 2 && (size_t) rt == n_think,
       "reasoning_tokens: %ld, the %zu tokens inside the think block", rt,
       n_think);
    ok(strstr(out->data, "\"type\":\"function_call\"") != NULL
       && strstr(out->data, "\"name\":\"get\"") != NULL,
       "the call is a function_call item");
    json_decref(o);
    llm_reply_free(r);
    llm_request_free(&req);

    parse(LLM_API_RESPONSES, "{\"input\":\"x\"}", &req);
    r = make(&req, 1 << 20, NULL);
    out = llm_reply_out(r);
    feed(r, 0, "Hi there");
    llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, n_tokens("Hi there"));
    llm_reply_finish(r, NULL);
    ok(strstr(out->data, "\"reasoning_tokens\":0}") != NULL,
       "no reasoning: reasoning_tokens 0");
    llm_reply_free(r);
    llm_request_free(&req);
}

static void
test_anthropic_body(void)
{
    llm_request  req;
    llm_reply   *r;
    llm_buf     *out;
    llm_api_error err;

    parse(LLM_API_MESSAGES, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
          "\"content\":\"x\"}],\"tools\":[{\"name\":\"get\",\"input_schema\":{\"type\":\"object\"}}]}", &req);
    r = make(&req, 1 << 20, NULL);
    if (!ok(r != NULL, "an Anthropic reply")) {
        return;
    }
    out = llm_reply_out(r);
    feed(r, 0, OUTPUT);
    is_int(out->len, 0, "not streaming: nothing written per token");
    llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, 9);
    ok(llm_reply_finish(r, NULL) == 0, "the body is written");
    ok(has(out, "\"type\":\"thinking\"") && has(out, "\"type\":\"tool_use\"")
       && has(out, "\"stop_reason\":\"tool_use\"") && has(out, "\"input\":{\"c\":1}"),
       "thinking, tool_use and stop_reason in Anthropic's shape");
    ok(strncmp(llm_reply_id(r), "msg_", 4) == 0, "msg_ id");

    llm_reply_failure(r, "boom", &err);
    ok(err.status == 500 && strcmp(err.type, "api_error") == 0
       && strcmp(err.message, "Generation failed: boom") == 0, "a failure is Anthropic's api_error 500");
    llm_reply_free(r);
    llm_request_free(&req);
}

/*
 * A streamed Anthropic reply opens with message_start only once the prompt
 * has been read: its usage has the cache reads and writes, as message_delta's.
 */
static void
test_anthropic_stream(void)
{
    llm_request  req;
    llm_reply   *r;
    llm_buf     *out;
    const char  *start_usage = "\"usage\":{\"input_tokens\":1,"
                               "\"cache_creation_input_tokens\":1,"
                               "\"cache_read_input_tokens\":3,";

    parse(LLM_API_MESSAGES, "{\"model\":\"m\",\"max_tokens\":9,\"stream\":true,"
          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req);
    r = make(&req, 1 << 20, NULL);
    if (!ok(r != NULL, "a streamed Anthropic reply")) {
        return;
    }
    out = llm_reply_out(r);
    ok(llm_reply_start(r) == 0 && out->len == 0, "nothing at submit: the cache reads are not known");
    ok(llm_reply_keepalive(r) == 0 && has(out, "event: ping") && !has(out, "message_start"),
       "a queued stream gets pings");
    llm_buf_reset(out);
    ok(llm_reply_prompt_read(r, 3, 1) == 0 && strncmp(out->data, "event: message_start", 20) == 0
       && has(out, start_usage) && has(out, "\"output_tokens\":0}"),
       "message_start when the prompt was read: 3 read, 1 written, 1 input of 5");
    llm_buf_reset(out);
    ok(llm_reply_prompt_read(r, 4, 0) == 0 && out->len == 0, "once: a second call writes nothing");
    feed(r, 0, "Hi");
    ok(has(out, "content_block_start") && !has(out, "message_start"), "events follow without a second start");
    llm_reply_choice_done(r, 0, LLM_FINISH_STOP, NULL, 2);
    llm_buf_reset(out);
    ok(llm_reply_finish(r, NULL) == 0 && has(out, "event: message_delta")
       && has(out, start_usage) && has(out, "\"output_tokens\":2}"),
       "message_delta repeats the prompt's usage with the output tokens");
    llm_reply_free(r);
    llm_request_free(&req);
}

static void
test_stop_and_limits(void)
{
    llm_request  req;
    llm_reply   *r;
    llm_buf     *out;

    /* completions: a stop string, echo, two choices */
    parse(LLM_API_COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"Once\",\"echo\":true,\"n\":2,"
          "\"stop\":[\"END\"]}", &req);
    r = make(&req, 1 << 20, "Once");
    if (!ok(r != NULL && llm_reply_n_choices(r) == 2, "a completions reply of two choices")) {
        return;
    }
    out = llm_reply_out(r);
    is_int(feed(r, 1, " upon a time END and more"), LLM_REPLY_STOP, "a stop string asks to finish the sequence");
    is_int(feed(r, 0, " there was"), LLM_REPLY_MORE, "the other choice goes on");
    is_int(llm_reply_choice_done(r, 1, LLM_FINISH_STOP_SEQ, NULL, 6), 0, "one of two choices done");
    ok(llm_reply_choice_is_done(r, 1) && !llm_reply_choice_is_done(r, 0), "which one");
    is_int(llm_reply_choice_done(r, 1, LLM_FINISH_STOP_SEQ, NULL, 6), 0, "ending it twice changes nothing");
    is_int(llm_reply_choice_done(r, 0, LLM_FINISH_LENGTH, NULL, 3), 1, "both done");
    llm_reply_finish(r, NULL);
    ok(has(out, "\"text\":\"Once upon a time \"") && !has(out, "END"),
       "echo first, the text up to the stop string, never the stop string");
    ok(has(out, "\"finish_reason\":\"length\"") && has(out, "\"finish_reason\":\"stop\""),
       "each choice keeps its finish_reason");
    llm_reply_free(r);
    llm_request_free(&req);

    /* the response size limit */
    parse(LLM_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &req);
    r = make(&req, 12, NULL);
    is_int(feed(r, 0, "abcdefghijklmnopqrstuvwxyz"), LLM_REPLY_FULL,
           "past max_held bytes the reply asks to end every choice");
    llm_reply_free(r);
    llm_request_free(&req);
}

int
main(void)
{
    char  err[512];

    test_sampler_params();
    test_max_new_tokens();

    tok = llm_tokenizer_load(MODEL, err, sizeof(err));
    if (!ok(tok != NULL, "the default model's tokenizer loads")) {
        diag(err);
        return done_testing();
    }
    test_openai_stream();
    test_anthropic_body();
    test_anthropic_stream();
    test_responses_body();
    test_chat_reasoning_usage();
    test_stop_and_limits();
    llm_tokenizer_free(tok);
    return done_testing();
}
