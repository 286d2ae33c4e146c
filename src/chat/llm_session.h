/*
 * The request side of a session, below the glue: what one request needs
 * before it can run, from the things its model resolved once at load.
 *
 *   chat, messages, count_tokens   messages + tools -> (named tool only) ->
 *                                  template -> token ids, and whether the
 *                                  prompt leaves the model inside reasoning
 *   completions                    the prompt's ids, or its text tokenized,
 *                                  and the echo text
 *
 * Once the prompt is known (on the event loop): how many tokens it may
 * generate (llm_session_max_new_tokens) and each choice's sampler
 * parameters (llm_session_sampler_params).
 *
 * count_tokens counts exactly the prompt a message request would run.
 * Errors come back as llm_api_error: 4xx when the request is at fault, 500
 * otherwise.  No nginx; any thread (the model-scoped inputs are read-only).
 */
#ifndef LLM_SESSION_H
#define LLM_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "api/llm_api.h"
#include "api/llm_api_tokenize.h"
#include "chat/llm_chat.h"
#include "engine/llm_engine.h"
#include "engine/llm_reasoning_budget.h"
#include "engine/llm_tokenizer.h"

/* What a prompt is built from: the model's, resolved once at load. */
typedef struct {
    const char          *alias;
    const llm_chat      *chat;               /* NULL: no chat template */
    const llm_tokenizer *tok;
    const char          *reasoning_parser;   /* NULL: none */
    int                  split_special_tokens; /* request text is never control tokens */
    int                  snapshot_system;      /* find system_upto (models with recurrent
                                                  state: llm_model_has_state) */
} llm_session_model;

/* A request's prompt as token ids. */
typedef struct {
    int32_t  *ids;
    size_t    n_ids;
    int       starts_in_reasoning;   /* the template opened a reasoning block */
    char     *echo;                  /* completions: the prompt text to echo */
    size_t    echo_len;
    char      template_error[512];   /* a template failure, for the server log */
    size_t    cache_upto;            /* tokens up to the last cache_control
                                        breakpoint (req->cache_messages); 0: none */
    size_t    system_upto;           /* tokens of the leading system messages
                                        (sm->snapshot_system); 0: none */
} llm_session_prompt;

/*
 * Builds req's prompt (req->api: CHAT, MESSAGES, COUNT_TOKENS or
 * COMPLETIONS).  A tool_choice naming one tool leaves only that tool in
 * req->tools (it is offered alone and accepted alone).  0, or -1 with err set.
 * Free *out with llm_session_prompt_free either way.
 */
int llm_session_build_prompt(const llm_session_model *sm, llm_request *req,
    llm_session_prompt *out, llm_api_error *err);
void llm_session_prompt_free(llm_session_prompt *p);

/*
 * /tokenize: req from llm_api_parse_tokenize (api CHAT: the prompt chat
 * would run, plus BOS/EOS when opts->add_special; else req->prompt as opts
 * say).  0, or -1 with err set; free *out with llm_session_prompt_free.
 */
int llm_session_tokenize(const llm_session_model *sm, llm_request *req,
    const llm_tokenize_opts *opts, llm_session_prompt *out,
    llm_api_error *err);

/*
 * /detokenize: req->prompt_ids as text, special tokens included.  A 400
 * naming `tokens` for an id the tokenizer does not know.  *text is
 * malloc'd (NULL on error).
 */
int llm_session_detokenize(const llm_session_model *sm,
    const llm_request *req, char **text, size_t *len, llm_api_error *err);

/* The server's limits on one generation. */
typedef struct {
    size_t  n_ctx;               /* the model's context per sequence */
    size_t  max_tokens;          /* llm_max_tokens: the cap of max_tokens;
                                    0: none (up to the room in the context) */
    size_t  max_response_size;   /* llm_max_response_size, bytes */
    const char *model;           /* the model's name, for the cap's error */
} llm_session_limits;

/*
 * How many tokens each choice of req may generate after a prompt of
 * n_prompt tokens: the request's max_tokens (else the server's cap, else the
 * protocol's default lowered to that cap, else all the room) within the
 * room the context leaves and what llm_max_response_size can hold for n
 * choices.  0, or -1 with a 400: an empty prompt, a prompt that fills the
 * context (context_length_exceeded), a max_tokens above the server's cap
 * (named in the message: a silent clamp reported as an ordinary length stop
 * misleads agents), or a max_tokens the client asked for that the response
 * size limit cannot hold (a server default is lowered).
 */
int llm_session_max_new_tokens(const llm_request *req, size_t n_prompt,
    const llm_session_limits *lim, size_t *max_new, llm_api_error *err);

/*
 * The thinking budget of a choice that may generate max_new tokens, for
 * its sequence (llm_seq_set_reasoning_budget), in the markers of the
 * reasoning format reasoning_id (parsers/llm_parser.h); docs/api.md
 * "Thinking budgets":
 *   - an explicit budget (Anthropic thinking.budget_tokens) less the
 *     reasoning the turn already holds: the assistant messages after the
 *     last user message sent their thinking back (tool loops), and one
 *     budget spans every thinking block of a turn;
 *   - else the reasoning effort's share of max_new: low a quarter (at most
 *     LLM_EFFORT_LOW_MAX), medium a half (at most LLM_EFFORT_MEDIUM_MAX),
 *     high three quarters; max (Anthropic) none;
 *   - none when reasoning is off or the format has no markers.
 * A budget is at least 1 token.  0 with *out (NULL: no budget), or -1 when
 * out of memory.
 */
#define LLM_EFFORT_LOW_MAX     1024
#define LLM_EFFORT_MEDIUM_MAX  8192

int llm_session_reasoning_budget(const llm_request *req,
    const llm_tokenizer *tok, const char *reasoning_id,
    int starts_in_reasoning, size_t max_new, llm_reasoning_budget **out);

/* The budget's size alone (no markers needed): -1 for none, or -1 with
 * *oom set when counting the turn's reasoning ran out of memory. */
long llm_session_thinking_tokens(const llm_request *req,
    const llm_tokenizer *tok, size_t max_new, int *oom);

/*
 * Choice `index`'s sampler parameters: what the request set, else the
 * model's generation_config.json defaults (info; NULL: none), else the
 * protocol's (llm_request_init).  logit_bias points into req.  Choices of one
 * request get distinct seeds (seed + index) so n > 1 gives n samples.
 */
void llm_session_sampler_params(const llm_request *req,
    const llm_model_info *info, size_t index, llm_sampler_params *sp);

#endif
