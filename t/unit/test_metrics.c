/*
 * The metrics block and its Prometheus text: requests by endpoint and
 * status, per-model sums over worker slots, cumulative histogram buckets
 * with _sum and _count, label escaping, and every line well formed.
 */
#include <stdlib.h>

#include "tap.h"

#include "core/llm_metrics.h"

/* Every line: a comment, or name{labels} value. */
static int
lines_well_formed(const char *text)
{
    const char *p = text, *nl;
    char        line[512];
    size_t      n;

    while (*p) {
        nl = strchr(p, '\n');
        if (nl == NULL) {
            return 0;    /* the last line ends with \n too */
        }
        n = (size_t) (nl - p) < sizeof(line) - 1 ? (size_t) (nl - p)
                                                  : sizeof(line) - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        if (strncmp(line, "# HELP llm_", 11) != 0
            && strncmp(line, "# TYPE llm_", 11) != 0)
        {
            char  *sp = strrchr(line, ' ');
            char  *end;

            if (strncmp(line, "llm_", 4) != 0 || sp == NULL) {
                return 0;
            }
            strtod(sp + 1, &end);
            if (*end != '\0' || end == sp + 1) {
                return 0;
            }
        }
        p = nl + 1;
    }
    return 1;
}

int
main(void)
{
    void               *mem;
    llm_buf             b;
    llm_metrics        *m;
    llm_metrics_worker  w;
    const char         *names[] = { "tiny", "we\"ird\\" };

    mem = calloc(1, llm_metrics_size(2, 3));
    m = llm_metrics_init(mem, 2, 3);
    llm_buf_init(&b);

    ok(llm_metrics_size(2, 3) > llm_metrics_size(1, 3)
       && llm_metrics_size(2, 3) > llm_metrics_size(2, 2),
       "the block grows with models and workers");

    llm_metrics_request(m, LLM_API_CHAT, 200);
    llm_metrics_request(m, LLM_API_CHAT, 200);
    llm_metrics_request(m, LLM_API_MESSAGES, 529);
    llm_metrics_request(m, LLM_API_TOKENIZE, 400);
    llm_metrics_request(m, LLM_API_CHAT, 42);      /* not a status: ignored */

    memset(&w, 0, sizeof(w));
    w.prompt_tokens = 10;
    w.generated_tokens = 5;
    w.running = 1;
    w.kv_blocks_used = 4;
    llm_metrics_publish(m, 0, 0, &w);
    w.prompt_tokens = 7;
    w.generated_tokens = 1;
    w.running = 2;
    w.spec_proposed = 8;
    w.spec_accepted = 6;
    w.draft_proposed = 5;
    w.draft_accepted = 3;
    w.seq_steps = 4;
    w.kv_blocks_pinned = 2;
    w.kv_blocks_evicted = 9;
    w.preempted = 4;
    llm_metrics_publish(m, 0, 2, &w);
    llm_metrics_publish(m, 0, 3, &w);              /* no such worker: ignored */
    llm_metrics_publish(m, 5, 0, &w);              /* no such model: ignored */

    llm_metrics_observe(m, 0, LLM_METRICS_TTFT, 30000000);      /* 0.03 s */
    llm_metrics_observe(m, 0, LLM_METRICS_TTFT, 50000000);      /* 0.05 s: le 0.05 */
    llm_metrics_observe(m, 0, LLM_METRICS_TTFT, 1000000000000); /* 1000 s: +Inf */
    llm_metrics_observe(m, 1, LLM_METRICS_ITL, 2000000);        /* 0.002 s */

    ok(llm_metrics_render(m, names, &b) == 0, "renders");

    ok(strstr(b.data, "llm_requests_total{endpoint=\"chat\",code=\"200\"} 2\n") != NULL,
       "requests by endpoint and code");
    ok(strstr(b.data, "llm_requests_total{endpoint=\"messages\",code=\"529\"} 1\n")
       && strstr(b.data, "llm_requests_total{endpoint=\"tokenize\",code=\"400\"} 1\n"),
       "each endpoint and code its own series");
    ok(strstr(b.data, "code=\"42\"") == NULL, "a non-status is not counted");
    ok(strstr(b.data, "# TYPE llm_requests_total counter\n") != NULL, "counter type");

    ok(strstr(b.data, "llm_prompt_tokens_total{model=\"tiny\"} 17\n") != NULL,
       "counters sum the workers' slots (10 + 7)");
    ok(strstr(b.data, "llm_sequences_running{model=\"tiny\"} 3\n") != NULL,
       "gauges too (1 + 2)");
    ok(strstr(b.data, "llm_spec_accepted_tokens_total{model=\"tiny\"} 6\n")
       && strstr(b.data, "llm_spec_draft_tokens_total{model=\"tiny\"} 8\n"),
       "speculative proposed and accepted");
    ok(strstr(b.data, "llm_spec_draft_model_tokens_total{model=\"tiny\"} 5\n")
       && strstr(b.data, "llm_spec_draft_model_accepted_tokens_total{model=\"tiny\"} 3\n")
       && strstr(b.data, "llm_sequence_steps_total{model=\"tiny\"} 4\n"),
       "the draft model's proposed and accepted, sequence steps");
    ok(strstr(b.data, "llm_kv_blocks_pinned{model=\"tiny\"} 2\n")
       && strstr(b.data, "# TYPE llm_kv_blocks_pinned gauge\n"), "pinned KV blocks, a gauge");
    ok(strstr(b.data, "llm_kv_blocks_evicted_total{model=\"tiny\"} 9\n")
       && strstr(b.data, "llm_preemptions_total{model=\"tiny\"} 4\n")
       && strstr(b.data, "# TYPE llm_preemptions_total counter\n"),
       "evicted KV blocks and preemptions, counters");
    ok(strstr(b.data, "llm_prompt_tokens_total{model=\"we\\\"ird\\\\\"} 0\n") != NULL,
       "label values escaped: %.48s", strstr(b.data, "llm_prompt_tokens_total{model=\"we"));

    ok(strstr(b.data, "llm_time_to_first_token_seconds_bucket{model=\"tiny\",le=\"0.025\"} 0\n")
       && strstr(b.data, "llm_time_to_first_token_seconds_bucket{model=\"tiny\",le=\"0.05\"} 2\n")
       && strstr(b.data, "llm_time_to_first_token_seconds_bucket{model=\"tiny\",le=\"320\"} 2\n")
       && strstr(b.data, "llm_time_to_first_token_seconds_bucket{model=\"tiny\",le=\"+Inf\"} 3\n"),
       "histogram buckets are cumulative, a bound is inclusive, +Inf has all");
    ok(strstr(b.data, "llm_time_to_first_token_seconds_sum{model=\"tiny\"} 1000.080000000\n")
       && strstr(b.data, "llm_time_to_first_token_seconds_count{model=\"tiny\"} 3\n"),
       "_sum in seconds and _count");
    ok(strstr(b.data, "llm_inter_token_latency_seconds_bucket{model=\"we\\\"ird\\\\\",le=\"0.0025\"} 1\n")
       != NULL, "per-model histograms");
    ok(strstr(b.data, "# TYPE llm_step_duration_seconds histogram\n") != NULL,
       "histogram type");
    ok(lines_well_formed(b.data), "every line a comment or a sample");

    free(mem);
    llm_buf_free(&b);
    return done_testing();
}
