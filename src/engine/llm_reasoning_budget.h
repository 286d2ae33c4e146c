/*
 * A thinking budget for one sequence (Anthropic thinking.budget_tokens,
 * reasoning effort): it follows the tokens of the output, sampled or
 * forced, and counts those written inside reasoning blocks (between the
 * reasoning format's open and close markers, matched on the tokens' text;
 * every block of the output counts against one budget).  Once a block
 * holds the budget, counting the close marker's own tokens, it names the
 * close marker's tokens, which the scheduler appends without sampling
 * (llm_sched.h, as it does a grammar's forced tokens): the block ends there
 * and the answer follows.  A block that opens after the budget is spent is
 * closed at once.
 *
 * With a budget of SIZE_MAX it never closes anything and only counts: the
 * reply counts a response's usage reasoning_tokens so (chat/llm_reply.c),
 * the same tokens a budget counts.
 *
 * The markers come from the model's reasoning format (parsers/llm_parser.h
 * llm_reasoning_markers), tokenized as the model's tokenizer reads them.
 * One object is used by one thread at a time.
 */
#ifndef LLM_REASONING_BUDGET_H
#define LLM_REASONING_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "engine/llm_tokenizer.h"

typedef struct llm_reasoning_budget llm_reasoning_budget;

/*
 * open / close: the text that opens and closes a block; forced_close: what
 * is appended to close one (the close marker, or more: llm_reasoning_marks).
 * budget: tokens the blocks may hold, the forced close included; inside:
 * the prompt already opened a block (the output starts in it).  NULL when
 * out of memory or a marker is empty or longer than 64 bytes.
 */
llm_reasoning_budget *llm_reasoning_budget_create(const llm_tokenizer *tok,
    const char *open, const char *close, const char *forced_close,
    size_t budget, int inside);
void llm_reasoning_budget_free(llm_reasoning_budget *b);

/* The output's next token, sampled or forced. */
void llm_reasoning_budget_accept(llm_reasoning_budget *b, int32_t id);

/*
 * When the open block has used its budget: up to max of the forced close's
 * tokens (not yet accepted: pass each to llm_reasoning_budget_accept as it
 * is appended).  Else 0.
 */
int llm_reasoning_budget_forced(const llm_reasoning_budget *b, int32_t *ids,
    int max);

/* Tokens counted so far; 1 while a block is open. */
size_t llm_reasoning_budget_used(const llm_reasoning_budget *b);
int llm_reasoning_budget_inside(const llm_reasoning_budget *b);

#endif
