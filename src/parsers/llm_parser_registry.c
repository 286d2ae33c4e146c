/*
 * Parser registry and auto-selection at model load.  Auto-selection looks
 * at the chat template text first (what the model was trained to emit is
 * spelled out there), then special tokens, then config.json model_type.
 */
#include "parsers/llm_parser_impl.h"

#include <stdio.h>
#include <string.h>

static const llm_parser_def *const tool_parsers[] = {
    &llm_parser_hermes,
    &llm_parser_llama3_json,
    &llm_parser_mistral,
    &llm_parser_qwen3_coder,
    &llm_parser_glm4,
    &llm_parser_glm4_0414,
    &llm_parser_deepseek_v3,
    &llm_parser_harmony,
    &llm_parser_pythonic,
    &llm_parser_tool_call_list,
    NULL
};

static const llm_parser_def *const reasoning_parsers[] = {
    &llm_parser_think,
    &llm_parser_think_mistral,
    &llm_parser_harmony,
    NULL
};

static const llm_parser_def *
find_in(const llm_parser_def *const *list, const char *id)
{
    size_t i;

    if (id == NULL) {
        return NULL;
    }
    for (i = 0; list[i]; i++) {
        if (strcmp(list[i]->id, id) == 0) {
            return list[i];
        }
    }
    return NULL;
}

const llm_parser_def *
llm_tool_parser_find(const char *id)
{
    return find_in(tool_parsers, id);
}

const llm_parser_def *
llm_reasoning_parser_find(const char *id)
{
    return find_in(reasoning_parsers, id);
}

const char *
llm_tool_parser_ids(void)
{
    return "auto, none, hermes, llama3_json, mistral, qwen3_coder, glm4, "
           "glm4_0414, deepseek_v3, harmony, pythonic, tool_call_list";
}

const char *
llm_reasoning_parser_ids(void)
{
    return "auto, none, think, mistral, harmony";
}

int
llm_parser_choose(int kind, const char *value, size_t len,
    llm_parser_choice *c)
{
    char  id[64];

    c->model = 0;
    c->def = NULL;

    if (len >= sizeof(id)) {
        return -1;
    }
    memcpy(id, value, len);
    id[len] = '\0';

    if (strcmp(id, "auto") == 0) {
        c->model = 1;
        return 0;
    }
    if (strcmp(id, "none") == 0) {
        return 0;
    }

    c->def = kind == LLM_PARSER_TOOL ? llm_tool_parser_find(id)
                                     : llm_reasoning_parser_find(id);
    return c->def ? 0 : -1;
}

const char *
llm_parser_ids(int kind)
{
    return kind == LLM_PARSER_TOOL ? llm_tool_parser_ids()
                                   : llm_reasoning_parser_ids();
}

/* ---- auto-selection ---- */

typedef struct {
    const char *tmpl;
    const char *model_type;
    int       (*has_token)(void *ctx, const char *tok);
    void       *ctx;
} auto_in;

static int
in_tmpl(const auto_in *a, const char *s)
{
    return a->tmpl && strstr(a->tmpl, s) != NULL;
}

static int
has_tok(const auto_in *a, const char *tok)
{
    return a->has_token && a->has_token(a->ctx, tok);
}

static int
type_is(const auto_in *a, const char *prefix)
{
    return a->model_type
           && strncmp(a->model_type, prefix, strlen(prefix)) == 0;
}

typedef struct {
    const char *id;
    const char *why;
    int       (*test)(const auto_in *a);
} auto_rule;

static int
r_harmony(const auto_in *a)
{
    return in_tmpl(a, "<|channel|>") || has_tok(a, "<|channel|>")
           || type_is(a, "gpt_oss");
}

static int
r_deepseek(const auto_in *a)
{
    return in_tmpl(a, "tool▁calls▁begin") || has_tok(a, "<｜tool▁calls▁begin｜>");
}

static int
r_qwen3_coder(const auto_in *a)
{
    return in_tmpl(a, "<function=") && in_tmpl(a, "<parameter=");
}

static int
r_glm4(const auto_in *a)
{
    return in_tmpl(a, "<arg_key>") || has_tok(a, "<arg_key>");
}

/* GLM-4-0414 / GLM-Z1 / GLM-4-9B-chat: tool results come back as
 * <|observation|> turns and calls are "name\n{json}" (GLM-4.5, which also
 * has <|observation|>, is matched by <arg_key> first) */
static int
r_glm4_0414(const auto_in *a)
{
    return in_tmpl(a, "<|observation|>");
}

static int
r_hermes(const auto_in *a)
{
    return in_tmpl(a, "<tool_call>");
}

static int
r_mistral(const auto_in *a)
{
    return in_tmpl(a, "[TOOL_CALLS]") || has_tok(a, "[TOOL_CALLS]");
}

/* Granite's template names <|tool_call|>; Phi-4-mini's puts tools between <|tool|> and <|/tool|> */
static int
r_tool_call_list(const auto_in *a)
{
    return in_tmpl(a, "<|tool_call|>") || (in_tmpl(a, "<|tool|>") && in_tmpl(a, "<|/tool|>"))
           || has_tok(a, "<|tool_call|>");
}

static int
r_pythonic(const auto_in *a)
{
    return in_tmpl(a, "<|python_start|>") || in_tmpl(a, "[func_name1(");
}

static int
r_llama3(const auto_in *a)
{
    return in_tmpl(a, "<|python_tag|>")
           || (in_tmpl(a, "<|eot_id|>") && in_tmpl(a, "\"parameters\""));
}

static int
r_hermes_token(const auto_in *a)
{
    return has_tok(a, "<tool_call>");
}

static int
r_llama_type(const auto_in *a)
{
    return type_is(a, "llama") && in_tmpl(a, "<|start_header_id|>");
}

static const auto_rule tool_rules[] = {
    { "harmony",     "template/tokens use <|channel|> (gpt-oss harmony)",
      r_harmony },
    { "deepseek_v3", "template uses <｜tool▁calls▁begin｜>", r_deepseek },
    { "qwen3_coder", "template uses <function=...><parameter=...>",
      r_qwen3_coder },
    { "glm4",        "template uses <arg_key>/<arg_value>", r_glm4 },
    { "glm4_0414",   "template uses <|observation|> (GLM-4-0414 name\\n{json} calls)",
      r_glm4_0414 },
    { "hermes",      "template uses <tool_call>", r_hermes },
    { "mistral",     "template/tokens use [TOOL_CALLS]", r_mistral },
    { "tool_call_list", "template/tokens use <|tool_call|> or <|tool|> (Granite, Phi-4-mini)",
      r_tool_call_list },
    { "pythonic",    "template asks for [func(arg=value)] calls",
      r_pythonic },
    { "llama3_json", "template uses <|python_tag|> / JSON \"parameters\"",
      r_llama3 },
    { "hermes",      "tokenizer has a <tool_call> token", r_hermes_token },
    { "llama3_json", "model_type llama with a Llama 3 template",
      r_llama_type },
    { NULL, NULL, NULL }
};

int
llm_parsers_auto(const char *chat_template_src, const char *model_type,
                 int (*has_token)(void *ctx, const char *tok), void *ctx,
                 const char **tool_id, const char **reasoning_id,
                 char *why, size_t whylen)
{
    auto_in     a;
    const char *tid = "hermes";
    const char *twhy = "no known tool-call format in the template; "
                       "tools are prompted in the hermes format";
    const char *rid = NULL;
    const char *rwhy = "no reasoning markers";
    size_t      i;

    a.tmpl = chat_template_src;
    a.model_type = model_type;
    a.has_token = has_token;
    a.ctx = ctx;

    for (i = 0; tool_rules[i].id; i++) {
        if (tool_rules[i].test(&a)) {
            tid = tool_rules[i].id;
            twhy = tool_rules[i].why;
            break;
        }
    }

    if (strcmp(tid, "harmony") == 0) {
        rid = "harmony";
        rwhy = "harmony analysis channel";
    } else if (in_tmpl(&a, "<think>") || in_tmpl(&a, "</think>")
               || has_tok(&a, "<think>") || has_tok(&a, "</think>"))
    {
        rid = "think";
        rwhy = in_tmpl(&a, "think>") ? "template uses <think>"
                                     : "tokenizer has <think> tokens";
    } else if (in_tmpl(&a, "[THINK]") || has_tok(&a, "[THINK]")) {
        rid = "mistral";
        rwhy = "template/tokens use [THINK]";
    }

    /* only ids that are registered in this build */
    if (llm_tool_parser_find(tid) == NULL) {
        twhy = "detected format not available; using hermes";
        tid = "hermes";
    }
    if (rid && llm_reasoning_parser_find(rid) == NULL) {
        rid = NULL;
        rwhy = "detected reasoning format not available";
    }

    *tool_id = tid;
    *reasoning_id = rid;
    if (why && whylen) {
        snprintf(why, whylen, "tool parser %s (%s); reasoning parser %s (%s)",
                 tid, twhy, rid ? rid : "none", rwhy);
    }
    return 0;
}

static const struct {
    const char           *id;
    llm_reasoning_marks   marks;
} reasoning_marks[] = {
    { "think",   { "<think>", "</think>", "</think>" } },
    { "mistral", { "[THINK]", "[/THINK]", "[/THINK]" } },
    /* analysis ends with its message; the answer is the final channel */
    { "harmony", { "<|channel|>analysis<|message|>", "<|end|>",
                   "<|end|><|start|>assistant<|channel|>final<|message|>" } },
};

int
llm_reasoning_markers(const char *reasoning_id, llm_reasoning_marks *m)
{
    size_t  i;

    for (i = 0; reasoning_id
                && i < sizeof(reasoning_marks) / sizeof(reasoning_marks[0]);
         i++)
    {
        if (strcmp(reasoning_marks[i].id, reasoning_id) == 0) {
            *m = reasoning_marks[i].marks;
            return 0;
        }
    }
    return -1;
}

int
llm_reasoning_starts_open(const char *reasoning_id, const char *prompt,
                          size_t len)
{
    const char          *open, *close;
    size_t               ol, cl, i, n = len;
    llm_reasoning_marks  mk;

    if (prompt == NULL || llm_reasoning_markers(reasoning_id, &mk) != 0) {
        return 0;
    }
    open = mk.open;
    close = mk.close;
    while (n > 0 && llm_is_space(prompt[n - 1])) {
        n--;
    }
    ol = strlen(open);
    cl = strlen(close);
    if (n < ol || memcmp(prompt + n - ol, open, ol) != 0) {
        return 0;
    }
    /* "<think>" at the end and no "</think>" after it */
    for (i = n - ol; i + cl <= n; i++) {
        if (memcmp(prompt + i, close, cl) == 0) {
            return 0;
        }
    }
    return 1;
}
