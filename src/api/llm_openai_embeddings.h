/*
 * OpenAI POST /v1/embeddings: request parsing and response formatting.
 */
#ifndef LLM_OPENAI_EMBEDDINGS_H
#define LLM_OPENAI_EMBEDDINGS_H

#include "api/llm_api.h"

typedef struct {
    char     *text;       /* one of text / ids */
    size_t    text_len;
    int32_t  *ids;
    size_t    n_ids;
} llm_embed_input;

typedef struct {
    char            *model;
    llm_embed_input *inputs;
    size_t           n_inputs;
    int              base64;       /* encoding_format "base64" */
    long             dimensions;   /* 0 = not given */
} llm_embed_request;

#define LLM_EMBED_MAX_INPUTS  2048

int llm_openai_parse_embeddings(const char *body, size_t len,
    const llm_api_limits *lim, llm_embed_request *req, llm_api_error *err);
void llm_embed_request_free(llm_embed_request *req);

/* vectors: n_inputs rows of dim floats, already normalised. */
int llm_openai_embeddings_response(llm_buf *b, const char *model,
    const float *vectors, size_t n, size_t dim, int base64,
    long prompt_tokens);

#endif
