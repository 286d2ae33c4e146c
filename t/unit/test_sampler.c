/* Sampler: greedy, penalties, logit_bias, truncation, seeds, logprobs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "engine/llm_engine.h"

static llm_sampler *
make(float temp, int top_k, float top_p, float min_p, uint64_t seed)
{
    llm_sampler_params p;
    llm_sampler_params_default(&p);
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.has_seed = 1;
    p.seed = seed;
    return llm_sampler_create(&p, 4);
}

int
main(void)
{
    float lg[4] = { 1.0f, 3.0f, 2.0f, 0.5f };
    llm_sampler_params p;
    llm_sampler *s;
    llm_token_logprobs lp;
    int i, hist[4];

    /* greedy */
    s = make(0, 0, 1, 0, 1);
    is_int(llm_sampler_sample(s, lg, NULL, 0), 1, "greedy picks the largest logit");
    {
        float tie[4] = { 0.5f, 2.0f, 2.0f, 1.0f };
        is_int(llm_sampler_sample(s, tie, NULL, 0), 1, "greedy tie goes to the lowest id");
    }
    llm_sampler_free(s);

    /*
     * greedy without logprobs takes the argmax of the raw logits (no copy); it must pick what
     * the processed path (with logprobs) picks: ties to the lowest id across the lanes,
     * NaN and -inf never chosen
     */
    {
        enum { NV = 1003 };
        static float big[NV];
        llm_token_logprobs bl;
        uint64_t x = 12345;
        int r, same = 1, j;

        llm_sampler_params_default(&p);
        p.temperature = 0;
        s = llm_sampler_create(&p, NV);
        for (r = 0; r < 300; r++) {
            for (j = 0; j < NV; j++) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                big[j] = (float) (x % 50) - 40.0f;      /* many equal values */
            }
            if (r % 3 == 1) big[(r * 7) % NV] = NAN;
            if (r % 3 == 2) big[NV - 1] = 10.0f;       /* the maximum in the scalar tail */
            if (r % 5 == 0) big[(r * 11) % NV] = -INFINITY;
            if (llm_sampler_sample(s, big, NULL, 0) != llm_sampler_sample(s, big, &bl, 0)) {
                same = 0;
            }
        }
        ok(same, "greedy argmax without logprobs = with them, 300 vectors of %d with ties", NV);
        for (j = 0; j < NV; j++) big[j] = 0;
        big[13] = big[600] = 1.0f;
        is_int(llm_sampler_sample(s, big, NULL, 0), 13, "tie across lanes: the lowest id");
        big[13] = NAN;
        is_int(llm_sampler_sample(s, big, NULL, 0), 600, "a NaN is never the argmax");
        llm_sampler_free(s);
    }

    /* logit_bias */
    llm_sampler_params_default(&p);
    p.temperature = 0;
    {
        llm_logit_bias b[2] = { { 1, -100.0f }, { 3, 1.0f } };
        p.logit_bias = b;
        p.n_logit_bias = 2;
        s = llm_sampler_create(&p, 4);
        b[0].bias = 0;   /* copied at create: later changes do not matter */
    }
    is_int(llm_sampler_sample(s, lg, NULL, 0), 2, "logit_bias -100 bans the argmax");
    llm_sampler_free(s);

    /* repetition penalty (HF): positive logits divided, negative multiplied */
    llm_sampler_params_default(&p);
    p.temperature = 0;
    p.repetition_penalty = 2.0f;
    s = llm_sampler_create(&p, 4);
    {
        float r[4] = { 2.0f, -1.0f, 1.9f, -3.0f };
        int32_t prompt[2] = { 0, 1 };
        llm_sampler_accept_prompt(s, prompt, 2);
        is_int(llm_sampler_sample(s, r, &lp, 4), 2, "repetition penalty applies to prompt tokens");
        /* processed logits are [1, -2, 1.9, -3] */
        is_near(lp.top[1].logprob - lp.top[0].logprob, 1.0 - 1.9, 1e-5, "penalised logit of a positive value halves");
        is_int(lp.top[1].id, 0, "second most likely after the penalty is token 0");
        is_near(lp.top[2].logprob - lp.top[0].logprob, -2.0 - 1.9, 1e-5, "negative logit doubles");
    }
    llm_sampler_free(s);

    /* presence / frequency (OpenAI) count generated tokens only */
    llm_sampler_params_default(&p);
    p.temperature = 0;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.3f;
    s = llm_sampler_create(&p, 4);
    {
        float r[4] = { 2.0f, 2.5f, 0.0f, 0.0f };
        int32_t prompt[1] = { 1 };
        llm_sampler_accept_prompt(s, prompt, 1);
        is_int(llm_sampler_sample(s, r, NULL, 0), 1, "prompt tokens carry no presence penalty");
        llm_sampler_accept(s, 1);
        /* 2.5 - 0.5 - 0.3 = 1.7 < 2.0 */
        is_int(llm_sampler_sample(s, r, &lp, 2), 0, "presence + frequency penalty after one use");
        is_near(lp.top[1].logprob - lp.top[0].logprob, 1.7 - 2.0, 1e-5, "penalised value is 2.5 - 0.5 - 0.3");
        llm_sampler_accept(s, 0);
        llm_sampler_accept(s, 0);
        /* token 0: 2 - 0.5 - 0.6 = 0.9; token 1: 1.7 */
        is_int(llm_sampler_sample(s, r, NULL, 0), 1, "frequency penalty grows with the count");
    }
    llm_sampler_free(s);

    /* logprobs */
    s = make(0, 0, 1, 0, 1);
    llm_sampler_sample(s, lg, &lp, 3);
    {
        double lse = log(exp(1.0) + exp(3.0) + exp(2.0) + exp(0.5));
        is_int(lp.chosen.id, 1, "logprobs: chosen id");
        is_near(lp.chosen.logprob, 3.0 - lse, 1e-5, "logprobs: chosen value is log-softmax");
        is_int(lp.n_top, 3, "logprobs: n_top entries");
        ok(lp.top[0].id == 1 && lp.top[1].id == 2 && lp.top[2].id == 0, "logprobs: top sorted by probability");
        is_near(lp.top[2].logprob, 1.0 - lse, 1e-5, "logprobs: third value");
    }
    llm_sampler_free(s);

    /* temperature sampling follows the softmax; top_k / top_p / min_p truncate */
    {
        float u[4] = { 0.0f, (float) log(2.0), (float) log(3.0), (float) log(4.0) };  /* p = .1 .2 .3 .4 */
        s = make(1.0f, 0, 1, 0, 42);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 20000; i++) hist[llm_sampler_sample(s, u, NULL, 0)]++;
        ok(fabs(hist[0] / 20000.0 - 0.1) < 0.01 && fabs(hist[3] / 20000.0 - 0.4) < 0.015,
           "T=1 frequencies follow the softmax (%d %d %d %d)", hist[0], hist[1], hist[2], hist[3]);
        llm_sampler_free(s);

        s = make(1.0f, 2, 1, 0, 43);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 2000; i++) hist[llm_sampler_sample(s, u, NULL, 0)]++;
        ok(hist[0] == 0 && hist[1] == 0 && hist[2] > 0 && hist[3] > 0, "top_k=2 keeps the two largest");
        llm_sampler_free(s);

        s = make(1.0f, 0, 0.65f, 0, 44);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 2000; i++) hist[llm_sampler_sample(s, u, NULL, 0)]++;
        ok(hist[0] == 0 && hist[1] == 0 && hist[2] > 0 && hist[3] > 0, "top_p=0.65 keeps {.4, .3}");
        llm_sampler_free(s);

        s = make(1.0f, 0, 1, 0.6f, 45);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 2000; i++) hist[llm_sampler_sample(s, u, NULL, 0)]++;
        ok(hist[0] == 0 && hist[1] == 0 && hist[2] > 0 && hist[3] > 0, "min_p=0.6 keeps p >= 0.24");
        llm_sampler_free(s);

        s = make(0.05f, 0, 1, 0, 46);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 1000; i++) hist[llm_sampler_sample(s, u, NULL, 0)]++;
        ok(hist[3] > 990, "low temperature concentrates on the argmax (%d)", hist[3]);
        llm_sampler_free(s);
    }

    /* seeds: same seed, same tokens; another seed, other tokens; large vocabulary path */
    {
        int V = 50000, same = 1, differ = 0, j;
        float *big = malloc((size_t) V * sizeof(float));
        llm_sampler *a, *b, *c;
        for (j = 0; j < V; j++) big[j] = (float) ((j * 7919) % 1000) / 250.0f;
        llm_sampler_params_default(&p);
        p.temperature = 0.8f;
        p.top_p = 0.9f;
        p.has_seed = 1;
        p.seed = 1234;
        a = llm_sampler_create(&p, V);
        b = llm_sampler_create(&p, V);
        p.seed = 1235;
        c = llm_sampler_create(&p, V);
        for (j = 0; j < 50; j++) {
            int32_t ta = llm_sampler_sample(a, big, NULL, 0), tb = llm_sampler_sample(b, big, NULL, 0);
            int32_t tc = llm_sampler_sample(c, big, NULL, 0);
            if (ta != tb) same = 0;
            if (ta != tc) differ++;
            llm_sampler_accept(a, ta);
            llm_sampler_accept(b, tb);
            llm_sampler_accept(c, tc);
        }
        ok(same, "same seed gives the same 50 tokens");
        ok(differ > 40, "another seed gives other tokens (%d of 50 differ)", differ);
        llm_sampler_free(a);
        llm_sampler_free(b);
        llm_sampler_free(c);
        p.has_seed = 0;
        a = llm_sampler_create(&p, V);
        b = llm_sampler_create(&p, V);
        differ = 0;
        for (j = 0; j < 20; j++) {
            if (llm_sampler_sample(a, big, NULL, 0) != llm_sampler_sample(b, big, NULL, 0)) differ++;
        }
        ok(differ > 10, "no seed: two samplers draw differently (%d of 20)", differ);
        llm_sampler_free(a);
        llm_sampler_free(b);
        free(big);
    }

    /*
     * llm_sampler_dist: the distribution sampling draws from, as
     * probabilities; llm_sampler_draw follows it; rewind undoes
     * tentative accepts.
     */
    {
        float u[4] = { 0.0f, (float) log(2.0), (float) log(3.0), (float) log(4.0) };  /* p = .1 .2 .3 .4 */
        float pr[4], pr2[4];
        uint64_t allowed = 0x5;    /* ids 0 and 2 */
        llm_sampler_mark mk;
        int32_t toks[2] = { 3, 1 };

        s = make(1.0f, 0, 1, 0, 47);
        is_int(llm_sampler_dist(s, u, NULL, pr), 3, "dist returns the most likely token");
        ok(fabs(pr[0] - 0.1) < 1e-6 && fabs(pr[1] - 0.2) < 1e-6 && fabs(pr[2] - 0.3) < 1e-6
           && fabs(pr[3] - 0.4) < 1e-6, "T=1 dist is the softmax (%.3f %.3f %.3f %.3f)",
           pr[0], pr[1], pr[2], pr[3]);
        memset(hist, 0, sizeof(hist));
        for (i = 0; i < 20000; i++) hist[llm_sampler_draw(s, pr)]++;
        ok(fabs(hist[0] / 20000.0 - 0.1) < 0.01 && fabs(hist[3] / 20000.0 - 0.4) < 0.015,
           "draw follows the dist (%d %d %d %d)", hist[0], hist[1], hist[2], hist[3]);
        llm_sampler_dist(s, u, &allowed, pr);
        ok(fabs(pr[0] - 0.25) < 1e-6 && pr[1] == 0 && fabs(pr[2] - 0.75) < 1e-6 && pr[3] == 0,
           "a mask renormalises over the allowed ids (%.3f %.3f %.3f %.3f)", pr[0], pr[1], pr[2], pr[3]);
        allowed = 0;
        is_int(llm_sampler_dist(s, u, &allowed, pr), -1, "nothing allowed: -1");
        is_int(llm_sampler_draw(s, pr), -1, "drawing from nothing: -1");
        llm_sampler_free(s);

        s = make(1.0f, 0, 0.65f, 0, 48);
        llm_sampler_dist(s, u, NULL, pr);
        ok(pr[0] == 0 && pr[1] == 0 && fabs(pr[2] - 0.3 / 0.7) < 1e-6 && fabs(pr[3] - 0.4 / 0.7) < 1e-6,
           "top_p=0.65 dist keeps {.4, .3}, renormalised");
        llm_sampler_free(s);

        s = make(0, 0, 1, 0, 49);
        llm_sampler_dist(s, u, NULL, pr);
        ok(pr[3] == 1 && pr[0] == 0 && pr[1] == 0 && pr[2] == 0, "greedy dist is one-hot at the argmax");
        llm_sampler_free(s);

        llm_sampler_params_default(&p);
        p.presence_penalty = 1.0f;
        p.repetition_penalty = 1.5f;
        p.has_seed = 1;
        p.seed = 50;
        s = llm_sampler_create(&p, 4);
        llm_sampler_accept(s, 2);
        llm_sampler_dist(s, u, NULL, pr);
        mk = llm_sampler_get_mark(s);
        llm_sampler_accept(s, toks[0]);
        llm_sampler_accept(s, toks[1]);
        llm_sampler_dist(s, u, NULL, pr2);
        ok(pr2[3] < pr[3] && pr2[1] < pr[1], "tentative accepts penalise (%.3f < %.3f)", pr2[3], pr[3]);
        llm_sampler_rewind(s, mk, toks, 2);
        llm_sampler_dist(s, u, NULL, pr2);
        ok(memcmp(pr, pr2, sizeof(pr)) == 0, "rewind: the distribution as before the accepts");
        llm_sampler_accept(s, 3);
        llm_sampler_dist(s, u, NULL, pr2);
        ok(pr2[3] < pr[3], "and a token accepted after the rewind is penalised again");
        llm_sampler_free(s);
    }
    return done_testing();
}
