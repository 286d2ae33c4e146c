/*
 * Text subcommands: tokenize, detokenize, render.  They need only the
 * tokenizer files (tokenizer.json, tokenizer_config.json) of a model
 * directory, no weights.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "llm_cli.h"
#include "chat/llm_chat.h"
#include "core/llm_ir.h"
#include "engine/llm_tokenizer.h"

static const char *
opt(int argc, char **argv, const char *name)
{
    int i;
    for (i = 1; i + 1 < argc; i++) if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return NULL;
}

static int
flag(int argc, char **argv, const char *name)
{
    int i;
    for (i = 1; i < argc; i++) if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

static llm_tokenizer *
load_tok(const char *cmd, const char *dir)
{
    char           err[1024];
    llm_tokenizer *t;

    if (dir == NULL) {
        fprintf(stderr, "llm %s: --model DIR is required\n", cmd);
        return NULL;
    }
    t = llm_tokenizer_load(dir, err, sizeof(err));
    if (t == NULL) fprintf(stderr, "llm %s: %s\n", cmd, err);
    return t;
}

static void
print_ids(const int32_t *ids, size_t n)
{
    size_t i;

    putchar('[');
    for (i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    puts("]");
}

static int
tokenize_one(llm_tokenizer *t, const char *s, size_t len, int special)
{
    int32_t *ids;
    size_t   n;

    if (llm_tokenizer_encode(t, s, len, special, &ids, &n) != 0) {
        fprintf(stderr, "llm tokenize: out of memory\n");
        return -1;
    }
    print_ids(ids, n);
    free(ids);
    return 0;
}

static char *
slurp(const char *path, size_t *len)
{
    FILE  *f = fopen(path, "rb");
    char  *buf = NULL;
    size_t cap = 0, n = 0, k;

    if (f == NULL) return NULL;
    do {
        if (n + 65536 > cap) {
            char *p = realloc(buf, cap = cap ? cap * 2 : 1 << 20);
            if (p == NULL) { free(buf); fclose(f); return NULL; }
            buf = p;
        }
        k = fread(buf + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* --file F: the whole file as one text; with --bench print throughput instead of ids */
static int
tokenize_file(llm_tokenizer *t, const char *path, int special, int bench)
{
    size_t          len, n = 0;
    char           *text = slurp(path, &len);
    int32_t        *ids = NULL;
    struct timespec a, b, ca, cb;
    double          s, cpu;

    if (text == NULL) {
        fprintf(stderr, "llm tokenize: cannot read %s\n", path);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    if (llm_tokenizer_encode(t, text, len, special, &ids, &n) != 0) {
        fprintf(stderr, "llm tokenize: out of memory\n");
        free(text);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    s = (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9;
    cpu = (double) (cb.tv_sec - ca.tv_sec) + (double) (cb.tv_nsec - ca.tv_nsec) / 1e9;
    if (bench) {   /* CPU time too: wall time on a shared machine includes waiting */
        printf("{\"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.3f, \"MB_per_s\": %.2f, "
               "\"cpu_seconds\": %.3f, \"MB_per_cpu_s\": %.2f}\n",
               len, n, s, s > 0 ? (double) len / 1e6 / s : 0.0, cpu, cpu > 0 ? (double) len / 1e6 / cpu : 0.0);
    } else {
        print_ids(ids, n);
    }
    free(ids);
    free(text);
    return 0;
}

int
llm_cmd_tokenize(int argc, char **argv)
{
    const char    *text = opt(argc, argv, "--text");
    int            special = flag(argc, argv, "--special"), rc = 0;
    llm_tokenizer *t = load_tok("tokenize", opt(argc, argv, "--model"));
    char          *line = NULL;
    size_t         cap = 0;
    ssize_t        n;
    long           lineno = 0;

    if (t == NULL) return 2;
    if (opt(argc, argv, "--file") != NULL) {
        rc = tokenize_file(t, opt(argc, argv, "--file"), special, flag(argc, argv, "--bench"));
        llm_tokenizer_free(t);
        return rc;
    }
    if (text != NULL) {
        rc = tokenize_one(t, text, strlen(text), special) ? 1 : 0;
        llm_tokenizer_free(t);
        return rc;
    }
    /* one JSON string per input line */
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_error_t je;
        json_t      *s;
        lineno++;
        if (n == 1 && line[0] == '\n') continue;
        s = json_loadb(line, (size_t) n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!json_is_string(s)) {
            fprintf(stderr, "llm tokenize: line %ld: expected a JSON string\n", lineno);
            json_decref(s);
            rc = 1;
            break;
        }
        if (tokenize_one(t, json_string_value(s), json_string_length(s), special)) rc = 1;
        json_decref(s);
        fflush(stdout);
    }
    free(line);
    llm_tokenizer_free(t);
    return rc;
}

int
llm_cmd_detokenize(int argc, char **argv)
{
    llm_tokenizer *t = load_tok("detokenize", opt(argc, argv, "--model"));
    int            skip = flag(argc, argv, "--skip-special"), rc = 0;
    char          *line = NULL;
    size_t         cap = 0;
    ssize_t        n;
    long           lineno = 0;

    if (t == NULL) return 2;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_t  *a, *v, *out;
        int32_t *ids;
        size_t   i, tl;
        char    *text, *js;
        lineno++;
        if (n == 1 && line[0] == '\n') continue;
        a = json_loadb(line, (size_t) n, 0, NULL);
        if (!json_is_array(a)) {
            fprintf(stderr, "llm detokenize: line %ld: expected a JSON array of ids\n", lineno);
            json_decref(a);
            rc = 1;
            break;
        }
        ids = malloc((json_array_size(a) + 1) * sizeof(int32_t));
        json_array_foreach(a, i, v) ids[i] = (int32_t) json_integer_value(v);
        if (llm_tokenizer_decode(t, ids, json_array_size(a), skip, &text, &tl) != 0) {
            free(ids);
            json_decref(a);
            rc = 1;
            break;
        }
        out = json_stringn_nocheck(text, tl);
        js = json_dumps(out, JSON_ENCODE_ANY);
        puts(js ? js : "null");
        fflush(stdout);
        free(js);
        json_decref(out);
        free(text);
        free(ids);
        json_decref(a);
    }
    free(line);
    llm_tokenizer_free(t);
    return rc;
}

int
llm_cmd_render(int argc, char **argv)
{
    const char    *dir = opt(argc, argv, "--model"), *file = opt(argc, argv, "--request");
    char           err[2048];
    llm_tokenizer *tok;
    llm_chat      *chat;
    json_t        *body, *v;
    json_error_t   je;
    llm_request    req;
    char          *prompt;
    size_t         len;
    int            rc;

    if (dir == NULL || file == NULL) {
        fprintf(stderr, "llm render: --model DIR --request FILE.json are required\n");
        return 2;
    }
    body = strcmp(file, "-") == 0 ? json_loadf(stdin, 0, &je) : json_load_file(file, 0, &je);
    if (!json_is_object(body)) {
        fprintf(stderr, "llm render: %s: %s\n", file, body ? "not a JSON object" : je.text);
        json_decref(body);
        return 2;
    }
    tok = llm_tokenizer_load(dir, err, sizeof(err));   /* optional: bos/eos fallback */
    chat = llm_chat_load(dir, tok, err, sizeof(err));
    if (chat == NULL) {
        fprintf(stderr, "llm render: %s\n", err);
        llm_tokenizer_free(tok);
        json_decref(body);
        return 2;
    }
    if (flag(argc, argv, "--no-tool-prompt")) llm_chat_set_tool_prompt(chat, 0);

    llm_request_init(&req);
    req.messages = json_incref(json_object_get(body, "messages"));
    req.tools = json_incref(json_object_get(body, "tools"));
    req.template_kwargs = json_incref(json_object_get(body, "chat_template_kwargs"));
    v = json_object_get(body, "add_generation_prompt");
    req.add_generation_prompt = v ? json_is_true(v) : 1;
    v = json_object_get(body, "tool_choice");
    if (json_is_string(v) && strcmp(json_string_value(v), "none") == 0) req.tool_choice = LLM_TOOL_CHOICE_NONE;

    rc = llm_chat_render(chat, &req, &prompt, &len, err, sizeof(err));
    if (rc == LLM_CHAT_OK) {
        fwrite(prompt, 1, len, stdout);
        free(prompt);
    } else {
        fprintf(stderr, "llm render: %s%s\n", rc == LLM_CHAT_ERR_REQUEST ? "template error: " : "", err);
    }
    llm_request_free(&req);
    llm_chat_free(chat);
    llm_tokenizer_free(tok);
    json_decref(body);
    return rc == LLM_CHAT_OK ? 0 : 1;
}
