/*
 * Jinja interpreter: feature cases rendered by jinja2 with transformers'
 * chat-template environment (t/fixtures/text/jinja_cases.jsonl, from
 * make_text_fixtures.py --jinja-cases) must match byte for byte; errors
 * must be reported in the same phase; compile errors name line and construct.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "tap.h"
#include "chat/llm_jinja.h"

/* template text on one line for test names */
static const char *
oneline(const char *t, char *buf, size_t len)
{
    size_t i, o = 0;

    for (i = 0; t[i] && o + 3 < len && o < 60; i++) {
        if (t[i] == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
        else buf[o++] = t[i];
    }
    buf[o] = '\0';
    return buf;
}

static int
render(const char *t, json_t *ctx, char **out, char *err, size_t errlen, int *compiled)
{
    llm_jinja *j = llm_jinja_compile(t, strlen(t), LLM_JINJA_HF, err, errlen);
    size_t     n;
    int        rc;

    *out = NULL;
    *compiled = j != NULL;
    if (j == NULL) return LLM_JINJA_ERROR;
    rc = llm_jinja_render(j, ctx, out, &n, err, errlen);
    llm_jinja_free(j);
    return rc;
}

static void
golden_cases(void)
{
    FILE   *f = fopen("t/fixtures/text/jinja_cases.jsonl", "r");
    char   *line = NULL;
    size_t  cap = 0, n_cases = 0;
    ssize_t n;
    json_t *ctx = NULL;

    if (!ok(f != NULL, "jinja_cases.jsonl present")) return;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_t     *c = json_loadb(line, (size_t) n, 0, NULL);
        const char *t = json_string_value(json_object_get(c, "t"));
        const char *want = json_string_value(json_object_get(c, "out"));
        const char *phase = json_string_value(json_object_get(c, "phase"));
        const char *werr = json_string_value(json_object_get(c, "error"));
        char        err[512], *out, name[80];
        int         rc, compiled;

        if (ctx == NULL) {
            ctx = json_incref(json_object_get(c, "context"));
            json_decref(c);
            continue;
        }
        n_cases++;
        oneline(t, name, sizeof(name));
        t = t ? t : "";
        rc = render(t, ctx, &out, err, sizeof(err), &compiled);
        if (want) {
            if (!ok(rc == LLM_JINJA_OK && strcmp(out, want) == 0, "renders like jinja2: %s", name)) {
                printf("#  got  '%s'\n#  want '%s'\n", rc == LLM_JINJA_OK ? out : err, want);
            }
        } else if (!strcmp(phase, "raise")) {
            is_int(rc, LLM_JINJA_RAISED, "raise_exception reported as raised: %s", name);
            is_str(err, werr, "  with the template's message");
        } else if (!strcmp(phase, "compile")) {
            ok(!compiled, "compile error like jinja2 (%s): %s", err, name);
        } else {
            ok(rc == LLM_JINJA_ERROR, "error like jinja2 ('%s' / ours '%s')", werr, err);
        }
        free(out);
        json_decref(c);
    }
    ok(n_cases >= 50, "%zu jinja2 cases", n_cases);
    json_decref(ctx);
    free(line);
    fclose(f);
}

static void
compile_errors(void)
{
    static const struct { const char *t, *want; } cases[] = {
        { "ok\n{% include 'x.j2' %}", "line 2: unknown tag 'include'" },
        { "a\nb\n{{ x | frobnicate }}", "line 3: unknown filter 'frobnicate'" },
        { "{% for x in y %}\n{{ x }}", "line 1: 'for' block is never closed" },
        { "{{ x.pop() }}", "line 1: unsupported method 'pop()'" },
        { "{{ x is frob }}", "line 1: unknown test 'frob'" },
        { "{{ 'abc }}", "line 1: unterminated string" },
        { "\n\n{{ lipsum() }}", "line 3: unknown function 'lipsum()'" },
        { "{% for x in y recursive %}{% endfor %}", "line 1: recursive loops are not supported" },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char       err[256] = "";
        llm_jinja *j = llm_jinja_compile(cases[i].t, strlen(cases[i].t), LLM_JINJA_HF, err, sizeof(err));
        ok(j == NULL && strncmp(err, cases[i].want, strlen(cases[i].want)) == 0, "compile error: %s", err);
        llm_jinja_free(j);
    }
}

static void
whitespace_flags(void)
{
    const char *t = "  {% if 1 %}\nx\n  {% endif %}\n";
    char        err[128], *out;
    size_t      n;
    llm_jinja  *plain = llm_jinja_compile(t, strlen(t), 0, err, sizeof(err));
    llm_jinja  *hf = llm_jinja_compile(t, strlen(t), LLM_JINJA_HF, err, sizeof(err));
    json_t     *ctx = json_object();

    ok(llm_jinja_render(plain, ctx, &out, &n, err, sizeof(err)) == 0 && strcmp(out, "  \nx\n  ") == 0,
       "no trim/lstrip without flags");
    free(out);
    ok(llm_jinja_render(hf, ctx, &out, &n, err, sizeof(err)) == 0 && strcmp(out, "x\n") == 0,
       "trim_blocks + lstrip_blocks");
    free(out);
    json_decref(ctx);
    llm_jinja_free(plain);
    llm_jinja_free(hf);
}

static void
uses_var(void)
{
    const char *t = "{% if tools %}{{ tools | length }}{% endif %}{{ messages[0].content }}";
    char        err[64];
    llm_jinja  *j = llm_jinja_compile(t, strlen(t), LLM_JINJA_HF, err, sizeof(err));

    ok(j && llm_jinja_uses_var(j, "tools"), "uses_var: tools");
    ok(j && !llm_jinja_uses_var(j, "documents"), "uses_var: documents not read");
    llm_jinja_free(j);
}

/* one compiled template rendered by several threads at once */
typedef struct {
    const llm_jinja *j;
    json_t          *ctx;
    int              bad;
} thr_arg;

static void *
thr_main(void *p)
{
    thr_arg *a = p;
    int      i;

    for (i = 0; i < 300; i++) {
        char  *out, err[64];
        size_t n;
        if (llm_jinja_render(a->j, a->ctx, &out, &n, err, sizeof(err)) != 0 || strcmp(out, "0:a,1:b,2:c;3") != 0) a->bad++;
        free(out);
    }
    return NULL;
}

static void
threads(void)
{
    const char *t = "{% set ns = namespace(k=0) %}{% for x in xs %}{{ loop.index0 }}:{{ x }}{% if not loop.last %},{% endif %}"
                    "{% set ns.k = ns.k + 1 %}{% endfor %};{{ ns.k }}";
    char        err[64];
    llm_jinja  *j = llm_jinja_compile(t, strlen(t), LLM_JINJA_HF, err, sizeof(err));
    thr_arg     a[4];
    pthread_t   th[4];
    int         i, bad = 0;

    for (i = 0; i < 4; i++) {
        a[i].j = j;
        a[i].ctx = json_pack("{s:[sss]}", "xs", "a", "b", "c");
        a[i].bad = 0;
        pthread_create(&th[i], NULL, thr_main, &a[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        bad += a[i].bad;
        json_decref(a[i].ctx);
    }
    is_int(bad, 0, "4 threads x 300 renders of one compiled template agree");
    llm_jinja_free(j);
}

int
main(void)
{
    golden_cases();
    compile_errors();
    whitespace_flags();
    uses_var();
    threads();
    return done_testing();
}
