/*
 * Protocol-neutral intermediate representation (docs/architecture.md).
 *
 * OpenAI and Anthropic requests both become one llm_request; every model's
 * output becomes one stream of llm_event values and one llm_result.  Plain C
 * with malloc + jansson so protocols, adapter and parsers are testable without
 * nginx; the glue frees a request through a pool cleanup.
 */
#ifndef LLM_IR_H
#define LLM_IR_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef enum {
    LLM_API_CHAT = 0,        /* OpenAI /v1/chat/completions */
    LLM_API_COMPLETIONS,     /* OpenAI /v1/completions */
    LLM_API_MESSAGES,        /* Anthropic /v1/messages */
    LLM_API_COUNT_TOKENS,    /* Anthropic /v1/messages/count_tokens */
    LLM_API_EMBEDDINGS,
    LLM_API_MODELS,
    LLM_API_HEALTH,
    LLM_API_TOKENIZE,        /* /tokenize (vLLM, llama-server shapes) */
    LLM_API_DETOKENIZE,      /* /detokenize */
    LLM_API_RESPONSES,       /* OpenAI /v1/responses */
    LLM_API_METRICS,         /* /metrics (Prometheus) */
    LLM_API_PAGE             /* the chat page (src/page/chat.html) */
} llm_api_kind;

typedef enum {
    LLM_TOOL_CHOICE_AUTO = 0,
    LLM_TOOL_CHOICE_NONE,
    LLM_TOOL_CHOICE_REQUIRED,   /* OpenAI "required", Anthropic "any" */
    LLM_TOOL_CHOICE_NAMED       /* a specific function; see tool_choice_name */
} llm_tool_choice;

/* One logit_bias entry: added to the token's logit before sampling. */
typedef struct {
    int32_t id;
    float   bias;
} llm_logit_bias;

/*
 * The sampling fields a request set (llm_sampling.set).  A field it left
 * out takes the model's generation_config.json default, then the protocol's.
 */
#define LLM_SAMPLING_SET_TEMPERATURE         (1u << 0)
#define LLM_SAMPLING_SET_TOP_P               (1u << 1)
#define LLM_SAMPLING_SET_TOP_K               (1u << 2)
#define LLM_SAMPLING_SET_REPETITION_PENALTY  (1u << 3)

typedef struct {
    unsigned set;                /* LLM_SAMPLING_SET_* */
    double   temperature;        /* 0 = greedy */
    double   top_p;              /* 1 = off */
    int      top_k;              /* 0 = off */
    double   min_p;              /* 0 = off */
    double   presence_penalty;
    double   frequency_penalty;
    double   repetition_penalty; /* 1 = off */
    int      has_seed;
    uint64_t seed;
    llm_logit_bias *logit_bias;  /* parsed and range-checked; malloc'd */
    size_t   n_logit_bias;
    int      logprobs;           /* return logprobs of chosen tokens */
    int      top_logprobs;       /* and of the N most likely */
} llm_sampling;

typedef enum {
    LLM_EFFORT_UNSET = 0,     /* the model decides how long it thinks */
    LLM_EFFORT_LOW,
    LLM_EFFORT_MEDIUM,
    LLM_EFFORT_HIGH,
    LLM_EFFORT_MAX            /* Anthropic's max: no budget */
} llm_reasoning_effort;

typedef struct {
    llm_api_kind   api;
    char          *model;          /* requested alias, NULL if absent */

    /*
     * Conversation in the shape Hugging Face chat templates expect:
     * [{"role": "system|user|assistant|tool", "content": "text",
     *   "reasoning_content": "...",                         (assistant, optional)
     *   "tool_calls": [{"id","type":"function",
     *                   "function":{"name","arguments":{...object...}}}],
     *   "tool_call_id": "...", "name": "..."}]               (tool results)
     * "developer" is mapped to "system" by the protocol layer.  Owned ref.
     */
    json_t        *messages;
    /* [{"type":"function","function":{"name","description","parameters"}}] or NULL */
    json_t        *tools;
    llm_tool_choice tool_choice;
    char          *tool_choice_name;
    int            parallel_tool_calls;   /* default 1 */
    json_t        *template_kwargs;       /* chat_template_kwargs object or NULL */
    int            reasoning;             /* -1 model default, 0 off, 1 on */
    long           thinking_budget;       /* Anthropic thinking.budget_tokens; -1 none */
    /* reasoning_effort, reasoning.effort, output_config.effort: a thinking
     * budget from the tokens the request may generate when no explicit
     * one is given (llm_session_reasoning_budget) */
    llm_reasoning_effort reasoning_effort;
    int            add_generation_prompt; /* default 1 */
    /*
     * The last message is a partial assistant turn to continue (Anthropic
     * prefill, vLLM's continue_final_message): the prompt ends with its
     * text, with no end of turn and no new generation prompt.
     */
    int            continue_final_message;

    /* /v1/completions: raw prompt text or token ids (no template). */
    char          *prompt;
    size_t         prompt_len;
    int32_t       *prompt_ids;
    size_t         n_prompt_ids;
    int            echo;

    llm_sampling   sampling;
    char         **stop;           /* stop strings, never emitted */
    size_t         n_stop;
    long           max_tokens;     /* -1 = not given */
    long           default_max_tokens;  /* the protocol's when not given
                                           (completions: 16); -1 = none */
    int            n;              /* choices; default 1 */
    int            stream;
    int            include_usage;  /* stream_options.include_usage */
    json_t        *response_format;
    char          *grammar;        /* extension: GBNF the output must follow */
    char          *regex;          /* extension: regular expression the output must match */
    json_t        *metadata;       /* accepted; the Responses API echoes it */
    /* Fields the response repeats as the request sent them (the Responses
     * API's instructions, tools, tool_choice, text, reasoning, ...): an
     * object merged into the response object, or NULL.  Owned ref. */
    json_t        *response_fields;
    /* Responses include: ["reasoning.encrypted_content"]: reasoning items
     * carry their text sealed (api/llm_reasoning_seal.h) */
    int            seal_reasoning;
    /* Responses API with kept responses and store not false: the items
     * kept with the response (those of previous_response_id, then input),
     * an array; NULL: the response is not kept.  Owned ref. */
    json_t        *response_input;
    int            return_token_ids;  /* extension: choices[].token_ids */
    /* extension "speculation": -1 absent (the location's llm_speculation),
     * LLM_SPECULATION_OFF / _AUTO / _ON */
    int            speculation;
    /*
     * Anthropic cache_control breakpoints: the last one ends after the
     * first cache_messages messages (0: after the tools); -1: none.
     * cache_ttl: the longest TTL asked, in seconds (300 or 3600).
     */
    long           cache_messages;
    int            cache_ttl;
} llm_request;

#define LLM_SPECULATION_OFF   0
#define LLM_SPECULATION_AUTO  1
#define LLM_SPECULATION_ON    2

void llm_request_init(llm_request *r);
void llm_request_free(llm_request *r);   /* frees members, not r */

/* ---- output side ---- */

typedef enum {
    LLM_EV_CONTENT = 0,
    LLM_EV_REASONING,
    LLM_EV_TOOL_BEGIN,   /* index, id, name */
    LLM_EV_TOOL_ARGS,    /* index, text = JSON fragment of the arguments object */
    LLM_EV_TOOL_END      /* index */
} llm_event_type;

typedef struct {
    llm_event_type type;
    int            index;   /* tool call index within the message */
    const char    *id;      /* tool call id ("call_..."), TOOL_BEGIN only */
    const char    *name;    /* tool name, TOOL_BEGIN only */
    const char    *text;    /* CONTENT, REASONING, TOOL_ARGS; not NUL-terminated */
    size_t         len;
} llm_event;

typedef void (*llm_event_fn)(void *ctx, const llm_event *ev);

typedef enum {
    LLM_FINISH_NONE = 0,
    LLM_FINISH_STOP,        /* EOS or end of turn */
    LLM_FINISH_STOP_SEQ,    /* a request stop string matched (OpenAI: "stop") */
    LLM_FINISH_LENGTH,
    LLM_FINISH_TOOL_CALLS,
    LLM_FINISH_CANCELLED,
    LLM_FINISH_ERROR
} llm_finish;

typedef struct {
    char *id;          /* "call_..." */
    char *name;
    char *arguments;   /* JSON text of the arguments object */
} llm_tool_call;

/* Log-probabilities of one generated token (filled by the sampler). */
#define LLM_MAX_TOP_LOGPROBS 20

typedef struct {
    int32_t id;
    float   logprob;
} llm_logprob_entry;

typedef struct {
    llm_logprob_entry chosen;
    int               n_top;
    llm_logprob_entry top[LLM_MAX_TOP_LOGPROBS];
} llm_token_logprobs;

typedef struct {
    long prompt_tokens;
    long completion_tokens;
    long cached_tokens;          /* prompt tokens read from the prefix cache */
    long reasoning_tokens;       /* of completion_tokens, those that reasoned */
    long cache_creation_tokens;  /* prompt tokens up to the last cache_control
                                    breakpoint written to the cache (Anthropic) */
} llm_usage;

typedef struct {
    char          *content;     /* NULL when empty */
    char          *reasoning;   /* NULL when none */
    llm_tool_call *tool_calls;
    size_t         n_tool_calls;
    llm_finish     finish;
    char          *stop_sequence;  /* the stop string that matched, if any */
    llm_usage      usage;
    const int32_t *token_ids;      /* generated ids when requested; borrowed */
    size_t         n_token_ids;
} llm_result;

void llm_result_free(llm_result *r);

const char *llm_finish_openai(llm_finish f);     /* "stop", "length", "tool_calls" */
const char *llm_finish_anthropic(llm_finish f);  /* "end_turn", "max_tokens", ... */

/* Random printable ids: "call_" + 24 alnum, "msg_" + ..., from /dev/urandom. */
void llm_random_id(char *out, size_t outlen, const char *prefix, size_t nrand);

#endif
