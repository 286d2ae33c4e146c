/*
 * Thinking budgets (llm_reasoning_budget.h).  Markers are found in the
 * output's text, not its ids: a model may write a marker that is not one
 * added token in several pieces, and the text is what the reasoning parser
 * reads too.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_reasoning_budget.h"

#define MARK_MAX   64      /* bytes of a marker */
#define TOKEN_MAX  256     /* bytes of one token's text that are looked at */

struct llm_reasoning_budget {
    const llm_tokenizer  *tok;
    char                  open[MARK_MAX + 1], close[MARK_MAX + 1];
    size_t                open_len, close_len;
    int32_t              *close_ids;        /* the forced close tokenized */
    int                   n_close;
    int                   closing;          /* of those, appended so far (a
                                               close longer than a step's
                                               forced tokens) */
    size_t                budget;
    size_t                used;             /* tokens written inside blocks */
    int                   inside;
    char                  tail[MARK_MAX];   /* the output's last bytes */
    size_t                n_tail;
};


static int
mark_copy(char *dst, size_t *len, const char *src)
{
    *len = src ? strlen(src) : 0;
    if (*len == 0 || *len > MARK_MAX) {
        return -1;
    }
    memcpy(dst, src, *len + 1);
    return 0;
}


llm_reasoning_budget *
llm_reasoning_budget_create(const llm_tokenizer *tok, const char *open,
    const char *close, const char *forced_close, size_t budget, int inside)
{
    size_t                 n = 0, forced_len;
    llm_reasoning_budget  *b;

    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->tok = tok;
    b->budget = budget;
    b->inside = inside != 0;

    /* the close as the model's tokenizer reads a prompt: special tokens
     * written in it are those tokens */
    forced_len = forced_close ? strlen(forced_close) : 0;
    if (mark_copy(b->open, &b->open_len, open) != 0
        || mark_copy(b->close, &b->close_len, close) != 0
        || forced_len == 0 || forced_len > MARK_MAX
        || llm_tokenizer_encode(tok, forced_close, forced_len, 0,
                                &b->close_ids, &n) != 0
        || n == 0)
    {
        llm_reasoning_budget_free(b);
        return NULL;
    }
    b->n_close = (int) n;

    return b;
}


void
llm_reasoning_budget_free(llm_reasoning_budget *b)
{
    if (b == NULL) {
        return;
    }
    free(b->close_ids);
    free(b);
}


/* A token's text: an added token is its content, others their bytes. */
static int
token_text(const llm_tokenizer *tok, int32_t id, char *out, size_t cap)
{
    const char  *p;
    size_t       n;

    if (llm_tokenizer_is_added(tok, id)) {
        p = llm_tokenizer_piece(tok, id);
        n = p ? strlen(p) : 0;
        n = n > cap ? cap : n;
        memcpy(out, p ? p : "", n);
        return (int) n;
    }
    return llm_tokenizer_token_bytes(tok, id, out, cap);
}


/* The output's text grew by c: when it now ends with the marker the
 * state waits for (open outside a block, close inside), the state flips. */
static void
push_byte(llm_reasoning_budget *b, char c)
{
    const char  *mark = b->inside ? b->close : b->open;
    size_t       len = b->inside ? b->close_len : b->open_len;

    if (b->n_tail == MARK_MAX) {
        memmove(b->tail, b->tail + 1, MARK_MAX - 1);
        b->n_tail--;
    }
    b->tail[b->n_tail++] = c;

    if (b->n_tail >= len
        && memcmp(b->tail + b->n_tail - len, mark, len) == 0)
    {
        b->inside = !b->inside;
        b->n_tail = 0;    /* a marker's bytes start no other marker */
    }
}


/* The open block has used its budget: its close is to be appended. */
static int
due(const llm_reasoning_budget *b)
{
    return b->inside && b->used + (size_t) b->n_close >= b->budget;
}


void
llm_reasoning_budget_accept(llm_reasoning_budget *b, int32_t id)
{
    char  text[TOKEN_MAX];
    int   n, i;

    if (b->closing > 0 || due(b)) {
        b->closing = id == b->close_ids[b->closing] ? b->closing + 1 : 0;
        if (b->closing == b->n_close) {
            b->closing = 0;
        }
    }

    /* a token counts when it is written inside a block: the close
     * marker's tokens do, the open marker's do not */
    b->used += b->inside;

    n = token_text(b->tok, id, text, sizeof(text));
    for (i = 0; i < n; i++) {
        push_byte(b, text[i]);
    }
}


int
llm_reasoning_budget_forced(const llm_reasoning_budget *b, int32_t *ids,
    int max)
{
    int  n;

    /* the rest of a close begun, or a close once its tokens no longer fit
     * in what is left of the budget */
    if (b->closing == 0 && !due(b)) {
        return 0;
    }
    n = b->n_close - b->closing;
    n = n < max ? n : max;
    if (n > 0) {
        memcpy(ids, b->close_ids + b->closing, (size_t) n * sizeof(int32_t));
    }
    return n;
}


size_t
llm_reasoning_budget_used(const llm_reasoning_budget *b)
{
    return b->used;
}


int
llm_reasoning_budget_inside(const llm_reasoning_budget *b)
{
    return b->inside;
}
