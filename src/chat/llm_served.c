/*
 * Loading a model as the server serves it (see the header).  The order is
 * the one whose failures are cheapest first and whose messages name the
 * file at fault: weights, the runtime they need, the tokenizer against the
 * weights' vocabulary, a draft against both, the template, the parsers.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "chat/llm_served.h"
#include "engine/llm_memory.h"
#include "engine/llm_spec.h"

static int
llm_served_has_token(void *tok, const char *text)
{
    return tok && llm_tokenizer_token_id(tok, text) >= 0;
}

/* Draft models propose tokens by id: the vocabulary must be the same. */
static int
llm_served_load_draft(const llm_served_opts *o, llm_served *s, char *err,
    size_t errlen)
{
    char            why[512];
    llm_tokenizer  *dt;
    llm_model_opts  mo;

    /*
     * a draft pass is mostly its weights and its lm head: quantized, it
     * costs less of a step (draft_quant=, the engine's on-load schemes)
     */
    memset(&mo, 0, sizeof(mo));
    mo.quant = o->draft_quant;
    s->draft = llm_model_load_opts(o->draft_path, &mo, why, sizeof(why));
    dt = s->draft ? llm_tokenizer_load(o->draft_path, why, sizeof(why))
                  : NULL;

    if (dt == NULL
        || llm_spec_draft_check(s->model, s->tok, s->draft, dt, why,
                                sizeof(why)) != 0)
    {
        llm_tokenizer_free(dt);
        snprintf(err, errlen, "draft \"%s\": %s", o->draft_path, why);
        return -1;
    }

    llm_tokenizer_free(dt);
    return 0;
}

int
llm_served_load(const llm_served_opts *o, llm_served *s, char *err,
    size_t errlen)
{
    int                    absent;
    char                   why[512];
    size_t                 n;
    struct stat            st;
    int32_t                top;
    const char            *piece;
    llm_model_opts         mo;
    llm_runtime_opts       ro;
    const llm_model_info  *info;

    memset(s, 0, sizeof(*s));
    memset(&mo, 0, sizeof(mo));
    mo.quant = o->quant;

    if (stat(o->path, &st) != 0) {
        snprintf(err, errlen, "cannot access \"%s\" (%d: %s)", o->path, errno, strerror(errno));
        return -1;
    }
    /* a Hugging Face / MLX folder, or a GGUF file (the first of its splits) */
    n = strlen(o->path);
    if (!S_ISDIR(st.st_mode) && !(S_ISREG(st.st_mode) && n > 5 && strcmp(o->path + n - 5, ".gguf") == 0)) {
        snprintf(err, errlen, "\"%s\" is neither a model folder nor a .gguf file", o->path);
        return -1;
    }

    s->model = llm_model_load_opts(o->path, &mo, err, errlen);
    if (s->model == NULL) {
        return -1;
    }

    info = llm_model_get_info(s->model);

    /*
     * KV memory is a budget of blocks the sequences share, not parallel x
     * ctx: the default budget has room for parallel sequences of ctx (the
     * model's whole context when ctx is not given), capped at an eighth of
     * the machine's memory, and the context defaults to the model's, capped
     * by the budget.
     */
    s->kv_memory = o->kv_memory;
    if (s->kv_memory == 0) {
        s->kv_memory = llm_runtime_kv_default(s->model,
                                              o->kv, o->parallel, o->ctx,
                                              llm_memory_available());
    }

    memset(&ro, 0, sizeof(ro));
    ro.n_threads = o->threads;
    ro.n_ctx = o->ctx;
    ro.n_seq_max = o->parallel;
    ro.kv = o->kv;
    ro.kv_memory = s->kv_memory;

    if (llm_runtime_resolve(s->model, &ro, err, errlen) != 0) {
        goto failed;
    }
    s->n_ctx = ro.n_ctx;

    /* text in and out needs the tokenizer: a model folder must have one */
    s->tok = llm_tokenizer_load(o->path, why, sizeof(why));
    if (s->tok == NULL) {
        snprintf(err, errlen, "tokenizer: %s", why);
        goto failed;
    }

    /* a token the model has no embedding for would fail every batch it is in */
    top = (int32_t) llm_tokenizer_n_vocab(s->tok) - 1;
    if (top >= info->n_vocab) {
        piece = llm_tokenizer_piece(s->tok, top);
        snprintf(err, errlen, "tokenizer.json has token id %d (\"%s\") but "
                 "the model's vocabulary has %d ids (vocab_size in "
                 "config.json)", (int) top, piece ? piece : "", info->n_vocab);
        goto failed;
    }

    if (o->draft_path && llm_served_load_draft(o, s, err, errlen) != 0) {
        goto failed;
    }

    if (!o->chat_off) {
        s->chat = llm_chat_open(o->path, s->tok, &absent, why, sizeof(why));

        if (s->chat == NULL && !absent) {
            /* every chat request would fail: refuse the model */
            snprintf(err, errlen, "%s (add chat=off to serve only "
                     "completions and embeddings)", why);
            goto failed;
        }

        if (s->chat == NULL) {
            snprintf(s->chat_missing, sizeof(s->chat_missing), "%s", why);
        }
    }

    llm_parsers_auto(s->chat ? llm_chat_source(s->chat) : NULL,
                     info->model_type, llm_served_has_token, s->tok,
                     &s->tool_parser, &s->reasoning_parser, s->why,
                     sizeof(s->why));
    s->tool_def = s->tool_parser ? llm_tool_parser_find(s->tool_parser)
                                 : NULL;
    s->reasoning_def = s->reasoning_parser
                       ? llm_reasoning_parser_find(s->reasoning_parser)
                       : NULL;

    return 0;

failed:

    llm_served_free(s);
    return -1;
}

void
llm_served_summary(const llm_served_opts *o, const llm_served *s, char *out, size_t len)
{
    const llm_model_info *info = llm_model_get_info(s->model);

    snprintf(out, len, "%s %s, %llu parameters, %s, %llu MiB of weights, context %d (trained %d), "
             "parallel %d, threads %d, kv_memory %zu MiB; %s", info->architecture, o->path,
             (unsigned long long) info->n_params, info->dtype,
             (unsigned long long) (info->weight_bytes >> 20), s->n_ctx, info->max_position_embeddings,
             o->parallel, o->threads, s->kv_memory >> 20, s->why);
}

llm_structured *
llm_served_structured(const llm_served *s, char *err, size_t errlen)
{
    const llm_model_info  *info = llm_model_get_info(s->model);

    return llm_structured_create(s->tok, info->eos_ids, (size_t) info->n_eos,
                                 err, errlen);
}

void
llm_served_free(llm_served *s)
{
    llm_chat_free(s->chat);
    llm_tokenizer_free(s->tok);
    llm_model_free(s->model);
    llm_model_free(s->draft);
    memset(s, 0, sizeof(*s));
}

/* ---- an llm_model line's options ---- */

/* Digits only, as nginx's ngx_atoi: -1 when empty, not a number or too big. */
static long long
llm_served_number(const char *p, size_t len)
{
    size_t     i;
    long long  n;

    if (len == 0) {
        return -1;
    }

    n = 0;
    for (i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || n > (LLONG_MAX - (p[i] - '0')) / 10) {
            return -1;
        }
        n = n * 10 + (p[i] - '0');
    }

    return n;
}

/* A size as nginx's size directives take it: N, Nk or Nm; -1 when invalid. */
static long long
llm_served_size(const char *p, size_t len)
{
    long long  n, unit;

    unit = 1;
    if (len > 0 && (p[len - 1] == 'k' || p[len - 1] == 'K')) {
        unit = 1024;
        len--;

    } else if (len > 0 && (p[len - 1] == 'm' || p[len - 1] == 'M')) {
        unit = 1024 * 1024;
        len--;
    }

    n = llm_served_number(p, len);
    if (n < 0 || n > (long long) (SIZE_MAX / 2) / unit) {
        return -1;
    }

    return n * unit;
}

static int
llm_served_is(const char *p, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(p, word, len) == 0;
}

static int
llm_served_option(llm_served_opts *o, const char *arg, char *err,
    size_t errlen)
{
    size_t       n_name, n_val;
    long long    n;
    const char  *eq, *val;

    eq = strchr(arg, '=');
    if (eq == NULL) {
        goto invalid;
    }

    n_name = (size_t) (eq - arg);
    val = eq + 1;
    n_val = strlen(val);
    n = llm_served_number(val, n_val);

    if (llm_served_is(arg, n_name, "ctx")) {
        if (n < LLM_SERVED_MIN_CTX || n > LLM_SERVED_MAX_CTX) {
            goto invalid;
        }
        o->ctx = (int) n;

    } else if (llm_served_is(arg, n_name, "parallel")) {
        if (n < 1 || n > LLM_SERVED_MAX_PARALLEL) {
            goto invalid;
        }
        o->parallel = (int) n;

    } else if (llm_served_is(arg, n_name, "threads")) {
        if (n < 1 || n > LLM_SERVED_MAX_THREADS) {
            goto invalid;
        }
        o->threads = (int) n;

    } else if (llm_served_is(arg, n_name, "queue")) {
        if (n < 0 || n > LLM_SERVED_MAX_QUEUE) {
            goto invalid;
        }
        o->queue = (int) n;

    } else if (llm_served_is(arg, n_name, "kv")) {
        if (llm_served_is(val, n_val, "f32")) {
            o->kv = LLM_KV_F32;
        } else if (llm_served_is(val, n_val, "f16")) {
            o->kv = LLM_KV_F16;
        } else if (llm_served_is(val, n_val, "q8_0")) {
            o->kv = LLM_KV_Q8_0;
        } else {
            goto invalid;
        }

    } else if (llm_served_is(arg, n_name, "kv_memory")) {
        n = llm_served_size(val, n_val);
        if (n <= 0) {
            goto invalid;
        }
        o->kv_memory = (size_t) n;

    } else if (llm_served_is(arg, n_name, "quant")) {
        /* the engine checks the scheme and names the known ones */
        if (n_val == 0) {
            goto invalid;
        }
        o->quant = val;

    } else if (llm_served_is(arg, n_name, "draft")) {
        if (n_val == 0) {
            goto invalid;
        }
        o->draft_path = val;

    } else if (llm_served_is(arg, n_name, "draft_quant")) {
        /* the engine checks the scheme and names the known ones */
        if (n_val == 0) {
            goto invalid;
        }
        o->draft_quant = val;

    } else if (llm_served_is(arg, n_name, "chat")) {
        if (!llm_served_is(val, n_val, "on") && !llm_served_is(val, n_val, "off")) {
            goto invalid;
        }
        o->chat_off = llm_served_is(val, n_val, "off");

    } else {
        snprintf(err, errlen, "unknown llm_model option \"%s\" (known: ctx=, "
                 "parallel=, threads=, queue=, kv=, kv_memory=, quant=, "
                 "chat=, draft=, draft_quant=)", arg);
        return -1;
    }

    return 0;

invalid:

    snprintf(err, errlen, "invalid llm_model option \"%s\"", arg);
    return -1;
}

int
llm_served_options(llm_served_opts *o, char *const *args, size_t n,
    char *err, size_t errlen)
{
    size_t       i, k, n_name;
    const char  *eq;

    for (i = 0; i < n; i++) {
        eq = strchr(args[i], '=');

        /* each option once: "ctx=16 ctx=32" is a mistake, not an override */
        for (k = 0; eq && k < i; k++) {
            n_name = (size_t) (eq - args[i]);
            if (strncmp(args[k], args[i], n_name + 1) == 0) {
                snprintf(err, errlen, "duplicate llm_model option \"%s\" "
                         "(\"%s\" given before)", args[i], args[k]);
                return -1;
            }
        }

        if (llm_served_option(o, args[i], err, errlen) != 0) {
            return -1;
        }
    }

    if (o->draft_quant && o->draft_path == NULL) {
        snprintf(err, errlen, "llm_model option \"draft_quant=%s\" needs draft=",
                 o->draft_quant);
        return -1;
    }

    return 0;
}

int
llm_served_line(llm_served_opts *o, const char *path, int ncpu,
    char *const *args, size_t n, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->path = path;
    o->parallel = LLM_SERVED_PARALLEL;
    o->threads = ncpu > 0 ? ncpu : 1;
    o->queue = -1;

    if (llm_served_options(o, args, n, err, errlen) != 0) {
        return -1;
    }

    /* room for a burst of LLM_SERVED_QUEUE_PER_SLOT requests per slot */
    if (o->queue < 0) {
        o->queue = LLM_SERVED_QUEUE_PER_SLOT * o->parallel;
    }

    return 0;
}
