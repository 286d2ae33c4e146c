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
 * grammar takes over).  JSON argument values write '<' only as \u003c, so
 * a marker can never appear inside a value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parsers/llm_pgrammar.h"

typedef struct {
    const char *id;
    const char *open;        /* trigger and start of the call list */
    const char *name_pre;    /* before the tool name */
    const char *name_post;   /* between the name and the arguments */
    const char *args_post;   /* after the arguments */
    const char *sep;         /* between calls */
    const char *close;       /* after the last call */
    int         parallel;    /* the format can carry several calls */
} tool_format;

static const tool_format formats[] = {
    { "hermes", "<tool_call>", "\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>",
      "\n<tool_call>", "", 1 },
    { "llama3_json", "<|python_tag|>", "{\"name\": \"", "\", \"parameters\": ", "}",
      "; ", "", 1 },
    { "mistral", "[TOOL_CALLS]", "{\"name\": \"", "\", \"arguments\": ", "}",
      ", ", "]", 1 },
    { "deepseek_v3", "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>",
      "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>function<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>",
      "\n```json\n", "\n```<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>",
      "\n", "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>", 1 },
    { "harmony", "<|channel|>commentary to=functions.", "", " <|constrain|>json<|message|>", "",
      "", "", 0 },
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
        if (params == NULL) params = empty = json_pack("{s:s}", "type", "object");
        args = llm_gbuild_json_schema_flags(b, params, LLM_GJSON_NO_LT, err, errlen);
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
    const char *all[7];
    size_t n = 0, i;
    if (f == NULL) return 0;
    all[0] = f->open; all[1] = f->name_pre; all[2] = f->name_post; all[3] = f->args_post;
    all[4] = f->sep; all[5] = f->close; all[6] = NULL;
    for (i = 0; i < 6 && n < max; i++) if (all[i][0]) out[n++] = all[i];
    return n;
}
