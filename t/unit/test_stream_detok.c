/*
 * Real tokenizers, real token boundaries: a model output is encoded with the
 * model's tokenizer, detokenized one token at a time (special tokens kept,
 * as for chat) and fed to the stream processor.  Uses the tokenizers under
 * t/.cache/tokenizers when they were fetched; skipped otherwise.
 */
#include "tap.h"
#include "engine/llm_detok.h"
#include "parsers/llm_stream.h"

#include <jansson.h>
#include <sys/stat.h>

#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" \
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]"

typedef struct {
    const char *dir, *tool, *reasoning, *text;
    const char *content, *reasoning_text, *args;
    int         n_tokens_min;     /* the output really is several tokens */
} detok_case;

static const detok_case cases[] = {
    { "qwen3", "hermes", "think",
      "<think>\nThe user wants the weather in Z\xc3\xbcrich \xe2\x98\x80.\n</think>\n\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Z\xc3\xbcrich \xe2\x98\x80\"}}\n</tool_call>",
      NULL, "The user wants the weather in Z\xc3\xbcrich \xe2\x98\x80.",
      "{\"city\":\"Z\xc3\xbcrich \xe2\x98\x80\"}", 20 },
    { "deepseek_v3", "deepseek_v3", NULL,
      "Let me check.<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
      "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>function"
      "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```"
      "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
      "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>",
      "Let me check.", NULL, "{\"city\":\"Tokyo\"}", 10 },
    { "gptoss", "harmony", NULL,
      "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}",
      NULL, "Need the weather tool.", "{\"city\":\"Oslo\"}", 15 },
};

typedef struct {
    char   args[256];
    size_t alen;
    int    n_args_events;
} sink;

static void
on_event(void *ctx, const llm_event *ev)
{
    sink *k = ctx;

    if (ev->type == LLM_EV_TOOL_ARGS && k->alen + ev->len < sizeof(k->args)) {
        memcpy(k->args + k->alen, ev->text, ev->len);
        k->alen += ev->len;
        k->args[k->alen] = '\0';
        k->n_args_events++;
    }
}

int
main(void)
{
    size_t i, t;
    int    ran = 0;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const detok_case  *c = &cases[i];
        char               dir[256], err[256];
        struct stat        st;
        llm_tokenizer     *tok;
        int32_t           *ids = NULL;
        size_t             n_ids = 0;
        llm_detok          dt;
        llm_stream_config  cfg;
        llm_stream        *s;
        llm_result         res;
        json_t            *tools = json_loads(TOOLS, 0, NULL);
        sink               k;
        const char        *piece;
        size_t             plen;

        snprintf(dir, sizeof(dir), "t/.cache/tokenizers/%s", c->dir);
        if (stat(dir, &st) != 0) {
            printf("# %s not fetched: skipped\n", dir);
            json_decref(tools);
            continue;
        }
        tok = llm_tokenizer_load(dir, err, sizeof(err));
        if (!ok(tok != NULL, "%s tokenizer loads", c->dir)) {
            printf("#   %s\n", err);
            json_decref(tools);
            continue;
        }
        ran++;
        llm_tokenizer_encode(tok, c->text, strlen(c->text), 0, &ids, &n_ids);
        ok(n_ids >= (size_t) c->n_tokens_min, "%s: %zu tokens", c->dir, n_ids);

        memset(&cfg, 0, sizeof(cfg));
        cfg.tool = llm_tool_parser_find(c->tool);
        cfg.reasoning = c->reasoning ? llm_reasoning_parser_find(c->reasoning) : NULL;
        cfg.tools = tools;
        cfg.parallel_tool_calls = 1;
        s = llm_stream_create(&cfg);
        memset(&k, 0, sizeof(k));
        llm_detok_init(&dt, tok, 0);
        for (t = 0; t < n_ids; t++) {
            if (llm_detok_push(&dt, ids[t], &piece, &plen) == 0 && plen) {
                llm_stream_feed(s, piece, plen, on_event, &k);
            }
        }
        if (llm_detok_flush(&dt, &piece, &plen) == 0 && plen) {
            llm_stream_feed(s, piece, plen, on_event, &k);
        }
        memset(&res, 0, sizeof(res));
        llm_stream_finish(s, LLM_FINISH_STOP, on_event, &k, &res);

        if (c->content) {
            is_str(res.content, c->content, "%s: content", c->dir);
        } else {
            ok(res.content == NULL, "%s: no content (%s)", c->dir, res.content ? res.content : "");
        }
        if (c->reasoning_text) {
            is_str(res.reasoning, c->reasoning_text, "%s: reasoning", c->dir);
        }
        is_int(res.n_tool_calls, 1, "%s: one call", c->dir);
        if (res.n_tool_calls == 1) {
            is_str(res.tool_calls[0].name, "get_weather", "%s: name", c->dir);
            is_str(res.tool_calls[0].arguments, c->args, "%s: arguments", c->dir);
        }
        is_str(k.args, c->args, "%s: streamed arguments", c->dir);
        ok(k.n_args_events > 1, "%s: arguments streamed in %d pieces", c->dir, k.n_args_events);
        is_int(res.finish, LLM_FINISH_TOOL_CALLS, "%s: finish tool_calls", c->dir);

        llm_result_free(&res);
        llm_stream_destroy(s);
        llm_detok_free(&dt);
        free(ids);
        llm_tokenizer_free(tok);
        json_decref(tools);
    }
    if (ran == 0) {
        return skip_all("no tokenizer fixtures under t/.cache/tokenizers");
    }
    return done_testing();
}
