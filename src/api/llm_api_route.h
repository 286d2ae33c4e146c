/*
 * Which endpoint a request URI names inside an llm_api location.
 *
 * Prefix locations (`location /v1/messages`, `location /v1/models`) match
 * more URIs than the protocol defines; only the documented paths answer, and
 * everything else is a 404 in the protocol's shape, so that a client probing
 * /v1/messages/batches or /v1/modelsfoo learns the truth instead of
 * starting a generation or getting the model list.
 */
#ifndef LLM_API_ROUTE_H
#define LLM_API_ROUTE_H

#include <stddef.h>

#include "core/llm_ir.h"

typedef struct {
    llm_api_kind  api;      /* the endpoint: MESSAGES or COUNT_TOKENS in a
                               messages location, MODELS elsewhere, ... */
    const char   *id;       /* models: the {id} of /models/{id} (may hold
                               '/'), NULL for the list; responses: the
                               {id} of /responses/{id}, NULL for POST */
    size_t        id_len;
} llm_api_route;

/*
 * Route uri (the path, without the query string) in a location of kind
 * `location_api`: 0 with *out filled, or -1 when the location does not
 * answer that path (the caller sends a 404).
 *   messages: ".../messages" -> MESSAGES, ".../messages/count_tokens" ->
 *             COUNT_TOKENS; nothing else.
 *   responses: ".../responses" (create) and ".../responses/{id}" (a kept
 *             response: id non-empty, no '/'; .../input_items is not one).
 *   models:   ".../models" -> the list, ".../models/{id}" (id non-empty:
 *             the rest of the path after the first "/models/") -> one model.
 *   page:     a URI ending in '/' (the page's directory: "/", "/chat/").
 *   others:   every URI (their locations are exact matches).
 */
int llm_api_route_uri(llm_api_kind location_api, const char *uri, size_t len,
    llm_api_route *out);

/*
 * llm_api's argument: chat, completions, messages, responses, embeddings,
 * models, health, tokenize, detokenize, metrics or page -> the location's kind;
 * -1 for any other name (count_tokens is a path of a messages location).
 */
int llm_api_location_kind(const char *name, size_t len);

/*
 * llm_errors' argument: openai -> CHAT (OpenAI's error shape), anthropic ->
 * MESSAGES; -1 for any other name.
 */
int llm_api_error_shape(const char *name, size_t len);

/* 1: the endpoint is read with GET or HEAD (models, health, metrics, page); 0:
 * it takes a POST with a JSON body. */
int llm_api_route_reads(llm_api_kind api);

#endif
