/* Parser auto-selection from template text, special tokens, model_type. */
#include "tap.h"
#include "parsers/llm_parser.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
tok_set(void *ctx, const char *tok)
{
    const char *const *t;

    for (t = ctx; *t; t++) {
        if (strcmp(*t, tok) == 0) {
            return 1;
        }
    }
    return 0;
}

typedef struct {
    const char *name, *tmpl, *model_type;
    const char *tokens[4];
    const char *tool, *reasoning;
} auto_case;

static const auto_case cases[] = {
    { "qwen3", "{%- if tools %}<tools>{{ tool | tojson }}</tools>... <tool_call>\\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\\n</tool_call>{{ tool_call.arguments | tojson }}"
      "{%- if enable_thinking is defined and enable_thinking is false %}<think>\\n\\n</think>", "qwen3",
      { NULL }, "hermes", "think" },
    { "qwen2.5", "<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call>",
      "qwen2", { NULL }, "hermes", NULL },
    { "qwen3-coder", "<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>",
      "qwen3_moe", { NULL }, "qwen3_coder", NULL },
    { "llama3.1", "{{- \"<|python_tag|>\" + tool_call.name + \".call(\" }}<|eot_id|>", "llama",
      { NULL }, "llama3_json", NULL },
    { "llama3.2 json", "<|start_header_id|>Given the following functions, respond with a JSON for a "
      "function call with its proper arguments ... {\"name\": function name, \"parameters\": dictionary}"
      "<|eot_id|>", "llama", { NULL }, "llama3_json", NULL },
    { "llama4 pythonic", "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]",
      "llama4", { NULL }, "pythonic", NULL },
    { "mistral", "[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{{ \"[TOOL_CALLS]\" }}", "mistral",
      { NULL }, "mistral", NULL },
    { "magistral", "[SYSTEM_PROMPT]...[THINK]...[/THINK]...[TOOL_CALLS]", "mistral", { NULL },
      "mistral", "mistral" },
    { "glm4.5", "<tool_call>{{ tc.name }}\\n{% for k, v in _args.items() %}<arg_key>{{ k }}</arg_key>"
      "<arg_value>{{ v }}</arg_value>{% endfor %}</tool_call>{{ '<think></think>' }}", "glm4_moe",
      { NULL }, "glm4", "think" },
    { "deepseek r1", "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + "
      "'<｜tool▁sep｜>'<think>\\n", "deepseek_v3", { NULL }, "deepseek_v3", "think" },
    { "gpt-oss", "<|start|>assistant<|channel|>final<|message|>", "gpt_oss", { NULL }, "harmony", "harmony" },
    { "gpt-oss by model_type only", NULL, "gpt_oss", { NULL }, "harmony", "harmony" },
    { "tokens only: [TOOL_CALLS]", "{{ messages }}", "mistral", { "[TOOL_CALLS]", NULL }, "mistral", NULL },
    { "tokens only: <think>", "{{ messages }}", "qwen3", { "<think>", "</think>", NULL }, "hermes", "think" },
    { "granite 3.x", "{%- elif message['role'] == 'assistant_tool_call' %}<|start_of_role|>assistant<|end_of_role|>"
      "<|tool_call|>' + message['content']", "granite", { NULL }, "tool_call_list", NULL },
    { "phi-4-mini", "{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + "
      "'<|/tool|>' + '<|end|>' }}", "phi3", { NULL }, "tool_call_list", NULL },
    { "tokens only: <|tool_call|>", "{{ messages }}", "phi3", { "<|tool_call|>", "<|/tool_call|>", NULL },
      "tool_call_list", NULL },
    { "nothing known", "{% for m in messages %}{{ m.content }}{% endfor %}", "gemma3", { NULL },
      "hermes", NULL },
    { "no template at all", NULL, NULL, { NULL }, "hermes", NULL },
};

/* tokens of tokenizer_config.json added_tokens_decoder */
static int
cfg_has_token(void *ctx, const char *tok)
{
    const char *key;
    json_t     *v;

    json_object_foreach(json_object_get(ctx, "added_tokens_decoder"), key, v) {
        const char *c = json_string_value(json_object_get(v, "content"));

        if (c && strcmp(c, tok) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Real tokenizer configs when the npm fixtures were fetched (t/.cache). */
static void
real_templates(void)
{
    static const struct { const char *dir, *tool, *reasoning; } real[] = {
        { "qwen3", "hermes", "think" },
        { "deepseek_v3", "deepseek_v3", NULL },
        { "gptoss", "harmony", "harmony" },
    };
    size_t i;

    for (i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
        char         path[256], why[256];
        json_error_t e;
        json_t      *cfg;
        const char  *tid, *rid;

        snprintf(path, sizeof(path), "t/.cache/tokenizers/%s/tokenizer_config.json",
                 real[i].dir);
        cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &e);
        if (cfg == NULL) {
            printf("# %s not fetched: real-template check skipped\n", path);
            continue;
        }
        llm_parsers_auto(json_string_value(json_object_get(cfg, "chat_template")), NULL,
                         cfg_has_token, cfg, &tid, &rid, why, sizeof(why));
        is_str(tid, real[i].tool, "real %s template: tool parser (%s)", real[i].dir, why);
        ok(real[i].reasoning ? (rid && !strcmp(rid, real[i].reasoning)) : rid == NULL,
           "real %s template: reasoning parser %s", real[i].dir, rid ? rid : "none");
        json_decref(cfg);
    }
}

/* The family templates typed from their reference models (t/fixtures/templates). */
static void
family_templates(void)
{
    static const struct { const char *name, *model_type, *tool, *reasoning; } fam[] = {
        { "gemma2", "gemma2", "hermes", NULL },
        { "phi3_5", "phi3", "hermes", NULL },
        { "phi4_mini", "phi3", "tool_call_list", NULL },
        { "smollm3", "smollm3", "hermes", "think" },
        { "granite3_3", "granite", "tool_call_list", "think" },
        { "olmo2", "olmo2", "hermes", NULL },
        { "glm_z1", "glm4", "glm4_0414", "think" },
    };
    size_t i;

    for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
        char        path[256], why[256], *src = NULL;
        const char *tid, *rid;
        FILE       *f;
        long        n;

        snprintf(path, sizeof(path), "t/fixtures/templates/%s.jinja", fam[i].name);
        f = fopen(path, "rb");
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0
            && (src = calloc(1, (size_t) n + 1)) != NULL && fread(src, 1, (size_t) n, f) != (size_t) n)
        {
            free(src);
            src = NULL;
        }
        if (f) fclose(f);
        if (!ok(src != NULL, "%s template read", fam[i].name)) continue;
        llm_parsers_auto(src, fam[i].model_type, NULL, NULL, &tid, &rid, why, sizeof(why));
        is_str(tid, fam[i].tool, "%s template: tool parser (%s)", fam[i].name, why);
        ok(fam[i].reasoning ? (rid && !strcmp(rid, fam[i].reasoning)) : rid == NULL,
           "%s template: reasoning parser %s", fam[i].name, rid ? rid : "none");
        free(src);
    }
}

int
main(void)
{
    size_t      i;
    char        why[256];
    const char *tid, *rid;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const auto_case *c = &cases[i];

        why[0] = '\0';
        llm_parsers_auto(c->tmpl, c->model_type, tok_set, (void *) c->tokens,
                         &tid, &rid, why, sizeof(why));
        is_str(tid, c->tool, "%s: tool parser", c->name);
        if (c->reasoning) {
            is_str(rid, c->reasoning, "%s: reasoning parser", c->name);
        } else {
            ok(rid == NULL, "%s: no reasoning parser (%s)", c->name, rid ? rid : "none");
        }
        ok(strstr(why, tid) != NULL, "%s: why names it: %s", c->name, why);
        ok(llm_tool_parser_find(tid) != NULL, "%s: chosen id is registered", c->name);
    }

    /* every registered id is listed and found */
    {
        const char *ids[] = { "hermes", "llama3_json", "mistral", "qwen3_coder", "glm4",
                              "deepseek_v3", "harmony", "pythonic", "tool_call_list", NULL };
        for (i = 0; ids[i]; i++) {
            ok(llm_tool_parser_find(ids[i]) != NULL && strstr(llm_tool_parser_ids(), ids[i]),
               "tool parser %s registered and listed", ids[i]);
            ok(llm_tool_parser_find(ids[i])->markers != NULL, "%s lists its markers", ids[i]);
        }
        ok(llm_reasoning_parser_find("harmony") != NULL, "harmony is a reasoning parser too");
        ok(llm_reasoning_parser_find("hermes") == NULL, "hermes is not");
        ok(strstr(llm_reasoning_parser_ids(), "think") != NULL, "reasoning ids listed");
    }
    real_templates();
    family_templates();
    is_int(llm_reasoning_starts_open("mistral", "[INST]q[/INST][THINK]", 21), 1, "[THINK] opens");
    is_int(llm_reasoning_starts_open(NULL, "<think>", 7), 0, "no reasoning parser");
    /* llm_tool_parser / llm_reasoning_parser values */
    {
        llm_parser_choice c;

        ok(llm_parser_choose(LLM_PARSER_TOOL, "auto", 4, &c) == 0 && c.model == 1 && c.def == NULL,
           "auto: the model's own choice");
        ok(llm_parser_choose(LLM_PARSER_TOOL, "nonexx", 4, &c) == 0 && c.model == 0 && c.def == NULL,
           "none (by its length): no parser");
        ok(llm_parser_choose(LLM_PARSER_TOOL, "hermes", 6, &c) == 0 && c.model == 0
           && c.def == llm_tool_parser_find("hermes"), "a tool parser by id");
        ok(llm_parser_choose(LLM_PARSER_REASONING, "hermes", 6, &c) == -1 && c.def == NULL,
           "hermes is no reasoning parser");
        ok(llm_parser_choose(LLM_PARSER_REASONING, "think", 5, &c) == 0
           && c.def == llm_reasoning_parser_find("think"), "a reasoning parser by id");
        ok(llm_parser_choose(LLM_PARSER_TOOL,
                             "hermes_hermes_hermes_hermes_hermes_hermes_hermes_hermes_hermes_hermes", 70, &c) == -1,
           "an id longer than any: unknown");
        ok(strcmp(llm_parser_ids(LLM_PARSER_REASONING), llm_reasoning_parser_ids()) == 0
           && strcmp(llm_parser_ids(LLM_PARSER_TOOL), llm_tool_parser_ids()) == 0,
           "the ids of each kind for the message");
    }
    return done_testing();
}
