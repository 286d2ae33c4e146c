/*
 * Random outputs built from each format's markers and JSON-ish pieces: for
 * every parser the result must not depend on where the text is split, the
 * events must be well formed and every call's arguments must be a JSON
 * object equal to its streamed fragments.  Deterministic seed.
 */
#include "test_parsers_harness.h"
#include "parsers/llm_parser_impl.h"

static const char *const pieces[] = {
    "<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]",
    "<|python_tag|>", "<|python_start|>", "<|python_end|>", "<function=", "</function>",
    "<parameter=", "</parameter>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
    "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>", "<|channel|>", "<|message|>", "<|start|>", "<|end|>", "<|call|>",
    "<|return|>", "<|constrain|>", "<|assistant|>", "analysis", "final", "commentary to=functions.get_weather ",
    "function", "get_weather", "run_code", "unknown_fn", "city", "days", "code", ">", "\n",
    " ", "{", "}", "[", "]", "(", ")", ",", ":", ";", "=", "\"", "'", "\\", "\\\"", "\\u00e9",
    "\\ud83d\\ude00", "\"name\"", "\"arguments\"", "\"parameters\"", ": ", "\"get_weather\"",
    "{\"city\": \"Paris\"}", "True", "None", "null", "12", "-3.5e2", "1.", "tr", "```json\n", "```",
    "caf\xc3\xa9", "\xe2\x98\x95", "\xf0\x9f\x98\x80", "hello", "<", "<tool", "</", "[TOOL",
    "get_weather(city=\"Rome\")", "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"X\", \"days\": 2}}",
};

/* a valid output per family: mutated copies exercise the recovery paths */
typedef struct {
    const char *tool;
    const char *seed;
} fz_seed_text;

#define DSB "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>"
#define DSE "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"

static const fz_seed_text seeds[] = {
    { "tool_call_list", "Sure.<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\"}}, "
      "{\"name\": \"run_code\", \"arguments\": {\"code\": \"x\"}}]<|/tool_call|> ok "
      "<|tool_call|>{\"name\": \"get_weather\", \"arguments\": {}}, {\"name\": \"run_code\", \"arguments\": {}}" },
    { "hermes", "<think>hm</think>Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris \\\"P\\\"\", \"days\": [1, {\"x\": null}]}}\n</tool_call>\n<tool_call>"
      "{'name': 'run_code', 'arguments': \"{\\\"code\\\": \\\"1\\\"}\"}</tool_call>" },
    { "hermes", "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"caf\xc3\xa9\"}}" },
    { "hermes", "```json\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"`x`\"}}\n```\n<tool_call>\n```json\n"
      "{\"name\": \"functions.get_weather\", \"arguments\": {}}\n```\n</tool_call>" },
    { "llama3_json", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}; "
      "{\"name\": \"run_code\", \"parameters\": {\"code\": \"x\"}}" },
    { "mistral", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}, "
      "{\"name\": \"run_code\", \"arguments\": {}}]" },
    { "mistral", "Ok[TOOL_CALLS]get_weather[CALL_ID]abc[ARGS]{\"city\": \"C\"}[TOOL_CALLS]run_code[ARGS]{'code': 'y',}" },
    { "qwen3_coder", "<tool_call>\n<function=set_config>\n<parameter=enabled>\ntrue\n</parameter>\n"
      "<parameter=tags>\n[1, 2]\n</parameter>\n<parameter=note>\nhi\n</parameter>\n</function>\n</tool_call>"
      "<tool_call>\n<function=run_code>\n<parameter=code>\na\nb\n</parameter>\n</function>\n</tool_call>" },
    { "glm4", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>\xe5\x8c\x97</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><tool_call>run_code<arg_key>code"
      "</arg_key><arg_value>x</arg_value></tool_call>" },
    { "glm4_0414", "get_weather\n{\"city\": \"\xe5\x8c\x97\"}<|assistant|>run_code\n{'code': 'x',}" },
    { "deepseek_v3", DSB "function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"T\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>run_code<｜tool▁sep｜>{\"code\": \"z\"}" DSE },
    { "harmony", "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"O\"}<|call|><|start|>assistant"
      "<|channel|>final<|message|>done<|return|>" },
    { "pythonic", "[get_weather(city=\"R\", days=2), run_code(code='p(\"q\")'), set_config(meta={'a': [True, None]})]" },
};

#ifndef FZ_ITER
#define FZ_ITER 1500
#endif

#ifndef FZ_SEED
#define FZ_SEED 977
#endif

static unsigned long fz_seed = FZ_SEED;

static size_t
fz_rand(size_t n)
{
    fz_seed = fz_seed * 6364136223846793005UL + 1442695040888963407UL;
    return (size_t) ((fz_seed >> 33) % n);
}

/* the input as the stream shows content: trimmed, invalid UTF-8 replaced */
static char *
fz_expect_all(const char *text, size_t len)
{
    llm_pbuf    out = { NULL, 0, 0 };
    const char *p = text;
    size_t      n = len;

    while (n && strchr(" \n\t\r", *p)) { p++; n--; }
    while (n && strchr(" \n\t\r", p[n - 1])) n--;
    llm_utf8_clean(p, n, 1, &out);
    llm_pbuf_addc(&out, '\0');
    return out.p;
}

int
main(void)
{
    const char *tools[] = { "hermes", "llama3_json", "mistral", "qwen3_coder", "glm4",
                            "glm4_0414", "deepseek_v3", "harmony", "pythonic", "tool_call_list", NULL };
    const size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
    char         text[1024], msg[512];
    int          t, iter, k;

    for (t = 0; tools[t]; t++) {
        int     bad = 0, calls = 0;
        json_t *tj = json_loads(TP_TOOLS, 0, NULL);

        for (iter = 0; iter < FZ_ITER && !bad; iter++) {
            tp_case    c;
            tp_rec     r0, r;
            llm_result res0, res;
            size_t     len = 0, n, i, cuts[12], nseeds = sizeof(seeds) / sizeof(seeds[0]);
            const char *sd = NULL;

            /* a seed of this family (or any, every fourth time), mutated */
            for (i = fz_rand(nseeds), n = 0; n < nseeds; n++, i = (i + 1) % nseeds) {
                if (iter % 4 == 1 || strcmp(seeds[i].tool, tools[t]) == 0) {
                    sd = seeds[i].seed;
                    break;
                }
            }
            len = strlen(sd);
            memcpy(text, sd, len + 1);
            for (n = fz_rand(4); n > 0; n--) {
                size_t at = fz_rand(len + 1), span = 1 + fz_rand(8);
                const char *p = pieces[fz_rand(npieces)];
                size_t      pl = strlen(p);

                switch (fz_rand(3)) {
                case 0:                                  /* truncate */
                    len = at;
                    break;
                case 1:                                  /* delete a span */
                    if (at + span > len) span = len - at;
                    memmove(text + at, text + at + span, len - at - span);
                    len -= span;
                    break;
                default:                                 /* insert a piece */
                    if (len + pl + 1 < sizeof(text)) {
                        memmove(text + at + pl, text + at, len - at);
                        memcpy(text + at, p, pl);
                        len += pl;
                    }
                }
                text[len] = '\0';
            }
            memset(&c, 0, sizeof(c));
            c.name = "fuzz";
            c.tool = tools[t];
            c.reasoning = (iter % 3 == 0) ? "think" : NULL;
            c.starts_in_reasoning = (iter % 7 == 0);
            c.no_parallel = (iter % 5 == 0);
            c.text = text;
            c.reason = (iter % 2) ? LLM_FINISH_LENGTH : LLM_FINISH_STOP;
            if (iter % 11 == 0) {
                c.stop[0] = "</";
            }
            if (iter % 5 == 4 && strcmp(tools[t], "harmony") != 0) {
                /* no call can be valid: nothing may be lost, all is content */
                json_t *none = json_array();
                char   *want = fz_expect_all(text, len);

                c.reasoning = NULL;
                c.stop[0] = NULL;
                tp_run(&c, none, NULL, 0, &r0, &res0);
                if (res0.n_tool_calls || !tp_streq(res0.content, want[0] ? want : NULL)) {
                    snprintf(msg, sizeof(msg), "all-content: got '%s'", res0.content ? res0.content : "(null)");
                    bad = 1;
                }
                free(want);
                json_decref(none);
                tp_rec_free(&r0);
                llm_result_free(&res0);
            }
            if (bad) {
                printf("# %s iteration %d: %s\n# text: %s\n", tools[t], iter, msg, text);
                break;
            }
            tp_run(&c, (iter % 4 == 3) ? NULL : tj, NULL, 0, &r0, &res0);
            calls += (int) res0.n_tool_calls;
            if (!tp_consistent(&r0, &res0, msg, sizeof(msg))) {
                bad = 1;
            }
            for (k = 0; k < 4 && !bad && len > 1; k++) {
                size_t nc;

                if (k == 0) {
                    size_t all[1024];

                    for (i = 1; i < len; i++) all[i - 1] = i;
                    tp_run(&c, (iter % 4 == 3) ? NULL : tj, all, len - 1, &r, &res);
                } else {
                    nc = 1 + fz_rand(len - 1 < 12 ? len - 1 : 12);
                    for (i = 0; i < nc; i++) cuts[i] = 1 + fz_rand(len - 1);
                    qsort(cuts, nc, sizeof(size_t), tp_cmp_size);
                    tp_run(&c, (iter % 4 == 3) ? NULL : tj, cuts, nc, &r, &res);
                }
                if (!tp_same(&r0, &res0, &r, &res, msg, sizeof(msg))
                    || !tp_consistent(&r, &res, msg, sizeof(msg)))
                {
                    bad = 1;
                }
                tp_rec_free(&r);
                llm_result_free(&res);
            }
            if (bad) {
                printf("# %s iteration %d: %s\n# text: ", tools[t], iter, msg);
                for (i = 0; i < len; i++) {
                    printf(text[i] == '\n' ? "\\n" : "%c", text[i]);
                }
                printf("\n");
            }
            tp_rec_free(&r0);
            llm_result_free(&res0);
        }
        ok(!bad, "%s: %d random outputs split-invariant and well formed (%d calls found)",
           tools[t], FZ_ITER, calls);
        json_decref(tj);
    }
    return done_testing();
}
