/*
 * Chat adapter: template selection and loading, tool delivery (template
 * tools, Hermes-style prompt for templates without tools, tool_choice none),
 * template kwargs, raise -> request error, <think> detection, and the
 * project's own template against jinja2 renders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "tap.h"
#include "chat/llm_chat.h"
#include "parsers/llm_parser.h"

static const char *QWENISH =
    "{%- if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}";
static const char *PLAIN =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if custom %}({{ custom }}){% endif %}";

static char *
render(llm_chat *c, llm_request *req, int *rc, char *err, size_t errlen)
{
    char  *p = NULL;
    size_t n;
    *rc = llm_chat_render(c, req, &p, &n, err, errlen);
    return p;
}

static void
req_init(llm_request *r, const char *messages_json)
{
    llm_request_init(r);
    r->messages = json_loads(messages_json, 0, NULL);
    r->add_generation_prompt = 1;
}

static void
tools_and_kwargs(void)
{
    char        err[512];
    llm_chat   *q = llm_chat_from_template(QWENISH, "", "<|im_end|>", err, sizeof(err));
    llm_chat   *p = llm_chat_from_template(PLAIN, "<s>", "</s>", err, sizeof(err));
    llm_request r;
    char       *out;
    int         rc;

    if (!ok(q && p, "templates compile")) return;
    ok(llm_chat_template_has_tools(q) && !llm_chat_template_has_tools(p), "template reads tools: detected");

    req_init(&r, "[{\"role\":\"user\",\"content\":\"hi\"}]");
    r.tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{}}}]", 0, NULL);
    out = render(q, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_OK && strncmp(out, "<tools>get_weather;</tools>\n", 28) == 0, "tools delivered to the template");
    ok(out && llm_reasoning_starts_open("think", out, strlen(out)), "generation prompt opens <think>");
    free(out);

    r.tool_choice = LLM_TOOL_CHOICE_NONE;
    out = render(q, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_OK && strncmp(out, "<|im_start|>user", 16) == 0, "tool_choice none: tools withheld");
    free(out);
    r.tool_choice = LLM_TOOL_CHOICE_AUTO;

    /* a template without tools gets a Hermes-style system prompt */
    out = render(p, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_OK && strncmp(out, "<s>[system]# Tools", 18) == 0 && strstr(out, "\"name\": \"get_weather\"")
       && strstr(out, "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call></s>[user]hi</s>"),
       "tools described in a new system message");
    free(out);
    json_decref(r.messages);
    r.messages = json_loads("[{\"role\":\"system\",\"content\":\"Be nice.\"},{\"role\":\"user\",\"content\":\"hi\"}]", 0, NULL);
    out = render(p, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_OK && strncmp(out, "<s>[system]Be nice.\n\n# Tools", 28) == 0 && strstr(out, "</s>[user]hi</s>"),
       "tools prompt merged into the existing system message");
    free(out);
    llm_chat_set_tool_prompt(p, 0);
    out = render(p, &r, &rc, err, sizeof(err));
    is_str(out, "<s>[system]Be nice.</s>[user]hi</s>", "tool prompt can be switched off");
    free(out);
    llm_request_free(&r);

    /* kwargs at top level; reasoning switch */
    req_init(&r, "[{\"role\":\"user\",\"content\":\"x\"}]");
    r.template_kwargs = json_loads("{\"custom\":\"kw\"}", 0, NULL);
    out = render(p, &r, &rc, err, sizeof(err));
    is_str(out, "<s>[user]x</s>(kw)", "template kwargs reach the template");
    free(out);
    r.reasoning = 0;
    out = render(q, &r, &rc, err, sizeof(err));
    ok(out && strstr(out, "<think>\n\n</think>\n\n") && !llm_reasoning_starts_open("think", out, strlen(out)),
       "reasoning off sets enable_thinking=false");
    free(out);
    json_decref(r.template_kwargs);
    r.template_kwargs = json_loads("{\"enable_thinking\":true}", 0, NULL);
    out = render(q, &r, &rc, err, sizeof(err));
    ok(out && llm_reasoning_starts_open("think", out, strlen(out)), "chat_template_kwargs win over reasoning");
    free(out);
    llm_request_free(&r);
    llm_chat_free(q);
    llm_chat_free(p);
}

/* as transformers: tools and documents are always defined (None when absent) */
static void
defined_vars(void)
{
    char        err[256];
    llm_chat   *c = llm_chat_from_template("{{ tools is defined }}/{{ tools is none }}/{{ documents is none }}", NULL, NULL, err, sizeof(err));
    llm_request r;
    char       *out;
    int         rc;

    req_init(&r, "[{\"role\":\"user\",\"content\":\"x\"}]");
    out = c ? render(c, &r, &rc, err, sizeof(err)) : NULL;
    is_str(out, "True/True/True", "tools and documents defined as none without tools");
    free(out);
    llm_request_free(&r);
    llm_chat_free(c);
}

static void
errors(void)
{
    char        err[512];
    llm_chat   *c;
    llm_request r;
    char       *out;
    int         rc;

    c = llm_chat_from_template("{% for m in messages %}\n{% if m.role == 'tool' %}{{ raise_exception('no tools here') }}{% endif %}{% endfor %}",
                               NULL, NULL, err, sizeof(err));
    req_init(&r, "[{\"role\":\"tool\",\"content\":\"x\"}]");
    out = render(c, &r, &rc, err, sizeof(err));
    ok(out == NULL && rc == LLM_CHAT_ERR_REQUEST, "raise_exception -> request error");
    is_str(err, "no tools here", "  with the template's message");
    llm_request_free(&r);
    llm_chat_free(c);

    c = llm_chat_from_template("{{ messages[0].content + 1 }}", NULL, NULL, err, sizeof(err));
    req_init(&r, "[{\"role\":\"user\",\"content\":\"x\"}]");
    out = render(c, &r, &rc, err, sizeof(err));
    ok(out == NULL && rc == LLM_CHAT_ERR_REQUEST && strstr(err, "can only concatenate"), "type error in template -> request error: %s", err);
    llm_request_free(&r);
    llm_chat_free(c);

    /* arguments given as an object to a template that concatenates them */
    c = llm_chat_from_template("{% for m in messages %}{% for t in m.tool_calls %}{{ t.function.name + ':' + t.function.arguments }}{% endfor %}{% endfor %}",
                               NULL, NULL, err, sizeof(err));
    req_init(&r, "[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1,\"b\":\"x\"}}}]}]");
    out = render(c, &r, &rc, err, sizeof(err));
    is_str(out, "f:{\"a\": 1, \"b\": \"x\"}", "object arguments retried as JSON text");
    free(out);
    llm_chat_set_arguments_retry(c, 0);
    out = render(c, &r, &rc, err, sizeof(err));
    ok(out == NULL && rc == LLM_CHAT_ERR_REQUEST && strstr(err, "concatenate"), "without the retry: the template's error");
    llm_request_free(&r);
    llm_chat_free(c);

    c = llm_chat_from_template("ok\n{% for m in messages %}{% include 'x' %}{% endfor %}", NULL, NULL, err, sizeof(err));
    ok(c == NULL && strstr(err, "line 2") && strstr(err, "include"), "unsupported template fails at load: %s", err);

    ok(llm_reasoning_starts_open("think", "a<think>b</think>c<think>\n", 26), "opens_think: last <think> open");
    ok(!llm_reasoning_starts_open("think", "a<think>b</think>c", 18), "opens_think: closed");
    ok(!llm_reasoning_starts_open("think", "", 0), "opens_think: empty");
}

static int
write_file(const char *dir, const char *name, const char *text)
{
    char  path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs(text, f);
    return fclose(f);
}

static void
loading(void)
{
    char        tmpl[] = "/tmp/llm_chat_testXXXXXX", err[512], path[600];
    char       *dir = mkdtemp(tmpl), *out;
    llm_chat   *c;
    llm_request r;
    int         rc;

    if (!ok(dir != NULL, "temp dir")) return;
    /* list form: default + tool_use */
    write_file(dir, "tokenizer_config.json",
               "{\"bos_token\": {\"content\": \"<B>\"}, \"eos_token\": \"<E>\", \"model_max_length\": 1e30, \"chat_template\": ["
               "{\"name\": \"default\", \"template\": \"D{{ bos_token }}{{ eos_token }}\"},"
               "{\"name\": \"tool_use\", \"template\": \"T{{ tools | length }}\"}]}");
    c = llm_chat_load(dir, NULL, err, sizeof(err));
    ok(c != NULL, "list-form chat_template loads (%s)", c ? "" : err);
    req_init(&r, "[{\"role\":\"user\",\"content\":\"x\"}]");
    out = render(c, &r, &rc, err, sizeof(err));
    is_str(out, "D<B><E>", "default template without tools, bos/eos from config");
    free(out);
    r.tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", 0, NULL);
    out = render(c, &r, &rc, err, sizeof(err));
    is_str(out, "T1", "tool_use template when the request has tools");
    free(out);
    llm_request_free(&r);
    llm_chat_free(c);

    /* chat_template.jinja fallback */
    write_file(dir, "tokenizer_config.json", "{\"eos_token\": \"<E>\"}");
    write_file(dir, "chat_template.jinja", "J{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}\n");
    c = llm_chat_load(dir, NULL, err, sizeof(err));
    req_init(&r, "[{\"role\":\"user\",\"content\":\"x\"}]");
    out = c ? render(c, &r, &rc, err, sizeof(err)) : NULL;
    is_str(out, "Jx<E>", "chat_template.jinja used when the config has none");
    free(out);
    llm_request_free(&r);
    llm_chat_free(c);

    /* a template we cannot run fails at load, naming line and construct */
    write_file(dir, "chat_template.jinja", "{% for m in messages %}\n{{ m.content | frobnicate }}{% endfor %}");
    c = llm_chat_load(dir, NULL, err, sizeof(err));
    ok(c == NULL && strstr(err, "line 2") && strstr(err, "frobnicate"), "bad template fails at load: %s", err);
    llm_chat_free(c);

    snprintf(path, sizeof(path), "%s/chat_template.jinja", dir);
    unlink(path);
    c = llm_chat_load(dir, NULL, err, sizeof(err));
    ok(c == NULL && strstr(err, "no chat template"), "no template: clear error");
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* the project's own template (copy stored in the fixture) against jinja2 */
static void
project_template(void)
{
    FILE       *f = fopen("t/fixtures/text/ngxllm.chat.jsonl", "r"), *cf = fopen("t/fixtures/text/conversations.jsonl", "r");
    char       *line = NULL, *cline = NULL, err[512];
    size_t      cap = 0, ccap = 0, n = 0, bad = 0;
    llm_chat   *c = NULL;
    json_t     *first;

    if (!ok(f && cf, "project template fixture present")) return;
    if (getline(&line, &cap, f) > 0 && (first = json_loads(line, 0, NULL)) != NULL) {
        c = llm_chat_from_template(json_string_value(json_object_get(first, "template")), "", "<|im_end|>", err, sizeof(err));
        json_decref(first);
    }
    if (ok(c != NULL, "project template compiles")) {
        llm_chat_set_tool_prompt(c, 0);
        while (getline(&line, &cap, f) > 0 && getline(&cline, &ccap, cf) > 0) {
            json_t     *g = json_loads(line, 0, NULL), *conv = json_loads(cline, 0, NULL);
            const char *want = json_string_value(json_object_get(g, "prompt"));
            llm_request r;
            char       *out;
            int         rc;
            llm_request_init(&r);
            r.messages = json_incref(json_object_get(conv, "messages"));
            r.tools = json_incref(json_object_get(conv, "tools"));
            r.add_generation_prompt = json_is_true(json_object_get(conv, "add_generation_prompt"));
            r.template_kwargs = json_incref(json_object_get(conv, "chat_template_kwargs"));
            out = render(c, &r, &rc, err, sizeof(err));
            if (want ? (out == NULL || strcmp(out, want) != 0) : rc != LLM_CHAT_ERR_REQUEST) {
                if (bad++ == 0) printf("# conversation %zu: got '%.100s'\n", n, out ? out : err);
            }
            n++;
            free(out);
            llm_request_free(&r);
            json_decref(g);
            json_decref(conv);
        }
        ok(n >= 20 && bad == 0, "project template: %zu renders identical to jinja2 (%zu differ)", n, bad);
    }
    llm_chat_free(c);
    free(line);
    free(cline);
    fclose(f);
    fclose(cf);
}

/* continue_final_message: the prompt ends with the final assistant text */
static void
continue_final(void)
{
    char        err[512];
    llm_chat   *q = llm_chat_from_template(QWENISH, "", "<|im_end|>", err, sizeof(err));
    llm_request r;
    char       *out;
    int         rc;

    if (!ok(q != NULL, "template compiles")) return;
    req_init(&r, "[{\"role\":\"user\",\"content\":\"Name a colour\"},"
                 "{\"role\":\"assistant\",\"content\":\"The colour is \"}]");
    out = render(q, &r, &rc, err, sizeof(err));
    ok(out && strstr(out, "The colour is <|im_end|>") && llm_reasoning_starts_open("think", out, strlen(out)),
       "without it the partial turn is closed and a new one opened");
    free(out);
    r.continue_final_message = 1;
    out = render(q, &r, &rc, err, sizeof(err));
    is_str(out, "<|im_start|>user\nName a colour<|im_end|>\n<|im_start|>assistant\nThe colour is",
           "with it the prompt ends with the partial text (trailing space dropped)");
    free(out);
    llm_request_free(&r);

    req_init(&r, "[{\"role\":\"user\",\"content\":\"hi\"}]");
    r.continue_final_message = 1;
    out = render(q, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_ERR_REQUEST && strstr(err, "assistant"), "a final user message cannot be continued: %s", err);
    free(out);
    llm_request_free(&r);

    req_init(&r, "[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\" \\n\"}]");
    r.continue_final_message = 1;
    out = render(q, &r, &rc, err, sizeof(err));
    ok(rc == LLM_CHAT_ERR_REQUEST && strstr(err, "no text"), "an empty final message cannot be continued: %s", err);
    free(out);
    llm_request_free(&r);
    llm_chat_free(q);
}

int
main(void)
{
    tools_and_kwargs();
    continue_final();
    defined_vars();
    errors();
    loading();
    project_template();
    return done_testing();
}
