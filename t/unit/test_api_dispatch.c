/* Request-kind dispatch and the shared error helpers. */
#include <string.h>

#include "tap.h"
#include "api/llm_api.h"
#include "api/llm_api_route.h"
#include "api/llm_api_models.h"

#define GETS(o, k) json_string_value(json_object_get((o), (k)))

int
main(void)
{
    llm_api_limits lim;
    llm_request    req;
    llm_api_error  err;
    llm_buf        b;
    json_t        *root;
    const char    *chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    const char    *cmpl = "{\"prompt\":\"x\"}";
    const char    *msgs = "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";

    llm_api_limits_default(&lim);
    ok(lim.max_depth == 64 && lim.max_messages == 2048 && lim.max_tools == 128
       && lim.max_stop == 4 && lim.max_n == 8, "default limits");

    ok(llm_api_parse_request(LLM_API_CHAT, chat, strlen(chat), &lim, &req, &err) == 0
       && req.api == LLM_API_CHAT, "chat dispatch");
    llm_request_free(&req);
    ok(llm_api_parse_request(LLM_API_COMPLETIONS, cmpl, strlen(cmpl), &lim, &req, &err) == 0
       && req.api == LLM_API_COMPLETIONS, "completions dispatch");
    llm_request_free(&req);
    ok(llm_api_parse_request(LLM_API_MESSAGES, msgs, strlen(msgs), &lim, &req, &err) == 0
       && req.api == LLM_API_MESSAGES, "messages dispatch");
    llm_request_free(&req);
    ok(llm_api_parse_request(LLM_API_COUNT_TOKENS, chat, strlen(chat), &lim, &req, &err) == 0
       && req.api == LLM_API_COUNT_TOKENS, "count_tokens dispatch");
    llm_request_free(&req);
    ok(llm_api_parse_request(LLM_API_MESSAGES, chat, strlen(chat), &lim, &req, &err) == -1
       && strcmp(err.param, "max_tokens") == 0, "messages requires max_tokens");
    ok(llm_api_parse_request(LLM_API_MODELS, chat, strlen(chat), &lim, &req, &err) == -1
       && err.status == 400, "models takes no body");
    ok(llm_api_parse_request(LLM_API_CHAT, chat, strlen(chat), NULL, &req, &err) == 0,
       "NULL limits mean the defaults");
    llm_request_free(&req);

    llm_buf_init(&b);
    llm_api_error_model_not_found(&err, "gpt-9");
    ok(err.status == 404 && strcmp(err.code, "model_not_found") == 0 && strstr(err.message, "'gpt-9'"),
       "model_not_found");
    llm_api_error_body(LLM_API_CHAT, &b, &err, "r1", 2);
    root = json_loads(b.data, 0, NULL);
    is_str(GETS(json_object_get(root, "error"), "code"), "model_not_found", "OpenAI shape for chat");
    json_decref(root);
    llm_buf_reset(&b);
    llm_api_error_body(LLM_API_MESSAGES, &b, &err, "r1", 2);
    root = json_loads(b.data, 0, NULL);
    is_str(GETS(root, "type"), "error", "Anthropic shape for messages");
    is_str(GETS(json_object_get(root, "error"), "type"), "not_found_error", "404 -> not_found_error");
    json_decref(root);

    llm_api_error_context_length(&err, "messages", 9000, 8192);
    ok(err.status == 400 && strcmp(err.code, "context_length_exceeded") == 0 && strcmp(err.param, "messages") == 0
       && strcmp(err.message, "This model's maximum context length is 8192 tokens. However, your prompt has 9000 tokens.") == 0,
       "context length names the counts");
    llm_api_error_context_length(&err, "prompt", 9000, 8192);
    is_str(err.param, "prompt", "completions: on prompt");

    llm_api_error_overloaded(&err, LLM_API_CHAT, "tiny", 2);
    ok(err.status == 429 && strcmp(err.type, "rate_limit_error") == 0 && strcmp(err.code, "server_busy") == 0
       && strcmp(err.message, "Model 'tiny' is busy: 2 sequences run and the wait queue is full; retry later.") == 0,
       "OpenAI busy is 429 rate_limit_error naming the model");
    llm_api_error_overloaded(&err, LLM_API_MESSAGES, "tiny", 2);
    is_int(err.status, 529, "Anthropic busy is 529");
    llm_buf_reset(&b);
    llm_api_error_body(LLM_API_MESSAGES, &b, &err, NULL, 0);
    ok(strstr(b.data, "\"overloaded_error\"") && !strstr(b.data, "request_id"), "overloaded_error, no request_id");
    /* the id as nginx holds it: its length, not a NUL, ends it */
    llm_buf_reset(&b);
    llm_api_error_body(LLM_API_CHAT, &b, &err, "req-7 and more", 5);
    ok(strstr(b.data, "\"request_id\":\"req-7\"") != NULL, "the request id is its first len bytes");
    {
        char long_id[LLM_API_REQUEST_ID_MAX + 2];

        memset(long_id, 'a', sizeof(long_id));
        llm_buf_reset(&b);
        llm_api_error_body(LLM_API_CHAT, &b, &err, long_id, sizeof(long_id));
        ok(b.len > 0 && !strstr(b.data, "request_id"), "an id longer than LLM_API_REQUEST_ID_MAX is left out");
        llm_buf_reset(&b);
        llm_api_error_body(LLM_API_CHAT, &b, &err, long_id, LLM_API_REQUEST_ID_MAX);
        ok(strstr(b.data, "\"request_id\":\"aaaa") != NULL, "an id of LLM_API_REQUEST_ID_MAX bytes is kept");
    }
    llm_buf_free(&b);

    /* only the documented paths of prefix locations answer */
    {
        llm_api_route rt;
#define ROUTE(kind, u) llm_api_route_uri(kind, u, strlen(u), &rt)
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages") == 0 && rt.api == LLM_API_MESSAGES, "/v1/messages creates a message");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages/count_tokens") == 0 && rt.api == LLM_API_COUNT_TOKENS, "/v1/messages/count_tokens counts");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages/batches") == -1, "/v1/messages/batches is not an endpoint");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages/foo") == -1, "/v1/messages/foo is not an endpoint");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messagesXYZ") == -1, "/v1/messagesXYZ is not an endpoint");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages/") == -1, "/v1/messages/ is not an endpoint");
        ok(ROUTE(LLM_API_PAGE, "/") == 0 && rt.api == LLM_API_PAGE, "the page: /");
        ok(ROUTE(LLM_API_PAGE, "/chat/") == 0, "the page: a directory under a prefix");
        ok(ROUTE(LLM_API_PAGE, "/chat/favicon.ico") == -1, "the page: not every path under it");
        ok(ROUTE(LLM_API_PAGE, "") == -1, "the page: not an empty path");
        ok(ROUTE(LLM_API_MESSAGES, "/v1/messages/count_tokens/x") == -1, "/v1/messages/count_tokens/x is not an endpoint");
        ok(ROUTE(LLM_API_MODELS, "/v1/models") == 0 && rt.api == LLM_API_MODELS && rt.id == NULL, "/v1/models lists");
        ok(ROUTE(LLM_API_MODELS, "/v1/models/tiny") == 0 && rt.id_len == 4 && memcmp(rt.id, "tiny", 4) == 0, "/v1/models/tiny names one model");
        ok(ROUTE(LLM_API_MODELS, "/v1/models/Qwen/Qwen3") == 0 && rt.id_len == 10 && memcmp(rt.id, "Qwen/Qwen3", 10) == 0, "an id may hold '/'");
        ok(ROUTE(LLM_API_MODELS, "/v1/models/") == -1, "/v1/models/ (empty id) is not an endpoint");
        ok(ROUTE(LLM_API_MODELS, "/v1/modelsfoo") == -1, "/v1/modelsfoo is not an endpoint");
        ok(ROUTE(LLM_API_MODELS, "/v1/modelsfoo/models") == 0 && rt.id == NULL, "the first /models segment counts");
        ok(ROUTE(LLM_API_CHAT, "/anything") == 0 && rt.api == LLM_API_CHAT, "exact locations route every URI");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responses") == 0 && rt.api == LLM_API_RESPONSES && rt.id == NULL, "/v1/responses creates");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responses/resp_1") == 0 && rt.api == LLM_API_RESPONSES && rt.id_len == 6 && memcmp(rt.id, "resp_1", 6) == 0, "/v1/responses/{id} names a kept response");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responses/") == -1, "/v1/responses/ (empty id) is not an endpoint");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responses/resp_1/input_items") == -1, "/v1/responses/{id}/input_items is not served");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responsesX") == -1, "/v1/responsesX is not an endpoint");
        ok(ROUTE(LLM_API_RESPONSES, "/v1/responses/a/responses/b") == -1, "a second segment is not an id");
#undef ROUTE
    }
    /* model list in either protocol's shape */
    {
        llm_api_model_card cards[2] = { { "tiny", 4, 0, 4096, 4096 }, { "big", 3, 86400, 8192, 1000 } };
        json_t *o, *l;

        o = llm_api_model_object(&cards[1], 0);
        ok(strcmp(GETS(o, "id"), "big") == 0 && strcmp(GETS(o, "object"), "model") == 0
           && json_integer_value(json_object_get(o, "created")) == 86400
           && json_object_get(o, "type") == NULL, "OpenAI model object");
        ok(json_integer_value(json_object_get(o, "max_output_tokens")) == 1000
           && json_integer_value(json_object_get(o, "context_length")) == 8192,
           "the output cap is advertised next to the context");
        json_decref(o);
        {
            llm_api_model_card c;

            llm_api_model_card_init(&c, "big", 3, 86400, 8192, 1000);
            ok(c.id_len == 3 && c.created == 86400 && c.context_length == 8192 && c.max_output_tokens == 1000,
               "a card: llm_max_tokens below the context is the output cap");
            llm_api_model_card_init(&c, "big", 3, 86400, 8192, 0);
            is_int(c.max_output_tokens, 8192, "no llm_max_tokens: the context is the cap");
            llm_api_model_card_init(&c, "big", 3, 86400, 8192, -1);
            is_int(c.max_output_tokens, 8192, "unset (-1): the context");
            llm_api_model_card_init(&c, "big", 3, 86400, 8192, 8192);
            is_int(c.max_output_tokens, 8192, "llm_max_tokens at the context: the context");
            llm_api_model_card_init(&c, "big", 3, 86400, 8192, 100000);
            is_int(c.max_output_tokens, 8192, "llm_max_tokens above the context: the context");
        }
        o = llm_api_model_object(&cards[1], 1);
        ok(strcmp(GETS(o, "type"), "model") == 0 && strcmp(GETS(o, "id"), "big") == 0
           && strcmp(GETS(o, "display_name"), "big") == 0
           && strcmp(GETS(o, "created_at"), "1970-01-02T00:00:00Z") == 0
           && json_object_get(o, "object") == NULL, "Anthropic model object");
        json_decref(o);
        l = llm_api_model_list(cards, 2, 1);
        ok(json_array_size(json_object_get(l, "data")) == 2 && json_is_false(json_object_get(l, "has_more"))
           && strcmp(GETS(l, "first_id"), "tiny") == 0 && strcmp(GETS(l, "last_id"), "big") == 0
           && json_object_get(l, "object") == NULL, "Anthropic list: has_more, first_id, last_id");
        json_decref(l);
        l = llm_api_model_list(cards, 0, 1);
        ok(json_is_null(json_object_get(l, "first_id")) && json_is_null(json_object_get(l, "last_id")), "empty Anthropic list: null ids");
        json_decref(l);
        l = llm_api_model_list(cards, 2, 0);
        ok(strcmp(GETS(l, "object"), "list") == 0 && json_array_size(json_object_get(l, "data")) == 2
           && json_object_get(l, "has_more") == NULL, "OpenAI list");
        json_decref(l);
        /* GET /v1/models[/{id}]: the list, the model named, or a 404 */
        {
            llm_api_error e;
            char          longid[300];

            l = llm_api_models_get(cards, 2, "/v1/models", 10, 0, &e);
            ok(l && strcmp(GETS(l, "object"), "list") == 0 && e.status == 0,
               "GET /v1/models: the list");
            json_decref(l);
            o = llm_api_models_get(cards, 2, "/v1/models/big", 14, 1, &e);
            ok(o && strcmp(GETS(o, "id"), "big") == 0 && strcmp(GETS(o, "type"), "model") == 0,
               "GET /v1/models/big: that model, in the shape asked for");
            json_decref(o);
            o = llm_api_models_get(cards, 2, "/v1/models/bi", 13, 0, &e);
            ok(o == NULL && e.status == 404 && strcmp(e.code, "model_not_found") == 0
               && strcmp(e.message, "The model 'bi' does not exist.") == 0,
               "a prefix of an id is no model: 404 model_not_found");
            memset(longid, 'x', sizeof(longid));
            memcpy(longid, "/v1/models/", 11);
            o = llm_api_models_get(cards, 2, longid, sizeof(longid), 0, &e);
            ok(o == NULL && e.status == 404 && strlen(e.message) == 200 + strlen("The model '' does not exist."),
               "a long unknown id is quoted up to 200 bytes");
        }
    }
    /* a client's X-Request-ID */
    ok(llm_api_request_id_valid("req-1_a.b:c", 11), "X-Request-ID: letters, digits, - _ . :");
    ok(!llm_api_request_id_valid("", 0), "an empty one is not kept");
    ok(!llm_api_request_id_valid("a b", 3) && !llm_api_request_id_valid("a\"b", 3)
       && !llm_api_request_id_valid("a\nb", 3), "space, quote, newline: not kept");
    {
        char id[LLM_API_REQUEST_ID_MAX + 1];
        memset(id, 'a', sizeof(id));
        ok(llm_api_request_id_valid(id, LLM_API_REQUEST_ID_MAX)
           && !llm_api_request_id_valid(id, LLM_API_REQUEST_ID_MAX + 1),
           "up to LLM_API_REQUEST_ID_MAX bytes");
    }
    /* the server's own refusals, worded once */
    {
        llm_api_error e;
        char          uri[600];

        llm_api_error_method(&e, "PUT", 3, "POST");
        ok(e.status == 405 && strcmp(e.type, "invalid_request_error") == 0
           && strcmp(e.code, "method_not_allowed") == 0
           && strcmp(e.message, "Method PUT is not allowed here; use POST.") == 0,
           "405 names the method and the ones allowed");
        llm_api_error_unknown_url(&e, "GETX", 3, "/v1/chat/x?q", 10);
        ok(e.status == 404 && strcmp(e.code, "unknown_url") == 0
           && strcmp(e.message, "Invalid URL (GET /v1/chat/x): this server has no such endpoint.") == 0,
           "404 quotes method and path by their lengths");
        memset(uri, 'a', sizeof(uri));
        llm_api_error_unknown_url(&e, "GET", 3, uri, sizeof(uri));
        ok(strlen(e.message) == strlen("Invalid URL (GET ): this server has no such endpoint.")
                                + LLM_API_QUOTE_MAX, "a long path is quoted up to LLM_API_QUOTE_MAX bytes");
        llm_api_error_not_loaded(&e, "tinyX", 4);
        ok(e.status == 503 && strcmp(e.type, "server_error") == 0 && e.code == NULL
           && strcmp(e.message, "Model 'tiny' is not loaded in this worker.") == 0,
           "503 for a model this worker does not serve");
        llm_api_error_choices(&e, 9, "tiny", 2, 4, 6);
        ok(e.status == 400 && strcmp(e.param, "n") == 0 && strcmp(e.code, "invalid_value") == 0
           && strcmp(e.message, "n=9 is more than model 'tiny' can hold at once "
                                "(parallel 2 + queue 4 = 6 sequences).") == 0,
           "400 on n beyond parallel + queue");
        llm_api_error_no_metrics(&e);
        ok(e.status == 503 && strcmp(e.message, "No metrics: no model is configured.") == 0,
           "/metrics without a model: 503");
        ok(llm_api_error_internal(&e, "Preparing the request failed: %s.", "oom") == -1
           && e.status == 500 && strcmp(e.type, "server_error") == 0
           && strcmp(e.message, "Preparing the request failed: oom.") == 0,
           "500 for the server's own failure");
    }
    /* llm_api's and llm_errors' names, and which endpoints are read with GET */
    is_int(llm_api_location_kind("chat", 4), LLM_API_CHAT, "llm_api chat");
    is_int(llm_api_location_kind("messages", 8), LLM_API_MESSAGES, "llm_api messages");
    is_int(llm_api_location_kind("metrics", 7), LLM_API_METRICS, "llm_api metrics");
    is_int(llm_api_location_kind("responses", 9), LLM_API_RESPONSES, "llm_api responses");
    is_int(llm_api_location_kind("page", 4), LLM_API_PAGE, "llm_api page");
    is_int(llm_api_location_kind("count_tokens", 12), -1,
           "count_tokens is a path, not a location kind");
    is_int(llm_api_location_kind("chatx", 4), LLM_API_CHAT, "the length given is the name");
    is_int(llm_api_location_kind("chat", 3), -1, "a prefix is not a name");
    is_int(llm_api_location_kind("", 0), -1, "an empty name");
    is_int(llm_api_error_shape("openai", 6), LLM_API_CHAT, "llm_errors openai");
    is_int(llm_api_error_shape("anthropic", 9), LLM_API_MESSAGES, "llm_errors anthropic");
    is_int(llm_api_error_shape("OpenAI", 6), -1, "llm_errors is case-sensitive");
    ok(llm_api_route_reads(LLM_API_MODELS) && llm_api_route_reads(LLM_API_HEALTH)
       && llm_api_route_reads(LLM_API_METRICS) && llm_api_route_reads(LLM_API_PAGE),
       "models, health, metrics, page are read");
    ok(!llm_api_route_reads(LLM_API_CHAT) && !llm_api_route_reads(LLM_API_EMBEDDINGS)
       && !llm_api_route_reads(LLM_API_TOKENIZE), "the others take a POST");
    is_str(llm_api_status_message(413),
           "Request body too large: it exceeds client_max_body_size.",
           "413: names client_max_body_size");
    is_str(llm_api_status_message(429), "Too many requests: rate limit exceeded.",
           "429: the rate limit");
    is_str(llm_api_status_message(418), "Request failed.", "any other status");

    return done_testing();
}
