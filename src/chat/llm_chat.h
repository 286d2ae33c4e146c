/*
 * Model-scoped chat adapter: the model's chat template (compiled at load,
 * shared read-only by all threads) turned into prompt text for one request.
 *
 * Template source, first found: tokenizer_config.json "chat_template" (a
 * string, or a list of {name, template}: "default", and "tool_use" when the
 * request has tools), else chat_template.jinja in the model directory.
 * A template the interpreter cannot handle fails llm_chat_load with the
 * template line and construct named.
 *
 * The rendered prompt already holds BOS and the special tokens of the
 * template: tokenize it with llm_tokenizer_encode(..., add_special = 0, ...).
 */
#ifndef LLM_CHAT_H
#define LLM_CHAT_H

#include <stddef.h>

#include "core/llm_ir.h"
#include "engine/llm_tokenizer.h"

typedef struct llm_chat llm_chat;

enum {
    LLM_CHAT_OK          = 0,
    LLM_CHAT_ERR_INTERNAL = -1,  /* our fault or out of memory: HTTP 500 */
    LLM_CHAT_ERR_REQUEST  = -2   /* the template raised (raise_exception) or the
                                    request cannot be rendered: HTTP 400 */
};

/*
 * tok may be NULL; it supplies nothing the config lacks but is kept for
 * bos/eos ids.  Returns NULL with err set when the directory has no chat
 * template or the template does not compile.
 */
llm_chat *llm_chat_load(const char *model_dir, const llm_tokenizer *tok,
                        char *err, size_t errlen);
/*
 * The same, telling the two failures apart: *absent = 1 when the folder has
 * no chat template at all (a base model: not an error of the template),
 * 0 when a template is there but cannot be read or compiled.
 */
llm_chat *llm_chat_open(const char *model_dir, const llm_tokenizer *tok,
                        int *absent, char *err, size_t errlen);
/* Same from a template string (tests, a template given by configuration). */
llm_chat *llm_chat_from_template(const char *source, const char *bos_token,
                                 const char *eos_token, char *err, size_t errlen);
void llm_chat_free(llm_chat *chat);

/*
 * Render req->messages (HF template shape), req->tools (dropped when
 * tool_choice is none), add_generation_prompt, every key of
 * req->template_kwargs at top level (e.g. enable_thinking; req->reasoning
 * 0/1 sets enable_thinking when the kwargs do not), and as transformers
 * does: tools and documents (None when absent), the special tokens that the
 * config sets (bos_token, eos_token, unk_token, pad_token,
 * additional_special_tokens).
 * When tools are delivered but the template never mentions `tools`, a
 * Hermes-style system prompt describing them and the
 * <tool_call>{"name": ..., "arguments": ...}</tool_call> format is put in
 * front (merged into the first system message).
 * *prompt is malloc'd, NUL-terminated.  Returns LLM_CHAT_OK or an error code above.
 */
int llm_chat_render(const llm_chat *chat, const llm_request *req,
                    char **prompt, size_t *len, char *err, size_t errlen);

/*
 * A rendered prompt and where text from the request put special-token text
 * into it: plain_at lists those byte offsets (ascending), at which the
 * special token is text, not control.  Without that a user could close
 * their turn and open a system or tool turn of their own by typing
 * "<|im_end|>\n<|im_start|>system ...".
 */
typedef struct {
    char   *text;          /* malloc'd, NUL-terminated */
    size_t  len;
    size_t *plain_at;      /* malloc'd or NULL */
    size_t  n_plain_at;
} llm_chat_prompt;

/*
 * llm_chat_render, keeping request text apart: tok given, every string the
 * request brings (messages with their content, tool calls and results,
 * tools, chat_template_kwargs) has its special-token text listed in
 * out->plain_at, while the template's own markup keeps its special tokens
 * (HF split_special_tokens, for request text only).  tok NULL: nothing is
 * listed (the old behaviour: all special-token text is control).
 * Free with llm_chat_prompt_free (also after an error).
 */
int llm_chat_render_prompt(const llm_chat *chat, const llm_tokenizer *tok,
                           const llm_request *req, llm_chat_prompt *out,
                           char *err, size_t errlen);
void llm_chat_prompt_free(llm_chat_prompt *p);

/*
 * The prompt's token ids (llm_tokenizer_encode_opts with its plain_at).
 * add_special: the tokenizer's BOS/EOS on top of what the template wrote
 * (0 to run it; /tokenize's add_special_tokens may ask for them).
 */
int llm_chat_prompt_encode(const llm_chat_prompt *p, const llm_tokenizer *tok,
                           int add_special, int32_t **ids, size_t *n_ids);

/*
 * on (default 1): bring tools and tool turns to the template in the model's
 * own form where the template does not read them as OpenAI sends them:
 *  - a template that reads `tools` only from a system message (Phi-4-mini):
 *    the tools' functions as a JSON list in the first system message's
 *    `tools` (a system message put in front when there is none), and, when
 *    it never reads `tool_calls`, earlier calls appended to their turn's
 *    content as <|tool_call|>[{"name": ..., "arguments": ...}]<|/tool_call|>;
 *  - a template of `observation` turns and assistant `metadata` that knows
 *    no `tool` role (GLM-4-0414, GLM-Z1): `tool` messages become
 *    `observation` turns, each earlier call an assistant turn with the
 *    function name as metadata and the arguments (JSON text) as content;
 *  - any other template that does not read `tools`: the Hermes-style
 *    system prompt described at llm_chat_render.
 * 0 renders exactly what transformers would (tools unused).
 * Call once after load, before sharing the adapter.
 */
void llm_chat_set_tool_prompt(llm_chat *chat, int on);

/*
 * on (default 1): when a render fails with an error (not raise_exception)
 * and assistant tool calls carry arguments as objects, render once more
 * with the arguments as JSON text (templates that concatenate them, e.g.
 * DeepSeek V3's).  0 keeps transformers' behaviour: the error.
 */
void llm_chat_set_arguments_retry(llm_chat *chat, int on);

/* Template text (the default one), for parser auto-selection. */
const char *llm_chat_source(const llm_chat *chat);

/* 1 if the template mentions `tools` (so tools are delivered by the template). */
int llm_chat_template_has_tools(const llm_chat *chat);

#endif
