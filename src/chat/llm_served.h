/*
 * A model as the server serves it, loaded once: weights (quantized on load
 * when asked), the runtime's context and KV budget resolved, the tokenizer
 * checked against the model's vocabulary, a draft model checked against
 * both, the chat template, and the tool-call and reasoning parsers chosen
 * for the model.  The nginx glue (at configuration time, in the master) and
 * `llm chat` load models through this one function, so both serve the same
 * model the same way.  No nginx.
 */
#ifndef LLM_SERVED_H
#define LLM_SERVED_H

#include <stddef.h>

#include "chat/llm_chat.h"
#include "chat/llm_structured.h"
#include "engine/llm_engine.h"
#include "engine/llm_tokenizer.h"
#include "parsers/llm_parser.h"

/* An llm_model line's options (docs/directives.md). */
typedef struct {
    const char  *path;         /* model folder or .gguf file */
    const char  *quant;        /* quant=; NULL: as stored */
    const char  *draft_path;   /* draft=; NULL: none */
    const char  *draft_quant;  /* draft_quant=: the draft quantized on load; NULL: as stored */
    int          chat_off;     /* chat=off: no chat template */
    int          ctx;          /* ctx=; 0: the model's, within the budget */
    int          parallel;
    int          threads;
    int          queue;        /* queue=: waiting sequences beyond parallel;
                                  -1: not given (the server's default) */
    llm_kv_type  kv;           /* kv=f32|f16|q8_0 */
    size_t       kv_memory;    /* kv_memory=; 0: the default budget */
} llm_served_opts;

/* The bounds of llm_model's numeric options. */
#define LLM_SERVED_MIN_CTX       16
#define LLM_SERVED_MAX_CTX       1048576
#define LLM_SERVED_MAX_PARALLEL  256
#define LLM_SERVED_MAX_THREADS   256
#define LLM_SERVED_MAX_QUEUE     65536

/*
 * The options of one llm_model line after its alias and path (args[0..n),
 * each "name=value", NUL-terminated) into o, which holds the defaults.
 * Each option once.  0, or -1 with err in the words nginx logs: an
 * invalid value, a duplicate, an unknown option naming the known ones.
 * String values point into args.  kv_memory= is a size as nginx's size
 * directives take it (N, Nk, Nm).
 */
int llm_served_options(llm_served_opts *o, char *const *args, size_t n,
    char *err, size_t errlen);

/*
 * A whole llm_model line: the server's defaults for path (parallel
 * LLM_SERVED_PARALLEL, threads ncpu, or 1 when unknown), its options
 * (llm_served_options) and then, unless queue= was given,
 * LLM_SERVED_QUEUE_PER_SLOT x parallel waiting sequences.  0, or -1 with
 * err as llm_served_options words it.
 */
#define LLM_SERVED_PARALLEL        4
#define LLM_SERVED_QUEUE_PER_SLOT  4

int llm_served_line(llm_served_opts *o, const char *path, int ncpu,
    char *const *args, size_t n, char *err, size_t errlen);

typedef struct {
    llm_model             *model;
    llm_model             *draft;          /* NULL without draft= */
    llm_tokenizer         *tok;
    llm_chat              *chat;           /* NULL: chat requests are refused */
    const char            *tool_parser;    /* the model's parser ids, or NULL */
    const char            *reasoning_parser;
    const llm_parser_def  *tool_def;
    const llm_parser_def  *reasoning_def;
    int                    n_ctx;          /* resolved */
    size_t                 kv_memory;      /* resolved */
    char                   chat_missing[512]; /* no template (chat is NULL
                                                 without chat=off): why */
    char                   why[256];       /* why these parsers */
} llm_served;

/*
 * Loads what o names into *s.  0, or -1 with err set in the words the
 * server logs after `llm_model "alias": ` (a path that is neither a model
 * folder nor a .gguf file, "tokenizer: ...", "draft \"path\": ...", a
 * template that fails suggests chat=off); *s is freed on failure.  A model folder with no chat template is not a failure:
 * s->chat is NULL and s->chat_missing says why.
 */
int llm_served_load(const llm_served_opts *o, llm_served *s, char *err,
    size_t errlen);
/* What was loaded, as the server logs it after `llm_model "alias": `:
 * architecture, path, parameters, dtype, weights, context, parallel,
 * threads, KV budget and why these parsers. */
void llm_served_summary(const llm_served_opts *o, const llm_served *s,
    char *out, size_t len);
/* The model's structured-output state (chat/llm_structured.h: its
 * vocabulary, ended by its end-of-sequence ids); NULL with err. */
llm_structured *llm_served_structured(const llm_served *s, char *err,
    size_t errlen);
void llm_served_free(llm_served *s);

#endif
