/*
 * Speculation policy (llm_spec.h).  Acceptance is modelled as geometric:
 * each proposed token is kept with probability alpha once the ones before
 * it were, and alpha per proposer is estimated from decayed counts of kept
 * tokens and rejections.  Auto mode proposes only while the expected gain
 * beats the verification's cost, and after a proposal that did not pay
 * waits a growing number of steps before it probes again, unless the
 * sequence starts repeating a long stretch of what it has seen.
 */
#include <stdio.h>
#include <string.h>

#include "engine/llm_spec.h"

/* Shortest match either proposer trusts, and the longest either looks for. */
#define LLM_SPEC_MATCH_MIN   2
#define LLM_SPEC_MATCH_MAX   32

/*
 * A match at least this long is a copied stretch: its proposals are kept
 * far more often than those of a short match (98% against 60% on the edit
 * bench), so the two are estimated apart and each sets its own k.
 */
#define LLM_SPEC_MATCH_LONG  16

/* Weight of the older counts at each update. */
#define LLM_SPEC_DECAY       0.8f

/* Cost of verifying one token, in decode steps, until the scheduler has measured it. */
#define LLM_SPEC_COST_PRIOR  0.3

/*
 * A match at least this long, all of it output, ends a wait: the sequence
 * is repeating what it has seen, whatever the acceptance of the steps
 * before.
 */
#define LLM_SPEC_MATCH_TRUST 8

#define LLM_SPEC_BACKOFF_MIN 4
#define LLM_SPEC_BACKOFF_MAX 64

void
llm_spec_init(llm_spec_state *st, llm_spec_mode mode)
{
    int  p;

    memset(st, 0, sizeof(*st));
    st->mode = mode;
    st->proposer = -1;
    st->backoff = LLM_SPEC_BACKOFF_MIN;
    for (p = 0; p < LLM_PROPOSERS; p++) {
        st->acc[p] = 0.5f;
        st->acc_long[p] = 0.5f;
    }
}


int
llm_spec_best_k(double alpha, double cost, int k_max)
{
    int     k, best = 0;
    double  sum = 1, term = 1, rate, best_rate = 1;

    for (k = 1; k <= k_max; k++) {
        term *= alpha;
        sum += term;
        rate = sum / (1 + k * cost);
        if (rate > best_rate * 1.0001) {
            best_rate = rate;
            best = k;
        }
    }
    return best;
}


/*
 * Tokens to propose from a proposer whose acceptance is alpha (0: none
 * this step); auto backs off while it does not pay and probes with one
 * token when the wait ends.
 */
static int
llm_spec_decide_k(llm_spec_state *st, double alpha, double cost, int k_max)
{
    int  k, probe;

    probe = st->probe;
    st->probe = 0;

    k = llm_spec_best_k(alpha, cost, k_max);
    if (k == 0) {
        if (st->mode == LLM_SPEC_AUTO && !probe) {
            /* does not pay now: wait, longer each time */
            st->skip = st->backoff;
            st->backoff = st->backoff * 2 < LLM_SPEC_BACKOFF_MAX
                          ? st->backoff * 2 : LLM_SPEC_BACKOFF_MAX;
            return 0;
        }
        k = 1;
    }
    return k;
}


/* Waiting after a proposal that did not pay: 1 while this step is skipped. */
static int
llm_spec_waiting(llm_spec_state *st)
{
    if (st->skip > 0) {
        /* the first proposal after waiting is a probe: at least one token */
        st->probe = --st->skip == 0;
        return 1;
    }
    return 0;
}


int
llm_spec_propose(llm_spec_state *st, const llm_tokens2 *t,
    const llm_suffix *sx, double cost, double draft_cost, int k_max,
    int32_t *out, int *draft_k)
{
    int      n[LLM_PROPOSERS], match[LLM_PROPOSERS], p, best, k, waiting;
    double   alpha, est[LLM_PROPOSERS];
    int32_t  guess[LLM_PROPOSERS][LLM_SPEC_K_MAX], tail[LLM_SPEC_MATCH_MAX];
    size_t   total = t->na + t->nb, i, from;

    st->proposer = -1;
    st->n_proposed = 0;
    st->long_match = 0;
    *draft_k = 0;

    if (cost <= 0) {
        cost = LLM_SPEC_COST_PRIOR;
    }
    if (st->mode == LLM_SPEC_OFF || k_max <= 0) {
        return 0;
    }
    if (k_max > LLM_SPEC_K_MAX) {
        k_max = LLM_SPEC_K_MAX;
    }
    /* waiting still looks (a search costs microseconds): see MATCH_TRUST */
    waiting = llm_spec_waiting(st);

    n[LLM_PROPOSER_LOOKUP] = llm_lookup_propose(t, LLM_SPEC_MATCH_MIN,
                                 LLM_SPEC_MATCH_MAX, guess[LLM_PROPOSER_LOOKUP],
                                 k_max, &match[LLM_PROPOSER_LOOKUP]);

    n[LLM_PROPOSER_SUFFIX] = 0;
    match[LLM_PROPOSER_SUFFIX] = 0;
    if (sx) {
        from = total > LLM_SPEC_MATCH_MAX ? total - LLM_SPEC_MATCH_MAX : 0;
        for (i = from; i < total; i++) {
            tail[i - from] = i < t->na ? t->a[i] : t->b[i - t->na];
        }
        n[LLM_PROPOSER_SUFFIX] = llm_suffix_propose(sx, tail, total - from,
                                     LLM_SPEC_MATCH_MIN, LLM_SPEC_MATCH_MAX,
                                     guess[LLM_PROPOSER_SUFFIX], k_max,
                                     &match[LLM_PROPOSER_SUFFIX]);
    }

    /*
     * the proposer that has been right more often with a match like this
     * one; ties: the longer match
     */
    best = -1;
    for (p = LLM_PROPOSER_LOOKUP; p <= LLM_PROPOSER_SUFFIX; p++) {
        if (n[p] == 0) {
            continue;
        }
        est[p] = match[p] >= LLM_SPEC_MATCH_LONG ? st->acc_long[p] : st->acc[p];
        if (best < 0 || est[p] > est[best]
            || (est[p] == est[best] && match[p] > match[best]))
        {
            best = p;
        }
    }
    if (waiting) {
        /* the output itself repeats (not a prompt's template seen before) */
        if (best < 0 || match[best] < LLM_SPEC_MATCH_TRUST
            || t->nb < LLM_SPEC_MATCH_TRUST)
        {
            return 0;
        }
        /* a long match ends the wait: probe, trusting the match that much */
        st->skip = 0;
        st->probe = 1;
    }
    if (best < 0 && draft_cost >= 0) {
        /*
         * no guess from the request: the draft model's, each token costing
         * its pass too.  A draft that would not pay even if every token
         * were kept is not probed either (auto): a probe after a wait also
         * pays for the draft reading all the tokens it missed.
         */
        if (st->mode == LLM_SPEC_AUTO
            && llm_spec_best_k(1.0, cost + draft_cost, k_max) == 0)
        {
            st->probe = 0;
            return 0;
        }
        k = llm_spec_decide_k(st, st->acc[LLM_PROPOSER_DRAFT], cost + draft_cost,
                              k_max < LLM_SPEC_DRAFT_K_MAX ? k_max : LLM_SPEC_DRAFT_K_MAX);
        if (k > 0) {
            st->proposer = LLM_PROPOSER_DRAFT;
            st->n_proposed = k;
            *draft_k = k;
        }
        return 0;
    }
    if (best < 0) {
        return 0;
    }

    alpha = est[best];
    if (waiting && alpha < 1.0 - 1.0 / match[best]) {
        alpha = 1.0 - 1.0 / match[best];
    }
    k = llm_spec_decide_k(st, alpha, cost, k_max);
    if (k == 0) {
        return 0;
    }
    if (k > n[best]) {
        k = n[best];
    }

    memcpy(out, guess[best], (size_t) k * sizeof(int32_t));
    st->proposer = best;
    st->n_proposed = k;
    st->long_match = match[best] >= LLM_SPEC_MATCH_LONG;
    return k;
}


int32_t
llm_spec_verify_token(llm_sampler *s, float *p, const float *q, int32_t d,
    int *kept)
{
    int     n = llm_sampler_n_vocab(s), i;
    double  rest = 0;

    *kept = 0;
    if (d >= 0 && d < n && q[d] > 0
        && llm_sampler_uniform(s) * q[d] < p[d])
    {
        *kept = 1;
        return d;
    }

    /*
     * Rejected: what p has beyond q.  Rounding may leave nothing where
     * p and q agree to the last bit; then p itself is the answer.
     */
    for (i = 0; i < n; i++) {
        if (p[i] > q[i]) {
            rest += p[i] - q[i];
        }
    }
    if (rest > 0) {
        for (i = 0; i < n; i++) {
            p[i] = p[i] > q[i] ? p[i] - q[i] : 0;
        }
    }
    return llm_sampler_draw(s, p);
}


void
llm_spec_update(llm_spec_state *st, int accepted)
{
    float  a;
    int    p = st->proposer;

    if (p < 0 || st->n_proposed == 0) {
        return;
    }

    /*
     * Geometric model: `accepted` successes, then one rejection unless all
     * were kept; the estimate decays toward recent steps.  The counts are
     * folded into acc as a ratio with a weak prior of 1/2.
     */
    a = st->long_match ? st->acc_long[p] : st->acc[p];
    {
        float  s = (float) accepted;
        float  f = accepted < st->n_proposed ? 1.0f : 0.0f;
        /* equivalent prior weight of the history: 1 / (1 - decay) events */
        float  w = 1.0f / (1.0f - LLM_SPEC_DECAY);
        a = (a * w + s) / (w + s + f);
    }
    if (st->long_match) {
        st->acc_long[p] = a;
    } else {
        st->acc[p] = a;
    }

    if (accepted > 0) {
        st->backoff = LLM_SPEC_BACKOFF_MIN;
    }

    st->proposer = -1;
    st->n_proposed = 0;
    st->long_match = 0;
}


int
llm_spec_draft_check(const llm_model *m, const llm_tokenizer *tok,
    const llm_model *draft, const llm_tokenizer *draft_tok, char *err,
    size_t errlen)
{
    int          a = llm_model_get_info(m)->n_vocab;
    int          b = llm_model_get_info(draft)->n_vocab;
    size_t       n = llm_tokenizer_n_vocab(tok), i;
    const char  *p, *q;

    if (a != b || n != llm_tokenizer_n_vocab(draft_tok)) {
        snprintf(err, errlen, "the draft's vocabulary has %d ids (%zu in its "
                 "tokenizer), the model's %d (%zu)", b,
                 llm_tokenizer_n_vocab(draft_tok), a, n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        p = llm_tokenizer_piece(tok, (int32_t) i);
        q = llm_tokenizer_piece(draft_tok, (int32_t) i);
        if ((p == NULL) != (q == NULL) || (p && strcmp(p, q) != 0)) {
            snprintf(err, errlen, "token %zu is \"%s\" for the model but "
                     "\"%s\" for the draft", i, p ? p : "", q ? q : "");
            return -1;
        }
    }
    return 0;
}
