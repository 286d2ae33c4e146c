/*
 * GET /v1/models[/{id}] bodies, in the shape the client asked for: OpenAI's
 * ({"object":"list","data":[{"id","object":"model","created","owned_by"}]})
 * by default, Anthropic's when the request carries an anthropic-version
 * header ({"data":[{"type":"model","id","display_name","created_at"}],
 * "has_more","first_id","last_id"}), as Anthropic clients read the list.
 */
#ifndef LLM_API_MODELS_H
#define LLM_API_MODELS_H

#include <stddef.h>

#include <jansson.h>

#include "api/llm_api.h"

/* What the server says about one served model. */
typedef struct {
    const char *id;              /* the alias requests name */
    size_t      id_len;
    long long   created;         /* Unix seconds */
    long        context_length;
    long        max_output_tokens;  /* llm_max_tokens, or context_length */
} llm_api_model_card;

/* The card of a served model with a context of context_length tokens:
 * max_output_tokens is max_tokens (llm_max_tokens; <= 0: none) when it is
 * below the context, else the context. */
void llm_api_model_card_init(llm_api_model_card *card, const char *id,
    size_t id_len, long long created, long context_length, long max_tokens);

/* One model object; NULL when out of memory. */
json_t *llm_api_model_object(const llm_api_model_card *m, int anthropic);

/* The list of n models (all of them: has_more is false); NULL when out of
 * memory. */
json_t *llm_api_model_list(const llm_api_model_card *m, size_t n,
    int anthropic);

/*
 * GET /v1/models[/{id}] (uri: the path, without the query string) from the
 * n served models: the list, or the model the id names.  NULL with err
 * when no model has that id (404 model_not_found); NULL with err->status 0
 * when out of memory.
 */
json_t *llm_api_models_get(const llm_api_model_card *m, size_t n,
    const char *uri, size_t uri_len, int anthropic, llm_api_error *err);

#endif
