/*
 * Every tool-call and reasoning parser fed fuzzed model output in fuzzed
 * splits through the stream processor (llm_stream), as the glue drives it.
 * Input: [tool parser][reasoning parser][flags][n_stop] then text; each
 * byte 0x01 in the text is a split point (removed), so the fuzzer controls
 * where feeds end.  Stop strings are cut from the text's first bytes.
 * Checked: events are well formed, and the result is the same as when the
 * same text is fed in one piece.
 */
#include "llm_fuzz.h"
#include <jansson.h>
#include "parsers/llm_parser.h"
#include "parsers/llm_stream.h"

static const char *const tool_ids[] = {
    NULL, "hermes", "llama3_json", "mistral", "qwen3_coder", "glm4",
    "deepseek_v3", "harmony", "pythonic",
};
static const char *const reasoning_ids[] = { NULL, "think", "mistral", "harmony" };
static json_t *tools;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc; (void) argv;
    tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
        "\"days\":{\"type\":\"integer\"}}}}},{\"type\":\"function\",\"function\":{\"name\":"
        "\"run_code\",\"parameters\":{\"type\":\"object\",\"properties\":{\"code\":"
        "{\"type\":\"string\"}}}}}]", 0, NULL);
    return 0;
}

typedef struct {
    size_t n_events;
    int    open_call;    /* TOOL_BEGIN seen without TOOL_END */
    int    bad;
} fz_sink;

static void
on_event(void *ctx, const llm_event *ev)
{
    fz_sink *k = ctx;
    k->n_events++;
    if (ev->len && ev->text == NULL) k->bad = 1;
    switch (ev->type) {
    case LLM_EV_TOOL_BEGIN:
        if (k->open_call || ev->name == NULL || ev->id == NULL) k->bad = 1;
        k->open_call = 1;
        break;
    case LLM_EV_TOOL_ARGS:
        if (!k->open_call) k->bad = 1;
        break;
    case LLM_EV_TOOL_END:
        if (!k->open_call) k->bad = 1;
        k->open_call = 0;
        break;
    default:
        break;
    }
}

static int
run(const llm_stream_config *cfg, const char *text, size_t len, const size_t *cuts,
    size_t n_cuts, llm_result *res)
{
    llm_stream *s = llm_stream_create(cfg);
    fz_sink k = { 0, 0, 0 };
    size_t i, at = 0;

    if (s == NULL) return -1;
    for (i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        if (llm_stream_feed(s, text + at, end - at, on_event, &k) == 1) break;
        at = end;
    }
    memset(res, 0, sizeof(*res));
    if (llm_stream_finish(s, LLM_FINISH_STOP, on_event, &k, res) != 0) {
        llm_stream_destroy(s);
        return -1;
    }
    llm_stream_destroy(s);
    if (k.bad || k.open_call) {
        fprintf(stderr, "malformed event sequence\n");
        __builtin_trap();
    }
    return 0;
}

static int
same_str(const char *a, const char *b)
{
    return (a == NULL || b == NULL) ? a == b : strcmp(a, b) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llm_fuzz_in in = { data, size };
    llm_stream_config cfg;
    unsigned t = llm_fuzz_byte(&in), r = llm_fuzz_byte(&in), fl = llm_fuzz_byte(&in);
    unsigned n_stop = llm_fuzz_byte(&in) % 3;
    char stops[2][8];
    const char *stop_ptrs[2];
    char *text;
    size_t *cuts, n_cuts = 0, len = 0, i;
    llm_result a, b;

    if (size > 1 << 15) return 0;
    memset(&cfg, 0, sizeof(cfg));
    cfg.tool = tool_ids[t % 9] ? llm_tool_parser_find(tool_ids[t % 9]) : NULL;
    cfg.reasoning = reasoning_ids[r % 4] ? llm_reasoning_parser_find(reasoning_ids[r % 4]) : NULL;
    cfg.starts_in_reasoning = fl & 1;
    cfg.tools = (fl & 2) ? tools : NULL;
    cfg.parallel_tool_calls = !(fl & 4);
    cfg.raw_text = (fl >> 3) & 1;
    for (i = 0; i < n_stop; i++) {
        size_t l = 1 + llm_fuzz_byte(&in) % 6;
        if (l > in.n) l = in.n;
        memcpy(stops[i], in.p, l);
        stops[i][l] = '\0';
        in.p += l; in.n -= l;
        stop_ptrs[i] = stops[i];
        if (stops[i][0] == '\0') { n_stop = i; break; }
    }
    cfg.stop = n_stop ? stop_ptrs : NULL;
    cfg.n_stop = n_stop;

    text = malloc(in.n + 1);
    cuts = malloc((in.n + 1) * sizeof(*cuts));
    if (text == NULL || cuts == NULL) goto out;
    for (i = 0; i < in.n; i++) {
        if (in.p[i] == 0x01) cuts[n_cuts++] = len;
        else text[len++] = (char) in.p[i];
    }
    if (run(&cfg, text, len, cuts, n_cuts, &a) != 0) goto out;
    if (run(&cfg, text, len, NULL, 0, &b) != 0) { llm_result_free(&a); goto out; }
    /* splitting must not change the result */
    if (!same_str(a.content, b.content) || !same_str(a.reasoning, b.reasoning)
        || a.n_tool_calls != b.n_tool_calls || a.finish != b.finish)
    {
        fprintf(stderr, "split changes the result: content [%s] vs [%s], calls %zu vs %zu\n",
                a.content ? a.content : "(null)", b.content ? b.content : "(null)",
                a.n_tool_calls, b.n_tool_calls);
        __builtin_trap();
    }
    for (i = 0; i < a.n_tool_calls; i++) {
        json_error_t je;
        json_t *j;
        if (!same_str(a.tool_calls[i].name, b.tool_calls[i].name)
            || !same_str(a.tool_calls[i].arguments, b.tool_calls[i].arguments))
        {
            fprintf(stderr, "split changes call %zu\n", i);
            __builtin_trap();
        }
        /* valid JSON that jansson cannot hold (a NUL in a key, a number
         * past double range) is not a parser fault */
        j = json_loads(a.tool_calls[i].arguments, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
        if (!json_is_object(j) && !(j == NULL && (strstr(je.text, "NUL") != NULL
                                                  || strstr(je.text, "overflow") != NULL
                                                  || strstr(je.text, "too big") != NULL)))
        {
            fprintf(stderr, "arguments not a JSON object: %s\n", a.tool_calls[i].arguments);
            __builtin_trap();
        }
        json_decref(j);
    }
    llm_result_free(&a);
    llm_result_free(&b);
out:
    free(text);
    free(cuts);
    return 0;
}
