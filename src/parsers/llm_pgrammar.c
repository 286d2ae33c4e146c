/*
 * Tool-call formats as grammars: the calls a parser reads, written as the
 * rules of src/grammar so that constrained decoding produces exactly what
 * the family's parser accepts, with each tool's `parameters` schema
 * constraining its arguments.
 *
 * A format is described once by its marker strings; the grammar of a call
 * list is
 *     calls ::= open call (sep call)* close        (one call: no sep part)
 *     call  ::= name_pre NAME name_post ARGS args_post      for each tool
 * where `open` is the trigger (the text after which, in `auto` mode, the
 * grammar takes over).  ARGS is a JSON object, or for the formats that
 * write parameters one by one (qwen3_coder, glm4: XML-style tags; pythonic:
 * keywords) the members in the format's own syntax (llm_gbuild_json_args),
 * each value typed the way the family's parser reads it (llm_param_type):
 * text for strings, JSON otherwise.  JSON values write '<' only as \u003c
 * and text values never put a letter or '/' after '<', so a marker can
 * never appear inside a value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parsers/llm_parser_impl.h"
#include "parsers/llm_pgrammar.h"

/* How the XML-style parsers read a value: as text (a string) when the
 * schema's type is a string (llm_param_type), else converted to its type;
 * an untyped value is text for qwen3_coder and JSON-if-it-parses for glm4. */
static int
reads_text(const json_t *prop, const char **type, int untyped_is_text)
{
    const char *t = llm_param_type(prop);
    *type = NULL;
    if (t == NULL) return untyped_is_text;
    if (strcmp(t, "string") == 0 || strcmp(t, LLM_TYPE_STRING_OR_NULL) == 0) return 1;
    *type = t;
    return 0;
}

static int
reads_qwen3_coder(const json_t *prop, const char **type)
{
    return reads_text(prop, type, 1);
}

static int
reads_glm4(const json_t *prop, const char **type)
{
    return reads_text(prop, type, 0);
}

static const llm_gargs_style qwen3_coder_args = {
    "qwen3_coder", "<parameter=", ">\n", "\n</parameter>\n", "", 0, reads_qwen3_coder };
static const llm_gargs_style glm4_args = {
    "glm4", "<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>\n", "", 0, reads_glm4 };
static const llm_gargs_style pythonic_args = {
    "pythonic", "", "=", "", ", ", 1, NULL };

typedef struct {
    const char *id;
    const char *open;        /* trigger and start of the call list */
    const char *name_pre;    /* before the tool name */
    const char *name_post;   /* between the name and the arguments */
    const char *args_post;   /* after the arguments */
    const char *sep;         /* between calls */
    const char *close;       /* after the last call */
    int         parallel;    /* the format can carry several calls */
    const llm_gargs_style *args;   /* arguments one by one; NULL: a JSON object */
    int         json_flags;  /* LLM_GJSON_* for JSON values */
    int         lazy;        /* `open` is distinctive enough to start a call in
                              * free text (tool_choice auto) */
    int         anchored;    /* the first call can only open the output: with
                              * auto the trigger is the output's first text */
    const char *reopen;      /* (anchored) a marker opening a list anywhere */
    const char *name_bad;    /* characters a tool name cannot hold here */
    int         name_ident;  /* names are identifiers (pythonic) */
    const char *name_chars;  /* NULL, or the only characters a name may hold */
} tool_format;

/* glm4_0414's parser reads a name line of these characters */
#define GLM0414_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:"

static const tool_format formats[] = {
    { "hermes", "<tool_call>", "\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>",
      "\n<tool_call>", "", 1, NULL, LLM_GJSON_NO_LT, 1, 0, NULL, "\"\\", 0, NULL },
    { "llama3_json", "<|python_tag|>", "{\"name\": \"", "\", \"parameters\": ", "}",
      "; ", "", 1, NULL, LLM_GJSON_NO_LT, 1, 0, NULL, "\"\\", 0, NULL },
    { "mistral", "[TOOL_CALLS]", "{\"name\": \"", "\", \"arguments\": ", "}",
      ", ", "]", 1, NULL, LLM_GJSON_NO_LT, 1, 0, NULL, "\"\\", 0, NULL },
    { "deepseek_v3", "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>",
      "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>function<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>",
      "\n```json\n", "\n```<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>",
      "\n", "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>", 1, NULL, LLM_GJSON_NO_LT, 1, 0, NULL, "\n<", 0, NULL },
    { "harmony", "<|channel|>commentary to=functions.", "", " <|constrain|>json<|message|>", "",
      "", "", 0, NULL, LLM_GJSON_NO_LT, 1, 0, NULL, " <\n", 0, NULL },
    /* <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call> */
    { "qwen3_coder", "<tool_call>", "\n<function=", ">\n", "</function>\n</tool_call>",
      "\n<tool_call>", "", 1, &qwen3_coder_args, LLM_GJSON_NO_LT, 1, 0, NULL, "<>\n", 0, NULL },
    /* <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call> */
    { "glm4", "<tool_call>", "", "\n", "</tool_call>",
      "\n<tool_call>", "", 1, &glm4_args, LLM_GJSON_NO_LT, 1, 0, NULL, "<\n{", 0, NULL },
    /* [NAME(k=V, k2=V2), NAME2()]: a list opens the output (its parser reads
     * "[" after blanks only there) or follows <|python_start|> */
    { "pythonic", "[", "", "(", ")", ", ", "]", 1, &pythonic_args, 0, 1, 1, "<|python_start|>",
      "", 1, NULL },
    /* NAME\n{JSON}: the first call opens the output with a tool's name line;
     * further calls (or a call after text) follow <|assistant|> */
    { "glm4_0414", "", "", "\n", "", "<|assistant|>", "", 1, NULL, LLM_GJSON_NO_LT, 1, 1,
      "<|assistant|>", "", 0, GLM0414_NAME_CHARS },
};

/* mistral's list opens with "[" right after the trigger */
#define MISTRAL_LIST_OPEN "["

static const tool_format *
find_format(const char *id)
{
    size_t i;
    if (id == NULL) return NULL;
    for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        if (strcmp(formats[i].id, id) == 0) return &formats[i];
    }
    /* llama3's parser id may be written without the suffix */
    if (strcmp(id, "llama3") == 0) return &formats[1];
    return NULL;
}

int
llm_tool_grammar_supported(const char *parser_id)
{
    return find_format(parser_id) != NULL;
}

int
llm_tool_grammar_lazy(const char *parser_id)
{
    const tool_format *f = find_format(parser_id);
    return f != NULL && f->lazy;
}

int
llm_tool_grammar_anchored(const char *parser_id)
{
    const tool_format *f = find_format(parser_id);
    return f != NULL && f->anchored;
}

const char *
llm_tool_grammar_reopen(const char *parser_id)
{
    const tool_format *f = find_format(parser_id);
    return f != NULL ? f->reopen : NULL;
}

int
llm_tool_grammar_opening(const char *parser_id, const char *name, char *out, size_t cap)
{
    const tool_format *f = find_format(parser_id);
    int n;
    if (f == NULL) return -1;
    n = f->open[0] ? snprintf(out, cap, "%s", f->open)
                   : snprintf(out, cap, "%s%s%s", f->name_pre, name, f->name_post);
    return n < 0 || (size_t) n >= cap ? -1 : 0;
}

/* 1 when the format can write this tool name so its parser reads it back */
static int
name_ok(const tool_format *f, const char *name)
{
    const char *p;
    if (*name == 0) return 0;
    for (p = name; *p; p++) {
        if (strchr(f->name_bad, *p)) return 0;
        if (f->name_chars && !strchr(f->name_chars, *p)) return 0;
        if (f->name_ident && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'
                               || (p > name && ((*p >= '0' && *p <= '9') || *p == '.'))))
            return 0;
    }
    /* names are trimmed by some parsers */
    return name[0] != ' ' && p[-1] != ' ';
}

static int
lit(llm_gbuild *b, llm_gseq *s, const char *t)
{
    return llm_gseq_bytes(b, s, t, strlen(t));
}

static const json_t *
tool_fn(const json_t *tool)
{
    const json_t *fn = json_object_get(tool, "function");
    return fn ? fn : tool;
}

int
llm_tool_grammar(llm_gbuild *b, const llm_tool_grammar_spec *spec, char *err, size_t errlen)
{
    const tool_format *f = find_format(spec->parser_id);
    llm_gseq *s = NULL;
    int call = -1, rest = -1, root = -1, n = 0;
    size_t i;

    if (f == NULL) {
        snprintf(err, errlen, "tool calls of the '%s' format cannot be enforced",
                 spec->parser_id ? spec->parser_id : "none");
        return -1;
    }
    s = llm_gseq_new();
    call = llm_gbuild_rule(b, "call");
    if (s == NULL || call < 0) goto oom;
    for (i = 0; i < json_array_size(spec->tools); i++) {
        const json_t *fn = tool_fn(json_array_get(spec->tools, i));
        const json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
        json_t *empty = NULL;
        int args;
        if (!json_is_string(name)) continue;
        if (spec->only && strcmp(spec->only, json_string_value(name)) != 0) continue;
        if (!name_ok(f, json_string_value(name))) {
            snprintf(err, errlen, "tool name '%s' cannot be written in the %s tool-call format",
                     json_string_value(name), f->id);
            llm_gseq_free(s);
            return -1;
        }
        if (params == NULL) params = empty = json_pack("{s:s}", "type", "object");
        args = f->args ? llm_gbuild_json_args(b, params, f->args, f->json_flags, err, errlen)
                       : llm_gbuild_json_schema_flags(b, params, f->json_flags, err, errlen);
        json_decref(empty);
        if (args < 0) {
            char tmp[256];
            snprintf(tmp, sizeof(tmp), "%s", err);
            snprintf(err, errlen, "tool '%s' parameters: %s", json_string_value(name), tmp);
            llm_gseq_free(s);
            return -1;
        }
        if (n++ > 0 && llm_gseq_alt(s) < 0) goto oom;
        if (lit(b, s, f->name_pre) < 0 || lit(b, s, json_string_value(name)) < 0
            || lit(b, s, f->name_post) < 0 || llm_gseq_ref(s, args) < 0
            || lit(b, s, f->args_post) < 0) goto oom;
    }
    if (n == 0) {
        snprintf(err, errlen, spec->only ? "no tool named '%s'" : "no tools%s",
                 spec->only ? spec->only : "");
        llm_gseq_free(s);
        return -1;
    }
    if (llm_gbuild_define(b, call, s) < 0) goto oom;

    /* (sep call)* */
    if (spec->parallel && f->parallel) {
        int one = llm_gbuild_rule(b, "next-call");
        llm_gseq_clear(s);
        if (one < 0 || lit(b, s, f->sep) < 0 || llm_gseq_ref(s, call) < 0
            || llm_gbuild_define(b, one, s) < 0) goto oom;
        rest = llm_gbuild_repeat(b, one, 0, -1);
        if (rest < 0) goto oom;
    }
    /* after the trigger: the calls and the close */
    root = llm_gbuild_rule(b, "calls");
    llm_gseq_clear(s);
    if (root < 0) goto oom;
    if (strcmp(f->id, "mistral") == 0 && lit(b, s, MISTRAL_LIST_OPEN) < 0) goto oom;
    if (llm_gseq_ref(s, call) < 0 || (rest >= 0 && llm_gseq_ref(s, rest) < 0)
        || lit(b, s, f->close) < 0 || llm_gbuild_define(b, root, s) < 0) goto oom;
    llm_gseq_free(s);
    return root;
oom:
    llm_gseq_free(s);
    snprintf(err, errlen, "out of memory");
    return -1;
}

const char *
llm_tool_grammar_trigger(const char *parser_id)
{
    const tool_format *f = find_format(parser_id);
    return f ? f->open : NULL;
}

size_t
llm_tool_grammar_markers(const char *parser_id, const char **out, size_t max)
{
    const tool_format *f = find_format(parser_id);
    const char *all[9];
    size_t n = 0, i, k = 0;
    if (f == NULL) return 0;
    all[k++] = f->open; all[k++] = f->name_pre; all[k++] = f->name_post; all[k++] = f->args_post;
    all[k++] = f->sep; all[k++] = f->close;
    if (f->args) { all[k++] = f->args->key_pre; all[k++] = f->args->key_post; all[k++] = f->args->val_post; }
    for (i = 0; i < k && n < max; i++) if (all[i][0]) out[n++] = all[i];
    return n;
}
