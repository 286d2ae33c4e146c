/*
 * Thinking budgets without a model: the default model's tokenizer (whose
 * <think> and </think> are added tokens) and the markers of the reasoning
 * formats; blocks found in the text, the close named once the block holds
 * the budget, every block of the output counted against one budget, a close
 * longer than one step's forced tokens appended in parts.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "engine/llm_reasoning_budget.h"
#include "parsers/llm_parser.h"

#define MODEL "models/ngxllm-tiny"

/* Feeds text's tokens; returns how many. */
static size_t
feed(llm_reasoning_budget *b, const llm_tokenizer *tok, const char *text)
{
    int32_t  *ids = NULL;
    size_t    n = 0, i;

    if (llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n) != 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        llm_reasoning_budget_accept(b, ids[i]);
    }
    free(ids);
    return n;
}

int
main(void)
{
    char                   err[256];
    int32_t                ids[64], think_close, *end_ids = NULL;
    size_t                 n, n_end = 0, i;
    int                    k, n1, n2;
    llm_tokenizer         *tok;
    llm_reasoning_budget  *b;
    llm_reasoning_marks    mk;

    tok = llm_tokenizer_load(MODEL, err, sizeof(err));
    if (!ok(tok != NULL, "the default model's tokenizer loads")) {
        diag(err);
        return done_testing();
    }
    think_close = llm_tokenizer_token_id(tok, "</think>");
    ok(think_close >= 0 && llm_reasoning_markers("think", &mk) == 0,
       "</think> is a token; the think format has markers");
    ok(llm_reasoning_markers("none", &mk) != 0 && llm_reasoning_markers(NULL, &mk) != 0,
       "no markers for an unknown or no format");

    /* a block the model opens: 6 tokens, the close included */
    llm_reasoning_markers("think", &mk);
    b = llm_reasoning_budget_create(tok, mk.open, mk.close, mk.forced_close, 6, 0);
    ok(b != NULL, "a budget of 6");
    feed(b, tok, "Hello ");
    ok(!llm_reasoning_budget_inside(b) && llm_reasoning_budget_used(b) == 0,
       "text before a block is not counted");
    feed(b, tok, "<think>");
    ok(llm_reasoning_budget_inside(b) && llm_reasoning_budget_used(b) == 0,
       "<think> opens a block and is not counted");
    for (i = 0; i < 4; i++) {
        llm_reasoning_budget_accept(b, llm_tokenizer_token_id(tok, "a"));
    }
    is_int(llm_reasoning_budget_forced(b, ids, 64), 0, "4 tokens in: the close still fits later");
    llm_reasoning_budget_accept(b, llm_tokenizer_token_id(tok, "a"));
    k = llm_reasoning_budget_forced(b, ids, 64);
    ok(k == 1 && ids[0] == think_close, "5 tokens in: </think> is due (%d)", k);
    is_int(llm_reasoning_budget_forced(b, ids, 0), 0, "nothing when no room");
    llm_reasoning_budget_accept(b, ids[0]);
    ok(!llm_reasoning_budget_inside(b) && llm_reasoning_budget_used(b) == 6,
       "the close ends the block at 6 tokens");
    feed(b, tok, "The answer is 4.");
    ok(llm_reasoning_budget_forced(b, ids, 64) == 0 && llm_reasoning_budget_used(b) == 6,
       "the answer is not counted and nothing is forced");
    feed(b, tok, "<think>");
    k = llm_reasoning_budget_forced(b, ids, 64);
    ok(llm_reasoning_budget_inside(b) && k == 1 && ids[0] == think_close,
       "a second block after the budget is spent is closed at once");
    llm_reasoning_budget_free(b);

    /* the prompt opened the block; markers written as plain text pieces */
    b = llm_reasoning_budget_create(tok, mk.open, mk.close, mk.forced_close, 100, 1);
    ok(llm_reasoning_budget_inside(b), "inside from the start");
    n = feed(b, tok, "thinking a while");
    is_int(llm_reasoning_budget_used(b), n, "every token inside counts (%zu)", n);
    llm_reasoning_budget_accept(b, llm_tokenizer_token_id(tok, "<"));
    llm_reasoning_budget_accept(b, llm_tokenizer_token_id(tok, "/"));
    feed(b, tok, "think>");
    ok(!llm_reasoning_budget_inside(b), "</think> written in pieces closes the block too");
    feed(b, tok, "x <think");
    ok(!llm_reasoning_budget_inside(b), "half an open marker opens nothing");
    llm_reasoning_budget_free(b);

    /* harmony: the block ends at <|end|>; the forced close goes on to the
     * final channel, in parts when a step has room for fewer tokens */
    ok(llm_reasoning_markers("harmony", &mk) == 0, "harmony has markers");
    llm_tokenizer_encode(tok, mk.forced_close, strlen(mk.forced_close), 0, &end_ids, &n_end);
    ok(n_end > 4, "its forced close is %zu tokens here", n_end);
    b = llm_reasoning_budget_create(tok, mk.open, mk.close, mk.forced_close, 3, 0);
    feed(b, tok, mk.open);
    ok(llm_reasoning_budget_inside(b), "the analysis channel opens a block");
    n1 = llm_reasoning_budget_forced(b, ids, 3);
    ok(n1 == 3 && memcmp(ids, end_ids, 3 * sizeof(int32_t)) == 0,
       "a budget below the close's length: the close at once, 3 tokens fit");
    for (k = 0; k < n1; k++) {
        llm_reasoning_budget_accept(b, ids[k]);
    }
    n2 = llm_reasoning_budget_forced(b, ids, 64);
    ok(n2 == (int) n_end - 3 && memcmp(ids, end_ids + 3, (size_t) n2 * sizeof(int32_t)) == 0,
       "the next step appends the rest of it (%d)", n2);
    for (k = 0; k < n2; k++) {
        llm_reasoning_budget_accept(b, ids[k]);
    }
    ok(!llm_reasoning_budget_inside(b) && llm_reasoning_budget_forced(b, ids, 64) == 0,
       "then the block is closed and nothing more is forced");
    llm_reasoning_budget_free(b);
    free(end_ids);

    ok(llm_reasoning_budget_create(tok, "", "</think>", "</think>", 5, 0) == NULL,
       "an empty marker is refused");

    llm_tokenizer_free(tok);
    return done_testing();
}
