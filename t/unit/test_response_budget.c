/*
 * Response budget (api/llm_response_budget.h): the admission estimate
 * refuses what the example asks for (n=8, max_tokens 4000,
 * top_logprobs 20) under a 16 MiB budget and admits a plain request; the
 * measured per-token cost is an upper bound of the logprobs JSON the OpenAI
 * formatters actually write, for worst-case tokens (every byte escaped).
 */
#include <jansson.h>
#include <string.h>

#include "tap.h"
#include "api/llm_openai.h"
#include "api/llm_openai_fmt.h"
#include "api/llm_response_budget.h"

/* token id -> id % 7 + 1 bytes, all control characters (escaped as \u00XX) */
static int
worst_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    size_t i, n = (size_t) (id % 7) + 1;

    (void) ctx;
    for (i = 0; i < n && i < cap; i++) out[i] = (char) (1 + (id + (int32_t) i) % 30);
    return (int) i;
}

static void
test_bound_of_formatters(void)
{
    enum { N = 50, TOP = 20 };
    llm_token_logprobs t[N];
    llm_logprobs_list lp = { t, N };
    llm_openai_meta m;
    size_t i, k, len[1 + TOP], bound = 0;
    char tb[16];
    json_t *chat, *legacy;
    char *s1, *s2;
    long off = 0;

    memset(&m, 0, sizeof(m));
    m.token_bytes = worst_bytes;
    m.top_logprobs = TOP;
    memset(t, 0, sizeof(t));
    for (i = 0; i < N; i++) {
        t[i].chosen.id = (int32_t) (i * 13);
        t[i].chosen.logprob = -12.3456789f;
        t[i].n_top = TOP;
        for (k = 0; k < TOP; k++) {
            t[i].top[k].id = (int32_t) (i * 31 + k * 7);
            t[i].top[k].logprob = -1.0f / (float) (k + 3);
        }
        len[0] = (size_t) worst_bytes(NULL, t[i].chosen.id, tb, sizeof(tb));
        for (k = 0; k < TOP; k++) len[1 + k] = (size_t) worst_bytes(NULL, t[i].top[k].id, tb, sizeof(tb));
        bound += llm_response_token_bytes(0, 1, len, 1 + TOP);
    }
    chat = llm_openai_chat_logprobs(&m, &lp);
    legacy = llm_openai_legacy_logprobs(&m, &lp, &off);
    s1 = json_dumps(chat, JSON_COMPACT);
    s2 = json_dumps(legacy, JSON_COMPACT);
    ok(s1 && strlen(s1) <= bound, "chat logprobs JSON (%zu bytes) within the measured bound (%zu)",
       s1 ? strlen(s1) : 0, bound);
    ok(s2 && strlen(s2) <= bound, "completions logprobs JSON (%zu bytes) within the measured bound",
       s2 ? strlen(s2) : 0);
    ok(s1 && strlen(s1) > bound / 4, "and the bound is not absurdly loose (%zu of %zu)",
       s1 ? strlen(s1) : 0, bound);
    free(s1);
    free(s2);
    json_decref(chat);
    json_decref(legacy);
}

int
main(void)
{
    size_t per, fit, limit = 16u << 20;

    per = llm_response_bytes_per_token(0, 1, 20);
    fit = llm_response_tokens_fit(limit, 8, per);
    ok(fit < 4000, "n=8 x top_logprobs=20: %zu tokens per choice fit 16 MiB (%zu bytes a token), not 4000",
       fit, per);
    ok(llm_response_tokens_fit(limit, 1, per) >= 4096,
       "one choice with top_logprobs=20 fits 4096 tokens");
    is_int(llm_response_bytes_per_token(1, 1, 20), llm_response_bytes_per_token(0, 0, 0),
           "streamed logprobs are sent and dropped: a stream holds only its text");
    ok(llm_response_tokens_fit(limit, 8, llm_response_bytes_per_token(0, 0, 0)) > 100000,
       "a plain n=8 request fits any max_tokens of a normal context");
    is_int(llm_response_tokens_fit(100, 2, 50), 1, "exactly one token each");
    is_int(llm_response_tokens_fit(99, 2, 50), 0, "not even one");
    is_int(llm_response_token_bytes(5, 0, NULL, 0), 5, "without kept logprobs a token costs its text");
    test_bound_of_formatters();
    return done_testing();
}
