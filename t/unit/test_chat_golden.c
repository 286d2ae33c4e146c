/*
 * Chat templates of the 5 real models rendered by our Jinja interpreter
 * must be byte-identical to transformers.apply_chat_template (fixtures from
 * t/fixtures/gen/make_text_fixtures.py), raise where it raises, and the
 * prompt must tokenize to the same ids.  The same for the templates of the
 * families whose npm packages ship none (t/fixtures/templates/, typed from
 * the reference models), rendered by transformers over the same conversations.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "tap.h"
#include "chat/llm_chat.h"
#include "engine/llm_tokenizer.h"

#define FIX "t/fixtures/text/"
#define CACHE "t/.cache/tokenizers/"

static json_t *
load_lines(const char *path)
{
    FILE   *f = fopen(path, "r");
    char   *line = NULL;
    size_t  cap = 0;
    ssize_t n;
    json_t *arr;

    if (f == NULL) return NULL;
    arr = json_array();
    while ((n = getline(&line, &cap, f)) > 0) {
        json_t *v = json_loadb(line, (size_t) n, JSON_ALLOW_NUL, NULL);
        json_array_append_new(arr, v ? v : json_null());
    }
    free(line);
    fclose(f);
    return arr;
}

/* fixtures of the shipped model list the sizes of the files they were made from */
static int
fixtures_match_model(const char *name)
{
    char  path[512], line[1024], file[512];
    FILE *f;
    long  want;
    int   okay = 1;

    snprintf(path, sizeof(path), FIX "%s.size", name);
    if ((f = fopen(path, "r")) == NULL) return 1;
    while (fgets(line, sizeof(line), f)) {
        FILE *m;
        if (sscanf(line, "%ld %511s", &want, file) != 2 || strcmp(file, "total") == 0) continue;
        m = fopen(file, "rb");
        if (m == NULL || fseek(m, 0, SEEK_END) != 0 || ftell(m) != want) okay = 0;
        if (m) fclose(m);
    }
    fclose(f);
    return okay;
}

static void
check_template(const char *name, json_t *convs, int check_ids)
{
    char           dir[256], path[256], err[1024];
    llm_tokenizer *tok;
    llm_chat      *chat;
    json_t        *gold;
    size_t         i, bad = 0, bad_ids = 0, errors = 0;

    snprintf(path, sizeof(path), FIX "%s.chat.jsonl", name);
    if (access(path, R_OK) != 0) return;
    if (!fixtures_match_model(name)) {
        printf("# %s changed since its fixtures were made: rerun t/fixtures/gen/make_text_fixtures.py\n", name);
        return;
    }
    if (strcmp(name, "ngxllm-tiny") == 0) snprintf(dir, sizeof(dir), "models/%s", name);
    else snprintf(dir, sizeof(dir), CACHE "%s", name);
    tok = llm_tokenizer_load(dir, err, sizeof(err));
    chat = llm_chat_load(dir, tok, err, sizeof(err));
    if (!ok(chat != NULL, "%s: chat template compiles", name)) {
        diag(err);
        llm_tokenizer_free(tok);
        return;
    }
    llm_chat_set_tool_prompt(chat, 0);   /* HF gives tools only to templates that read them */
    llm_chat_set_arguments_retry(chat, 0);   /* and raises where arguments objects do not fit */
    snprintf(path, sizeof(path), FIX "%s.chat.jsonl", name);
    gold = load_lines(path);
    for (i = 0; i < json_array_size(convs) && i < json_array_size(gold); i++) {
        json_t     *c = json_array_get(convs, i), *g = json_array_get(gold, i);
        llm_request req;
        char       *prompt = NULL;
        size_t      plen;
        int         rc;
        const char *want = json_string_value(json_object_get(g, "prompt"));

        llm_request_init(&req);
        req.messages = json_incref(json_object_get(c, "messages"));
        req.tools = json_incref(json_object_get(c, "tools"));
        req.add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt"));
        req.template_kwargs = json_incref(json_object_get(c, "chat_template_kwargs"));
        rc = llm_chat_render(chat, &req, &prompt, &plen, err, sizeof(err));
        if (want == NULL) {   /* HF raised */
            const char *type = json_string_value(json_object_get(g, "type"));
            errors++;
            if (rc != LLM_CHAT_ERR_REQUEST) {
                bad++;
                printf("# %s conv %zu: HF raised '%s' but we rendered\n", name, i, json_string_value(json_object_get(g, "error")));
            } else if (type && strcmp(type, "TemplateError") == 0
                       && strcmp(err, json_string_value(json_object_get(g, "error"))) != 0) {
                bad++;
                printf("# %s conv %zu: raise message '%s' != '%s'\n", name, i, err, json_string_value(json_object_get(g, "error")));
            }
        } else if (rc != LLM_CHAT_OK) {
            bad++;
            printf("# %s conv %zu: error %s\n", name, i, err);
        } else if (plen != strlen(want) || memcmp(prompt, want, plen) != 0) {
            size_t k = 0;
            bad++;
            while (k < plen && prompt[k] == want[k]) k++;
            printf("# %s conv %zu differs at byte %zu:\n#  got  '%.80s'\n#  want '%.80s'\n", name, i, k, prompt + k, want + k);
        } else if (check_ids && tok) {
            int32_t *ids;
            size_t   nids, k;
            json_t  *gids = json_object_get(g, "ids");
            if (llm_tokenizer_encode(tok, prompt, plen, 0, &ids, &nids) == 0) {
                int same = nids == json_array_size(gids);
                for (k = 0; same && k < nids; k++) same = ids[k] == (int32_t) json_integer_value(json_array_get(gids, k));
                if (!same) bad_ids++;
                free(ids);
            }
        }
        free(prompt);
        llm_request_free(&req);
    }
    ok(i >= 20 && i == json_array_size(convs) && bad == 0,
       "%s: %zu renders identical to transformers (%zu of them errors), %zu differ", name, i, errors, bad);
    if (check_ids) ok(bad_ids == 0, "%s: rendered prompts tokenize to HF ids (%zu differ)", name, bad_ids);
    json_decref(gold);
    llm_chat_free(chat);
    llm_tokenizer_free(tok);
}

static char *
read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *p;
    long  n;

    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t) n + 1);
    if (p && fread(p, 1, (size_t) n, f) != (size_t) n) { free(p); p = NULL; }
    if (p) p[n] = '\0';
    fclose(f);
    return p;
}

/* want with every date transformers printed (recorded per format) replaced by today's */
static char *
today_dates(const char *want, json_t *strf)
{
    const char *fmt;
    json_t     *v;
    char       *cur = strdup(want);

    json_object_foreach(strf, fmt, v) {
        char        now[128], *next, *at;
        const char *old = json_string_value(v);
        time_t      t = time(NULL);
        struct tm   tmv;
        size_t      ol, nl, count = 0, k;

        localtime_r(&t, &tmv);
        nl = strftime(now, sizeof(now), fmt, &tmv);
        ol = old ? strlen(old) : 0;
        if (ol == 0) continue;
        for (at = strstr(cur, old); at; at = strstr(at + ol, old)) count++;
        if (count == 0) continue;
        next = malloc(strlen(cur) + count * (nl + 1) + 1);
        for (k = 0, at = cur; ; ) {
            char *hit = strstr(at, old);
            if (hit == NULL) { strcpy(next + k, at); break; }
            memcpy(next + k, at, (size_t) (hit - at));
            k += (size_t) (hit - at);
            memcpy(next + k, now, nl);
            k += nl;
            at = hit + ol;
        }
        free(cur);
        cur = next;
    }
    return cur;
}

/*
 * form NULL: the conversations as sent, the adapter's own tool delivery off
 * (transformers' behaviour); form "model_form": the adapter on, against the
 * conversations brought into the model's form by the generator (tools in
 * Phi-4-mini's system message, GLM-Z1's observation turns).
 */
static void
check_family(const char *name, const char *form, json_t *tokens, json_t *convs)
{
    char        path[256], err[1024];
    char       *src;
    json_t     *gold, *head, *meta = json_object_get(tokens, name);
    llm_chat   *chat;
    size_t      i, bad = 0, errors = 0;

    snprintf(path, sizeof(path), "t/fixtures/templates/%s.jinja", name);
    src = read_text(path);
    snprintf(path, sizeof(path), FIX "%s%s%s.renders.jsonl", name, form ? "." : "", form ? form : "");
    gold = load_lines(path);
    if (!ok(src && gold && meta && json_array_size(gold) > 1, "%s: template and %s renders", name, form ? form : "plain")) {
        free(src);
        json_decref(gold);
        return;
    }
    head = json_array_get(gold, 0);
    chat = llm_chat_from_template(src, json_string_value(json_object_get(meta, "bos_token")),
                                  json_string_value(json_object_get(meta, "eos_token")), err, sizeof(err));
    if (!ok(chat != NULL, "%s: template compiles", name)) {
        diag(err);
        free(src);
        json_decref(gold);
        return;
    }
    llm_chat_set_tool_prompt(chat, form != NULL);
    llm_chat_set_arguments_retry(chat, 0);
    for (i = 0; i < json_array_size(convs) && i + 1 < json_array_size(gold); i++) {
        json_t     *c = json_array_get(convs, i), *g = json_array_get(gold, i + 1);
        llm_request req;
        char       *prompt = NULL, *want = NULL;
        size_t      plen;
        int         rc;

        llm_request_init(&req);
        req.messages = json_incref(json_object_get(c, "messages"));
        req.tools = json_incref(json_object_get(c, "tools"));
        req.add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt"));
        req.template_kwargs = json_incref(json_object_get(c, "chat_template_kwargs"));
        rc = llm_chat_render(chat, &req, &prompt, &plen, err, sizeof(err));
        if (json_object_get(g, "prompt") == NULL) {
            errors++;
            if (rc != LLM_CHAT_ERR_REQUEST) {
                bad++;
                printf("# %s conv %zu: transformers raised '%s' but we rendered\n", name, i,
                       json_string_value(json_object_get(g, "error")));
            }
        } else if (rc != LLM_CHAT_OK) {
            bad++;
            printf("# %s conv %zu: error %s\n", name, i, err);
        } else {
            want = today_dates(json_string_value(json_object_get(g, "prompt")), json_object_get(head, "strftime"));
            if (plen != strlen(want) || memcmp(prompt, want, plen) != 0) {
                size_t k = 0;
                bad++;
                while (k < plen && prompt[k] == want[k]) k++;
                printf("# %s conv %zu differs at byte %zu:\n#  got  '%.80s'\n#  want '%.80s'\n", name, i, k, prompt + k, want + k);
            }
        }
        free(want);
        free(prompt);
        llm_request_free(&req);
    }
    ok(i >= 20 && i == json_array_size(convs) && bad == 0,
       "%s%s%s: %zu renders identical to %s (%zu of them errors), %zu differ", name, form ? " " : "", form ? form : "", i,
       json_string_value(json_object_get(head, "renderer")), errors, bad);
    llm_chat_free(chat);
    json_decref(gold);
    free(src);
}

int
main(void)
{
    json_t *convs;
    FILE   *probe = fopen(CACHE "qwen3/tokenizer_config.json", "r");
    json_t *tokens;
    const char *fam;
    json_t *unused;

    convs = load_lines(FIX "conversations.jsonl");
    if (!ok(convs != NULL && json_array_size(convs) >= 20, "conversations loaded")) return done_testing();
    /* family templates need no tokenizer */
    tokens = json_load_file("t/fixtures/templates/tokens.json", 0, NULL);
    ok(tokens != NULL, "family template list loaded");
    json_object_foreach(tokens, fam, unused) {
        check_family(fam, NULL, tokens, convs);
        if (json_object_get(unused, "model_form")) check_family(fam, "model_form", tokens, convs);
    }
    json_decref(tokens);
    if (probe == NULL) {
        printf("# no tokenizers in " CACHE " (run t/fetch-tokenizers.sh): real-model templates skipped\n");
        json_decref(convs);
        return done_testing();
    }
    fclose(probe);
    check_template("qwen3", convs, 1);
    check_template("llama3", convs, 1);
    check_template("llama3_1", convs, 1);
    check_template("gemma3", convs, 1);
    /* transformers 5 re-tokenizes deepseek differently from its tokenizer.json: compare text only */
    check_template("deepseek_v3", convs, 0);
    /* the shipped default model (fixtures made from models/ngxllm-tiny as committed) */
    check_template("ngxllm-tiny", convs, 1);
    json_decref(convs);
    return done_testing();
}
