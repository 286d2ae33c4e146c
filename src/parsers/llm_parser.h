/*
 * Tool-call and reasoning parsers (strategy objects) and their registry.
 *
 * A parser turns the text a model generates into llm_event values
 * (core/llm_ir.h): CONTENT, REASONING and TOOL_BEGIN / TOOL_ARGS / TOOL_END.
 * A definition (llm_parser_def) is static and shared; an instance
 * (llm_parser) is request-scoped.  Text may be fed split anywhere, even
 * inside a marker or a UTF-8 character; a parser holds bytes back only while
 * they can still start a marker.  Most callers use the stream processor
 * (parsers/llm_stream.h), which chains a reasoning and a tool parser, matches
 * stop strings and builds the llm_result.
 *
 * docs/parsers.md lists the ids and the auto-selection rules.
 */
#ifndef LLM_PARSER_H
#define LLM_PARSER_H

#include <stddef.h>
#include <jansson.h>

#include "core/llm_ir.h"

typedef struct llm_parser llm_parser;   /* request-scoped state */

typedef struct {
    /* The request's tools ([{"type":"function","function":{"name",
     * "parameters"}}]) or NULL.  NULL: tagged calls are accepted whatever
     * their name; an array: a call whose name is not in it is returned as
     * content.  Untagged (bare JSON) calls need a known name in any case. */
    const json_t *tools;
    int           parallel_tool_calls;   /* 0: calls after the first are dropped */
    int           starts_in_reasoning;   /* the prompt already opened reasoning */
    llm_event_fn  emit;
    void         *ctx;
} llm_parser_env;

#define LLM_PARSER_TOOL       1
#define LLM_PARSER_REASONING  2

typedef struct llm_parser_def {
    const char         *id;
    int                 kinds;      /* LLM_PARSER_TOOL | LLM_PARSER_REASONING */
    /* Marker strings this format uses; the detokenizer must keep them in the
     * text even when they are special tokens.  NULL-terminated. */
    const char *const  *markers;
    llm_parser *(*create)(const llm_parser_env *env);   /* NULL: out of memory */
    void        (*feed)(llm_parser *p, const char *text, size_t len);
    void        (*finish)(llm_parser *p);   /* end of output: flush, recover */
    void        (*destroy)(llm_parser *p);
} llm_parser_def;

/* Registry.  NULL for unknown ids, "auto" and "none" (callers decide those). */
const llm_parser_def *llm_tool_parser_find(const char *id);
const llm_parser_def *llm_reasoning_parser_find(const char *id);
/* "auto, none, hermes, ..." for error messages about unknown ids. */
const char *llm_tool_parser_ids(void);
const char *llm_reasoning_parser_ids(void);

/*
 * What llm_tool_parser / llm_reasoning_parser name for kind
 * (LLM_PARSER_TOOL or LLM_PARSER_REASONING): "auto" (model = 1: the
 * model's own choice, made when it is loaded), "none" (def NULL) or one
 * parser of that kind.
 */
typedef struct {
    int                    model;
    const llm_parser_def  *def;
} llm_parser_choice;

/* value (len bytes) into *c: 0, or -1 for an id kind has no parser of
 * (llm_parser_ids(kind) lists the known ones). */
int llm_parser_choose(int kind, const char *value, size_t len,
    llm_parser_choice *c);
const char *llm_parser_ids(int kind);

/*
 * Choose parsers for a model at load time from its chat template text (may be
 * NULL), config.json model_type (may be NULL) and special tokens (has_token
 * may be NULL).  *tool_id is a tool parser id (never NULL: "hermes" is the
 * fallback, matching the Hermes-style prompt injected when a template does
 * not deliver tools); *reasoning_id is a reasoning parser id or NULL.  `why`
 * receives one line for the log.  Returns 0.
 */
int llm_parsers_auto(const char *chat_template_src, const char *model_type,
                     int (*has_token)(void *ctx, const char *tok), void *ctx,
                     const char **tool_id, const char **reasoning_id,
                     char *why, size_t whylen);

/*
 * A reasoning format's blocks: the text that opens one, the text that
 * closes it, and what the server writes to close one itself (a spent
 * thinking budget: engine/llm_reasoning_budget.h) -- the close marker, or
 * for harmony the end of the analysis message and the head of the final
 * one.
 */
typedef struct {
    const char  *open;
    const char  *close;
    const char  *forced_close;
} llm_reasoning_marks;

/* 0 with *m for a reasoning parser id; -1 for NULL or an unknown id. */
int llm_reasoning_markers(const char *reasoning_id, llm_reasoning_marks *m);

/*
 * 1 if a rendered prompt ends inside an open reasoning block for this
 * reasoning parser (e.g. ends with "<think>\n"), so the output starts as
 * reasoning: pass the result as starts_in_reasoning.
 */
int llm_reasoning_starts_open(const char *reasoning_id, const char *prompt,
                              size_t len);

#endif
