/*
 * Loading a model as the server serves it (chat/llm_served.h), without
 * nginx: what the glue's llm_model and `llm chat` both get, and the words
 * of each refusal that the server logs after `llm_model "alias": `.
 */
#include <string.h>

#include "tap.h"

#include "chat/llm_served.h"

#define MODEL "models/ngxllm-tiny"
#define FIX   "t/fixtures/models/"

static void
opts(llm_served_opts *o, const char *path)
{
    memset(o, 0, sizeof(*o));
    o->path = path;
    o->parallel = 2;
    o->threads = 1;
}

int
main(void)
{
    char             err[1024];
    llm_served       s;
    llm_served_opts  o;

    /* the shipped model: everything a request needs */
    opts(&o, MODEL);
    ok(llm_served_load(&o, &s, err, sizeof(err)) == 0, "the shipped model loads");
    ok(s.model && s.tok && s.chat, "weights, tokenizer and chat template");
    ok(s.draft == NULL, "no draft unless asked");
    is_int(s.n_ctx, llm_model_get_info(s.model)->max_position_embeddings,
           "ctx unset: the model's context");
    ok(s.kv_memory > 0, "kv_memory unset: the default budget (%zu bytes)",
       s.kv_memory);
    ok(s.tool_parser && s.tool_def && strcmp(s.tool_def->id, s.tool_parser) == 0,
       "a tool parser chosen for the model (%s)", s.tool_parser);
    ok(s.why[0] != '\0', "the choice says why (%s)", s.why);
    is_str(s.chat_missing, "", "nothing missing");
    llm_served_free(&s);
    ok(s.model == NULL && s.chat == NULL, "freed and cleared");

    /* ctx= and kv_memory= as given */
    opts(&o, MODEL);
    o.ctx = 1024;
    o.kv_memory = 8u << 20;
    ok(llm_served_load(&o, &s, err, sizeof(err)) == 0, "ctx=1024 loads");
    is_int(s.n_ctx, 1024, "ctx=1024: that context");
    is_int(s.kv_memory, 8u << 20, "kv_memory as given");
    llm_served_free(&s);

    /* chat=off: no template, and nothing said missing */
    opts(&o, MODEL);
    o.chat_off = 1;
    ok(llm_served_load(&o, &s, err, sizeof(err)) == 0 && s.chat == NULL,
       "chat=off: no template");
    is_str(s.chat_missing, "", "chat=off: not reported as missing");
    llm_served_free(&s);

    /* a draft with the same vocabulary is accepted ... */
    opts(&o, MODEL);
    o.draft_path = MODEL;
    ok(llm_served_load(&o, &s, err, sizeof(err)) == 0 && s.draft != NULL,
       "a draft of the same vocabulary");
    llm_served_free(&s);

    /* ... one with another is refused, naming the draft */
    opts(&o, MODEL);
    o.draft_path = FIX "qwen3_f32";
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1, "a draft of another vocabulary is refused");
    ok(strncmp(err, "draft \"" FIX "qwen3_f32\": ", 7 + strlen(FIX "qwen3_f32") + 3) == 0,
       "naming the draft: %s", err);
    ok(s.model == NULL, "nothing kept after a failure");

    /* a model folder without a tokenizer */
    opts(&o, FIX "gemma2_f32");
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1, "no tokenizer: refused");
    ok(strncmp(err, "tokenizer: ", 11) == 0, "the tokenizer named: %s", err);

    /* no such path: the engine's words */
    opts(&o, "t/fixtures/no-such-model");
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1 && err[0],
       "no such model: refused (%s)", err);

    /* an unknown quant= scheme: the engine names the known ones */
    opts(&o, MODEL);
    o.quant = "q3_x";
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1 && strstr(err, "q8_0"),
       "quant=q3_x refused naming the known schemes: %s", err);

    return done_testing();
}
