/*
 * Request-scoped stream processor: generated text in, llm_event values and
 * one llm_result out.
 *
 *   text -> stop strings -> reasoning parser -> tool parser -> events
 *
 * Text may be split anywhere (inside a marker, a stop string or a UTF-8
 * character).  Events carry whole UTF-8 characters; consecutive text of one
 * kind within a feed is merged into one event; invalid UTF-8 becomes
 * U+FFFD.  When a tool or reasoning parser is set (and raw_text is not),
 * content and reasoning are trimmed of leading/trailing whitespace and of
 * whitespace before tool calls; without parsers text passes unchanged
 * (/v1/completions).  The concatenated TOOL_ARGS texts of a call equal its
 * final arguments, which are compact JSON.
 *
 * Pass tool = NULL when the request offers no tools (or tool_choice is
 * none); with a tool parser, tools = NULL accepts tagged calls of any name,
 * a tools array turns calls of other names into content.
 */
#ifndef LLM_STREAM_H
#define LLM_STREAM_H

#include <stddef.h>
#include <jansson.h>

#include "core/llm_ir.h"
#include "parsers/llm_parser.h"

typedef struct llm_stream llm_stream;

typedef struct {
    const llm_parser_def *tool;        /* NULL: no tool-call extraction */
    const llm_parser_def *reasoning;   /* NULL: no reasoning split */
    int                   starts_in_reasoning;
    const json_t         *tools;       /* request tools array or NULL; kept
                                        * by reference for the stream's life */
    int                   parallel_tool_calls;
    const char *const    *stop;        /* stop strings (may be NULL) */
    size_t                n_stop;
    int                   raw_text;    /* never trim whitespace */
} llm_stream_config;

/* NULL on out of memory.  Strings of the config are copied. */
llm_stream *llm_stream_create(const llm_stream_config *cfg);
void        llm_stream_destroy(llm_stream *s);

/*
 * Feed generated text; events go to emit(ctx, ev) before it returns.
 * Returns 1 when a stop string matched (now or before): stop generating
 * and call llm_stream_finish.  Text after the match is ignored.
 */
int llm_stream_feed(llm_stream *s, const char *text, size_t len,
                    llm_event_fn emit, void *ctx);

/*
 * End of generation for `reason` (STOP for EOS / end of turn, LENGTH, ...):
 * flush held text, recover an unterminated last call, emit the last
 * events and fill out's content, reasoning, tool_calls, finish and
 * stop_sequence (out->usage is left alone; free with llm_result_free).
 * finish becomes TOOL_CALLS when calls were made and reason is STOP, and
 * STOP_SEQ when a stop string matched.  Returns 0, -1 on out of memory.
 */
int llm_stream_finish(llm_stream *s, llm_finish reason, llm_event_fn emit,
                      void *ctx, llm_result *out);

#endif
