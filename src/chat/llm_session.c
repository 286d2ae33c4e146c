/*
 * Prompt building for one request (llm_session.h).
 */
#include <stdlib.h>
#include <string.h>

#include "chat/llm_session.h"
#include "api/llm_response_budget.h"
#include "parsers/llm_parser.h"


static int
llm_session_out_of_memory(llm_api_error *err)
{
    return llm_api_error_set(err, 500, NULL, NULL, NULL,
                             "Preparing the request failed: out of memory.");
}


/* A named tool_choice: only that tool stays (the protocol checked it exists). */
static int
llm_session_named_tool(llm_request *req)
{
    size_t   i;
    json_t  *tool, *name, *only;

    if (req->tool_choice != LLM_TOOL_CHOICE_NAMED || req->tools == NULL) {
        return 0;
    }

    json_array_foreach(req->tools, i, tool) {
        name = json_object_get(json_object_get(tool, "function"), "name");
        if (json_is_string(name)
            && strcmp(json_string_value(name), req->tool_choice_name) == 0)
        {
            only = json_array();
            if (only == NULL || json_array_append(only, tool) != 0) {
                json_decref(only);
                return -1;
            }
            json_decref(req->tools);
            req->tools = only;
            return 0;
        }
    }

    return 0;
}


/*
 * The prompt tokens of the request's first k messages: those messages
 * rendered alone (no generation prompt) and tokenized; their common head
 * with the whole prompt is what later requests with the same first
 * messages repeat.  0 when that head does not render.
 */
static size_t
llm_session_head_tokens(const llm_session_model *sm, llm_request *req,
    size_t k, int add_special, const int32_t *ids, size_t n_ids)
{
    int              rc, agp = req->add_generation_prompt;
    size_t           i, n_head = 0, common = 0;
    json_t          *all = req->messages, *head;
    int32_t         *hid = NULL;
    char             msg[256];
    llm_chat_prompt  p;

    if (all == NULL || k == 0) {
        return 0;
    }
    head = json_array();
    if (head == NULL) {
        return 0;
    }
    for (i = 0; i < k && i < json_array_size(all); i++) {
        json_array_append(head, json_array_get(all, i));
    }

    req->messages = head;
    req->add_generation_prompt = 0;
    rc = llm_chat_render_prompt(sm->chat, sm->split_special_tokens ? sm->tok
                                                                   : NULL,
                                req, &p, msg, sizeof(msg));
    req->messages = all;
    req->add_generation_prompt = agp;
    json_decref(head);

    if (rc == LLM_CHAT_OK
        && llm_chat_prompt_encode(&p, sm->tok, add_special, &hid, &n_head)
           == 0)
    {
        while (common < n_head && common < n_ids && hid[common] == ids[common])
        {
            common++;
        }
    }
    llm_chat_prompt_free(&p);
    free(hid);

    return common;
}


/* Chat, messages, count_tokens: the template's prompt as token ids. */
static int
llm_session_chat_prompt(const llm_session_model *sm, llm_request *req,
    int add_special, llm_session_prompt *out, llm_api_error *err)
{
    int              rc, counting = req->api == LLM_API_COUNT_TOKENS;
    char             msg[512];
    llm_chat_prompt  prompt;

    if (sm->chat == NULL) {
        if (counting) {
            return llm_api_error_set(err, 400, NULL, NULL, NULL,
                                     "Model '%s' has no chat template.",
                                     sm->alias);
        }
        return llm_api_error_set(err, 400, NULL, "unsupported", NULL,
                                 "Model '%s' has no chat template; use "
                                 "/v1/completions.", sm->alias);
    }

    if (llm_session_named_tool(req) != 0) {
        return llm_session_out_of_memory(err);
    }

    rc = llm_chat_render_prompt(sm->chat, sm->split_special_tokens ? sm->tok
                                                                   : NULL,
                                req, &prompt, msg, sizeof(msg));
    if (rc != LLM_CHAT_OK) {
        llm_chat_prompt_free(&prompt);
        if (rc == LLM_CHAT_ERR_REQUEST) {
            return llm_api_error_set(err, 400, NULL,
                                     counting ? NULL : "invalid_request",
                                     counting ? NULL : "messages", "%s", msg);
        }
        snprintf(out->template_error, sizeof(out->template_error), "%s", msg);
        return llm_api_error_set(err, 500, NULL, NULL, NULL,
                                 "The chat template failed: %s", msg);
    }

    out->starts_in_reasoning = sm->reasoning_parser
                               && llm_reasoning_starts_open(
                                      sm->reasoning_parser, prompt.text,
                                      prompt.len);

    rc = llm_chat_prompt_encode(&prompt, sm->tok, add_special, &out->ids,
                                &out->n_ids);
    llm_chat_prompt_free(&prompt);
    if (rc != 0) {
        return llm_session_out_of_memory(err);
    }

    if (!counting && req->cache_messages >= 0) {
        /* up to the last cache_control breakpoint */
        out->cache_upto = llm_session_head_tokens(sm, req,
                                                  (size_t) req->cache_messages,
                                                  add_special, out->ids,
                                                  out->n_ids);
    }

    if (!counting && sm->snapshot_system) {
        /* the leading system (developer) messages: a reusable head */
        size_t  k = 0;
        while (k < json_array_size(req->messages)) {
            const char *role = json_string_value(json_object_get(
                                   json_array_get(req->messages, k), "role"));
            if (role == NULL || (strcmp(role, "system") != 0
                                 && strcmp(role, "developer") != 0))
            {
                break;
            }
            k++;
        }
        out->system_upto = llm_session_head_tokens(sm, req, k, add_special,
                                                   out->ids, out->n_ids);
    }

    return 0;
}


/* Completions: the prompt's ids as given, or its text tokenized as is. */
static int
llm_session_completion_prompt(const llm_session_model *sm,
    const llm_request *req, llm_session_prompt *out, llm_api_error *err)
{
    size_t  n;

    if (req->prompt_ids) {
        n = req->n_prompt_ids;
        out->ids = malloc((n ? n : 1) * sizeof(int32_t));
        if (out->ids == NULL) {
            return llm_session_out_of_memory(err);
        }
        memcpy(out->ids, req->prompt_ids, n * sizeof(int32_t));
        out->n_ids = n;

        if (req->echo
            && llm_tokenizer_decode(sm->tok, out->ids, n, 1, &out->echo,
                                    &out->echo_len) != 0)
        {
            return llm_session_out_of_memory(err);
        }
        return 0;
    }

    if (llm_tokenizer_encode(sm->tok, req->prompt, req->prompt_len, 1,
                             &out->ids, &out->n_ids) != 0)
    {
        return llm_session_out_of_memory(err);
    }

    if (req->echo) {
        out->echo = malloc(req->prompt_len + 1);
        if (out->echo == NULL) {
            return llm_session_out_of_memory(err);
        }
        memcpy(out->echo, req->prompt, req->prompt_len);
        out->echo[req->prompt_len] = '\0';
        out->echo_len = req->prompt_len;
    }

    return 0;
}


int
llm_session_build_prompt(const llm_session_model *sm, llm_request *req,
    llm_session_prompt *out, llm_api_error *err)
{
    memset(out, 0, sizeof(*out));

    if (req->api == LLM_API_COMPLETIONS) {
        return llm_session_completion_prompt(sm, req, out, err);
    }

    return llm_session_chat_prompt(sm, req, 0, out, err);
}


int
llm_session_tokenize(const llm_session_model *sm, llm_request *req,
    const llm_tokenize_opts *opts, llm_session_prompt *out,
    llm_api_error *err)
{
    llm_tok_encode_opts  o;

    memset(out, 0, sizeof(*out));

    if (req->api == LLM_API_CHAT) {
        return llm_session_chat_prompt(sm, req, opts->add_special, out, err);
    }

    memset(&o, 0, sizeof(o));
    o.add_special = opts->add_special;
    o.parse_special = opts->parse_special;
    if (llm_tokenizer_encode_opts(sm->tok, req->prompt, req->prompt_len, &o,
                                  &out->ids, &out->n_ids)
        != 0)
    {
        return llm_session_out_of_memory(err);
    }

    return 0;
}


int
llm_session_detokenize(const llm_session_model *sm, const llm_request *req,
    char **text, size_t *len, llm_api_error *err)
{
    size_t  i;

    *text = NULL;

    /* every id must be one the tokenizer knows (decoding skips the rest) */
    for (i = 0; i < req->n_prompt_ids; i++) {
        if (llm_tokenizer_piece(sm->tok, req->prompt_ids[i]) == NULL) {
            return llm_api_error_set(err, 400, NULL, "invalid_value",
                "tokens", "tokens[%zu]: token %ld is outside the vocabulary "
                "(0..%zu).", i, (long) req->prompt_ids[i],
                llm_tokenizer_n_vocab(sm->tok) - 1);
        }
    }

    if (llm_tokenizer_decode(sm->tok, req->prompt_ids, req->n_prompt_ids, 0,
                             text, len)
        != 0)
    {
        return llm_session_out_of_memory(err);
    }

    return 0;
}


void
llm_session_prompt_free(llm_session_prompt *p)
{
    free(p->ids);
    free(p->echo);
    p->ids = NULL;
    p->echo = NULL;
}


int
llm_session_max_new_tokens(const llm_request *req, size_t n_prompt,
    const llm_session_limits *lim, size_t *max_new, llm_api_error *err)
{
    size_t       max_gen, n, per_token, fit;
    const char  *max_name = req->api == LLM_API_RESPONSES
                            ? "max_output_tokens" : "max_tokens";

    if (n_prompt == 0) {
        return llm_api_bad_request(err, "invalid_value", "prompt",
                                   "The prompt is empty.");
    }

    if (n_prompt >= lim->n_ctx) {
        return llm_api_error_context_length(err, req->api == LLM_API_COMPLETIONS
                                                 ? "prompt"
                                                 : req->api == LLM_API_RESPONSES
                                                 ? "input" : "messages",
                                            n_prompt, lim->n_ctx);
    }

    if (lim->max_tokens > 0 && req->max_tokens > 0
        && (size_t) req->max_tokens > lim->max_tokens)
    {
        return llm_api_bad_request(err, "invalid_value", max_name,
            "%s is %ld, more than this server allows for model "
            "'%s' (llm_max_tokens %zu).", max_name, req->max_tokens,
            lim->model ? lim->model : "", lim->max_tokens);
    }

    if (req->max_tokens > 0) {
        max_gen = (size_t) req->max_tokens;
    } else {
        max_gen = lim->max_tokens > 0 ? lim->max_tokens : lim->n_ctx;
        if (req->default_max_tokens > 0
            && (size_t) req->default_max_tokens < max_gen)
        {
            max_gen = (size_t) req->default_max_tokens;
        }
    }
    if (max_gen > lim->n_ctx - n_prompt) {
        max_gen = lim->n_ctx - n_prompt;
    }

    /*
     * What the response may keep in memory: a max_tokens the client asked
     * for that cannot fit is its error; the server's own default is lowered
     * to what fits.
     */
    n = req->n > 0 ? (size_t) req->n : 1;
    per_token = llm_response_bytes_per_token(req->stream,
                                             req->sampling.logprobs,
                                             req->sampling.top_logprobs);
    fit = llm_response_tokens_fit(lim->max_response_size, n, per_token);

    if (max_gen > fit) {
        if (fit == 0
            || (req->max_tokens > 0 && (size_t) req->max_tokens == max_gen))
        {
            return llm_api_bad_request(err, "invalid_value", max_name,
                "n=%zu x %s=%zu%s would keep about %zu KiB for the "
                "response, more than llm_max_response_size (%zu KiB) "
                "allows: at most %zu tokens per choice fit; ask for fewer "
                "tokens, choices or top_logprobs, or stream the response.",
                n, max_name, max_gen,
                req->sampling.logprobs && !req->stream ? " with logprobs" : "",
                n * max_gen * per_token / 1024,
                lim->max_response_size / 1024, fit);
        }
        max_gen = fit;
    }

    *max_new = max_gen;
    return 0;
}


/*
 * Tokens of reasoning the current turn already holds: the
 * reasoning_content of the assistant messages after the last user message
 * (a tool loop sends each turn's thinking back).  -1 when out of memory.
 */
static long
llm_session_turn_reasoning(const llm_request *req, const llm_tokenizer *tok)
{
    long          n = 0;
    size_t        i, n_ids;
    int32_t      *ids;
    const char   *role;
    const json_t *m, *rc;

    for (i = json_array_size(req->messages); i > 0; i--) {
        m = json_array_get(req->messages, i - 1);
        role = json_string_value(json_object_get(m, "role"));
        if (role && strcmp(role, "user") == 0) {
            break;
        }
        rc = json_object_get(m, "reasoning_content");
        if (role == NULL || strcmp(role, "assistant") != 0
            || !json_is_string(rc) || json_string_length(rc) == 0)
        {
            continue;
        }
        if (llm_tokenizer_encode(tok, json_string_value(rc),
                                 json_string_length(rc), 0, &ids, &n_ids)
            != 0)
        {
            return -1;
        }
        free(ids);
        n += (long) n_ids;
    }
    return n;
}


long
llm_session_thinking_tokens(const llm_request *req, const llm_tokenizer *tok,
    size_t max_new, int *oom)
{
    long  budget, spent;

    *oom = 0;
    if (req->reasoning == 0) {
        return -1;
    }

    if (req->thinking_budget >= 0) {
        spent = llm_session_turn_reasoning(req, tok);
        if (spent < 0) {
            *oom = 1;
            return -1;
        }
        budget = req->thinking_budget - spent;

    } else {
        switch (req->reasoning_effort) {
        case LLM_EFFORT_LOW:
            budget = (long) (max_new / 4);
            budget = budget < LLM_EFFORT_LOW_MAX ? budget : LLM_EFFORT_LOW_MAX;
            break;
        case LLM_EFFORT_MEDIUM:
            budget = (long) (max_new / 2);
            budget = budget < LLM_EFFORT_MEDIUM_MAX
                     ? budget : LLM_EFFORT_MEDIUM_MAX;
            break;
        case LLM_EFFORT_HIGH:
            budget = (long) (max_new / 4 * 3 + max_new % 4 * 3 / 4);
            break;
        default:
            return -1;    /* unset: the model decides; max: no budget */
        }
    }

    return budget < 1 ? 1 : budget;
}


int
llm_session_reasoning_budget(const llm_request *req, const llm_tokenizer *tok,
    const char *reasoning_id, int starts_in_reasoning, size_t max_new,
    llm_reasoning_budget **out)
{
    int                  oom;
    long                 budget;
    llm_reasoning_marks  mk;

    *out = NULL;
    if (llm_reasoning_markers(reasoning_id, &mk) != 0) {
        return 0;
    }
    budget = llm_session_thinking_tokens(req, tok, max_new, &oom);
    if (budget < 0) {
        return oom ? -1 : 0;
    }
    *out = llm_reasoning_budget_create(tok, mk.open, mk.close,
                                       mk.forced_close, (size_t) budget,
                                       starts_in_reasoning);
    return *out ? 0 : -1;
}


void
llm_session_sampler_params(const llm_request *req, const llm_model_info *info,
    size_t index, llm_sampler_params *sp)
{
    const llm_sampling  *s = &req->sampling;

    llm_sampler_params_default(sp);

    sp->temperature = (float) s->temperature;
    sp->top_p = (float) s->top_p;
    sp->top_k = s->top_k;
    sp->repetition_penalty = (float) s->repetition_penalty;

    if (info) {
        if (!(s->set & LLM_SAMPLING_SET_TEMPERATURE) && info->has_temperature) {
            sp->temperature = (float) info->temperature;
        }
        if (!(s->set & LLM_SAMPLING_SET_TOP_P) && info->has_top_p) {
            sp->top_p = (float) info->top_p;
        }
        if (!(s->set & LLM_SAMPLING_SET_TOP_K) && info->has_top_k) {
            sp->top_k = info->top_k;
        }
        if (!(s->set & LLM_SAMPLING_SET_REPETITION_PENALTY)
            && info->has_repetition_penalty)
        {
            sp->repetition_penalty = (float) info->repetition_penalty;
        }
    }

    sp->min_p = (float) s->min_p;
    sp->presence_penalty = (float) s->presence_penalty;
    sp->frequency_penalty = (float) s->frequency_penalty;
    sp->logit_bias = s->logit_bias;
    sp->n_logit_bias = (int) s->n_logit_bias;
    sp->has_seed = s->has_seed;
    sp->seed = s->seed + index;
}
