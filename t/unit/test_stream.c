/* Stream processor: reasoning split, stop strings, whitespace, UTF-8. */
#include "test_parsers_harness.h"

static int
llm_is_space_t(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"," \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]"

static const tp_case cases[] = {
    { .name = "think then answer", .reasoning = "think",
      .text = "<think>\nThe user greets me.\n</think>\n\nHello there!",
      .reasoning_text = "The user greets me.", .content = "Hello there!",
      .finish = LLM_FINISH_STOP },
    { .name = "empty think block (thinking off)", .reasoning = "think",
      .text = "<think>\n\n</think>\n\nHi.", .content = "Hi." },
    { .name = "prompt opened <think>", .reasoning = "think", .starts_in_reasoning = 1,
      .text = "Let me think about 2+2.\n</think>\n\n4",
      .reasoning_text = "Let me think about 2+2.", .content = "4" },
    { .name = "starts inside, never closed", .reasoning = "think", .starts_in_reasoning = 1,
      .text = "Still thinking when cut <thi", .reason = LLM_FINISH_LENGTH,
      .reasoning_text = "Still thinking when cut <thi", .finish = LLM_FINISH_LENGTH },
    { .name = "<think> later in an answer is text", .reasoning = "think",
      .text = "Use <think> tags: <think>x</think>.", .content = "Use <think> tags: <think>x</think>." },
    { .name = "one block only", .reasoning = "think",
      .text = "<think>a</think>b<think>c</think>", .reasoning_text = "a", .content = "b<think>c</think>" },
    { .name = "no reasoning parser keeps tags", .text = "<think>x</think>y",
      .content = "<think>x</think>y" },
    { .name = "think + hermes call", .reasoning = "think", .tool = "hermes", .tools = TOOLS,
      .text = "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
      .reasoning_text = "Need weather.", .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Paris\"}" }, .finish = LLM_FINISH_TOOL_CALLS },
    { .name = "think with unicode", .reasoning = "think",
      .text = "<think>\xe6\x80\x9d\xe8\x80\x83 \xf0\x9f\xa4\x94</think>\xe7\xad\x94\xe3\x81\x88",
      .reasoning_text = "\xe6\x80\x9d\xe8\x80\x83 \xf0\x9f\xa4\x94", .content = "\xe7\xad\x94\xe3\x81\x88" },
    { .name = "mistral [THINK]", .reasoning = "mistral",
      .text = "[THINK]Short.[/THINK]Answer [x]", .reasoning_text = "Short.", .content = "Answer [x]" },
    { .name = "stop string", .stop = { "\nUser:" },
      .text = "The answer is 4.\nUser: and 5?", .content = "The answer is 4.",
      .finish = LLM_FINISH_STOP_SEQ, .stop_seq = "\nUser:" },
    { .name = "stop string prefix that does not match", .stop = { "STOP!" },
      .text = "STOP is not STOP. but ST", .content = "STOP is not STOP. but ST",
      .finish = LLM_FINISH_STOP },
    { .name = "earliest of several stops", .stop = { "cd", "bcx", "b" },
      .text = "aabcde", .content = "aa", .stop_seq = "b", .finish = LLM_FINISH_STOP_SEQ },
    { .name = "stop inside reasoning", .reasoning = "think", .stop = { "###" },
      .text = "<think>plan ### more</think>done", .reasoning_text = "plan",
      .finish = LLM_FINISH_STOP_SEQ, .stop_seq = "###" },
    { .name = "stop with unicode", .stop = { "\xe2\x80\x94" "end" },
      .text = "na\xc3\xafve \xe2\x80\x94 ok \xe2\x80\x94" "end tail", .content = "na\xc3\xafve \xe2\x80\x94 ok ",
      .finish = LLM_FINISH_STOP_SEQ },
    { .name = "whitespace trimmed with parsers", .reasoning = "think", .text = "\n\n  Hello\n\nworld  \n",
      .content = "Hello\n\nworld" },
    { .name = "no parsers: text unchanged", .text = " Paris\n\n", .content = " Paris\n\n" },
    { .name = "only whitespace is no content", .tool = "hermes", .text = " \n\t ", .finish = LLM_FINISH_STOP },
    { .name = "length finish with calls stays length", .tool = "hermes", .tools = TOOLS,
      .text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ro",
      .reason = LLM_FINISH_LENGTH, .n_calls = 1, .call_name = { "get_weather" },
      .call_args = { "{\"city\":\"Ro\"}" }, .finish = LLM_FINISH_LENGTH },
};

static void
ev_count(void *ctx, const llm_event *ev)
{
    int *n = ctx;

    (void) ev;
    (*n)++;
}

/* collect content only */
static void
content_only(void *ctx, const llm_event *ev)
{
    tp_rec *r = ctx;

    if (ev->type == LLM_EV_CONTENT) {
        tp_append(&r->content, &r->clen, ev->text, ev->len);
    }
}

/* longest suffix of p[0..n) that is a proper prefix of a marker */
static size_t
marker_tail(const char *p, size_t n, const char *const *marks)
{
    size_t best = 0, k, i;

    for (i = 0; marks[i]; i++) {
        size_t ml = strlen(marks[i]);

        for (k = (n < ml - 1 ? n : ml - 1); k > best; k--) {
            if (memcmp(p + n - k, marks[i], k) == 0) {
                best = k;
                break;
            }
        }
    }
    return best;
}

/*
 * Prose fed byte by byte: after every byte, all content except a trailing
 * marker prefix (or trailing whitespace) has been emitted.
 */
static void
no_delay(const char *id)
{
    const char        *text = "Hi <b>x</b> a<tool b[TOOL c<|ch d<\xef\xbd\x9ctool e`f` {x} [1] "
                                "<arg g<function h\xc3\xa9 <|python z";
    const llm_parser_def *def = llm_tool_parser_find(id);
    llm_stream_config  cfg;
    llm_stream        *s;
    llm_result         res;
    tp_rec             rec;
    size_t             i, n = strlen(text), worst = 0;
    int                good = 1;

    memset(&cfg, 0, sizeof(cfg));
    cfg.tool = def;
    cfg.parallel_tool_calls = 1;
    s = llm_stream_create(&cfg);
    memset(&rec, 0, sizeof(rec));
    for (i = 0; i < n; i++) {
        size_t seen = i + 1, held, allowed, ws;

        llm_stream_feed(s, text + i, 1, content_only, &rec);
        if ((text[i] & 0xc0) == 0xc0 || ((text[i] & 0xc0) == 0x80 && i + 1 < n
                                          && (text[i + 1] & 0xc0) == 0x80))
        {
            continue;                   /* inside a character */
        }
        /* a marker prefix, and the whitespace before it (trimmed if a call follows) */
        allowed = marker_tail(text, seen, def->markers);
        for (ws = 0; ws + allowed < seen && llm_is_space_t(text[seen - 1 - allowed - ws]);
             ws++) {
        }
        allowed += ws;
        held = seen - rec.clen;
        if (held > worst) {
            worst = held;
        }
        if (held > allowed) {
            printf("#   after %zu bytes %zu held, %zu allowed\n", seen, held, allowed);
            good = 0;
            break;
        }
    }
    memset(&res, 0, sizeof(res));
    llm_stream_finish(s, LLM_FINISH_STOP, content_only, &rec, &res);
    ok(good, "%s: prose is held back only while it may be a marker (at most %zu bytes)", id, worst);
    is_str(res.content, text, "%s: prose comes out unchanged", id);
    tp_rec_free(&rec);
    llm_result_free(&res);
    llm_stream_destroy(s);
}

static void
count_args(void *ctx, const llm_event *ev)
{
    int *n = ctx;

    if (ev->type == LLM_EV_TOOL_ARGS) {
        (*n)++;
    }
}

/* A 40-character string argument fed byte by byte streams in >= 40 events. */
static void
args_stream(const char *id, const char *text)
{
    llm_stream_config cfg;
    llm_stream       *s;
    llm_result        res;
    size_t            i, n = strlen(text);
    int               events = 0;

    memset(&cfg, 0, sizeof(cfg));
    cfg.tool = llm_tool_parser_find(id);
    cfg.parallel_tool_calls = 1;
    s = llm_stream_create(&cfg);
    for (i = 0; i < n; i++) {
        llm_stream_feed(s, text + i, 1, count_args, &events);
    }
    memset(&res, 0, sizeof(res));
    llm_stream_finish(s, LLM_FINISH_STOP, count_args, &events, &res);
    ok(res.n_tool_calls == 1 && events >= 40,
       "%s: arguments stream while generated (%d events)", id, events);
    llm_result_free(&res);
    llm_stream_destroy(s);
}

#define LONG40 "abcdefghij0123456789abcdefghij0123456789"

int
main(void)
{
    llm_stream_config cfg;
    llm_stream       *s;
    llm_result        res;
    int               n = 0, r;
    const char       *stop[] = { "END" };

    tp_check_all(cases, sizeof(cases) / sizeof(cases[0]));

    /* feed reports the stop, later feeds are ignored */
    memset(&cfg, 0, sizeof(cfg));
    cfg.stop = stop;
    cfg.n_stop = 1;
    s = llm_stream_create(&cfg);
    r = llm_stream_feed(s, "abc E", 5, ev_count, &n);
    is_int(r, 0, "no stop yet");
    r = llm_stream_feed(s, "ND more", 7, ev_count, &n);
    is_int(r, 1, "stop across chunks reported");
    r = llm_stream_feed(s, "x", 1, ev_count, &n);
    is_int(r, 1, "still stopped");
    memset(&res, 0, sizeof(res));
    llm_stream_finish(s, LLM_FINISH_LENGTH, ev_count, &n, &res);
    is_str(res.content, "abc ", "text before the stop string");
    is_int(res.finish, LLM_FINISH_STOP_SEQ, "finish stop_seq");
    llm_result_free(&res);
    llm_stream_destroy(s);

    /* content is not delayed beyond a marker prefix */
    memset(&cfg, 0, sizeof(cfg));
    cfg.tool = llm_tool_parser_find("hermes");
    cfg.reasoning = llm_reasoning_parser_find("think");
    cfg.parallel_tool_calls = 1;
    s = llm_stream_create(&cfg);
    {
        tp_rec rec;

        memset(&rec, 0, sizeof(rec));
        rec.open = -1;
        llm_stream_feed(s, "Hi there <tool", 14, tp_on_event, &rec);
        is_str(rec.content, "Hi there", "only the marker prefix is held");
        llm_stream_feed(s, "s> and", 6, tp_on_event, &rec);
        is_str(rec.content, "Hi there <tools> and", "released when it is no marker");
        memset(&res, 0, sizeof(res));
        llm_stream_finish(s, LLM_FINISH_STOP, tp_on_event, &rec, &res);
        tp_rec_free(&rec);
        llm_result_free(&res);
    }
    llm_stream_destroy(s);

    {
        const char *ids[] = { "hermes", "llama3_json", "mistral", "qwen3_coder", "glm4",
                              "deepseek_v3", "harmony", "pythonic", NULL };
        for (r = 0; ids[r]; r++) {
            no_delay(ids[r]);
        }
    }

    args_stream("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"" LONG40 "\"}}</tool_call>");
    args_stream("llama3_json", "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"s\": \"" LONG40 "\"}}");
    args_stream("mistral", "[TOOL_CALLS]f[ARGS]{\"s\": \"" LONG40 "\"}");
    args_stream("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=s>\n" LONG40 "\n</parameter>\n</function>\n</tool_call>");
    args_stream("glm4", "<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>" LONG40 "</arg_value>\n</tool_call>");
    args_stream("deepseek_v3", "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>f"
                "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>{\"s\": \"" LONG40 "\"}");
    args_stream("harmony", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"s\": \"" LONG40 "\"}<|call|>");
    args_stream("pythonic", "[f(s='" LONG40 "')]");

    /* registry */
    ok(llm_tool_parser_find("hermes") != NULL, "hermes registered");
    ok(llm_tool_parser_find("nope") == NULL, "unknown id");
    ok(llm_tool_parser_find("auto") == NULL, "auto is the caller's");
    ok(strstr(llm_tool_parser_ids(), "hermes") != NULL, "ids list hermes");
    ok(llm_reasoning_parser_find("think") != NULL, "think registered");
    is_int(llm_reasoning_starts_open("think", "<|im_start|>assistant\n<think>\n", 30), 1,
           "prompt ending in <think> opens reasoning");
    is_int(llm_reasoning_starts_open("think", "<think>\n\n</think>\n\n", 19), 0,
           "closed empty think block does not");
    is_int(llm_reasoning_starts_open("think", "assistant\n", 10), 0, "no think");
    return done_testing();
}
