/*
 * The formatter tables (llm_formatter.h) over the protocol writers of
 * llm_openai.h, llm_anthropic.h and llm_responses.h.
 */
#include <stdlib.h>

#include "api/llm_anthropic.h"
#include "api/llm_api_json.h"
#include "api/llm_formatter.h"
#include "api/llm_openai.h"
#include "api/llm_responses.h"

struct llm_formatter {
    const llm_formatter_def       *def;
    llm_formatter_config           cfg;
    llm_openai_meta                meta;
    llm_anthropic_meta             ameta;
    llm_openai_chat_stream        *chat;        /* per choice */
    llm_openai_completion_stream  *completion;  /* per choice */
    llm_anthropic_stream           messages;    /* Anthropic: one choice */
    llm_responses_meta             rmeta;
    llm_responses_stream           responses;   /* Responses: one choice */
    json_t                        *final;       /* Responses, not streamed:
                                                   the response object */
};


/* ---- OpenAI chat ---- */

static int
chat_start(llm_formatter *f, llm_buf *b)
{
    size_t  i;

    for (i = 0; i < f->cfg.n_choices; i++) {
        if (llm_openai_chat_stream_start(&f->chat[i], b) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
chat_event(llm_formatter *f, llm_buf *b, size_t choice, const llm_event *ev,
    const llm_logprobs_list *lp)
{
    return llm_openai_chat_stream_event(&f->chat[choice], b, ev, lp);
}

static int
chat_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r)
{
    return llm_openai_chat_stream_finish(&f->chat[choice], b, r->finish);
}

/* OpenAI streams end with the usage chunk when asked for, then [DONE]. */
static int
openai_finish(llm_formatter *f, llm_buf *b, const char *object,
    const llm_usage *usage)
{
    if (f->cfg.include_usage
        && llm_openai_stream_usage(b, &f->meta, object, usage) != 0)
    {
        return -1;
    }
    return llm_openai_stream_done(b);
}

static int
chat_finish(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_usage *usage)
{
    return openai_finish(f, b, "chat.completion.chunk", usage);
}

static int
openai_error(llm_formatter *f, llm_buf *b, const llm_api_error *err)
{
    if (llm_openai_stream_error(b, err) != 0) {
        return -1;
    }
    return llm_openai_stream_done(b);
}

/* An SSE comment line: every SSE parser skips it (OpenAI's SDKs too). */
static int
openai_keepalive(llm_formatter *f, llm_buf *b)
{
    return llm_buf_append(b, ": keep-alive\n\n", 14);
}

static int
chat_response(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_logprobs_list *lps)
{
    return llm_openai_chat_response(b, &f->meta, results, f->cfg.n_choices,
                                    lps);
}


/* ---- OpenAI completions ---- */

static int
completion_start(llm_formatter *f, llm_buf *b)
{
    size_t  i;

    if (f->cfg.echo == NULL) {
        return 0;
    }

    for (i = 0; i < f->cfg.n_choices; i++) {
        if (llm_openai_completion_stream_text(&f->completion[i], b,
                                              f->cfg.echo, f->cfg.echo_len,
                                              NULL)
            != 0)
        {
            return -1;
        }
    }
    return 0;
}

static int
completion_event(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_event *ev, const llm_logprobs_list *lp)
{
    /* plain text: completions have no reasoning or tool calls */
    if (ev->type != LLM_EV_CONTENT) {
        return 0;
    }
    return llm_openai_completion_stream_text(&f->completion[choice], b,
                                             ev->text, ev->len, lp);
}

static int
completion_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r)
{
    return llm_openai_completion_stream_finish(&f->completion[choice], b,
                                               r->finish);
}

static int
completion_finish(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_usage *usage)
{
    return openai_finish(f, b, "text_completion", usage);
}

static int
completion_response(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_logprobs_list *lps)
{
    return llm_openai_completion_response(b, &f->meta, results,
                                          f->cfg.n_choices, lps, f->cfg.echo,
                                          f->cfg.echo_len);
}


/* ---- Anthropic messages (one choice) ---- */

/* message_start waits for the prompt's cache reads (prompt_read) */
static int
messages_start(llm_formatter *f, llm_buf *b)
{
    return 0;
}

static int
messages_prompt_read(llm_formatter *f, llm_buf *b, const llm_usage *usage)
{
    return llm_anthropic_stream_start(&f->messages, b, usage);
}

static int
messages_event(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_event *ev, const llm_logprobs_list *lp)
{
    return llm_anthropic_stream_event(&f->messages, b, ev);
}

static int
messages_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r)
{
    return 0;    /* message_delta carries the stop reason, with the usage */
}

static int
messages_finish(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_usage *usage)
{
    return llm_anthropic_stream_finish(&f->messages, b, results[0].finish,
                                       results[0].stop_sequence, usage);
}

static int
messages_error(llm_formatter *f, llm_buf *b, const llm_api_error *err)
{
    return llm_anthropic_stream_error(b, err);
}

static int
messages_keepalive(llm_formatter *f, llm_buf *b)
{
    return llm_anthropic_stream_ping(b);
}

static int
messages_response(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_logprobs_list *lps)
{
    return llm_anthropic_message_response(b, &f->ameta, &results[0]);
}


/* ---- OpenAI responses (one choice) ---- */

static int
responses_start(llm_formatter *f, llm_buf *b)
{
    return llm_responses_stream_start(&f->responses, b);
}

static int
responses_event(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_event *ev, const llm_logprobs_list *lp)
{
    return llm_responses_stream_event(&f->responses, b, ev);
}

static int
responses_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r)
{
    return 0;    /* response.completed carries the status, with the usage */
}

static int
responses_finish(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_usage *usage)
{
    return llm_responses_stream_finish(&f->responses, b, &results[0], usage);
}

static int
responses_error(llm_formatter *f, llm_buf *b, const llm_api_error *err)
{
    return llm_responses_stream_error(&f->responses, b, err);
}

static int
responses_response(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_logprobs_list *lps)
{
    llm_usage  usage = results[0].usage;

    json_decref(f->final);
    f->final = llm_responses_object(&f->rmeta, &results[0], &usage);
    if (f->final == NULL) {
        b->failed = 1;
        return -1;
    }
    return llm_api_dump(b, f->final);
}

/* The finished response with the items before it (llm_responses.h). */
static int
responses_record(llm_formatter *f, llm_buf *b)
{
    const json_t *response = f->cfg.stream ? f->responses.final : f->final;

    if (f->cfg.response_input == NULL || response == NULL) {
        return 0;
    }
    return llm_responses_record(b, f->cfg.response_input, response) == 0
           ? 1 : -1;
}


static const llm_formatter_def  llm_formatter_defs[] = {
    { "chat", "chatcmpl-", "server_error", chat_start, NULL, chat_event,
      chat_finish_choice, chat_finish, openai_error, openai_keepalive,
      chat_response, NULL },
    { "completions", "cmpl-", "server_error", completion_start, NULL,
      completion_event, completion_finish_choice, completion_finish,
      openai_error, openai_keepalive, completion_response, NULL },
    { "messages", "msg_", "api_error", messages_start, messages_prompt_read,
      messages_event, messages_finish_choice, messages_finish, messages_error,
      messages_keepalive, messages_response, NULL },
    { "responses", "resp_", "server_error", responses_start, NULL,
      responses_event, responses_finish_choice, responses_finish,
      responses_error, openai_keepalive, responses_response,
      responses_record },
};


const llm_formatter_def *
llm_formatter_find(llm_api_kind api)
{
    switch (api) {
    case LLM_API_CHAT:
        return &llm_formatter_defs[0];
    case LLM_API_COMPLETIONS:
        return &llm_formatter_defs[1];
    case LLM_API_MESSAGES:
        return &llm_formatter_defs[2];
    case LLM_API_RESPONSES:
        return &llm_formatter_defs[3];
    default:
        return NULL;
    }
}


llm_formatter *
llm_formatter_create(const llm_formatter_def *def,
    const llm_formatter_config *cfg)
{
    size_t          i, n;
    llm_formatter  *f;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return NULL;
    }

    f->def = def;
    f->cfg = *cfg;
    n = cfg->n_choices ? cfg->n_choices : 1;
    f->cfg.n_choices = n;

    f->meta.id = cfg->id;
    f->meta.created = cfg->created;
    f->meta.model = cfg->model;
    f->meta.fingerprint = cfg->fingerprint;
    f->meta.token_bytes = cfg->token_bytes;
    f->meta.token_ctx = cfg->token_ctx;
    f->meta.top_logprobs = cfg->top_logprobs;
    f->ameta.id = cfg->id;
    f->ameta.model = cfg->model;
    f->ameta.thinking_key = cfg->thinking_key;
    f->rmeta.id = cfg->id;
    f->rmeta.created = cfg->created;
    f->rmeta.model = cfg->model;
    f->rmeta.echo = cfg->fields;
    f->rmeta.seal_key = cfg->seal_reasoning ? cfg->thinking_key : NULL;

    f->chat = calloc(n, sizeof(*f->chat));
    f->completion = calloc(n, sizeof(*f->completion));
    if (f->chat == NULL || f->completion == NULL) {
        llm_formatter_free(f);
        return NULL;
    }

    for (i = 0; i < n; i++) {
        llm_openai_chat_stream_init(&f->chat[i], &f->meta, (int) i,
                                    cfg->include_usage, cfg->logprobs);
        llm_openai_completion_stream_init(&f->completion[i], &f->meta, (int) i,
                                          cfg->include_usage, cfg->logprobs);
    }
    llm_anthropic_stream_init(&f->messages, &f->ameta);
    llm_responses_stream_init(&f->responses, &f->rmeta);

    return f;
}


void
llm_formatter_free(llm_formatter *f)
{
    if (f == NULL) {
        return;
    }
    free(f->chat);
    free(f->completion);
    llm_responses_stream_free(&f->responses);
    json_decref(f->final);
    free(f);
}


int
llm_formatter_record(llm_formatter *f, llm_buf *b)
{
    return f->def->record ? f->def->record(f, b) : 0;
}


int
llm_formatter_start(llm_formatter *f, llm_buf *b)
{
    return f->def->start(f, b);
}


int
llm_formatter_prompt_read(llm_formatter *f, llm_buf *b,
    const llm_usage *usage)
{
    return f->def->prompt_read ? f->def->prompt_read(f, b, usage) : 0;
}


int
llm_formatter_event(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_event *ev, const llm_logprobs_list *lp)
{
    return f->def->event(f, b, choice, ev, lp);
}


int
llm_formatter_finish_choice(llm_formatter *f, llm_buf *b, size_t choice,
    const llm_result *r)
{
    return f->def->finish_choice(f, b, choice, r);
}


int
llm_formatter_finish(llm_formatter *f, llm_buf *b, const llm_result *results,
    const llm_usage *usage)
{
    return f->def->finish(f, b, results, usage);
}


int
llm_formatter_error(llm_formatter *f, llm_buf *b, const llm_api_error *err)
{
    return f->def->error(f, b, err);
}


int
llm_formatter_keepalive(llm_formatter *f, llm_buf *b)
{
    return f->def->keepalive(f, b);
}


int
llm_formatter_response(llm_formatter *f, llm_buf *b,
    const llm_result *results, const llm_logprobs_list *lps)
{
    return f->def->response(f, b, results, lps);
}


void
llm_formatter_generation_error(const llm_formatter *f, llm_api_error *err,
    const char *what)
{
    llm_api_error_set(err, 500, f->def->server_error, NULL, NULL,
                      "Generation failed: %s", what);
}
