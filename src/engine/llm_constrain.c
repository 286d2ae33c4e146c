/*
 * Grammar-constrained sampling (see llm_constrain.h).  Sampling first from
 * the unconstrained distribution and keeping the pick when the grammar
 * allows it, else drawing from the masked distribution, gives each allowed
 * token p(t) + (1 - P(allowed)) * p(t) / P(allowed) = p(t) / P(allowed):
 * the masked distribution itself, at the cost of a mask only on refusals.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_constrain.h"

struct llm_constraint {
    llm_gmatcher        *m;
    const llm_tokenizer *tok;
    size_t               n_vocab;
    uint64_t            *bits;
    long                 n_masks;
};

static int
tok_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    return llm_tokenizer_token_bytes(ctx, id, out, cap);
}

llm_gvocab *
llm_constrain_vocab(const llm_tokenizer *tok, char *err, size_t errlen)
{
    size_t n = llm_tokenizer_n_vocab(tok), i, k = 0;
    int32_t *ex = malloc((n + 1) * sizeof(int32_t));
    llm_gvocab *v;

    if (ex == NULL) return NULL;
    for (i = 0; i < n; i++) {
        if (llm_tokenizer_is_added(tok, (int32_t) i) || llm_tokenizer_is_special(tok, (int32_t) i))
            ex[k++] = (int32_t) i;
    }
    v = llm_gvocab_create(n, tok_bytes, (void *) tok, ex, k, err, errlen);
    free(ex);
    return v;
}

llm_constraint *
llm_constraint_create(llm_gindex *x, const llm_tokenizer *tok)
{
    llm_constraint *c = calloc(1, sizeof(*c));
    if (c == NULL) return NULL;
    c->tok = tok;
    c->n_vocab = llm_tokenizer_n_vocab(tok);
    c->m = llm_gmatcher_create(x);
    c->bits = malloc((c->n_vocab + 63) / 64 * sizeof(uint64_t));
    if (c->m == NULL || c->bits == NULL) {
        llm_constraint_free(c);
        return NULL;
    }
    return c;
}

void
llm_constraint_free(llm_constraint *c)
{
    if (c == NULL) return;
    llm_gmatcher_free(c->m);
    free(c->bits);
    free(c);
}

int32_t
llm_constraint_sample(llm_constraint *c, llm_sampler *s, const float *logits,
    llm_token_logprobs *lp, int n_top)
{
    if (lp == NULL) {
        int32_t pick = llm_sampler_sample(s, logits, NULL, 0);
        if (pick >= 0 && llm_gmatcher_allows(c->m, pick)) return pick;
    }
    c->n_masks++;
    if (llm_gmatcher_mask(c->m, c->bits) < 0) return -1;
    return llm_sampler_sample_allowed(s, logits, c->bits, lp, n_top);
}

int
llm_constraint_accept(llm_constraint *c, int32_t id)
{
    return llm_gmatcher_accept(c->m, id);
}

int
llm_constraint_forced(llm_constraint *c, int32_t *ids, int max)
{
    char buf[512];
    size_t n = llm_gmatcher_forced(c->m, buf, sizeof(buf));
    int32_t *enc = NULL;
    size_t n_enc = 0, i, keep;
    int out = 0;

    if (n == 0 || max <= 0) return 0;
    if (llm_tokenizer_encode(c->tok, buf, n, 0, &enc, &n_enc) < 0) return 0;
    /* the last piece is held back (the model may merge it with what follows)
     * unless it is the only one */
    keep = n_enc > 1 ? n_enc - 1 : n_enc;
    for (i = 0; i < keep && out < max; i++) {
        if (llm_gmatcher_accept(c->m, enc[i]) < 0) break;
        ids[out++] = enc[i];
    }
    free(enc);
    return out;
}

int
llm_constraint_done(const llm_constraint *c)
{
    return llm_gmatcher_done(c->m);
}

int
llm_constraint_complete(const llm_constraint *c)
{
    return llm_gmatcher_complete(c->m);
}

long
llm_constraint_n_masks(const llm_constraint *c)
{
    return c->n_masks;
}
