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

/* The options of one llm_model line: 0 or -1 with err. */
static int
line(llm_served_opts *o, const char *a, const char *b, const char *c,
    char *err)
{
    char  *args[3];
    size_t n = 0;

    memset(o, 0, sizeof(*o));
    o->parallel = 4;
    o->queue = -1;
    if (a) args[n++] = (char *) a;
    if (b) args[n++] = (char *) b;
    if (c) args[n++] = (char *) c;
    err[0] = '\0';
    return llm_served_options(o, args, n, err, 1024);
}

static void
test_options(void)
{
    char             err[1024];
    llm_served_opts  o;

    ok(line(&o, NULL, NULL, NULL, err) == 0 && o.parallel == 4 && o.queue == -1,
       "no options: the defaults stay");
    ok(line(&o, "ctx=2048", "parallel=8", "queue=0", err) == 0, "ctx, parallel, queue");
    ok(o.ctx == 2048 && o.parallel == 8 && o.queue == 0, "their values");
    ok(line(&o, "threads=3", "kv=f16", "kv_memory=512m", err) == 0
       && o.threads == 3 && o.kv == LLM_KV_F16 && o.kv_memory == 512u << 20,
       "threads, kv=f16, kv_memory=512m");
    ok(line(&o, "kv_memory=64k", "kv=f32", NULL, err) == 0
       && o.kv_memory == 64u << 10 && o.kv == LLM_KV_F32, "kv_memory=64k, kv=f32");
    ok(line(&o, "kv=q8_0", NULL, NULL, err) == 0 && o.kv == LLM_KV_Q8_0, "kv=q8_0");
    ok(line(&o, "kv=q4_0", NULL, NULL, err) == -1, "kv=q4_0: not a KV type");
    is_str(err, "invalid llm_model option \"kv=q4_0\"", "kv=q4_0: invalid, named");
    ok(line(&o, "quant=q8_0", "draft=/d", "chat=off", err) == 0
       && strcmp(o.quant, "q8_0") == 0 && strcmp(o.draft_path, "/d") == 0
       && o.chat_off, "quant, draft, chat=off (strings point into the line)");
    ok(line(&o, "draft_quant=q4_0", "draft=/d", NULL, err) == 0
       && strcmp(o.draft_quant, "q4_0") == 0 && strcmp(o.draft_path, "/d") == 0
       && o.quant == NULL, "draft_quant, draft: the model's quant= untouched");
    ok(line(&o, "draft_quant=q8_0", NULL, NULL, err) == -1, "draft_quant= without draft=");
    is_str(err, "llm_model option \"draft_quant=q8_0\" needs draft=", "draft_quant alone: said why");
    ok(line(&o, "draft_quant=", "draft=/d", NULL, err) == -1, "draft_quant= empty");

    /* bounds: as nginx took them */
    ok(line(&o, "ctx=15", NULL, NULL, err) == -1, "ctx=15 is below the minimum");
    is_str(err, "invalid llm_model option \"ctx=15\"", "ctx=15: invalid, named");
    ok(line(&o, "ctx=16", NULL, NULL, err) == 0, "ctx=16 is the minimum");
    ok(line(&o, "ctx=1048577", NULL, NULL, err) == -1, "ctx above 1048576");
    ok(line(&o, "parallel=0", NULL, NULL, err) == -1, "parallel=0");
    ok(line(&o, "parallel=257", NULL, NULL, err) == -1, "parallel=257");
    ok(line(&o, "threads=256", NULL, NULL, err) == 0, "threads=256");
    ok(line(&o, "queue=65537", NULL, NULL, err) == -1, "queue=65537");
    ok(line(&o, "ctx=-5", NULL, NULL, err) == -1, "a sign is not a number");
    ok(line(&o, "ctx=", NULL, NULL, err) == -1, "an empty number");
    ok(line(&o, "ctx=99999999999999999999999", NULL, NULL, err) == -1,
       "a number that overflows");
    ok(line(&o, "kv_memory=0", NULL, NULL, err) == -1, "kv_memory=0");
    ok(line(&o, "kv_memory=4g", NULL, NULL, err) == -1,
       "kv_memory=4g: nginx's size directives take k and m only");
    ok(line(&o, "kv=f8", NULL, NULL, err) == -1, "kv=f8");
    ok(line(&o, "chat=maybe", NULL, NULL, err) == -1, "chat=maybe");
    ok(line(&o, "quant=", NULL, NULL, err) == -1, "quant= empty");
    ok(line(&o, "draft=", NULL, NULL, err) == -1, "draft= empty");
    ok(line(&o, "ctx", NULL, NULL, err) == -1, "no '='");
    is_str(err, "invalid llm_model option \"ctx\"", "no '=': invalid");

    ok(line(&o, "batch=4", NULL, NULL, err) == -1, "an unknown option");
    is_str(err, "unknown llm_model option \"batch=4\" (known: ctx=, parallel=, "
           "threads=, queue=, kv=, kv_memory=, quant=, chat=, draft=, draft_quant=)",
           "unknown: naming the known ones");

    ok(line(&o, "ctx=16", "parallel=2", "ctx=32", err) == -1, "an option twice");
    is_str(err, "duplicate llm_model option \"ctx=32\" (\"ctx=16\" given before)",
           "twice: naming both");
    ok(line(&o, "kv=f16", "kv_memory=1m", NULL, err) == 0,
       "kv= and kv_memory= are different options");

    /* a whole line: the server's defaults, then the options */
    {
        char  *args[2] = { "parallel=8", "queue=0" };

        ok(llm_served_line(&o, "/m", 6, args, 0, err, 1024) == 0
           && strcmp(o.path, "/m") == 0 && o.parallel == 4 && o.threads == 6
           && o.queue == 16 && o.ctx == 0 && o.kv_memory == 0,
           "a bare line: parallel 4, threads ncpu, queue 4 x parallel");
        ok(llm_served_line(&o, "/m", 0, args, 1, err, 1024) == 0
           && o.parallel == 8 && o.queue == 32 && o.threads == 1,
           "parallel=8: queue 32; ncpu unknown: one thread");
        ok(llm_served_line(&o, "/m", 2, args, 2, err, 1024) == 0
           && o.parallel == 8 && o.queue == 0, "queue=0 as given");
        args[1] = "parallel=2";
        ok(llm_served_line(&o, "/m", 2, args, 2, err, 1024) == -1,
           "a line's error");
        is_str(err, "duplicate llm_model option \"parallel=2\" "
               "(\"parallel=8\" given before)", "worded by the options");
    }
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
    {
        llm_structured  *st = llm_served_structured(&s, err, sizeof(err));

        ok(st != NULL && llm_structured_vocab(st) != NULL,
           "its structured-output state (%s)", st ? "built" : err);
        llm_structured_free(st);
    }
    llm_served_summary(&o, &s, err, sizeof(err));
    ok(strncmp(err, llm_model_get_info(s.model)->architecture, strlen(llm_model_get_info(s.model)->architecture)) == 0
       && strstr(err, MODEL ", ") && strstr(err, " parameters, ") && strstr(err, s.why),
       "the summary: %s", err);
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

    /* draft_quant=: the draft quantized on load, the model as stored */
    opts(&o, MODEL);
    o.draft_path = MODEL;
    o.draft_quant = "q8_0";
    {
        int     rc = llm_served_load(&o, &s, err, sizeof(err));
        size_t  dw = rc == 0 && s.draft ? llm_model_get_info(s.draft)->weight_bytes : 0;
        size_t  mw = rc == 0 ? llm_model_get_info(s.model)->weight_bytes : 0;

        ok(rc == 0 && dw > 0 && dw < mw,
           "draft_quant=q8_0: the draft's weights %zu bytes, the model's %zu", dw, mw);
    }
    llm_served_free(&s);
    o.draft_quant = "q3_x";
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1 && strstr(err, "draft \"") == err
       && strstr(err, "q8_0") != NULL, "draft_quant=q3_x refused, naming the draft: %s", err);

    /* a model folder without a tokenizer */
    opts(&o, FIX "gemma2_f32");
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1, "no tokenizer: refused");
    ok(strncmp(err, "tokenizer: ", 11) == 0, "the tokenizer named: %s", err);

    /* no such path, or a file that is not a model: named as such */
    opts(&o, "t/fixtures/no-such-model");
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1
       && strncmp(err, "cannot access \"t/fixtures/no-such-model\" (",
                  sizeof("cannot access \"t/fixtures/no-such-model\" (") - 1) == 0,
       "no such model: refused (%s)", err);
    opts(&o, MODEL "/config.json");
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1
       && strcmp(err, "\"" MODEL "/config.json\" is neither a model folder nor a .gguf file") == 0,
       "a file that is not .gguf: refused (%s)", err);

    /* an unknown quant= scheme: the engine names the known ones */
    opts(&o, MODEL);
    o.quant = "q3_x";
    ok(llm_served_load(&o, &s, err, sizeof(err)) == -1 && strstr(err, "q8_0"),
       "quant=q3_x refused naming the known schemes: %s", err);

    test_options();

    return done_testing();
}
