/*
 * make bench: speculative decoding on the default model (greedy, one
 * sequence, the engine's scheduler without nginx).  The workloads:
 *   edit  the model is asked to return a ~500-token text with a few fixes
 *   tool  a tool call whose argument copies a text from the user message
 *   quote the same with the text in quotes (the default model copies those further)
 *   chat  free chat (24 questions), served in a row: the suffix store
 *         proposes what the model's answers to earlier questions said
 *   chat/fresh  the same questions, each in a scheduler of its own: nothing
 *         from earlier requests, little to copy; what speculation costs
 *         where it does not pay
 * and free chat again with a draft model, each request fresh as in
 * chat/fresh (the default model quantized on load to q8_0 and to q4_0, and
 * the folder BENCH_SPEC_DRAFT names: draft=, proposing where the draft-free
 * proposers have nothing), each run with llm_speculation off, auto and on
 * (chat: 4 times the repeats, modes interleaved; `median` is the median of
 * the runs' ratios to the off run beside them), printing decode speed,
 * tokens per step, acceptance and whether the outputs are identical; for
 * each workload the oracle bounds of draft-free speculation on the off
 * outputs (oracle() below); then what searching for a proposal costs a
 * step that finds none.
 * Not a test: nothing here asserts on time.
 *
 *   build/bench/spec MODEL_DIR [threads] [repeats]
 *   BENCH_SPEC_SHOW=1: print the outputs; BENCH_SPEC_ONLY_COST=1: the search cost only;
 *   BENCH_SPEC_ONLY=tool (edit, quote, chat, chat/fresh, chat/q8_0, chat/q4_0, chat/draft): that workload only
 *   BENCH_SPEC_DRAFT=DIR: also free chat with the model folder DIR as the draft (chat/draft),
 *   e.g. one distilled by models/recipe/distill_draft.py; BENCH_SPEC_DRAFT_QUANT=q8_0 (or
 *   another on-load quantization): that draft quantized on load
 *   BENCH_SPEC_TEMP=0.8: sample at that temperature (request i seeded with
 *   BENCH_SPEC_SEED + i, default 0 + i) instead of greedy; a draft model then samples its
 *   proposals, kept by rejection sampling: the output keeps the distribution, not the
 *   tokens ("same" says NO)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_sched.h"
#include "engine/llm_spec.h"
#include "engine/llm_tokenizer.h"

#include "bench_seq.h"

/* ~500 tokens of prose with a few typos the edit asks to fix */
static const char *edit_text =
    "The quarterly report covers the work of the platform team between January and March. "
    "We moved the build system to a new set of machines, which cut the average build time from "
    "fourteen minutes to six. The test suite now runs in parallel on every pull request, and "
    "flaky tests are quarantined automaticaly after three failures in a week. Our on-call "
    "rotation was changed from one week to three days after feedback from the team, and the "
    "number of pages outside working hours fell by a third.\n\n"
    "In February we started the migration of the billing service to the new database cluster. "
    "The first phase copied historical invoices and verified them against the old store; the "
    "second phase, which moves live writes, is planned for April. We found two bugs in the "
    "export job during the copy, both fixed before any customer saw them. The migration "
    "runbook is in the wiki under Billing, Database, Migration.\n\n"
    "Hiring went slower than planed. We opened three positions and filled one; the other two "
    "remain open and we are working with the recruiting team on the job descriptions. "
    "Onboarding for the new engineer took two weeks, which is one week less than last year, "
    "mostly thanks to the new development environment that sets itself up from a single "
    "command.\n\n"
    "For the next quarter we plan to finish the billing migration, retire the old log "
    "pipeline, and add cost reports per team to the internal dashboard. We also want to "
    "reduce the time from merge to production from two days to one, which needs changes to "
    "the release process and to how we run the staging environment. Risks: the billing "
    "migration depends on the database team's schedule, and the log pipeline retirement needs "
    "every team to move their alerts first.\n";

/* tool calls whose arguments copy text from the user message */
static const char *tool_tasks[][2] = {
    { "{\"name\": \"send_message\", \"description\": \"Send a chat message to a person\", "
      "\"parameters\": {\"type\": \"object\", \"properties\": {\"recipient\": {\"type\": "
      "\"string\"}, \"text\": {\"type\": \"string\"}}, \"required\": [\"recipient\", \"text\"]}}",
      "Send a message to Ana saying: The deploy finished at noon, all checks passed, and the new "
      "search filters are live behind the flag. Please watch the error dashboard this afternoon "
      "and ping me if the latency goes above two hundred milliseconds." },
    { "{\"name\": \"write_file\", \"description\": \"Write text to a file\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"content\": "
      "{\"type\": \"string\"}}, \"required\": [\"path\", \"content\"]}}",
      "Save this to notes/tuesday.md: Meeting notes, Tuesday. Decisions: ship the search filters "
      "behind a flag next Monday; keep the old export until the end of the month; Bo owns the "
      "rollout checklist. Action items: Ana writes the flag cleanup ticket, Chen measures query "
      "latency with the filters on, Dita updates the help pages before Friday." },
    { "{\"name\": \"send_email\", \"description\": \"Send an email\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"to\": {\"type\": \"string\"}, \"subject\": "
      "{\"type\": \"string\"}, \"body\": {\"type\": \"string\"}}, \"required\": [\"to\", "
      "\"subject\", \"body\"]}}",
      "Email bo@example.com with the subject Rollout plan and this body: We start the rollout on "
      "Monday at nine with five percent of users, move to half of them on Wednesday if the error "
      "rate stays flat, and finish on Friday. The old export stays available until the end of "
      "the month." },
    { NULL, NULL }
};

/*
 * the same requests with the text in quotes, as the default model's
 * training data asks for copied values: it copies these further
 */
static const char *quote_tasks[][2] = {
    { "{\"name\": \"send_message\", \"description\": \"Send a chat message to a person\", "
      "\"parameters\": {\"type\": \"object\", \"properties\": {\"recipient\": {\"type\": "
      "\"string\"}, \"text\": {\"type\": \"string\"}}, \"required\": [\"recipient\", \"text\"]}}",
      "Send a message to Ana saying \"The deploy finished at noon, all checks passed, and the new "
      "search filters are live behind the flag. Please watch the error dashboard this afternoon "
      "and ping me if the latency goes above two hundred milliseconds.\"" },
    { "{\"name\": \"write_file\", \"description\": \"Write text to a file\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"content\": "
      "{\"type\": \"string\"}}, \"required\": [\"path\", \"content\"]}}",
      "Write \"Meeting notes, Tuesday. Decisions: ship the search filters behind a flag next "
      "Monday; keep the old export until the end of the month; Bo owns the rollout checklist. "
      "Action items: Ana writes the flag cleanup ticket, Chen measures query latency with the "
      "filters on, Dita updates the help pages before Friday.\" into the file notes/tuesday.md." },
    { "{\"name\": \"send_email\", \"description\": \"Send an email\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"to\": {\"type\": \"string\"}, \"subject\": "
      "{\"type\": \"string\"}, \"body\": {\"type\": \"string\"}}, \"required\": [\"to\", "
      "\"subject\", \"body\"]}}",
      "Send an email to bo@example.com with subject \"Rollout plan\" and the message \"We start "
      "the rollout on Monday at nine with five percent of users, move to half of them on "
      "Wednesday if the error rate stays flat, and finish on Friday. The old export stays "
      "available until the end of the month.\"" },
    { NULL, NULL }
};

static const char *chat_questions[] = {
    "What are some good ways to stay focused while studying for an exam?",
    "Can you explain what a hash table is?",
    "Write a short poem about the sea.",
    "How do I make a simple tomato soup?",
    "What should I pack for a weekend hiking trip?",
    "Why is the sky blue?",
    "What is the difference between weather and climate?",
    "Give me three tips for writing a good cover letter.",
    "How does a refrigerator keep food cold?",
    "Can you suggest a name for a small bakery?",
    "What is a good way to learn a new language?",
    "Explain recursion to a beginner programmer.",
    "How often should I water a cactus?",
    "What are the benefits of regular exercise?",
    "Write a short story about a lost cat who finds its way home.",
    "How do vaccines work?",
    "What is the capital of Australia, and why is it not Sydney?",
    "How can I save money on groceries?",
    "Describe the water cycle in simple terms.",
    "What is the best way to prepare for a job interview?",
    "Why do leaves change color in autumn?",
    "How do I start running if I have never run before?",
    "Explain what an API is.",
    "What makes a good team leader?",
    NULL
};

/* the i-th prompt of a workload as ChatML text (thinking off), NULL past the last */
static char *
prompt_text(const char *kind, int i)
{
    const char  *(*tasks)[2] = strcmp(kind, "quote") == 0 ? quote_tasks : tool_tasks;
    char        *p;

    if (strcmp(kind, "edit") == 0 ? i > 0
        : strcmp(kind, "chat") != 0 ? tasks[i][0] == NULL : chat_questions[i] == NULL)
    {
        return NULL;
    }
    p = malloc(16384);
    if (strcmp(kind, "edit") == 0) {
        snprintf(p, 16384, "<|im_start|>user\nFix the spelling mistakes in this report and "
                 "return the whole report, unchanged otherwise:\n\n%s<|im_end|>\n"
                 "<|im_start|>assistant\n<think>\n\n</think>\n\n", edit_text);
    } else if (strcmp(kind, "chat") != 0) {
        snprintf(p, 16384, "<|im_start|>system\n# Tools\n\nYou may call one or more of these "
                 "functions to help with the request. Their signatures are inside "
                 "<tools></tools>:\n<tools>\n%s\n</tools>\n\nTo call a function, reply with one "
                 "block per call, each a JSON object with the function name and its arguments:\n"
                 "<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                 "<arguments-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\n%s<|im_end|>\n"
                 "<|im_start|>assistant\n", tasks[i][0], tasks[i][1]);
    } else {
        snprintf(p, 16384, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n"
                 "<think>\n\n</think>\n\n", chat_questions[i]);
    }
    return p;
}

/* whether the i-th prompt is a workload's last */
static int
prompt_text_last(const char *kind, int i)
{
    char  *next = prompt_text(kind, i + 1);

    free(next);
    return next == NULL;
}


static llm_sched *
make_sched(const llm_model *m, const llm_model *draft, int threads)
{
    char              err[256];
    llm_sched_config  cfg = { 0 };
    llm_sched        *s;

    cfg.parallel = 1;
    cfg.queue = 1;
    cfg.n_ctx = 2048;
    cfg.threads = threads;
    cfg.kv = LLM_KV_F32;
    cfg.draft = draft;
    s = llm_sched_create(m, &cfg, err, sizeof(err));
    if (s == NULL) {
        fprintf(stderr, "%s\n", err);
    }
    return s;
}

/* one request to its end: greedy, or at BENCH_SPEC_TEMP with the seed given */
static void
run(llm_sched *s, const int32_t *ids, size_t n, size_t max_gen, llm_spec_mode mode, int seed,
    bench_out *o)
{
    llm_seq           *seq;
    llm_sampler_params sp;
    size_t             granted;
    int                fc;
    const char        *temp = getenv("BENCH_SPEC_TEMP");

    llm_sampler_params_default(&sp);
    sp.temperature = temp ? (float) atof(temp) : 0;
    sp.has_seed = 1;
    sp.seed = (uint64_t) seed + (getenv("BENCH_SPEC_SEED") ? strtoull(getenv("BENCH_SPEC_SEED"),
                                                                        NULL, 10) : 0);
    memset(o, 0, sizeof(*o));
    llm_sched_reserve(s, 1, 1, &granted);
    seq = llm_seq_create(s, ids, n, max_gen, &sp, -1, &bench_events, o, 0);
    llm_seq_set_speculation(seq, mode);
    llm_sched_submit(s, seq);
    while (llm_sched_step_prepare(s) > 0) {
        llm_sched_step_run(s);
        if (llm_sched_step_failure(s, &fc)) fprintf(stderr, "step failed\n");
        llm_sched_step_complete(s);
    }
    llm_seq_release(seq);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

/* one workload in one mode */
typedef struct {
    size_t    prompt;          /* prompt tokens, all prompts */
    int       oracle_steps[4]; /* decode steps of the oracles (off runs) */
    int       oracle_tokens;   /* the tokens those steps produce */
    int       tokens;          /* generated, decode speed counts (not the first of each) */
    double    ms;              /* decode time: first to last token of each */
    int32_t   out[8192];       /* all outputs, for the comparison */
    int       n_out;
    uint64_t  seq_steps, proposed, accepted, draft_proposed, draft_accepted;
    double    step_ms, vcost, dcost;  /* the last scheduler's measured costs (llm_sched_propose):
                                         a decode step; a verified token, a draft pass in steps */
    double    draft_ms;        /* a draft pass (ms), the last scheduler that measured one */
} total_t;

/*
 * The mean time of a sequence step in the timed part of a mode's runs:
 * its decode time over the steps that made its tokens (tokens / tokens per step)
 */
static double
step_ms(const total_t *t)
{
    return t->tokens > 0 && t->seq_steps > 0
           ? t->ms * t->n_out / ((double) t->tokens * t->seq_steps) : 0;
}

/*
 * Upper bounds of draft-free speculation on an output that is already known
 * (verification free, every proposal drawn from what the sequence can see:
 * ctx = the earlier requests of the run and the prompt, then the output so
 * far): decode steps to produce out[1..n) when each step keeps the longest
 * run of the coming tokens that
 *   [0] occurs anywhere in the context (any proposer, any tree of candidates),
 *   [1] follows an occurrence of the last token (a match of one token, every
 *       candidate verified at once, as a tree would),
 * and, as a proposer could:
 *   [2] the tokens prompt lookup proposes from a match of at least 2 tokens
 *       (LLM_SPEC_MATCH_MIN; up to LLM_SPEC_K_MAX of them), as many as are right,
 *   [3] the same from a match of 1 token,
 * plus the token the step samples itself.  The first token comes with the
 * prompt.  [1] bounds every tree of candidates after a partial match;
 * [2] against [3] says what trusting one-token matches could add.
 */
static const char *oracle_name[4] = { "any-stretch", "after-last-token", "lookup-2",
                                      "lookup-1" };

static void
oracle(const int32_t *ctx, size_t n_ctx, const int32_t *out, size_t n, int steps[4])
{
    int32_t  *all = malloc(sizeof(int32_t) * (n_ctx + n + 1)), guess[LLM_SPEC_K_MAX];
    size_t    i, j, l, best[2];
    int       b, g, match;

    if (all == NULL) {
        return;
    }
    memcpy(all, ctx, sizeof(int32_t) * n_ctx);
    memcpy(all + n_ctx, out, sizeof(int32_t) * n);
    for (b = 2; b < 4; b++) {
        for (i = 1; i < n; steps[b]++) {
            llm_tokens2  tt = { all, n_ctx + i, NULL, 0 };
            g = llm_lookup_propose(&tt, b == 2 ? 2 : 1, 32, guess, LLM_SPEC_K_MAX, &match);
            for (l = 0; (int) l < g && i + l < n && guess[l] == out[i + l]; l++) {
            }
            i += l + 1;
        }
    }
    for (b = 0; b < 2; b++) {
        for (i = 1; i < n; steps[b]++) {
            /* visible: all[0 .. n_ctx + i); the coming tokens: out[i ..) */
            best[b] = 0;
            for (j = 0; j < n_ctx + i; j++) {
                if (b == 1 && (j == 0 || all[j - 1] != out[i - 1])) {
                    continue;
                }
                for (l = 0; i + l < n && j + l < n_ctx + i + l && all[j + l] == out[i + l]; l++) {
                }
                if (l > best[b]) best[b] = l;
            }
            i += best[b] + 1;
        }
    }
    free(all);
}

/*
 * A workload's prompts one after the other in one fresh scheduler, as one
 * worker serves different requests in a row: the suffix store proposes
 * what the earlier requests of the run wrote, never a replay of the same
 * request (off: no draft)
 */
static void
run_workload(const llm_model *m, const llm_model *draft, const llm_tokenizer *tok,
    const char *kind, size_t max_gen, int threads, llm_spec_mode mode, int fresh, total_t *t)
{
    static int32_t   seen[65536];    /* the run's prompts and outputs so far (oracle) */
    size_t           n_seen = 0;
    char            *text;
    int32_t         *ids;
    size_t           n_ids;
    int              i;
    bench_out            o;
    llm_sched       *s;
    llm_sched_stats  st;

    memset(t, 0, sizeof(*t));
    s = NULL;
    for (i = 0; (text = prompt_text(kind, i)) != NULL; i++) {
        if (s == NULL) {
            s = make_sched(m, mode == LLM_SPEC_OFF ? NULL : draft, threads);
            if (s == NULL) {
                free(text);
                return;
            }
        }
        llm_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n_ids);
        run(s, ids, n_ids, max_gen, mode, i, &o);
        if (mode == LLM_SPEC_OFF && o.n <= BENCH_OUT_MAX) {
            if (fresh) n_seen = 0;
            if (n_seen + n_ids <= sizeof(seen) / sizeof(seen[0])) {
                memcpy(seen + n_seen, ids, sizeof(int32_t) * n_ids);
                n_seen += n_ids;
            }
            oracle(seen, n_seen, o.toks, (size_t) o.n, t->oracle_steps);
            t->oracle_tokens += o.n > 0 ? o.n - 1 : 0;
            if (n_seen + o.n <= sizeof(seen) / sizeof(seen[0])) {
                memcpy(seen + n_seen, o.toks, sizeof(int32_t) * o.n);
                n_seen += o.n;
            }
        }
        t->prompt += n_ids;
        t->tokens += o.n;
        t->ms += o.n > 1 ? o.t_last - o.t_first : 0;
        /* the first token comes with the prompt: decode speed counts the rest */
        t->tokens -= o.n > 0;
        if (o.n <= BENCH_OUT_MAX && t->n_out + o.n <= 8192) {
            memcpy(t->out + t->n_out, o.toks, sizeof(int32_t) * o.n);
            t->n_out += o.n;
        }
        if (getenv("BENCH_SPEC_SHOW") && mode == LLM_SPEC_OFF) {
            char   *d;
            size_t  dl;
            llm_tokenizer_decode(tok, o.toks, (size_t) o.n, 0, &d, &dl);
            printf("--- %s %d output:\n%s\n---\n", kind, i, d);
            free(d);
        }
        free(ids);
        free(text);
        if (fresh || prompt_text_last(kind, i)) {
            llm_sched_get_stats(s, &st);
            t->seq_steps += st.seq_steps;
            t->proposed += st.spec_proposed;
            t->accepted += st.spec_accepted;
            t->draft_proposed += st.draft_proposed;
            t->draft_accepted += st.draft_accepted;
            if (st.draft_pass_ms > 0) {
                t->draft_ms = st.draft_pass_ms;
            }
            if (st.decode_step_ms > 0) {
                t->step_ms = st.decode_step_ms;
                t->vcost = st.prefill_token_ms / st.decode_step_ms;
                t->dcost = st.draft_pass_ms / st.decode_step_ms;
            }
            llm_sched_free(s);
            s = NULL;
        }
    }
}

int
main(int argc, char **argv)
{
    /*
     * the workloads; the last two are free chat with a draft model: the
     * default model itself quantized on load (the only draft of its
     * vocabulary there is), proposing where lookup and suffix store have
     * nothing
     */
    static const struct {
        const char *kind, *variant;  /* variant: "fresh", or the draft */
        size_t      max_gen;
        int         runs;            /* times the repeats */
        int         fresh;           /* each request in a scheduler of its own */
    } work[] = {
        { "edit", NULL, 700, 1, 0 }, { "tool", NULL, 300, 1, 0 }, { "quote", NULL, 300, 1, 0 },
        { "chat", NULL, 200, 4, 0 }, { "chat", "fresh", 200, 4, 1 },
        { "chat", "q8_0", 200, 4, 1 }, { "chat", "q4_0", 200, 4, 1 },
        { "chat", "draft", 200, 4, 1 },    /* the folder BENCH_SPEC_DRAFT names, if set */
    };
    const char      *mode_name[] = { "off", "auto", "on" };
    const char      *only = getenv("BENCH_SPEC_ONLY");
    char             err[256], label[32];
    llm_model       *m, *draft;
    llm_model_opts   mo;
    llm_tokenizer   *tok;
    int              threads = argc > 2 ? atoi(argv[2]) : 1, reps = argc > 3 ? atoi(argv[3]) : 3;
    int              k, mode, r, j;
    static total_t   t[3];

    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [threads] [repeats]\n", argv[0]);
        return 2;
    }
    m = llm_model_load(argv[1], err, sizeof(err));
    tok = m ? llm_tokenizer_load(argv[1], err, sizeof(err)) : NULL;
    if (tok == NULL) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }

    printf("decode speed: best of %d runs (chat: %d); speedup: best against best; median: the"
           " median of each run's ratio to the off run beside it; tokens per step: generated /"
           " sequence steps; draft: proposed by the draft model, dkeep: of those kept;"
           " temperature %s\n",
           reps, 4 * reps, getenv("BENCH_SPEC_TEMP") ? getenv("BENCH_SPEC_TEMP") : "0");
    printf("%-9s %-4s %7s %7s %9s %8s %8s %9s %6s %7s %6s %6s %s\n", "work", "mode", "prompt",
           "tokens", "decode/s", "speedup", "median", "tok/step", "prop", "accept", "draft", "dkeep",
           "same");
    for (k = 0; k < (int) (sizeof(work) / sizeof(work[0])); k++) {
        double  best[3] = { 0, 0, 0 }, rate[3], *ratio, med[3] = { 0, 0, 0 };
        int     rounds = work[k].runs * reps;

        snprintf(label, sizeof(label), "%s%s%s", work[k].kind, work[k].variant ? "/" : "",
                 work[k].variant ? work[k].variant : "");
        if (getenv("BENCH_SPEC_ONLY_COST") || (only && strcmp(only, label) != 0)) {
            continue;
        }
        draft = NULL;
        if (work[k].variant && strcmp(work[k].variant, "fresh") == 0) {
            /* no draft */
        } else if (work[k].variant && strcmp(work[k].variant, "draft") == 0) {
            if (getenv("BENCH_SPEC_DRAFT") == NULL) {
                continue;
            }
            /* BENCH_SPEC_DRAFT_QUANT=q8_0: the draft quantized on load, as draft_quant= would */
            memset(&mo, 0, sizeof(mo));
            mo.quant = getenv("BENCH_SPEC_DRAFT_QUANT");
            draft = llm_model_load_opts(getenv("BENCH_SPEC_DRAFT"), &mo, err, sizeof(err));
            if (draft == NULL) {
                fprintf(stderr, "draft %s: %s\n", getenv("BENCH_SPEC_DRAFT"), err);
                continue;
            }
        } else if (work[k].variant) {
            memset(&mo, 0, sizeof(mo));
            mo.quant = work[k].variant;
            draft = llm_model_load_opts(argv[1], &mo, err, sizeof(err));
            if (draft == NULL) {
                fprintf(stderr, "draft %s: %s\n", label, err);
                continue;
            }
        }
        ratio = calloc((size_t) rounds * 3, sizeof(double));
        if (ratio == NULL) {
            return 1;
        }
        /* chat is short (about 20 tokens an answer): more runs for the same certainty */
        for (r = 0; r < rounds; r++) {
            /*
             * modes interleaved so that load drifts into all three alike,
             * and the one that goes first turns with each round, so that
             * whatever the position in a round does falls on each alike
             */
            for (j = 0; j < 3; j++) {
                mode = (r + j) % 3;
                run_workload(m, draft, tok, work[k].kind, work[k].max_gen, threads,
                             (llm_spec_mode) mode, work[k].fresh, &t[mode]);
                rate[mode] = t[mode].ms > 0 ? t[mode].tokens / (t[mode].ms / 1e3) : 0;
                if (rate[mode] > best[mode]) best[mode] = rate[mode];
            }
            for (mode = 0; mode < 3; mode++) {
                ratio[mode * rounds + r] = rate[0] > 0 ? rate[mode] / rate[0] : 0;
            }
        }
        for (mode = 0; mode < 3; mode++) {
            qsort(ratio + mode * rounds, (size_t) rounds, sizeof(double), cmp_double);
            med[mode] = rounds % 2 ? ratio[mode * rounds + rounds / 2]
                        : (ratio[mode * rounds + rounds / 2 - 1] + ratio[mode * rounds + rounds / 2]) / 2;
        }
        free(ratio);
        for (mode = 0; mode < 3; mode++) {
            int same = t[mode].n_out == t[0].n_out
                       && memcmp(t[mode].out, t[0].out, sizeof(int32_t) * t[0].n_out) == 0;
            printf("%-9s %-4s %7zu %7d %9.1f %7.3fx %7.3fx %9.2f %6llu %6.1f%% %6llu %5.1f%% %s\n",
                   label, mode_name[mode], t[mode].prompt, t[mode].n_out, best[mode],
                   best[0] > 0 ? best[mode] / best[0] : 0, med[mode],
                   t[mode].seq_steps ? (double) t[mode].n_out / t[mode].seq_steps : 0,
                   (unsigned long long) t[mode].proposed,
                   t[mode].proposed ? 100.0 * t[mode].accepted / t[mode].proposed : 0,
                   (unsigned long long) t[mode].draft_proposed,
                   t[mode].draft_proposed
                   ? 100.0 * t[mode].draft_accepted / t[mode].draft_proposed : 0,
                   same ? "yes" : "NO");
        }
        printf("%-9s measured (on, last scheduler): decode step %.3f ms, a verified token %.2f "
               "of a step, a draft pass %.2f\n", label, t[2].step_ms, t[2].vcost, t[2].dcost);
        /*
         * the same from the runs themselves (a scheduler that speculates
         * every step never times a plain decode step): the mean time of a
         * sequence step per mode, the off one being a plain decode step
         */
        printf("%-9s per step (last round): off %.3f ms, auto %.3f ms, on %.3f ms; a draft pass "
               "%.3f ms (auto) %.3f ms (on)\n", label, step_ms(&t[0]), step_ms(&t[1]),
               step_ms(&t[2]), t[1].draft_ms, t[2].draft_ms);
        if (t[0].oracle_tokens > 0) {
            /*
             * tokens per step, and the speed-up if each step proposed just
             * the tokens it keeps, each costing vcost of a step to verify
             */
            const char *vc = getenv("BENCH_SPEC_VCOST");
            double      c = vc ? atof(vc) : 0.17, tk = t[0].oracle_tokens;
            int         o;

            printf("%-9s oracle (tok/step, speed-up at %.2f a verified token):", label, c);
            for (o = 0; o < 4; o++) {
                double  st = t[0].oracle_steps[o];
                printf(" %s %.2f %.2fx", oracle_name[o], tk / st, tk / (st + c * (tk - st)));
            }
            printf("\n");
        }
        fflush(stdout);
        llm_model_free(draft);
    }
    /* what auto costs a step that finds nothing to propose: lookup over the context, suffix query */
    {
        static int32_t  ctx[4096], out[LLM_SPEC_K_MAX];
        llm_suffix     *sx = llm_suffix_create(32768);
        llm_spec_state  st;
        llm_tokens2     tt = { ctx, 4095, ctx + 4095, 1 };
        uint64_t        x = 88172645463325252ull;
        double          t0, t1;
        int             i, n = 0, dk;

        for (i = 0; i < 4096; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            ctx[i] = (int32_t) (x % 150000);     /* a large vocabulary: no repeats */
        }
        llm_suffix_add(sx, ctx, 4096);
        ctx[4095] = 150001;                      /* the context's end occurs nowhere */
        llm_spec_init(&st, LLM_SPEC_AUTO);
        t0 = bench_now_ms();
        for (i = 0; i < 2000; i++) {
            n += llm_spec_propose(&st, &tt, sx, 0.1, -1, LLM_SPEC_K_MAX, out, &dk);
        }
        t1 = bench_now_ms();
        printf("proposal search with nothing to find (4096-token context, suffix store of 4096): "
               "%.1f us per step (%d proposed)\n", (t1 - t0) * 1e3 / 2000, n);
        llm_suffix_free(sx);
    }
    llm_tokenizer_free(tok);
    llm_model_free(m);
    return 0;
}
