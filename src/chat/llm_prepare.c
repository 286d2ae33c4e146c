/*
 * Request preparation (see the header): the protocol's parser, the model
 * lookup, then what the endpoint needs before it can answer or run.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/llm_prepare.h"
#include "api/llm_anthropic.h"

void
llm_prepared_init(llm_prepared *p)
{
    memset(p, 0, sizeof(*p));
    llm_request_init(&p->req);
}

void
llm_prepared_free(llm_prepared *p)
{
    size_t  i;

    llm_request_free(&p->req);
    llm_embed_request_free(&p->ereq);
    llm_session_prompt_free(&p->prompt);
    llm_buf_free(&p->answer);
    for (i = 0; p->input_ids && i < p->n_inputs; i++) {
        free(p->input_ids[i]);
    }
    free(p->input_ids);
    free(p->input_n);
    p->input_ids = NULL;
    p->input_n = NULL;
}

static int
llm_prepare_model_of(const llm_prepare_config *cfg, const char *name,
    llm_prepared *p)
{
    if (cfg->find_model(cfg->find_data, name, &p->model) != 0) {
        memset(&p->model, 0, sizeof(p->model));
        llm_api_error_model_not_found(&p->err, name);
        return -1;
    }

    return 0;
}

/* Embeddings: every input's ids, bounded in total before the work. */
static void
llm_prepare_embeddings(const llm_prepare_config *cfg, llm_prepared *p)
{
    long              bad, n_vocab;
    size_t            i, total;
    llm_embed_input  *in;

    p->n_inputs = p->ereq.n_inputs;
    p->input_ids = calloc(p->n_inputs + 1, sizeof(int32_t *));
    p->input_n = calloc(p->n_inputs + 1, sizeof(size_t));
    if (p->input_ids == NULL || p->input_n == NULL) {
        p->internal = "out of memory";
        return;
    }

    n_vocab = llm_model_get_info(p->model.model)->n_vocab;
    total = 0;

    for (i = 0; i < p->n_inputs; i++) {
        in = &p->ereq.inputs[i];

        if (in->text) {
            if (llm_tokenizer_encode(p->model.tok, in->text, in->text_len, 1,
                                     &p->input_ids[i], &p->input_n[i])
                != 0)
            {
                p->internal = "out of memory";
                return;
            }

        } else {
            /* the engine would refuse it in the middle of a batch */
            bad = llm_model_find_bad_token(p->model.model, in->ids, in->n_ids);
            if (bad >= 0) {
                llm_api_error_set(&p->err, 400, NULL, "invalid_value",
                                  "input", "input token %ld is outside the "
                                  "vocabulary (0..%ld).", (long) in->ids[bad],
                                  n_vocab - 1);
                return;
            }
            p->input_n[i] = in->n_ids;
        }

        /* the whole request is work for one worker: bounded in total */
        total += p->input_n[i];
        if (total > cfg->embeddings_max_tokens) {
            llm_api_error_set(&p->err, 400, NULL, "too_many_tokens", "input",
                              "The inputs hold more than %zu tokens in all "
                              "(the limit per request, llm_embeddings_max_"
                              "tokens); send fewer or shorter inputs per "
                              "request.", cfg->embeddings_max_tokens);
            return;
        }
    }
}

static int
llm_prepare_token_bytes(void *tok, int32_t id, char *out, size_t cap)
{
    return llm_tokenizer_token_bytes(tok, id, out, cap);
}

/* /tokenize, /detokenize: the whole answer. */
static void
llm_prepare_tokens(const llm_prepare_config *cfg, const llm_session_model *sm,
    llm_prepared *p)
{
    int     rc;
    char   *text;
    size_t  len;

    if (cfg->api == LLM_API_DETOKENIZE) {
        if (llm_session_detokenize(sm, &p->req, &text, &len, &p->err) != 0) {
            return;
        }
        rc = llm_api_detokenize_json(&p->answer, text, len);
        free(text);

    } else {
        if (llm_session_tokenize(sm, &p->req, &p->tokenize, &p->prompt,
                                 &p->err)
            != 0)
        {
            return;
        }
        rc = llm_api_tokenize_json(&p->answer, &p->tokenize, p->prompt.ids,
                                   p->prompt.n_ids, p->model.context_length,
                                   llm_prepare_token_bytes,
                                   (void *) p->model.tok);
    }

    if (rc != 0) {
        p->internal = "out of memory";
    }
}

static void
llm_prepare_request(const llm_prepare_config *cfg, const char *body,
    size_t len, llm_prepared *p)
{
    int                rc;
    llm_api_limits     lim;
    llm_session_model  sm;

    llm_api_limits_default(&lim);
    lim.thinking_key = cfg->thinking_key;
    lim.responses = cfg->responses;

    if (cfg->api == LLM_API_EMBEDDINGS) {
        if (llm_openai_parse_embeddings(body, len, &lim, &p->ereq, &p->err)
            == 0
            && llm_prepare_model_of(cfg, p->ereq.model, p) == 0)
        {
            llm_prepare_embeddings(cfg, p);
        }
        return;
    }

    if (cfg->api == LLM_API_TOKENIZE) {
        rc = llm_api_parse_tokenize(body, len, &lim, &p->req, &p->tokenize,
                                    &p->err);

    } else if (cfg->api == LLM_API_DETOKENIZE) {
        rc = llm_api_parse_detokenize(body, len, &lim, &p->req, &p->err);

    } else {
        rc = llm_api_parse_request(cfg->api, body, len, &lim, &p->req,
                                   &p->err);
    }
    if (rc != 0) {
        return;
    }

    if (llm_anthropic_check_thinking_budget(&p->req, cfg->anthropic_beta,
                                            cfg->anthropic_beta_len, &p->err)
        != 0)
    {
        return;
    }

    if (llm_prepare_model_of(cfg, p->req.model, p) != 0) {
        return;
    }

    /* /detokenize names its ids "tokens": the session checks them */
    if (cfg->api != LLM_API_DETOKENIZE
        && llm_api_check_token_ids(&p->req,
                                   llm_model_get_info(p->model.model)->n_vocab,
                                   &p->err)
           != 0)
    {
        return;
    }

    sm.alias = p->model.alias;
    sm.chat = p->model.chat;
    sm.tok = p->model.tok;
    sm.reasoning_parser = p->model.reasoning_parser;
    sm.split_special_tokens = cfg->split_special_tokens != 0;
    sm.snapshot_system = llm_model_has_state(p->model.model);

    /* lines that change per request would end every prefix match there */
    if (p->req.messages
        && llm_volatile_strip_messages(cfg->prompt_strip, p->req.messages) < 0)
    {
        llm_api_error_set(&p->err, 500, "api_error", "internal_error", NULL,
                          "out of memory");
        return;
    }

    if (cfg->api == LLM_API_TOKENIZE || cfg->api == LLM_API_DETOKENIZE) {
        llm_prepare_tokens(cfg, &sm, p);
        return;
    }

    if (llm_session_build_prompt(&sm, &p->req, &p->prompt, &p->err) == 0
        && cfg->api == LLM_API_COUNT_TOKENS
        && llm_anthropic_count_tokens_json(&p->answer, (long) p->prompt.n_ids)
           != 0)
    {
        p->internal = "out of memory";
    }
}


void
llm_prepare(const llm_prepare_config *cfg, const char *body, size_t len,
    llm_prepared *p)
{
    llm_prepare_request(cfg, body, len, p);

    /* the server's own failure, answered as any other error */
    if (p->internal) {
        llm_api_error_internal(&p->err, "Preparing the request failed: %s.",
                               p->internal);
    }
}
