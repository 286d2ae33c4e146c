/*
 * Request preparation without nginx (chat/llm_prepare.h): body -> IR ->
 * the model it names -> prompt ids, a /tokenize or /detokenize answer, or
 * the embeddings inputs' ids; and each refusal with its status.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

#include "chat/llm_prepare.h"
#include "chat/llm_served.h"

#define MODEL "models/ngxllm-tiny"

static llm_served  served;
static int         any_model;    /* the test's llm_any_model */

static int
find(void *data, const char *name, llm_prepare_model *m)
{
    if (name && name[0] && strcmp(name, "tiny") != 0 && !any_model) {
        return -1;
    }
    m->owner = &served;
    m->alias = "tiny";
    m->model = served.model;
    m->tok = served.tok;
    m->chat = served.chat;
    m->reasoning_parser = served.reasoning_parser;
    m->context_length = served.n_ctx;
    return 0;
}

static void
config(llm_prepare_config *c, llm_api_kind api)
{
    memset(c, 0, sizeof(*c));
    c->api = api;
    c->split_special_tokens = 1;
    c->embeddings_max_tokens = 64;
    c->find_model = find;
}

static void
prep(llm_api_kind api, const char *body, llm_prepared *p)
{
    llm_prepare_config  c;

    config(&c, api);
    llm_prepared_init(p);
    llm_prepare(&c, body, strlen(body), p);
}

#define TOOLS "\"tools\":[{\"name\":\"a\",\"input_schema\":{\"type\":\"object\"}}," \
              "{\"name\":\"b\",\"description\":\"a long description of b\"," \
              "\"input_schema\":{\"type\":\"object\"}}]"
#define ASK   "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]"

int
main(void)
{
    char                 err[512], want[64];
    size_t               n_messages;
    json_t              *o;
    llm_prepared         p;
    llm_served_opts      so;
    llm_prepare_config   c;

    memset(&so, 0, sizeof(so));
    so.path = MODEL;
    so.parallel = 1;
    so.threads = 1;
    so.ctx = 512;
    if (!ok(llm_served_load(&so, &served, err, sizeof(err)) == 0,
            "the shipped model loads")) {
        printf("# %s\n", err);
        return done_testing();
    }

    /* chat: prompt ids, the model found */
    prep(LLM_API_CHAT, "{\"model\":\"tiny\"," ASK "}", &p);
    is_int(p.err.status, 0, "chat: no error");
    ok(p.internal == NULL, "chat: nothing internal");
    ok(p.model.owner == &served, "chat: the named model");
    ok(p.prompt.n_ids > 4, "chat: prompt ids (%zu)", p.prompt.n_ids);
    llm_prepared_free(&p);

    /* no model named: the server's only one; an unknown one: 404 */
    prep(LLM_API_CHAT, "{" ASK "}", &p);
    ok(p.err.status == 0 && p.model.owner == &served, "no model named: found");
    llm_prepared_free(&p);
    prep(LLM_API_CHAT, "{\"model\":\"nope\"," ASK "}", &p);
    is_int(p.err.status, 404, "unknown model: 404");
    ok(p.model.owner == NULL && p.prompt.n_ids == 0, "unknown model: nothing prepared");
    llm_prepared_free(&p);
    any_model = 1;
    prep(LLM_API_CHAT, "{\"model\":\"nope\"," ASK "}", &p);
    ok(p.err.status == 0 && p.model.owner == &served,
       "unknown model with the server's fallback: found");
    llm_prepared_free(&p);
    any_model = 0;

    /* a bad body: the protocol's 400 */
    prep(LLM_API_CHAT, "{\"messages\":", &p);
    is_int(p.err.status, 400, "broken JSON: 400");
    llm_prepared_free(&p);
    prep(LLM_API_COMPLETIONS, "{\"prompt\":[1,2,99999]}", &p);
    is_int(p.err.status, 400, "completions: an id outside the vocabulary: 400");
    llm_prepared_free(&p);

    /* count_tokens counts the prompt messages would run, named tool included */
    prep(LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens\":8," TOOLS ","
         "\"tool_choice\":{\"type\":\"tool\",\"name\":\"a\"}," ASK "}", &p);
    n_messages = p.prompt.n_ids;
    ok(p.err.status == 0 && n_messages > 0, "messages with a named tool: its prompt");
    llm_prepared_free(&p);
    prep(LLM_API_COUNT_TOKENS, "{\"model\":\"tiny\"," TOOLS ","
         "\"tool_choice\":{\"type\":\"tool\",\"name\":\"a\"}," ASK "}", &p);
    is_int(p.prompt.n_ids, n_messages, "count_tokens: the same count");
    snprintf(want, sizeof(want), "{\"input_tokens\":%zu}", n_messages);
    ok(p.answer.len == strlen(want) && memcmp(p.answer.data, want, p.answer.len) == 0,
       "count_tokens: the answer is %s", want);
    llm_prepared_free(&p);
    prep(LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens\":8," ASK "}", &p);
    is_int((long) p.answer.len, 0, "messages: no answer made before generation");
    llm_prepared_free(&p);
    prep(LLM_API_COUNT_TOKENS, "{\"model\":\"tiny\"," TOOLS "," ASK "}", &p);
    ok(p.prompt.n_ids > n_messages, "count_tokens with every tool: more (%zu > %zu)",
       p.prompt.n_ids, n_messages);
    llm_prepared_free(&p);

    /* Anthropic's thinking budget against max_tokens, and its beta */
    prep(LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens\":2,\"thinking\":"
         "{\"type\":\"enabled\",\"budget_tokens\":2048}," ASK "}", &p);
    is_int(p.err.status, 400, "budget_tokens >= max_tokens: 400");
    llm_prepared_free(&p);
    config(&c, LLM_API_MESSAGES);
    c.anthropic_beta = "interleaved-thinking-2025-05-14";
    c.anthropic_beta_len = strlen(c.anthropic_beta);
    llm_prepared_init(&p);
    {
        const char *b = "{\"model\":\"tiny\",\"max_tokens\":2,\"thinking\":"
                        "{\"type\":\"enabled\",\"budget_tokens\":2048}," ASK "}";
        llm_prepare(&c, b, strlen(b), &p);
    }
    is_int(p.err.status, 0, "budget_tokens >= max_tokens with the interleaved beta: allowed");
    llm_prepared_free(&p);

    /* /tokenize and /detokenize: the whole answer */
    prep(LLM_API_TOKENIZE, "{\"model\":\"tiny\",\"prompt\":\"Hello world\"}", &p);
    o = json_loadb(p.answer.data, p.answer.len, 0, NULL);
    ok(o && json_integer_value(json_object_get(o, "count")) == (json_int_t) p.prompt.n_ids
       && p.prompt.n_ids > 0, "tokenize: count and ids");
    is_int(json_integer_value(json_object_get(o, "max_model_len")), 512,
           "tokenize: the model's context");
    json_decref(o);
    llm_prepared_free(&p);
    {
        char          body[256], *ids;
        llm_prepared  t;

        prep(LLM_API_TOKENIZE, "{\"prompt\":\"Hello world\"}", &t);
        o = json_loadb(t.answer.data, t.answer.len, 0, NULL);
        ids = json_dumps(json_object_get(o, "tokens"), JSON_COMPACT);
        snprintf(body, sizeof(body), "{\"tokens\":%s}", ids ? ids : "[]");
        free(ids);
        json_decref(o);
        llm_prepared_free(&t);
        prep(LLM_API_DETOKENIZE, body, &p);
        is_int(p.err.status, 0, "detokenize: no error");
        ok(p.answer.len && strstr(p.answer.data, "\"prompt\":\"Hello world\""),
           "detokenize: the text back");
        llm_prepared_free(&p);
    }
    prep(LLM_API_DETOKENIZE, "{\"tokens\":[99999]}", &p);
    is_int(p.err.status, 400, "detokenize: an unknown id: 400");
    llm_prepared_free(&p);

    /* embeddings: every input's ids, bounded in total */
    prep(LLM_API_EMBEDDINGS, "{\"input\":[\"Hello\",\"world wide\"]}", &p);
    ok(p.err.status == 0 && p.n_inputs == 2 && p.input_ids[0] && p.input_n[0] > 0
       && p.input_n[1] > 0, "embeddings: both texts tokenized");
    llm_prepared_free(&p);
    prep(LLM_API_EMBEDDINGS, "{\"input\":[[1,2,3]]}", &p);
    ok(p.err.status == 0 && p.input_ids[0] == NULL && p.input_n[0] == 3,
       "embeddings: ids as given");
    llm_prepared_free(&p);
    prep(LLM_API_EMBEDDINGS, "{\"input\":[[1,99999]]}", &p);
    is_int(p.err.status, 400, "embeddings: an id outside the vocabulary: 400");
    ok(strstr(p.err.message, "outside the vocabulary") != NULL, "saying so");
    llm_prepared_free(&p);
    prep(LLM_API_EMBEDDINGS, "{\"input\":[[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
         "17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40],"
         "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]]}", &p);
    is_int(p.err.status, 400, "embeddings: 65 tokens above a limit of 64: 400");
    is_str(p.err.code, "too_many_tokens", "embeddings: too_many_tokens");
    llm_prepared_free(&p);

    llm_served_free(&served);
    return done_testing();
}
