/*
 * Speculative decoding: the draft-free proposers (prompt lookup, the suffix
 * store of recent requests), the adaptive policy, logits at several
 * positions of one item, and exactness through the scheduler: the same
 * requests with speculation off and on give the same tokens, greedy and
 * sampled, alone and batched, with logprobs, while proposals are verified,
 * kept and rolled back.
 */
#include "tap.h"

#include "engine/llm_constrain.h"
#include "engine/llm_sched.h"
#include "engine/llm_spec.h"

#define FIX "t/fixtures/models/qwen3_f32"

/* ---- proposers ---- */

static void
test_lookup(void)
{
    int32_t      p[] = { 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 9, 9 };
    int32_t      g[] = { 2, 3 }, out[8];
    llm_tokens2  t = { p, 12, g, 2 };
    int          n, match;

    /* output "... 2 3" matches "1 2 3" twice; the latest earlier one is 1 2 3 9 */
    n = llm_lookup_propose(&t, 2, 8, out, 6, &match);
    is_int(n, 6, "proposes k tokens");
    is_int(match, 2, "match of 2 tokens");
    ok(n == 6 && out[0] == 9 && out[1] == 9 && out[2] == 2 && out[3] == 3,
       "the tokens after the latest occurrence, up to the end of the context");
    ok(n == 6 && out[4] == 9 && out[5] == 9,
       "and then what the proposal itself put there (9 9 2 3 repeats)");
    {
        int32_t      r[] = { 8, 5, 5, 5 };
        llm_tokens2  v = { r, 4, NULL, 0 };
        n = llm_lookup_propose(&v, 2, 8, out, 5, &match);
        ok(n == 5 && match == 2 && out[0] == 5 && out[4] == 5,
           "a run of one token goes on for k tokens (%d, match %d)", n, match);
    }

    g[0] = 3;
    g[1] = 4;
    t.b = g;
    n = llm_lookup_propose(&t, 2, 8, out, 3, &match);
    is_int(n, 3, "3 tokens proposed");
    ok(out[0] == 5 && out[1] == 6 && out[2] == 7, "5 6 7 followed 3 4");

    g[1] = 42;
    n = llm_lookup_propose(&t, 2, 8, out, 3, &match);
    is_int(n, 0, "no earlier occurrence: no proposal");
    t.nb = 1;
    g[0] = 7;
    n = llm_lookup_propose(&t, 2, 8, out, 3, &match);
    is_int(n, 0, "a single matching token is below n_min");
    n = llm_lookup_propose(&t, 1, 8, out, 3, &match);
    ok(n == 3 && out[0] == 1 && match == 1, "with n_min 1 it proposes");

    /* the longest match wins over a later shorter one */
    {
        int32_t      q[] = { 5, 6, 7, 8, 20, 1, 7, 8, 30, 5, 6, 7, 8 };
        llm_tokens2  u = { q, 13, NULL, 0 };
        n = llm_lookup_propose(&u, 2, 8, out, 1, &match);
        ok(n == 1 && out[0] == 20 && match == 4, "longest match (4) over the latest (2)");
    }
}

static void
test_suffix(void)
{
    llm_suffix  *sx = llm_suffix_create(64);
    int32_t      a[] = { 10, 11, 12, 13, 14, 15 }, b[] = { 20, 21, 12, 13, 30 };
    int32_t      q[] = { 99, 11, 12, 13 }, out[8], big[40];
    int          n, match, i;

    if (!ok(sx != NULL, "suffix store of 64 tokens")) {
        return;
    }
    llm_suffix_add(sx, a, 6);
    llm_suffix_add(sx, b, 5);
    is_int(llm_suffix_tokens(sx), 13, "two streams and their separators");

    n = llm_suffix_propose(sx, q, 4, 2, 32, out, 4, &match);
    is_int(match, 3, "longest suffix in the store: 11 12 13");
    ok(n == 2 && out[0] == 14 && out[1] == 15, "what followed, up to the stream's end");

    q[1] = 21;
    n = llm_suffix_propose(sx, q, 4, 2, 32, out, 4, &match);
    ok(match == 3 && n == 1 && out[0] == 30, "the other stream's continuation");

    q[3] = 77;
    n = llm_suffix_propose(sx, q, 4, 2, 32, out, 4, &match);
    is_int(n, 0, "no suffix of two tokens occurs: nothing");

    /* streams never join: the end of a and the start of b are not adjacent */
    {
        int32_t  j[] = { 15, 20 };
        n = llm_suffix_propose(sx, j, 2, 2, 32, out, 4, &match);
        is_int(n, 0, "no match across two requests");
    }

    /* past its size it rebuilds from the newer half and keeps working */
    for (i = 0; i < 40; i++) {
        big[i] = 100 + i;
    }
    llm_suffix_add(sx, big, 40);
    llm_suffix_add(sx, big, 20);
    ok(llm_suffix_tokens(sx) <= 64, "bounded (%zu tokens)", llm_suffix_tokens(sx));
    {
        int32_t  k[] = { 105, 106, 107 };
        n = llm_suffix_propose(sx, k, 3, 2, 32, out, 2, &match);
        ok(n == 2 && out[0] == 108 && out[1] == 109, "recent streams found after a rebuild");
    }
    llm_suffix_free(sx);
}

static void
test_policy(void)
{
    llm_spec_state  st;
    int32_t         p[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3 }, out[LLM_SPEC_K_MAX];
    llm_tokens2     t = { p, 12, NULL, 0 };
    int             n, i, skipped, dk;

    is_int(llm_spec_best_k(0.9, 0.05, 8), 8, "high acceptance, cheap verification: all 8");
    is_int(llm_spec_best_k(0.5, 0.3, 8), 1, "even odds at 0.3 steps a token: 1");
    is_int(llm_spec_best_k(0.1, 0.3, 8), 0, "low acceptance: does not pay");
    is_int(llm_spec_best_k(0.99, 1.0, 8), 0, "verification as dear as a step never pays");

    llm_spec_init(&st, LLM_SPEC_OFF);
    is_int(llm_spec_propose(&st, &t, NULL, 0.1, -1, 8, out, &dk), 0, "off: nothing");

    llm_spec_init(&st, LLM_SPEC_AUTO);
    n = llm_spec_propose(&st, &t, NULL, 0.05, -1, 8, out, &dk);
    ok(n >= 1 && out[0] == 4, "auto: prompt lookup proposes 4 ... (%d)", n);

    /* rejected every time: auto stops proposing, then probes now and then */
    for (i = 0; i < 6; i++) {
        n = llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk);
        llm_spec_update(&st, 0);
    }
    skipped = 0;
    for (i = 0; i < 20; i++) {
        n = llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk);
        skipped += n == 0;
        llm_spec_update(&st, 0);
    }
    ok(skipped >= 15, "after rejections auto mostly stays off (%d of 20 steps)", skipped);
    ok(skipped < 20, "but probes again");

    /*
     * What auto costs where speculation never pays, bounded: a guess every
     * step, every proposed token rejected.  Once the wait has grown to its
     * longest, one token is verified per LLM_SPEC_BACKOFF_MAX + 1 steps (a
     * probe of one), so verification adds at most 1/65 of a token's cost a
     * step: under 0.3% at 0.17 of a step a token (make bench: chat/fresh).
     */
    {
        int  proposed = 0, steps_proposing = 0;

        llm_spec_init(&st, LLM_SPEC_AUTO);
        for (i = 0; i < 1300; i++) {
            n = llm_spec_propose(&st, &t, NULL, 0.17, -1, 16, out, &dk);
            if (i >= 300) {
                proposed += n;
                steps_proposing += n > 0;
            }
            llm_spec_update(&st, 0);
        }
        ok(proposed <= 1000 / 65 + 1 && proposed == steps_proposing,
           "never accepted: %d tokens proposed in 1000 steps, one at a time (<= %d)",
           proposed, 1000 / 65 + 1);
        ok(proposed >= 1, "and it still probes (%d)", proposed);
    }

    /* nothing to look up: the draft model's turn, if it can pay */
    {
        int32_t      r[] = { 1, 2, 3, 4, 5, 6 };
        llm_tokens2  v = { r, 6, NULL, 0 };

        llm_spec_init(&st, LLM_SPEC_AUTO);
        n = llm_spec_propose(&st, &v, NULL, 0.3, 0.1, 8, out, &dk);
        ok(n == 0 && dk >= 1, "a cheap draft proposes where lookup has nothing (%d)", dk);
        llm_spec_update(&st, 0);
        llm_spec_init(&st, LLM_SPEC_AUTO);
        n = llm_spec_propose(&st, &v, NULL, 0.3, 1.0, 8, out, &dk);
        ok(n == 0 && dk == 0, "auto: a draft pass as dear as a step is never asked, not even to probe");
        llm_spec_init(&st, LLM_SPEC_ON);
        llm_spec_propose(&st, &v, NULL, 0.3, 1.0, 8, out, &dk);
        ok(dk >= 1, "on: it is (%d)", dk);
        llm_spec_update(&st, 0);
    }

    /* waiting, the sequence starts repeating a long stretch: the wait ends */
    {
        int32_t      q[30];
        llm_tokens2  u = { q, 20, q + 20, 10 }, w = { q, 30, NULL, 0 };

        for (i = 0; i < 20; i++) q[i] = 100 + i;
        for (i = 20; i < 30; i++) q[i] = 100 + i - 20;
        llm_spec_init(&st, LLM_SPEC_AUTO);
        for (i = 0; i < 6 && st.skip == 0; i++) {
            llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk);
            llm_spec_update(&st, 0);
        }
        ok(st.skip > 0, "auto waits after rejections (%d steps left)", st.skip);
        n = llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk);
        is_int(n, 0, "a short match while waiting: nothing");
        n = llm_spec_propose(&st, &w, NULL, 0.3, -1, 8, out, &dk);
        is_int(n, 0, "a long match in the prompt (a template seen before): nothing");
        n = llm_spec_propose(&st, &u, NULL, 0.3, -1, 8, out, &dk);
        ok(n >= 1 && out[0] == 110 && st.skip == 0,
           "a match of 10 tokens ends the wait: %d proposed from 110", n);
    }

    llm_spec_init(&st, LLM_SPEC_ON);
    for (i = 0; i < 6; i++) {
        llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk);
        llm_spec_update(&st, 0);
    }
    ok(llm_spec_propose(&st, &t, NULL, 0.3, -1, 8, out, &dk) >= 1, "on: proposes whatever the acceptance");

    /* a long match (a copied stretch) is estimated apart, and may propose up to 16 */
    {
        int32_t      q[60];
        llm_tokens2  c = { q, 40, q + 40, 20 };

        for (i = 0; i < 40; i++) q[i] = 100 + i;
        for (i = 40; i < 60; i++) q[i] = 100 + i - 40;
        llm_spec_init(&st, LLM_SPEC_AUTO);
        for (i = 0; i < 10; i++) {
            n = llm_spec_propose(&st, &c, NULL, 0.05, -1, LLM_SPEC_K_MAX, out, &dk);
            llm_spec_update(&st, n);
        }
        ok(st.acc_long[LLM_PROPOSER_LOOKUP] > 0.9 && st.acc[LLM_PROPOSER_LOOKUP] == 0.5f,
           "a long match's acceptance is its own (long %.2f, short %.2f)",
           st.acc_long[LLM_PROPOSER_LOOKUP], st.acc[LLM_PROPOSER_LOOKUP]);
        n = llm_spec_propose(&st, &c, NULL, 0.05, -1, LLM_SPEC_K_MAX, out, &dk);
        ok(n == LLM_SPEC_K_MAX && out[0] == 120 && out[n - 1] == 119 + LLM_SPEC_K_MAX,
           "a stretch kept every time: %d proposed, %d .. %d", n, out[0], out[n > 0 ? n - 1 : 0]);
        llm_spec_update(&st, 0);
        n = llm_spec_propose(&st, &t, NULL, 0.05, -1, LLM_SPEC_K_MAX, out, &dk);
        ok(n >= 1 && n < LLM_SPEC_K_MAX, "a short match keeps its own k (%d)", n);
        llm_spec_update(&st, 0);

        /* a draft model proposes at most LLM_SPEC_DRAFT_K_MAX, however cheap and right */
        {
            int32_t      r[] = { 1, 2, 3, 4, 5, 6 };
            llm_tokens2  v = { r, 6, NULL, 0 };

            llm_spec_init(&st, LLM_SPEC_AUTO);
            st.acc[LLM_PROPOSER_DRAFT] = 0.99f;
            llm_spec_propose(&st, &v, NULL, 0.01, 0.01, LLM_SPEC_K_MAX, out, &dk);
            is_int(dk, LLM_SPEC_DRAFT_K_MAX, "a draft's proposal is capped");
        }
    }

    /* kept every time: k grows */
    llm_spec_init(&st, LLM_SPEC_AUTO);
    for (i = 0; i < 10; i++) {
        n = llm_spec_propose(&st, &t, NULL, 0.05, -1, 8, out, &dk);
        llm_spec_update(&st, n);
    }
    ok(st.acc[LLM_PROPOSER_LOOKUP] > 0.8, "acceptance estimate rises (%.2f)",
       st.acc[LLM_PROPOSER_LOOKUP]);
    n = llm_spec_propose(&st, &t, NULL, 0.05, -1, 8, out, &dk);
    ok(n >= 3, "and so does k (%d)", n);
}

/* ---- the engine: logits at several positions of one item ---- */

static double
chi2_crit_999(int df)
{
    /* Wilson-Hilferty: the 0.999 quantile of chi-square with df degrees */
    double  a = 2.0 / (9.0 * df);
    return df * pow(1 - a + 3.090 * sqrt(a), 3);
}

/* Pearson's statistic of counts (n in all) against probabilities p. */
static double
chi2_fit(const int *cnt, const float *p, int n_bins, int n, int *df)
{
    double  chi2 = 0, e;
    int     v;

    *df = -1;
    for (v = 0; v < n_bins; v++) {
        e = (double) p[v] * n;
        if (e > 0) {
            chi2 += (cnt[v] - e) * (cnt[v] - e) / e;
            (*df)++;
        } else if (cnt[v] > 0) {
            return INFINITY;    /* a token that cannot occur did */
        }
    }
    return chi2;
}

/*
 * Speculative rejection sampling on synthetic distributions with known p
 * and q: proposals drawn from q, verified against p.  The output must be
 * distributed as p (chi-square), and the share of proposals kept must be
 * sum(min(p, q)).  q puts mass where p has none and misses a token p has,
 * so only the residual max(0, p - q) can produce it.  Fixed seeds.
 */
static void
test_rejection(void)
{
    enum { V = 8, N = 40000 };
    static const float  P[3][V] = {
        { 0.30f, 0.20f, 0.15f, 0.10f, 0.10f, 0.08f, 0.07f, 0.00f },
        { 0.05f, 0.05f, 0.50f, 0.10f, 0.10f, 0.10f, 0.10f, 0.00f },
        { 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f },
    };
    static const float  Q[3][V] = {
        { 0.10f, 0.30f, 0.15f, 0.05f, 0.20f, 0.00f, 0.10f, 0.10f },
        { 0.40f, 0.30f, 0.05f, 0.05f, 0.05f, 0.05f, 0.05f, 0.05f },
        { 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f },
    };
    llm_sampler_params  sp;
    llm_sampler        *smp;
    float               buf[V];
    int                 c, i, v, cnt[V], kept, n_kept, df, df_q;
    int32_t             d, tok;
    double              alpha, chi2, chi2_q, sd;

    llm_sampler_params_default(&sp);
    sp.has_seed = 1;
    for (c = 0; c < 3; c++) {
        sp.seed = 77 + (uint64_t) c;
        smp = llm_sampler_create(&sp, V);
        memset(cnt, 0, sizeof(cnt));
        n_kept = 0;
        for (i = 0; i < N; i++) {
            d = llm_sampler_draw(smp, Q[c]);
            memcpy(buf, P[c], sizeof(buf));
            tok = llm_spec_verify_token(smp, buf, Q[c], d, &kept);
            if (tok < 0 || tok >= V || (kept && tok != d)) {
                break;
            }
            cnt[tok]++;
            n_kept += kept;
        }
        if (!ok(i == N, "case %d: %d verifications, each a token", c, N)) {
            llm_sampler_free(smp);
            continue;
        }
        alpha = 0;
        for (v = 0; v < V; v++) {
            alpha += P[c][v] < Q[c][v] ? P[c][v] : Q[c][v];
        }
        chi2 = chi2_fit(cnt, P[c], V, N, &df);
        chi2_q = chi2_fit(cnt, Q[c], V, N, &df_q);
        ok(chi2 < chi2_crit_999(df),
           "case %d: the output is distributed as p (chi-square %.1f, %d df, 0.999 critical %.1f)",
           c, chi2, df, chi2_crit_999(df));
        if (c < 2) {
            ok(chi2_q > chi2_crit_999(df_q),
               "case %d: and the same test tells it from q (chi-square %.1f)", c, chi2_q);
        }
        sd = sqrt(alpha * (1 - alpha) / N);
        ok(fabs((double) n_kept / N - alpha) <= 4 * sd + 1e-9,
           "case %d: %.4f of the proposals kept, sum(min(p, q)) = %.4f", c,
           (double) n_kept / N, alpha);
        llm_sampler_free(smp);
    }
}

static void
test_forward_rows(const llm_model *m)
{
    char          err[256];
    llm_runtime  *rt = llm_runtime_create(m, 1, 64, 2, err, sizeof(err));
    int32_t       toks[6] = { 3, 14, 15, 92, 65, 35 };
    int           nv = llm_model_get_info(m)->n_vocab, j, v;
    float        *seqlog;
    double        diff = 0;
    llm_batch_item it = { 0 };

    if (!ok(rt != NULL, "runtime")) {
        return;
    }
    seqlog = malloc(sizeof(float) * (size_t) nv * 4);

    /* one token at a time: the logits after tokens 2..5 */
    llm_seq_open(rt);
    llm_seq_open(rt);
    it.slot = 0;
    it.tokens = toks;
    it.n_tokens = 2;
    it.want_logits = 1;
    llm_forward(rt, &it, 1, err, sizeof(err));
    memcpy(seqlog, llm_forward_logits(rt, 0), sizeof(float) * nv);
    for (j = 1; j < 4; j++) {
        it.tokens = toks + 1 + j;
        it.n_tokens = 1;
        llm_forward(rt, &it, 1, err, sizeof(err));
        memcpy(seqlog + (size_t) j * nv, llm_forward_logits(rt, 0), sizeof(float) * nv);
    }

    /* slot 1: the prompt, then the last three as one item with 4 logit rows */
    it.slot = 1;
    it.tokens = toks;
    it.n_tokens = 1;
    llm_forward(rt, &it, 1, err, sizeof(err));
    it.tokens = toks + 1;
    it.n_tokens = 4;
    it.want_logits = 4;
    is_int(llm_forward(rt, &it, 1, err, sizeof(err)), 0, "an item with 4 logit rows runs");
    for (j = 0; j < 4; j++) {
        const float *l = llm_forward_logits_at(rt, 0, j);
        if (l == NULL) {
            diff = 1e9;
            break;
        }
        for (v = 0; v < nv; v++) {
            double dd = fabs((double) l[v] - seqlog[(size_t) j * nv + v]);
            if (dd > diff) diff = dd;
        }
    }
    ok(diff < 1e-4, "row j = the logits of decoding token by token (max diff %g)", diff);
    ok(llm_forward_logits(rt, 0) == llm_forward_logits_at(rt, 0, 3), "llm_forward_logits is the last row");
    ok(llm_forward_logits_at(rt, 0, 4) == NULL, "no fifth row");
    is_int(llm_seq_len(rt, 1), 5, "5 positions cached");

    /* rollback: drop the last two, feed others: as if they never were */
    llm_seq_truncate(rt, 1, 3);
    it.tokens = toks + 3;
    it.n_tokens = 1;
    it.want_logits = 1;
    llm_forward(rt, &it, 1, err, sizeof(err));
    diff = 0;
    for (v = 0; v < nv; v++) {
        double dd = fabs((double) llm_forward_logits(rt, 0)[v] - seqlog[(size_t) 2 * nv + v]);
        if (dd > diff) diff = dd;
    }
    ok(diff < 1e-4, "after truncating, the same position gives the same logits (%g)", diff);

    it.want_logits = 2;
    j = llm_forward(rt, &it, 1, err, sizeof(err));
    ok(j == 1 && llm_forward_item_error(rt, 0) != NULL,
       "more logit rows than tokens fails the item: %s", err);
    {
        int32_t         many[64] = { 0 };
        llm_batch_item  two[2] = { { 0, many, 40, 40, 0 }, { 1, many, 20, 20, 0 } };
        ok(llm_forward(rt, two, 2, err, sizeof(err)) < 0,
           "more logit rows than held (%d) fails the call: %s", llm_runtime_logit_rows(rt), err);
    }
    free(seqlog);
    llm_runtime_free(rt);
}

/* ---- exactness through the scheduler ---- */

typedef struct {
    int32_t     toks[256];
    int         n;
    float       lp[256];
    int         done;
    llm_finish  reason;
    llm_seq    *seq;
} run_t;

static void
on_token(void *o, llm_seq *seq, int32_t tok, const llm_token_logprobs *lp)
{
    run_t *r = o;
    if (r->n < 256) {
        r->lp[r->n] = lp ? lp->chosen.logprob : 0;
        r->toks[r->n++] = tok;
    }
}

static void
on_done(void *o, llm_seq *seq, llm_finish reason, const char *error)
{
    run_t *r = o;
    r->done++;
    r->reason = reason;
}

static void on_flush(void *o) { (void) o; }

static const llm_seq_events events = { on_token, on_done, on_flush };

static llm_sched *
make_sched_draft(const llm_model *m, int parallel, const llm_model *draft)
{
    char              err[256];
    llm_sched_config  cfg = { 0 };
    llm_sched        *s;

    cfg.draft = draft;
    cfg.parallel = parallel;
    cfg.queue = 8;
    cfg.n_ctx = 256;
    cfg.threads = 1;
    cfg.kv = LLM_KV_F32;
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (s == NULL) diag(err);
    return s;
}

static llm_sched *
make_sched(const llm_model *m, int parallel)
{
    return make_sched_draft(m, parallel, NULL);
}

typedef struct {
    float     temperature;
    uint64_t  seed;
    int       logprobs;
    float     repetition_penalty;
} sampling_t;

static void
start(llm_sched *s, const int32_t *prompt, size_t n, size_t max_gen, const sampling_t *sm,
    llm_spec_mode mode, run_t *r)
{
    size_t              granted;
    llm_sampler_params  sp;
    static llm_logit_bias  no_eos[LLM_MAX_EOS];
    const llm_model_info  *in = llm_model_get_info(llm_sched_model(s));
    int                    i;

    for (i = 0; i < in->n_eos; i++) {
        no_eos[i].id = in->eos_ids[i];
        no_eos[i].bias = -1e4f;
    }
    llm_sampler_params_default(&sp);
    sp.temperature = sm->temperature;
    sp.has_seed = 1;
    sp.seed = sm->seed;
    sp.repetition_penalty = sm->repetition_penalty;
    sp.logit_bias = no_eos;
    sp.n_logit_bias = in->n_eos;
    memset(r, 0, sizeof(*r));
    llm_sched_reserve(s, 1, 1, &granted);
    r->seq = llm_seq_create(s, prompt, n, max_gen, &sp, sm->logprobs ? 2 : -1, &events, r, 0);
    llm_seq_set_speculation(r->seq, mode);
    llm_sched_submit(s, r->seq);
}

static void
run_steps(llm_sched *s)
{
    int  i, fc;

    for (i = 0; i < 1000 && llm_sched_step_prepare(s) > 0; i++) {
        llm_sched_step_run(s);
        if (llm_sched_step_failure(s, &fc)) diag("a step failed");
        llm_sched_step_complete(s);
    }
}

static int
same(const run_t *a, const run_t *b)
{
    int i;
    if (a->n != b->n || a->reason != b->reason) return 0;
    for (i = 0; i < a->n; i++) {
        if (a->toks[i] != b->toks[i]) return 0;
        if (fabsf(a->lp[i] - b->lp[i]) > 1e-3f) return 0;
    }
    return 1;
}

/* n tokens, each with a finite logprob (sampled runs with speculation) */
static int
complete(const run_t *r, int n)
{
    int i;
    if (r->n != n || r->reason != LLM_FINISH_LENGTH) return 0;
    for (i = 0; i < r->n; i++) {
        if (!(r->lp[i] <= 0 && r->lp[i] > -100)) return 0;
    }
    return 1;
}

/* a prompt with repeats, so lookup has something to find */
static size_t
make_prompt(int32_t *p, int variant)
{
    size_t  n = 0;
    int     r, i;

    for (r = 0; r < 3; r++) {
        for (i = 0; i < 12; i++) {
            p[n++] = 20 + (i * 7 + variant * 13) % 90;
        }
        p[n++] = 5 + r + variant;
    }
    return n;
}

static void
test_exact(const llm_model *m, const char *name)
{
    llm_sched        *s = make_sched(m, 3);
    int32_t           prompt[3][64];
    size_t            np[3];
    run_t             off[3], on[3], au[3];
    sampling_t        sm[4] = { { 0, 1, 0, 1 }, { 1.0f, 7, 1, 1 }, { 0.7f, 99, 1, 1.1f }, { 0, 3, 1, 1.3f } };
    llm_sched_stats   st0, st1;
    int               c, i, all_same;

    if (!ok(s != NULL, "%s: scheduler of 3 slots", name)) {
        return;
    }
    for (i = 0; i < 3; i++) {
        np[i] = make_prompt(prompt[i], i);
    }

    for (c = 0; c < 4; c++) {
        llm_sched_get_stats(s, &st0);
        /* one at a time, on first (the suffix store has not seen this output yet), then off */
        all_same = 1;
        for (i = 0; i < 3; i++) {
            start(s, prompt[i], np[i], 60, &sm[c], LLM_SPEC_ON, &on[i]);
            run_steps(s);
            llm_seq_release(on[i].seq);
            start(s, prompt[i], np[i], 60, &sm[c], LLM_SPEC_OFF, &off[i]);
            run_steps(s);
            llm_seq_release(off[i].seq);
            all_same &= same(&off[i], &on[i]) && off[i].n == 60;
        }
        if (getenv("SPEC_DEBUG")) {
            for (i = 0; i < off[0].n; i++) printf("# %d %.3f\n", off[0].toks[i], off[0].lp[i]);
        }
        ok(all_same, "%s, temperature %.1f%s%s: on = off, token for token, each alone",
           name, sm[c].temperature, sm[c].logprobs ? ", logprobs" : "",
           sm[c].repetition_penalty != 1 ? ", repetition penalty" : "");

        /* all three at once (continuous batching), auto */
        for (i = 0; i < 3; i++) {
            start(s, prompt[i], np[i], 60, &sm[c], i == 1 ? LLM_SPEC_AUTO : LLM_SPEC_ON, &au[i]);
        }
        run_steps(s);
        all_same = 1;
        for (i = 0; i < 3; i++) {
            all_same &= same(&off[i], &au[i]);
            llm_seq_release(au[i].seq);
        }
        ok(all_same, "%s, temperature %.1f: three batched with speculation = each alone without",
           name, sm[c].temperature);
        llm_sched_get_stats(s, &st1);
        printf("# %llu of %llu proposed tokens kept in %llu steps\n",
               (unsigned long long) (st1.spec_accepted - st0.spec_accepted),
               (unsigned long long) (st1.spec_proposed - st0.spec_proposed),
               (unsigned long long) (st1.spec_steps - st0.spec_steps));
    }

    llm_sched_get_stats(s, &st1);
    ok(st1.spec_proposed > 0 && st1.spec_accepted > 0 && st1.spec_accepted < st1.spec_proposed,
       "%s: proposals were verified, some kept, some rolled back (%llu of %llu kept in %llu steps)",
       name, (unsigned long long) st1.spec_accepted, (unsigned long long) st1.spec_proposed,
       (unsigned long long) st1.spec_steps);
    is_int(st1.live, 0, "%s: every sequence freed", name);
    llm_sched_free(s);
}

/* a copy task: the output is the prompt again, so the proposals are right */
static void
test_copy_steps(const llm_model *m)
{
    llm_sched        *s = make_sched(m, 1);
    int32_t           prompt[64];
    size_t            np = make_prompt(prompt, 0);
    run_t             off, on;
    sampling_t        sm = { 0, 1, 0, 1 };
    llm_sched_stats   a, b, c;

    start(s, prompt, np, 80, &sm, LLM_SPEC_OFF, &off);
    run_steps(s);
    llm_seq_release(off.seq);
    llm_sched_get_stats(s, &a);
    start(s, prompt, np, 80, &sm, LLM_SPEC_ON, &on);
    run_steps(s);
    llm_seq_release(on.seq);
    llm_sched_get_stats(s, &b);
    ok(same(&off, &on), "80 tokens the same with and without");
    diag("greedy output of the random model repeats itself; lookup finds it");
    ok(b.steps - a.steps < a.steps, "fewer steps with speculation (%llu vs %llu)",
       (unsigned long long) (b.steps - a.steps), (unsigned long long) a.steps);
    ok(b.seq_steps - a.seq_steps < a.seq_steps, "fewer sequence steps: %.2f tokens per step",
       80.0 / (double) (b.seq_steps - a.seq_steps));
    /* the slot's cache holds exactly prompt + output but the last token: the next request reuses it */
    {
        int32_t  again[256];
        run_t    r;
        memcpy(again, prompt, np * sizeof(int32_t));
        memcpy(again + np, on.toks, 80 * sizeof(int32_t));
        start(s, again, np + 80, 1, &sm, LLM_SPEC_OFF, &r);
        run_steps(s);
        is_int(llm_seq_n_cached(r.seq), (long long) (np + 79),
               "prompt and output but the last token cached: rejected proposals left no trace");
        llm_seq_release(r.seq);
    }
    llm_sched_get_stats(s, &c);
    (void) c;
    llm_sched_free(s);
}

/*
 * A draft model: the target's own weights (every proposal kept) and
 * another model of the same vocabulary; prefix reuse keeps the draft's
 * cache in step with the slot's.  Greedy: the outputs are the same with
 * and without, alone and batched.  Sampled (temperature 0.8): the draft
 * samples from its own distribution and verification keeps a proposal
 * with probability min(1, p/q), which keeps the model's distribution
 * (test_distribution_draft) but not the tokens of a seed without
 * speculation (the random draws differ, and with them the tokens); what is
 * checked here is that the runs complete with their logprobs and that the
 * model as its own sampled draft has every proposal kept (p = q), where
 * the draft-free rule would keep one with probability p(proposal).
 */
static void
test_draft(const llm_model *m, const llm_model *other)
{
    const llm_model  *drafts[2] = { m, other };
    const char       *names[2] = { "itself", "llama_f32" };
    int32_t           prompt[3][64];
    size_t            np[3];
    sampling_t        sm[2] = { { 0, 1, 0, 1 }, { 0.8f, 11, 1, 1 } };
    run_t             off[3], on[3];
    llm_sched_stats   a, b;
    int               d, c, i, all_same;

    for (i = 0; i < 3; i++) {
        /* variants without repeats of their own, so that the draft proposes */
        np[i] = make_prompt(prompt[i], i) / 3;
    }
    for (d = 0; d < 2; d++) {
        llm_sched  *s = make_sched_draft(m, 3, drafts[d]), *plain = make_sched(m, 3);

        if (!ok(s != NULL && plain != NULL, "scheduler with a draft model (%s)", names[d])) {
            return;
        }
        for (c = 0; c < 2; c++) {
            llm_sched_get_stats(s, &a);
            for (i = 0; i < 3; i++) {
                start(plain, prompt[i], np[i], 40, &sm[c], LLM_SPEC_OFF, &off[i]);
                run_steps(plain);
                llm_seq_release(off[i].seq);
            }
            /* twice alone (the second reuses the cached prompt), then batched */
            all_same = 1;
            for (i = 0; i < 3; i++) {
                start(s, prompt[i], np[i], 40, &sm[c], LLM_SPEC_ON, &on[i]);
                run_steps(s);
                llm_seq_release(on[i].seq);
                all_same &= (c == 0 ? same(&off[i], &on[i]) : complete(&on[i], 40))
                            && off[i].n == 40;
                start(s, prompt[i], np[i], 40, &sm[c], LLM_SPEC_AUTO, &on[i]);
                run_steps(s);
                llm_seq_release(on[i].seq);
                all_same &= c == 0 ? same(&off[i], &on[i]) : complete(&on[i], 40);
            }
            for (i = 0; i < 3; i++) {
                start(s, prompt[i], np[i], 40, &sm[c], LLM_SPEC_ON, &on[i]);
            }
            run_steps(s);
            for (i = 0; i < 3; i++) {
                all_same &= c == 0 ? same(&off[i], &on[i]) : complete(&on[i], 40);
                llm_seq_release(on[i].seq);
            }
            llm_sched_get_stats(s, &b);
            ok(all_same, c == 0 ? "draft %s, temperature %.1f: the same tokens alone, again, and batched"
                                : "draft %s, temperature %.1f: 40 tokens with logprobs alone, again, "
                                  "and batched",
               names[d], sm[c].temperature);
            ok(b.draft_proposed > a.draft_proposed,
               "draft %s, temperature %.1f: it proposed %llu tokens, %llu of all %llu proposals kept",
               names[d], sm[c].temperature,
               (unsigned long long) (b.draft_proposed - a.draft_proposed),
               (unsigned long long) (b.spec_accepted - a.spec_accepted),
               (unsigned long long) (b.spec_proposed - a.spec_proposed));
            if (d == 0) {
                /* all but end-of-sequence, which the requests' logit_bias forbids */
                ok(10 * (b.draft_accepted - a.draft_accepted)
                   >= 9 * (b.draft_proposed - a.draft_proposed),
                   "the model as its own %s draft: %llu of its %llu proposals kept",
                   c == 0 ? "greedy" : "sampled",
                   (unsigned long long) (b.draft_accepted - a.draft_accepted),
                   (unsigned long long) (b.draft_proposed - a.draft_proposed));
            }
        }
        llm_sched_free(s);
        llm_sched_free(plain);
    }
}

/* The draft's KV memory: the model's positions and a block per slot. */
static void
test_draft_opts(const llm_model *m, const llm_model *draft)
{
    char              err[256];
    llm_runtime_opts  t = { 1, 256, 3, LLM_KV_F32, 0, NULL }, d;
    size_t            db = llm_runtime_kv_block_bytes(draft, LLM_KV_F32), kv = 0;

    int               rc;

    rc = llm_sched_draft_opts(m, draft, &t, &d, err, sizeof(err));
    ok(rc == 0 && d.kv_memory == (3 * 256 / LLM_KV_BLOCK + 3) * db && d.n_ctx == 256
       && d.n_seq_max == 3 && d.n_threads == 1,
       "draft of a model without kv_memory: %zu blocks for 3 slots of 256",
       d.kv_memory / db);
    t.kv_memory = 20 * llm_runtime_kv_block_bytes(m, LLM_KV_F32) + 1;
    ok(llm_sched_draft_opts(m, draft, &t, &d, err, sizeof(err)) == 0
       && d.kv_memory == 23 * db
       && llm_runtime_memory(draft, &d, &kv) > kv && kv == 23 * db,
       "draft of a model with 20 blocks of kv_memory: 23 blocks, counted");
    t.kv_memory = 1;
    ok(llm_sched_draft_opts(m, draft, &t, &d, err, sizeof(err)) != 0,
       "a model whose options are refused has no draft options: %s", err);
}

/*
 * A sequence whose every step speculates (the model as its own draft, on):
 * the scheduler still times a plain decode step (the first decoding step,
 * then one in LLM_SCHED_RETIME), so the policy weighs proposals with
 * measured costs, not its priors.
 */
static void
test_retime(const llm_model *m)
{
    llm_sched        *s = make_sched_draft(m, 1, m);
    int32_t           prompt[64];
    size_t            np = make_prompt(prompt, 1) / 3;
    sampling_t        sm = { 0, 1, 0, 1 };
    run_t             r;
    llm_sched_stats   st;
    int               i, fc;

    if (!ok(s != NULL, "scheduler with the model as its draft")) {
        return;
    }
    start(s, prompt, np, 200, &sm, LLM_SPEC_ON, &r);
    for (i = 0; i < 12 && llm_sched_step_prepare(s) > 0; i++) {
        llm_sched_step_run(s);
        if (llm_sched_step_failure(s, &fc)) diag("a step failed");
        llm_sched_step_complete(s);
    }
    llm_sched_get_stats(s, &st);
    ok(st.decode_step_ms > 0 && st.draft_proposed > 0 && r.n > 12,
       "speculating every step, a plain decode step is timed: %.3f ms (%d tokens in 12 steps, "
       "%llu drafted)", st.decode_step_ms, r.n, (unsigned long long) st.draft_proposed);
    run_steps(s);
    llm_seq_release(r.seq);
    llm_sched_free(s);
}

/*
 * A draft's runtime on its model's compute threads (threads_of): it takes
 * their number, its logits are those of a runtime with threads of its own,
 * its passes alternate with the model's, and freeing it leaves the model's
 * threads working.
 */
static void
test_draft_threads(const llm_model *m, const llm_model *draft)
{
    char            err[256];
    llm_runtime_opts o = { 3, 64, 1, LLM_KV_F32, 0, NULL }, d = { 1, 64, 1, LLM_KV_F32, 0, NULL }, r;
    llm_runtime    *rt, *own, *shared;
    int32_t         toks[5] = { 3, 14, 15, 92, 65 };
    int             nv = llm_model_get_info(draft)->n_vocab, n_same = 0, j, ran = 1;
    llm_batch_item  it = { 0 };
    const float    *a, *b;

    rt = llm_runtime_create_opts(m, &o, err, sizeof(err));
    own = llm_runtime_create_opts(draft, &o, err, sizeof(err));
    d.threads_of = rt;
    shared = rt ? llm_runtime_create_opts(draft, &d, err, sizeof(err)) : NULL;
    if (!ok(rt && own && shared, "a draft runtime on the model's threads")) {
        llm_runtime_free(shared);
        llm_runtime_free(own);
        llm_runtime_free(rt);
        return;
    }
    r = d;
    j = llm_runtime_resolve(draft, &r, err, sizeof(err));
    ok(j == 0 && r.n_threads == 3, "it takes their number (%d)", r.n_threads);
    llm_seq_open(rt);
    llm_seq_open(own);
    llm_seq_open(shared);
    it.slot = 0;
    it.want_logits = 1;
    for (j = 0; j < 4; j++) {
        /* the prompt, then one token a pass; the model's pass between the draft's */
        it.tokens = j == 0 ? toks : toks + 1 + j;
        it.n_tokens = j == 0 ? 2 : 1;
        ran &= llm_forward(own, &it, 1, err, sizeof(err)) == 0;
        ran &= llm_forward(shared, &it, 1, err, sizeof(err)) == 0;
        ran &= llm_forward(rt, &it, 1, err, sizeof(err)) == 0;
        a = llm_forward_logits(own, 0);
        b = llm_forward_logits(shared, 0);
        n_same += ran && a && b && memcmp(a, b, sizeof(float) * (size_t) nv) == 0;
    }
    ok(ran && n_same == 4, "its logits are those of a runtime with 3 threads of its own (%d of 4)",
       n_same);
    llm_runtime_free(shared);
    it.tokens = toks;
    it.n_tokens = 1;
    ok(llm_forward(rt, &it, 1, err, sizeof(err)) == 0 && llm_forward_logits(rt, 0) != NULL,
       "the model's threads work on after the draft's runtime is freed");
    llm_runtime_free(own);
    llm_runtime_free(rt);
}

/*
 * The target distribution, statistically: the second and third generated
 * tokens of many sampled runs with speculation on (seeds 1..N) against as
 * many without (other seeds), a two-sample chi-square test per position.
 * The runs share one scheduler, so the suffix store proposes what earlier
 * runs wrote: proposals are made at most steps and kept or rejected by
 * chance.  With a draft model (another model of the vocabulary), the
 * draft samples its proposals where the store has none, verified by
 * rejection sampling against its distribution: each run with speculation
 * then has a scheduler of its own (an empty store) and a prompt without
 * repeats (nothing for prompt lookup), and a third sample, the draft
 * model's own output, shows that the test tells q from p.  Fixed seeds:
 * the outcome is the same on every run of the test.
 */

/* Two-sample chi-square of counts a and b over n bins; bins of fewer than 10 in all are pooled. */
static double
chi2_two(const int *a, const int *b, int n, int *bins)
{
    double  chi2 = 0, d;
    int     rest[2] = { 0, 0 }, v, t;

    *bins = 0;
    for (v = 0; v < n; v++) {
        t = a[v] + b[v];
        if (t >= 10) {
            d = (double) a[v] - b[v];
            chi2 += d * d / t;
            (*bins)++;
        } else {
            rest[0] += a[v];
            rest[1] += b[v];
        }
    }
    if (rest[0] + rest[1] > 0) {
        d = (double) rest[0] - rest[1];
        chi2 += d * d / (rest[0] + rest[1]);
        (*bins)++;
    }
    return chi2;
}

static void
test_distribution(const llm_model *m, const llm_model *draft)
{
    enum { N = 400, POS = 2 };
    llm_sched        *s = make_sched_draft(m, 1, draft), *on;
    llm_sched        *alone = draft ? make_sched(draft, 1) : NULL;
    const char       *with = draft ? "with a sampled draft" : "with speculation";
    int32_t           prompt[8] = { 40, 41, 42, 43, 40, 41, 42, 43 };
    int32_t           distinct[8] = { 40, 41, 42, 43, 44, 45, 46, 47 };
    static int        cnt[3][POS][256];
    sampling_t        sm = { draft ? 1.0f : 0.5f, 0, 0, 1 };
    run_t             r;
    llm_sched_stats   a, b;
    uint64_t          kept, rejected;
    int               mode, i, p, bins, nv = llm_model_get_info(m)->n_vocab;
    double            chi2;
    uint64_t          n_kept = 0, n_proposed = 0;

    if (!ok(s != NULL && nv <= 256 && (draft == NULL || alone != NULL),
            "scheduler for the distribution test")) {
        return;
    }
    memset(cnt, 0, sizeof(cnt));
    if (draft) {
        memcpy(prompt, distinct, sizeof(prompt));
    }
    /* 0: the model with speculation, 1: without, 2: the draft model alone */
    for (mode = 0; mode < (draft ? 3 : 2); mode++) {
        llm_sched_get_stats(s, &a);
        for (i = 0; i < N; i++) {
            sm.seed = (uint64_t) (mode ? 100000 * mode + i : 1 + i);
            on = mode == 2 ? alone : mode == 0 && draft ? make_sched_draft(m, 1, draft) : s;
            if (on == NULL) {
                break;
            }
            start(on, prompt, 8, 2 + POS, &sm, mode ? LLM_SPEC_OFF : LLM_SPEC_ON, &r);
            run_steps(on);
            for (p = 0; p < POS && p + 1 < r.n; p++) {
                cnt[mode][p][r.toks[p + 1]]++;
            }
            llm_seq_release(r.seq);
            if (on != s && on != alone) {
                llm_sched_get_stats(on, &b);
                n_kept += b.draft_accepted;
                n_proposed += b.draft_proposed;
                llm_sched_free(on);
            }
        }
        llm_sched_get_stats(s, &b);
        if (mode == 0) {
            kept = draft ? n_kept : b.spec_accepted - a.spec_accepted;
            rejected = draft ? n_proposed - n_kept
                             : b.spec_proposed - a.spec_proposed - kept;
            ok(kept > N / 20 && rejected > N / 20,
               "%s: %llu proposals kept and %llu rejected in %d runs", with,
               (unsigned long long) kept, (unsigned long long) rejected, N);
        }
    }
    for (p = 0; p < POS; p++) {
        chi2 = chi2_two(cnt[0][p], cnt[1][p], nv, &bins);
        ok(bins >= 3 && chi2 < chi2_crit_999(bins - 1),
           "%s, token %d: on and off draw from the same distribution (chi-square %.1f, %d bins, "
           "0.999 critical %.1f)", with, p + 2, chi2, bins, chi2_crit_999(bins - 1));
        if (draft) {
            chi2 = chi2_two(cnt[2][p], cnt[1][p], nv, &bins);
            ok(chi2 > chi2_crit_999(bins - 1),
               "token %d: the same test tells the draft model's own distribution from the "
               "model's (chi-square %.1f, %d bins)", p + 2, chi2, bins);
        }
    }
    llm_sched_free(s);
    llm_sched_free(alone);
}

/*
 * Constrained decoding on the shipped model: a JSON Schema whose string the
 * model copies from the request; jump-forward appends forced tokens without
 * verification, proposals are verified against the grammar's choice.
 */
static void
test_constrained(void)
{
    const char     *dir = getenv("TEST_NGINX_MODELS");
    char            path[512], err[256];
    llm_model      *m;
    llm_tokenizer  *tok;
    llm_gvocab     *v;
    llm_grammar    *g;
    llm_gindex     *x;
    json_t         *schema;
    int32_t        *ids, stop;
    size_t          n_ids;
    run_t           off, on;
    sampling_t      sm[2] = { { 0, 1, 0, 1 }, { 0.8f, 5, 0, 1 } };
    llm_sched      *s;
    llm_sched_stats st;
    int             c;
    const char     *text = "<|im_start|>user\nSave these notes to notes/tuesday.md exactly as "
        "written: Meeting notes, Tuesday. Decisions: ship the search filters behind a flag next "
        "Monday; keep the old export until the end of the month.<|im_end|>\n<|im_start|>"
        "assistant\n<think>\n\n</think>\n\n";

    snprintf(path, sizeof(path), "%s/ngxllm-tiny", dir ? dir : "models");
    m = llm_model_load(path, err, sizeof(err));
    tok = m ? llm_tokenizer_load(path, err, sizeof(err)) : NULL;
    if (!ok(tok != NULL, "the shipped model and its tokenizer load")) {
        diag(err);
        llm_model_free(m);
        return;
    }
    stop = llm_tokenizer_token_id(tok, "<|im_end|>");
    v = llm_constrain_vocab(tok, &stop, 1, err, sizeof(err));
    schema = json_loads("{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                        "\"content\":{\"type\":\"string\",\"maxLength\":300}},"
                        "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
                        0, NULL);
    g = llm_grammar_from_json_schema(schema, err, sizeof(err));
    x = g && v ? llm_gindex_create(g, v, &stop, 1, NULL, 0, err, sizeof(err)) : NULL;
    if (!ok(x != NULL, "schema compiles")) {
        diag(err);
        return;
    }
    llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n_ids);
    s = make_sched(m, 1);
    for (c = 0; c < 2; c++) {
        start(s, ids, n_ids, 200, &sm[c], LLM_SPEC_ON, &on);
        llm_seq_set_constraint(on.seq, llm_constraint_create(x, tok, NULL, 0));
        run_steps(s);
        llm_seq_release(on.seq);
        start(s, ids, n_ids, 200, &sm[c], LLM_SPEC_OFF, &off);
        llm_seq_set_constraint(off.seq, llm_constraint_create(x, tok, NULL, 0));
        run_steps(s);
        llm_seq_release(off.seq);
        ok(same(&off, &on) && off.n > 5, "JSON schema, temperature %.1f: %d tokens the same with and "
           "without speculation", sm[c].temperature, off.n);
        if (getenv("SPEC_DEBUG")) {
            char *t;
            size_t tl;
            llm_tokenizer_decode(tok, on.toks, (size_t) on.n, 0, &t, &tl);
            printf("# %s\n", t);
            free(t);
        }
    }
    llm_sched_get_stats(s, &st);
    ok(st.spec_accepted > 0, "proposals kept under the grammar (%llu of %llu)",
       (unsigned long long) st.spec_accepted, (unsigned long long) st.spec_proposed);
    llm_sched_free(s);

    /*
     * The model as its own sampled draft under the grammar: the draft's
     * distribution is masked on its copy of the constraint as the model's
     * is on the sequence's, so p = q and every proposal is kept; every
     * token of the output is one the grammar allows there.  (This model
     * follows the format: the draft's mask seldom matters here; the copy
     * itself is checked below.)
     */
    s = make_sched_draft(m, 1, m);
    if (ok(s != NULL, "scheduler with the shipped model as its own draft")) {
        llm_constraint  *check = llm_constraint_create(x, tok, NULL, 0);
        llm_constraint  *copy;
        const uint64_t  *b0, *b1;
        uint64_t         before[64];
        int              i, allowed = check != NULL;
        int              nv = (int) llm_tokenizer_n_vocab(tok), nw = (nv + 63) / 64;

        start(s, ids, n_ids, 200, &sm[1], LLM_SPEC_ON, &on);
        llm_seq_set_constraint(on.seq, llm_constraint_create(x, tok, NULL, 0));
        run_steps(s);
        llm_seq_release(on.seq);
        llm_sched_get_stats(s, &st);
        for (i = 0; allowed && i < on.n; i++) {
            allowed = llm_constraint_accept(check, on.toks[i]) >= 0;
        }
        ok(allowed && on.n > 5 && !llm_constraint_broken(check),
           "JSON schema, temperature 0.8, sampled draft: %d tokens, each allowed by the grammar",
           on.n);
        ok(st.draft_proposed > 0 && 10 * st.draft_accepted >= 9 * st.draft_proposed,
           "the grammar's mask on the draft's copy: %llu of its %llu proposals kept",
           (unsigned long long) st.draft_accepted, (unsigned long long) st.draft_proposed);
        /* a copy advances on its own: the original's mask stays */
        llm_constraint_free(check);
        check = llm_constraint_create(x, tok, NULL, 0);
        copy = check ? llm_constraint_clone(check) : NULL;
        /* the first 4096 ids' bits: the JSON punctuation is among them */
        nw = nw < 64 ? nw : 64;
        allowed = copy != NULL && llm_constraint_mask(check, nv, &b0) == 0 && b0 != NULL;
        if (allowed) {
            memcpy(before, b0, (size_t) nw * sizeof(uint64_t));
            allowed = llm_constraint_accept(copy, on.toks[0]) >= 0
                      && llm_constraint_mask(copy, nv, &b1) == 0 && b1 != NULL
                      && memcmp(before, b1, (size_t) nw * sizeof(uint64_t)) != 0
                      && llm_constraint_mask(check, nv, &b0) == 0
                      && memcmp(before, b0, (size_t) nw * sizeof(uint64_t)) == 0;
        }
        ok(allowed, "llm_constraint_clone: the copy's mask moves on with its token, the original's stays");
        llm_constraint_free(copy);
        llm_constraint_free(check);
        llm_sched_free(s);
    }
    free(ids);
    llm_gindex_free(x);
    llm_grammar_free(g);
    json_decref(schema);
    llm_gvocab_free(v);
    llm_tokenizer_free(tok);
    llm_model_free(m);
}

int
main(void)
{
    char        err[512];
    llm_model  *m;
    const char *fams[] = { "t/fixtures/models/llama_f32", "t/fixtures/models/gemma2_bf16" };
    int         i;

    test_lookup();
    test_suffix();
    test_policy();
    test_rejection();

    m = llm_model_load(FIX, err, sizeof(err));
    if (m == NULL) {
        printf("# %s\n", err);
        ok(0, "fixture model loads");
        return done_testing();
    }
    test_forward_rows(m);
    test_exact(m, "qwen3_f32");
    test_copy_steps(m);
    test_distribution(m, NULL);
    {
        llm_model  *other = llm_model_load("t/fixtures/models/llama_f32", err, sizeof(err));
        if (ok(other != NULL, "llama_f32 loads as a draft")) {
            test_draft_opts(m, other);
            test_draft_threads(m, other);
            test_retime(m);
            test_draft(m, other);
            test_distribution(m, other);
            llm_model_free(other);
        }
    }
    llm_model_free(m);

    for (i = 0; i < 2; i++) {
        m = llm_model_load(fams[i], err, sizeof(err));
        if (!ok(m != NULL, "%s loads", fams[i])) {
            continue;
        }
        test_exact(m, fams[i] + 18);
        llm_model_free(m);
    }
    test_constrained();
    return done_testing();
}
