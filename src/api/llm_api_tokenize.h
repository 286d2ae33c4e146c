/*
 * /tokenize and /detokenize: the request and response shapes of the two
 * servers clients already script against, told apart by their fields.
 *
 *   vLLM          POST /tokenize {"model"?, "prompt": text,
 *                   "add_special_tokens"? (default true),
 *                   "return_token_strs"?}
 *                 or {"model"?, "messages": [...] (a chat request: tools,
 *                   add_generation_prompt, continue_final_message,
 *                   chat_template_kwargs), "add_special_tokens"? (default
 *                   false: the template writes its own), "return_token_strs"?}
 *                 -> {"count", "max_model_len", "tokens": [ids],
 *                     "token_strs": [strings] or null}
 *   llama-server  POST /tokenize {"content": text, "add_special"? (default
 *                   false), "parse_special"? (default true), "with_pieces"?}
 *                 -> {"tokens": [ids]} or, with pieces,
 *                    {"tokens": [{"id", "piece"}]} (piece: a string, or an
 *                    array of byte values when the token is not valid UTF-8
 *                    on its own)
 *   both          POST /detokenize {"model"?, "tokens": [ids]}
 *                 -> {"prompt": text, "content": text} (vLLM reads
 *                    "prompt", llama-server "content")
 *
 * Parsing fills an llm_request the session layer already knows how to turn
 * into token ids: api COMPLETIONS with the text in `prompt`, api CHAT for
 * messages (parsed as a chat completion request), and for /detokenize the
 * ids in `prompt_ids`.  Errors are 400s in the OpenAI shape.
 */
#ifndef LLM_API_TOKENIZE_H
#define LLM_API_TOKENIZE_H

#include "api/llm_api.h"

typedef enum {
    LLM_TOKENIZE_VLLM = 0,
    LLM_TOKENIZE_LLAMA
} llm_tokenize_shape;

/* How to tokenize and what to answer. */
typedef struct {
    llm_tokenize_shape  shape;
    int                 add_special;    /* BOS/EOS as the tokenizer adds them */
    int                 parse_special;  /* special-token text: control tokens */
    int                 with_pieces;    /* return_token_strs / with_pieces */
} llm_tokenize_opts;

/* POST /tokenize: 0, or -1 with a 400 (req freed and re-initialised). */
int llm_api_parse_tokenize(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_tokenize_opts *opts,
    llm_api_error *err);

/* POST /detokenize: the ids into req->prompt_ids; 0, or -1 with a 400. */
int llm_api_parse_detokenize(const char *body, size_t len,
    const llm_api_limits *lim, llm_request *req, llm_api_error *err);

/* The /tokenize answer for ids; pieces come from token_bytes. */
int llm_api_tokenize_json(llm_buf *b, const llm_tokenize_opts *opts,
    const int32_t *ids, size_t n, long max_model_len,
    llm_token_bytes_fn token_bytes, void *token_ctx);

/* The /detokenize answer. */
int llm_api_detokenize_json(llm_buf *b, const char *text, size_t len);

#endif
