/* Engine subcommands: logits, generate, bench, synth. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm_cli.h"
#include "engine/llm_engine.h"
#include "engine/llm_tokenizer.h"

typedef struct {
    const char *model, *ids, *text, *config, *out, *dtype, *kv, *quant;
    int threads, ctx, max_tokens, prompt_len, gen, batch, ignore_eos, logprobs, seed_set;
    long long seed;
    llm_sampler_params sp;
} opts_t;

static int
usage(const char *cmd, const char *msg)
{
    if (msg) fprintf(stderr, "llm %s: %s\n", cmd, msg);
    fprintf(stderr,
        "usage:\n"
        "  llm logits   --model DIR (--ids 1,2,3 | --text T) [--threads N] [--kv f32|f16|q8_0]\n"
        "               [--quant q8_0|q4_0|q4_k|q6_k]  (logits, generate, bench: on-load quantization)\n"
        "  llm generate --model DIR (--ids ... | --text T) --max-tokens N [--temperature T] [--top-k K]\n"
        "               [--top-p P] [--min-p P] [--repetition-penalty R] [--presence-penalty P]\n"
        "               [--frequency-penalty F] [--seed S] [--logprobs N] [--ignore-eos] [--threads N]\n"
        "  llm bench    --model DIR --prompt-len P --gen N --batch B [--threads N] [--kv f32|f16|q8_0]\n"
        "  llm synth    --config config.json --out DIR [--dtype bf16|f16|f32] [--seed S]\n");
    return 2;
}

static int
parse_opts(const char *cmd, int argc, char **argv, opts_t *o)
{
    int i;

    memset(o, 0, sizeof(*o));
    llm_sampler_params_default(&o->sp);
    o->sp.temperature = 0;     /* greedy unless asked */
    o->threads = 0;
    o->max_tokens = 16;
    o->prompt_len = 256;
    o->gen = 32;
    o->batch = 1;
    o->dtype = "bf16";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define STR(name, field) if (strcmp(a, name) == 0) { if (!v) return usage(cmd, "missing value"); o->field = v; i++; continue; }
#define INT(name, field) if (strcmp(a, name) == 0) { if (!v) return usage(cmd, "missing value"); o->field = atoi(v); i++; continue; }
#define FLT(name, field) if (strcmp(a, name) == 0) { if (!v) return usage(cmd, "missing value"); o->field = (float) atof(v); i++; continue; }
        STR("--model", model) STR("--ids", ids) STR("--text", text) STR("--config", config)
        STR("--out", out) STR("--dtype", dtype) STR("--kv", kv) STR("--quant", quant)
        INT("--threads", threads) INT("--ctx", ctx) INT("--max-tokens", max_tokens)
        INT("--prompt-len", prompt_len) INT("--gen", gen) INT("--batch", batch) INT("--logprobs", logprobs)
        FLT("--temperature", sp.temperature) INT("--top-k", sp.top_k) FLT("--top-p", sp.top_p)
        FLT("--min-p", sp.min_p) FLT("--repetition-penalty", sp.repetition_penalty)
        FLT("--presence-penalty", sp.presence_penalty) FLT("--frequency-penalty", sp.frequency_penalty)
#undef STR
#undef INT
#undef FLT
        if (strcmp(a, "--seed") == 0 && v) {
            o->seed = atoll(v);
            o->seed_set = 1;
            i++;
            continue;
        }
        if (strcmp(a, "--ignore-eos") == 0) {
            o->ignore_eos = 1;
            continue;
        }
        fprintf(stderr, "llm %s: unknown option %s\n", cmd, a);
        return usage(cmd, NULL);
    }
    return 0;
}

/* --ids "1,2,3" or --text through the model's tokenizer */
static int
prompt_ids(const char *cmd, const opts_t *o, int32_t **ids, int *n, llm_tokenizer **tok_out)
{
    char err[512];

    *tok_out = NULL;
    if (o->ids) {
        const char *p = o->ids;
        int cap = 16;
        *n = 0;
        *ids = malloc((size_t) cap * sizeof(int32_t));
        while (*ids && *p) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) {
                fprintf(stderr, "llm %s: bad --ids near \"%s\"\n", cmd, p);
                return -1;
            }
            if (*n == cap) {
                int32_t *g = realloc(*ids, (size_t) (cap *= 2) * sizeof(int32_t));
                if (g == NULL) return -1;
                *ids = g;
            }
            (*ids)[(*n)++] = (int32_t) v;
            p = end;
            while (*p == ',' || *p == ' ') p++;
        }
        return *ids ? 0 : -1;
    }
    if (o->text) {
        size_t nn;
        llm_tokenizer *tok = llm_tokenizer_load(o->model, err, sizeof(err));
        if (tok == NULL) {
            fprintf(stderr, "llm %s: %s\n", cmd, err);
            return -1;
        }
        if (llm_tokenizer_encode(tok, o->text, strlen(o->text), 1, ids, &nn) != 0) {
            llm_tokenizer_free(tok);
            return -1;
        }
        *n = (int) nn;
        *tok_out = tok;
        return 0;
    }
    fprintf(stderr, "llm %s: --ids or --text is required\n", cmd);
    return -1;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static llm_runtime *
open_runtime(const char *cmd, const opts_t *o, int ctx, int n_seq, llm_model **m)
{
    char err[512];
    llm_runtime *rt;

    if (o->model == NULL) {
        usage(cmd, "--model is required");
        return NULL;
    }
    {
        llm_model_opts mo = { o->quant };
        *m = llm_model_load_opts(o->model, &mo, err, sizeof(err));
    }
    if (*m == NULL) {
        fprintf(stderr, "llm %s: %s\n", cmd, err);
        return NULL;
    }
    if (o->kv && strcmp(o->kv, "f16") != 0 && strcmp(o->kv, "f32") != 0 && strcmp(o->kv, "q8_0") != 0) {
        fprintf(stderr, "llm %s: --kv must be f32, f16 or q8_0\n", cmd);
        llm_model_free(*m);
        return NULL;
    }
    rt = llm_runtime_create_kv(*m, o->threads, ctx, n_seq,
                               !o->kv || strcmp(o->kv, "f32") == 0 ? LLM_KV_F32
                               : strcmp(o->kv, "f16") == 0 ? LLM_KV_F16 : LLM_KV_Q8_0, err, sizeof(err));
    if (rt == NULL) {
        fprintf(stderr, "llm %s: %s\n", cmd, err);
        llm_model_free(*m);
    }
    return rt;
}

int
llm_cmd_logits(int argc, char **argv)
{
    opts_t o;
    llm_model *m;
    llm_runtime *rt;
    llm_tokenizer *tok;
    int32_t *ids = NULL;
    int n = 0, i, V;
    char err[512];
    const float *lg;

    if (parse_opts("logits", argc, argv, &o) != 0) return 2;
    if (o.model == NULL) return usage("logits", "--model is required");
    if (prompt_ids("logits", &o, &ids, &n, &tok) != 0 || n == 0) {
        free(ids);
        return 1;
    }
    rt = open_runtime("logits", &o, o.ctx > 0 ? o.ctx : n, 1, &m);
    if (rt == NULL) {
        free(ids);
        llm_tokenizer_free(tok);
        return 1;
    }
    {
        llm_batch_item it = { llm_seq_open(rt), ids, n, 1, 0 };
        if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
            fprintf(stderr, "llm logits: %s\n", err);
            return 1;
        }
    }
    lg = llm_forward_logits(rt, 0);
    V = llm_model_get_info(m)->n_vocab;
    printf("{\"ids\":[");
    for (i = 0; i < n; i++) printf("%s%d", i ? "," : "", (int) ids[i]);
    printf("],\"n_vocab\":%d,\"logits\":[", V);
    for (i = 0; i < V; i++) printf("%s%.9g", i ? "," : "", lg[i]);
    printf("]}\n");
    llm_runtime_free(rt);
    llm_model_free(m);
    llm_tokenizer_free(tok);
    free(ids);
    return 0;
}

int
llm_cmd_generate(int argc, char **argv)
{
    opts_t o;
    llm_model *m;
    llm_runtime *rt;
    llm_tokenizer *tok;
    llm_sampler *s;
    llm_token_logprobs lp;
    int32_t *ids = NULL, cur, *out;
    int n = 0, i, n_out = 0, slot, ctx;
    const char *finish = "length";
    char err[512];

    if (parse_opts("generate", argc, argv, &o) != 0) return 2;
    if (o.model == NULL) return usage("generate", "--model is required");
    if (prompt_ids("generate", &o, &ids, &n, &tok) != 0 || n == 0) {
        free(ids);
        return 1;
    }
    ctx = o.ctx > 0 ? o.ctx : n + o.max_tokens;
    rt = open_runtime("generate", &o, ctx, 1, &m);
    if (rt == NULL) return 1;
    o.sp.has_seed = o.seed_set;
    o.sp.seed = (uint64_t) o.seed;
    s = llm_sampler_create(&o.sp, llm_model_get_info(m)->n_vocab);
    out = malloc((size_t) (o.max_tokens > 0 ? o.max_tokens : 1) * sizeof(int32_t));
    if (s == NULL || out == NULL) {
        fprintf(stderr, "llm generate: out of memory\n");
        return 1;
    }
    llm_sampler_accept_prompt(s, ids, n);
    slot = llm_seq_open(rt);
    {
        llm_batch_item it = { slot, ids, n, 1, 0 };
        printf("{\"ids\":[");
        for (i = 0; i < o.max_tokens; i++) {
            if (llm_forward(rt, &it, 1, err, sizeof(err)) != 0) {
                fprintf(stderr, "llm generate: %s\n", err);
                finish = "error";
                break;
            }
            cur = llm_sampler_sample(s, llm_forward_logits(rt, 0), o.logprobs ? &lp : NULL, o.logprobs);
            llm_sampler_accept(s, cur);
            out[n_out++] = cur;
            printf("%s%d", i ? "," : "", (int) cur);
            fflush(stdout);
            if (!o.ignore_eos && llm_model_is_eos(m, cur)) {
                finish = "stop";
                break;
            }
            it.tokens = &cur;
            it.n_tokens = 1;
        }
        printf("],\"finish\":\"%s\"", finish);
    }
    if (tok) {
        char *text;
        size_t len;
        if (llm_tokenizer_decode(tok, out, (size_t) n_out, 1, &text, &len) == 0) {
            printf(",\"text\":\"");
            for (i = 0; i < (int) len; i++) {
                unsigned char c = (unsigned char) text[i];
                if (c == '"' || c == '\\') printf("\\%c", c);
                else if (c < 0x20) printf("\\u%04x", c);
                else putchar(c);
            }
            printf("\"");
            free(text);
        }
    }
    printf("}\n");
    llm_sampler_free(s);
    llm_runtime_free(rt);
    llm_model_free(m);
    llm_tokenizer_free(tok);
    free(ids);
    free(out);
    return strcmp(finish, "error") == 0;
}

/* "model name" of /proc/cpuinfo, for the record of a benchmark */
static const char *
cpu_name(void)
{
    static char name[128];
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");

    snprintf(name, sizeof(name), "unknown");
    while (f && fgets(line, sizeof(line), f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && c) {
            snprintf(name, sizeof(name), "%s", c + 2);
            name[strcspn(name, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
    return name;
}

/* ms per decode step of each phase, the greedy pick, and the rest (the forward's bookkeeping) */
static void
print_phases(const llm_phase_times *ph, double t_pick, double t_decode, int steps)
{
    double sum = t_pick;
    int p;

    printf("decode step phases (ms per step):");
    for (p = 0; p < LLM_PHASE_N; p++) {
        sum += ph->seconds[p];
        if (ph->seconds[p] > 0) printf(" %s %.3f", llm_phase_name((llm_phase) p), 1e3 * ph->seconds[p] / steps);
    }
    printf(" pick %.3f other %.3f; total %.3f\n", 1e3 * t_pick / steps, 1e3 * (t_decode - sum) / steps,
           1e3 * t_decode / steps);
    printf("decode pool: %.1f parallel steps per decode step, %.3f ms per step waiting for threads, "
           "%ld steps woke a sleeping thread\n", (double) ph->pool_steps / steps, 1e3 * ph->pool_wait / steps,
           ph->pool_wakes);
}

int
llm_cmd_bench(int argc, char **argv)
{
    opts_t o;
    llm_model *m;
    llm_runtime *rt;
    const llm_model_info *in;
    llm_batch_item *items;
    int32_t *prompt, *next;
    int *slots, b, i, B, P, G;
    uint64_t rng = 12345;
    double t0, t_prefill, t_decode, t_fastest = 0, bw, bound, t_pick, tp, per_token;
    llm_phase_times ph;
    llm_sampler_params greedy;
    llm_sampler **pick;
    char err[512];

    if (parse_opts("bench", argc, argv, &o) != 0) return 2;
    B = o.batch > 0 ? o.batch : 1;
    P = o.prompt_len > 0 ? o.prompt_len : 1;
    G = o.gen > 0 ? o.gen : 1;
    rt = open_runtime("bench", &o, P + G + 1, B, &m);
    if (rt == NULL) return 1;
    in = llm_model_get_info(m);
    prompt = malloc((size_t) B * P * sizeof(int32_t));
    next = malloc((size_t) B * sizeof(int32_t));
    items = calloc((size_t) B, sizeof(*items));
    slots = calloc((size_t) B, sizeof(int));
    pick = calloc((size_t) B, sizeof(*pick));
    if (!prompt || !next || !items || !slots || !pick) return 1;
    /* each stream picks its next token as a server's greedy request does */
    llm_sampler_params_default(&greedy);
    greedy.temperature = 0;
    for (b = 0; b < B; b++) {
        if ((pick[b] = llm_sampler_create(&greedy, in->n_vocab)) == NULL) return 1;
    }
    for (i = 0; i < B * P; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        prompt[i] = (int32_t) ((rng >> 33) % (uint64_t) in->n_vocab);
    }
    printf("cpu: %s\n", cpu_name());
    printf("model: %s %s, %.1f M params, %.1f MB of weights, kernels %s, threads %d, KV %s, %.0f MiB\n",
           in->architecture, in->dtype, in->n_params / 1e6, in->weight_bytes / 1e6,
           llm_runtime_kernels(rt), o.threads, o.kv ? o.kv : "f32",
           llm_runtime_kv_bytes(rt) / 1048576.0);
    bw = llm_runtime_read_bandwidth(rt, (size_t) 1 << 30);
    /* bytes one token moves: every weight but the unchosen experts and an untied embedding
     * table, and a recurrent model's state, read and written back */
    per_token = (double) in->active_bytes + 2.0 * (double) in->state_bytes;
    bound = bw / per_token;
    printf("read bandwidth: %.1f GB/s (1 GiB streaming read)\n", bw / 1e9);
    printf("bandwidth bound, 1 stream: %.1f tok/s (%.1f MB per token: %.1f MB of weights, recurrent state "
           "%.1f MB read and written)\n", bound, per_token / 1e6, in->active_bytes / 1e6, in->state_bytes / 1e6);
    {
        double wbw = llm_runtime_weight_read_bandwidth(rt);
        printf("read bandwidth over the mapped weights: %.1f GB/s (bound %.1f tok/s)\n",
               wbw / 1e9, wbw / per_token);
    }

    /* prefill: each prompt in its own call, timed */
    t_prefill = 0;
    for (b = 0; b < B; b++) {
        slots[b] = llm_seq_open(rt);
        items[b] = (llm_batch_item) { slots[b], prompt + (size_t) b * P, P, 1, 0 };
        t0 = now_s();
        if (llm_forward(rt, &items[b], 1, err, sizeof(err)) != 0) {
            fprintf(stderr, "llm bench: %s\n", err);
            return 1;
        }
        t_prefill += now_s() - t0;
        next[b] = (int32_t) (b % in->n_vocab);
    }
    printf("prefill: %d x %d tokens, %.2f s, %.1f tok/s\n", B, P, t_prefill, (double) B * P / t_prefill);

    /* decode: B streams, one token each per step, all in one forward call; phases timed */
    memset(&ph, 0, sizeof(ph));
    t_pick = 0;
    llm_runtime_time_phases(rt, &ph);
    t0 = now_s();
    for (i = 0; i < G; i++) {
        double ts = now_s();
        for (b = 0; b < B; b++) items[b] = (llm_batch_item) { slots[b], &next[b], 1, 1, 0 };
        if (llm_forward(rt, items, B, err, sizeof(err)) != 0) {
            fprintf(stderr, "llm bench: %s\n", err);
            return 1;
        }
        tp = now_s();
        for (b = 0; b < B; b++) next[b] = llm_sampler_sample(pick[b], llm_forward_logits(rt, b), NULL, 0);
        t_pick += now_s() - tp;
        ts = now_s() - ts;
        if (i == 0 || ts < t_fastest) t_fastest = ts;
    }
    t_decode = now_s() - t0;
    llm_runtime_time_phases(rt, NULL);
    print_phases(&ph, t_pick, t_decode, G);
    printf("decode: batch %d, %d steps, %.2f s, %.2f tok/s per stream, %.1f tok/s aggregate\n",
           B, G, t_decode, G / t_decode, (double) B * G / t_decode);
    /* the fastest step is the one least disturbed by other load on a shared machine */
    printf("decode fastest step: %.2f ms, %.2f tok/s per stream\n", t_fastest * 1e3, 1.0 / t_fastest);
    {
        /* bandwidth on a shared machine drifts: probe again and compare with the best */
        double bw2 = llm_runtime_read_bandwidth(rt, (size_t) 1 << 30);
        if (bw2 > bw) bw = bw2;
        bound = bw / per_token;
        printf("read bandwidth after decode: %.1f GB/s; best %.1f GB/s, bound %.1f tok/s\n",
               bw2 / 1e9, bw / 1e9, bound);
    }
    if (B == 1) printf("decode / bandwidth bound: %.0f%%\n", 100.0 * (G / t_decode) / bound);
    for (b = 0; b < B; b++) llm_sampler_free(pick[b]);
    free(prompt); free(next); free(items); free(slots); free(pick);
    llm_runtime_free(rt);
    llm_model_free(m);
    return 0;
}

int
llm_cmd_synth(int argc, char **argv)
{
    opts_t o;
    char err[512];

    if (parse_opts("synth", argc, argv, &o) != 0) return 2;
    if (o.config == NULL || o.out == NULL) return usage("synth", "--config and --out are required");
    if (llm_model_synth(o.config, o.out, o.dtype, (uint64_t) (o.seed_set ? o.seed : 1), err, sizeof(err)) != 0) {
        fprintf(stderr, "llm synth: %s\n", err);
        return 1;
    }
    printf("wrote %s\n", o.out);
    return 0;
}
