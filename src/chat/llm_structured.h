/*
 * Structured output: which grammar a request's output must follow, and the
 * compiled grammars of one model, cached.
 *
 *   response_format json_object / json_schema   the JSON value (after any
 *                                               reasoning block)
 *   grammar (GBNF) / regex extensions            the text they describe
 *   tool_choice required / named (Anthropic      one call or more (one with
 *     any / tool)                                parallel_tool_calls false) in
 *                                                the model's own call format
 *   tool_choice auto                             free text; once the format's
 *                                                trigger marker appears the
 *                                                calls must complete validly
 *                                                (pythonic, glm4_0414: a call
 *                                                list opening the output, or
 *                                                after their reopen marker)
 * Reasoning stays free: when the prompt opens a reasoning block the grammar
 * applies after it closes; a model that may open one itself may write it
 * first.
 *
 * Per model and process (not shared across threads except the indexes,
 * which lock themselves): create after the tokenizer is loaded, prepare and
 * release on the thread that serves requests; free it after every
 * constraint made from it (they read its vocabulary).
 */
#ifndef LLM_STRUCTURED_H
#define LLM_STRUCTURED_H

#include <stddef.h>
#include <stdint.h>

#include "core/llm_ir.h"
#include "engine/llm_constrain.h"
#include "engine/llm_tokenizer.h"
#include "grammar/llm_grammar.h"

typedef struct llm_structured llm_structured;

/* stop ids: the model's end-of-sequence ids (allowed once the grammar is complete). */
llm_structured *llm_structured_create(const llm_tokenizer *tok, const int32_t *stop_ids,
                                      size_t n_stop, char *err, size_t errlen);
void llm_structured_free(llm_structured *s);
const llm_gvocab *llm_structured_vocab(const llm_structured *s);

typedef struct {
    llm_gindex  *index;          /* NULL: the output is free; else a reference
                                    the caller drops with llm_structured_release
                                    (a constraint takes its own) */
    /* lazy start (llm_constrain.h): the grammar applies once these markers
     * appeared; owned by the plan (with index), freed by the release */
    llm_trigger *triggers;
    size_t       n_triggers;
} llm_structured_plan;

/*
 * The plan for a request.  tool_parser / reasoning_parser: the ids chosen
 * for the model (NULL: none).  Returns 0 (plan->index NULL when nothing is
 * enforced) or -1 with a message for a 400 and the offending parameter in
 * *param ("response_format", "tools", "grammar", "regex", "tool_choice").
 */
int llm_structured_prepare(llm_structured *s, const llm_request *req,
                           const char *tool_parser, const char *reasoning_parser,
                           int starts_in_reasoning, llm_structured_plan *plan,
                           char *err, size_t errlen, const char **param);
void llm_structured_release(llm_structured *s, llm_structured_plan *plan);

/* Compiled grammars held in the cache now (tests, /health). */
size_t llm_structured_cached(const llm_structured *s);

#endif
