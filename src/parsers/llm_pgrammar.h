/*
 * Tool-call formats as grammars (src/grammar rules) for constrained decoding:
 * the text each family's parser reads, with the arguments constrained by the
 * tools' JSON schemas.
 */
#ifndef LLM_PGRAMMAR_H
#define LLM_PGRAMMAR_H

#include <stddef.h>
#include <jansson.h>

#include "grammar/llm_grammar.h"

typedef struct {
    const char   *parser_id;    /* the model's tool parser: "hermes", ... */
    const json_t *tools;        /* [{"type":"function","function":{"name","parameters"}}] */
    const char   *only;         /* a named tool, or NULL for any of them */
    int           parallel;     /* several calls allowed */
} llm_tool_grammar_spec;

/* 1 when calls of this parser's format can be enforced (tool_choice
 * required / named); lazy: also in free text from the trigger on (auto). */
int llm_tool_grammar_supported(const char *parser_id);
int llm_tool_grammar_lazy(const char *parser_id);

/*
 * 1 for the formats whose first call has no marker of its own and can only
 * open the output (pythonic "[", glm4_0414's name line): with auto their
 * trigger is the output's first text (llm_tool_grammar_opening), and the
 * grammar starts at it.  reopen: a marker that opens a call list anywhere
 * in text for these parsers ("<|python_start|>", "<|assistant|>"), or NULL.
 */
int llm_tool_grammar_anchored(const char *parser_id);
const char *llm_tool_grammar_reopen(const char *parser_id);
/*
 * The text that shows a call list opening the output for tool `name`: the
 * format's opening marker, or when it has none the call's name line
 * ("get_weather\n").  -1 when it does not fit in cap.
 */
int llm_tool_grammar_opening(const char *parser_id, const char *name, char *out, size_t cap);

/*
 * Adds rules for a call list in the format, from its trigger marker on
 * (llm_tool_grammar_trigger), and returns the rule id; -1 with a message
 * (an unsupported keyword in a tool's parameters is named) on error.
 */
int llm_tool_grammar(llm_gbuild *b, const llm_tool_grammar_spec *spec,
                     char *err, size_t errlen);

/* The marker that opens the calls ("<tool_call>", "[TOOL_CALLS]", ...). */
const char *llm_tool_grammar_trigger(const char *parser_id);

/* The format's marker strings (for finding their token ids). */
size_t llm_tool_grammar_markers(const char *parser_id, const char **out, size_t max);

#endif
