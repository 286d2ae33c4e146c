/*
 * Chat adapter: the model's chat template, compiled at load, rendered per
 * request with the variables transformers passes to chat templates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "chat/llm_chat.h"
#include "core/llm_file.h"
#include "chat/llm_jinja.h"
#include "engine/llm_gguf.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

struct llm_chat {
    llm_jinja *tmpl;          /* "default" template */
    llm_jinja *tool_tmpl;     /* "tool_use" template, NULL if none */
    char      *source;
    char      *bos, *eos;
    json_t    *special;       /* other special tokens of the config (unk, pad, additional), as transformers passes them */
    int        uses_tools;    /* template reads `tools` */
    int        system_tools;  /* it reads tools only from a system message's `tools` (Phi-4-mini) */
    int        call_text;     /* it never reads `tool_calls`: earlier calls go into the content as the
                                 model writes them, <|tool_call|>[...]<|/tool_call|> (Phi-4-mini) */
    int        observations;  /* its turns are user, assistant with `metadata` and `observation`,
                                 and it knows no `tool` role (GLM-4-0414, GLM-Z1) */
    int        tool_prompt;   /* bring tools and tool turns in the model's form (see the header) */
    int        args_retry;    /* retry with tool-call arguments as JSON text */
};

static char *
dupz(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    char  *d = malloc(n + 1);
    if (d) {
        if (n) memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static char *
token_string(json_t *cfg, const char *key)
{
    json_t *v = json_object_get(cfg, key);

    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_is_string(v) ? dupz(json_string_value(v)) : NULL;
}

static llm_jinja *
compile(const char *src, const char *what, char *err, size_t errlen)
{
    char       e[512];
    llm_jinja *t = llm_jinja_compile(src, strlen(src), LLM_JINJA_HF, e, sizeof(e));

    if (t == NULL) ERR("chat template%s%s: %s", what ? " " : "", what ? what : "", e);
    return t;
}

static llm_chat *
make(const char *source, const char *tool_source, const char *bos, const char *eos, char *err, size_t errlen)
{
    llm_chat *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        ERR("out of memory");
        return NULL;
    }
    c->source = dupz(source);
    c->bos = dupz(bos ? bos : "");
    c->eos = dupz(eos ? eos : "");
    c->special = json_object();
    c->tmpl = compile(source, NULL, err, errlen);
    if (c->tmpl && tool_source) c->tool_tmpl = compile(tool_source, "'tool_use'", err, errlen);
    if (c->source == NULL || c->bos == NULL || c->eos == NULL || c->tmpl == NULL || (tool_source && c->tool_tmpl == NULL)) {
        llm_chat_free(c);
        return NULL;
    }
    c->uses_tools = llm_jinja_uses_var(c->tmpl, "tools");
    c->system_tools = !c->uses_tools && llm_jinja_mentions(c->tmpl, "tools");
    c->call_text = c->system_tools && !llm_jinja_mentions(c->tmpl, "tool_calls");
    c->observations = llm_jinja_mentions(c->tmpl, "observation") && llm_jinja_mentions(c->tmpl, "metadata")
                      && !llm_jinja_mentions(c->tmpl, "tool") && !llm_jinja_mentions(c->tmpl, "tool_calls");
    c->tool_prompt = 1;
    c->args_retry = 1;
    return c;
}

llm_chat *
llm_chat_from_template(const char *source, const char *bos_token, const char *eos_token,
                       char *err, size_t errlen)
{
    return make(source, NULL, bos_token, eos_token, err, errlen);
}

llm_chat *
llm_chat_load(const char *model_dir, const llm_tokenizer *tok, char *err, size_t errlen)
{
    int absent;

    return llm_chat_open(model_dir, tok, &absent, err, errlen);
}

llm_chat *
llm_chat_open(const char *model_dir, const llm_tokenizer *tok, int *absent, char *err, size_t errlen)
{
    char         path[4096], e[512];
    json_t      *cfg = NULL, *ct;
    const char  *src = NULL, *tool_src = NULL;
    char        *file_src = NULL, *bos, *eos;
    llm_chat    *c;

    *absent = 0;
    /* a folder's tokenizer_config.json, or a GGUF file's (beside it, or its tokenizer.chat_template) */
    cfg = llm_model_doc(model_dir, "tokenizer_config.json", JSON_DECODE_INT_AS_REAL, absent, e, sizeof(e));
    if (cfg == NULL && !*absent) {
        ERR("%s", e);
        return NULL;
    }
    *absent = 0;
    ct = json_object_get(cfg, "chat_template");
    if (json_is_string(ct)) {
        src = json_string_value(ct);
    } else if (json_is_array(ct)) {
        size_t  i;
        json_t *e;
        json_array_foreach(ct, i, e) {
            const char *name = json_string_value(json_object_get(e, "name"));
            const char *t = json_string_value(json_object_get(e, "template"));
            if (name && t && strcmp(name, "default") == 0) src = t;
            if (name && t && strcmp(name, "tool_use") == 0) tool_src = t;
        }
        if (src == NULL && tool_src == NULL && json_array_size(ct)) {
            src = json_string_value(json_object_get(json_array_get(ct, 0), "template"));
        }
        if (src == NULL) src = tool_src;
    }
    if (src == NULL && !llm_gguf_is_path(model_dir)) {
        snprintf(path, sizeof(path), "%s/chat_template.jinja", model_dir);
        if (llm_file_exists(path)) {
            file_src = llm_file_read(path, NULL, e, sizeof(e));
            if (file_src == NULL) {
                ERR("%s", e);
                json_decref(cfg);
                return NULL;
            }
        }
        src = file_src;
    }
    if (src == NULL) {
        ERR("%s: no chat template (tokenizer_config.json chat_template or chat_template.jinja)", model_dir);
        *absent = 1;
        json_decref(cfg);
        return NULL;
    }
    bos = token_string(cfg, "bos_token");
    eos = token_string(cfg, "eos_token");
    if (bos == NULL && tok && llm_tokenizer_bos(tok)) bos = dupz(llm_tokenizer_bos(tok));
    if (eos == NULL && tok && llm_tokenizer_eos(tok)) eos = dupz(llm_tokenizer_eos(tok));
    c = make(src, tool_src && tool_src != src ? tool_src : NULL, bos, eos, err, errlen);
    if (c != NULL) {
        static const char *const keys[] = { "unk_token", "pad_token", NULL };
        size_t i;
        json_t *extra = json_object_get(cfg, "additional_special_tokens"), *list, *e;
        for (i = 0; keys[i]; i++) {
            char *v = token_string(cfg, keys[i]);
            if (v && *v) json_object_set_new(c->special, keys[i], json_string(v));
            free(v);
        }
        if (json_is_array(extra)) {
            list = json_array();
            json_array_foreach(extra, i, e) {
                if (json_is_object(e)) e = json_object_get(e, "content");
                if (json_is_string(e)) json_array_append(list, e);
            }
            json_object_set_new(c->special, "additional_special_tokens", list);
        }
    }
    free(bos);
    free(eos);
    free(file_src);
    json_decref(cfg);
    return c;
}

void
llm_chat_free(llm_chat *c)
{
    if (c == NULL) return;
    llm_jinja_free(c->tmpl);
    llm_jinja_free(c->tool_tmpl);
    free(c->source);
    free(c->bos);
    free(c->eos);
    json_decref(c->special);
    free(c);
}

const char *llm_chat_source(const llm_chat *c) { return c->source; }
int llm_chat_template_has_tools(const llm_chat *c) { return c->uses_tools; }
void llm_chat_set_tool_prompt(llm_chat *c, int on) { c->tool_prompt = on; }
void llm_chat_set_arguments_retry(llm_chat *c, int on) { c->args_retry = on; }

/* Tool descriptions for templates that do not render tools themselves (Hermes-style calls). */
static char *
tools_prompt(json_t *tools)
{
    static const char head[] =
        "# Tools\n\n"
        "You can call the functions described inside <tools></tools> below.\n"
        "<tools>";
    static const char tail[] =
        "\n</tools>\n\n"
        "To call a function, answer with one <tool_call></tool_call> block per call, each holding a JSON "
        "object with the function name and its arguments:\n"
        "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    size_t  i, len = sizeof(head) + sizeof(tail);
    json_t *t;
    char  **parts = calloc(json_array_size(tools) + 1, sizeof(char *));
    char   *out, *p;

    if (parts == NULL) return NULL;
    json_array_foreach(tools, i, t) {
        parts[i] = json_dumps(t, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        len += (parts[i] ? strlen(parts[i]) : 0) + 1;
    }
    out = malloc(len);
    if (out != NULL) {
        p = out;
        memcpy(p, head, sizeof(head) - 1);
        p += sizeof(head) - 1;
        for (i = 0; i < json_array_size(tools); i++) {
            *p++ = '\n';
            if (parts[i]) {
                memcpy(p, parts[i], strlen(parts[i]));
                p += strlen(parts[i]);
            }
        }
        memcpy(p, tail, sizeof(tail));
    }
    for (i = 0; i < json_array_size(tools); i++) free(parts[i]);
    free(parts);
    return out;
}

/* messages with the tools prompt merged into (or put before) the first system message */
static json_t *
messages_with_tools(json_t *messages, json_t *tools)
{
    char   *tp = tools_prompt(tools);
    json_t *out, *first = json_array_get(messages, 0), *sys;
    size_t  i;

    if (tp == NULL) return NULL;
    out = json_array();
    if (first && json_is_object(first)
        && json_is_string(json_object_get(first, "role"))
        && strcmp(json_string_value(json_object_get(first, "role")), "system") == 0
        && json_is_string(json_object_get(first, "content")))
    {
        const char *c = json_string_value(json_object_get(first, "content"));
        size_t      cl = strlen(c), tl = strlen(tp);
        char       *merged = malloc(cl + tl + 3);
        if (merged == NULL) { free(tp); json_decref(out); return NULL; }
        memcpy(merged, c, cl);
        memcpy(merged + cl, "\n\n", 2);
        memcpy(merged + cl + 2, tp, tl + 1);
        sys = json_copy(first);
        json_object_set_new(sys, "content", json_string(merged));
        free(merged);
        json_array_append_new(out, sys);
        i = 1;
    } else {
        json_array_append_new(out, json_pack("{s:s, s:s}", "role", "system", "content", tp));
        i = 0;
    }
    for (; i < json_array_size(messages); i++) json_array_append(out, json_array_get(messages, i));
    free(tp);
    return out;
}

/* next in place of v (which is released): next may be NULL (out of memory) */
static json_t *
replace(json_t *v, json_t *next)
{
    json_decref(v);
    return next;
}

/* ---- tools and tool turns in the form of templates that read them their own way ---- */

static int
role_is(json_t *m, const char *role)
{
    const char *r = json_string_value(json_object_get(m, "role"));
    return r != NULL && strcmp(r, role) == 0;
}

/* a function's arguments as JSON text: text as given, an object as tojson writes it */
static json_t *
arguments_text(json_t *args)
{
    char   *text;
    json_t *r;

    if (json_is_string(args)) return json_incref(args);
    if ((text = llm_jinja_dumps(args ? args : json_null())) == NULL) return NULL;
    r = json_stringn_nocheck(text, strlen(text));
    free(text);
    return r;
}

/*
 * Phi-4-mini's template reads tools from the system message, as a JSON list
 * of the functions (its model card: {"role": "system", "content": ...,
 * "tools": json.dumps([...])}): the first message gets them, or a system
 * message is put in front.
 */
static json_t *
messages_with_system_tools(json_t *messages, json_t *tools)
{
    json_t *list = json_array(), *t, *out = json_array(), *sys = NULL, *text;
    char   *s;
    size_t  i;

    if (list == NULL || out == NULL) goto fail;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        json_array_append(list, json_is_object(fn) ? fn : t);
    }
    if ((s = llm_jinja_dumps(list)) == NULL) goto fail;
    text = json_stringn_nocheck(s, strlen(s));
    free(s);
    if (text == NULL) goto fail;
    i = 0;
    if (role_is(json_array_get(messages, 0), "system")) {
        sys = json_copy(json_array_get(messages, 0));
        i = 1;
    } else {
        sys = json_pack("{s:s, s:s}", "role", "system", "content", "You are a helpful assistant with some tools.");
    }
    if (sys == NULL) {
        json_decref(text);
        goto fail;
    }
    json_object_set_new(sys, "tools", text);
    json_array_append_new(out, sys);
    for (; i < json_array_size(messages); i++) json_array_append(out, json_array_get(messages, i));
    json_decref(list);
    return out;
fail:
    json_decref(list);
    json_decref(out);
    return NULL;
}

/* one call as {"name", "arguments"}, the arguments as an object where their text is one */
static json_t *
call_object(json_t *call)
{
    json_t *fn = json_object_get(call, "function"), *args = json_object_get(fn, "arguments"), *parsed = NULL;

    if (json_is_string(args)) parsed = json_loadb(json_string_value(args), json_string_length(args), JSON_DECODE_ANY, NULL);
    return json_pack("{s:O?, s:o}", "name", json_object_get(fn, "name"),
                     "arguments", parsed ? parsed : json_incref(args ? args : json_null()));
}

/*
 * Earlier calls of an assistant turn appended to its content as the model
 * wrote them, <|tool_call|>[{"name": ..., "arguments": ...}]<|/tool_call|>
 * (for a template that drops tool_calls: Phi-4-mini).  NULL out of memory;
 * messages itself (a new reference) when no turn has calls.
 */
static json_t *
messages_with_call_text(json_t *messages)
{
    json_t *out = NULL, *m;
    size_t  i, k;

    json_array_foreach(messages, i, m) {
        json_t     *calls = json_object_get(m, "tool_calls"), *list, *call, *nm;
        const char *content = json_string_value(json_object_get(m, "content"));
        char       *s, *text;
        size_t      cl, sl;

        if (!role_is(m, "assistant") || !json_is_array(calls) || json_array_size(calls) == 0) continue;
        if (json_object_get(m, "content") != NULL && !json_is_null(json_object_get(m, "content")) && content == NULL)
            continue;   /* content parts: left as they are */
        if (out == NULL && (out = json_copy(messages)) == NULL) return NULL;
        if ((list = json_array()) == NULL) goto fail;
        json_array_foreach(calls, k, call) {
            if (json_array_append_new(list, call_object(call)) < 0) break;
        }
        s = k == json_array_size(calls) ? llm_jinja_dumps(list) : NULL;
        json_decref(list);
        if (s == NULL) goto fail;
        cl = content ? strlen(content) : 0;
        sl = strlen(s);
        if ((text = malloc(cl + sl + 32)) == NULL) { free(s); goto fail; }
        memcpy(text, content ? content : "", cl);
        memcpy(text + cl, "<|tool_call|>", 13);
        memcpy(text + cl + 13, s, sl);
        memcpy(text + cl + 13 + sl, "<|/tool_call|>", 15);
        free(s);
        nm = json_copy(m);
        if (nm == NULL) { free(text); goto fail; }
        json_object_set_new(nm, "content", json_stringn_nocheck(text, cl + 13 + sl + 14));
        json_object_del(nm, "tool_calls");
        free(text);
        json_array_set_new(out, i, nm);
    }
    return out ? out : json_incref(messages);
fail:
    json_decref(out);
    return NULL;
}

/*
 * GLM-4-0414's turns: a tool result is an `observation` turn, and each call
 * an assistant turn with the function name as `metadata` and the arguments
 * (JSON text) as content, after the turn's own text if it has any.
 */
static json_t *
messages_as_observations(json_t *messages)
{
    json_t *out = json_array(), *m;
    size_t  i, k;

    if (out == NULL) return NULL;
    json_array_foreach(messages, i, m) {
        json_t *calls = json_object_get(m, "tool_calls"), *call, *content = json_object_get(m, "content");

        if (role_is(m, "tool")) {
            if (json_array_append_new(out, json_pack("{s:s, s:O?}", "role", "observation", "content", content)) < 0)
                goto fail;
        } else if (role_is(m, "assistant") && json_is_array(calls) && json_array_size(calls) > 0) {
            if (content != NULL && !json_is_null(content) && !(json_is_string(content) && json_string_length(content) == 0)) {
                json_t *own = json_copy(m);
                if (own == NULL) goto fail;
                json_object_del(own, "tool_calls");
                if (json_array_append_new(out, own) < 0) goto fail;
            }
            json_array_foreach(calls, k, call) {
                json_t *fn = json_object_get(call, "function");
                json_t *args = arguments_text(json_object_get(fn, "arguments"));
                if (args == NULL) goto fail;
                if (json_array_append_new(out, json_pack("{s:s, s:O?, s:o}", "role", "assistant", "metadata",
                                                         json_object_get(fn, "name"), "content", args)) < 0)
                    goto fail;
            }
        } else if (json_array_append(out, m) < 0) {
            goto fail;
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* a copy of messages with every object tool-call argument serialized; NULL when there is none */
static json_t *
arguments_as_text(json_t *messages)
{
    json_t *out = NULL, *m, *calls, *call, *fn, *args;
    size_t  i, k;

    json_array_foreach(messages, i, m) {
        calls = json_object_get(m, "tool_calls");
        json_array_foreach(calls, k, call) {
            fn = json_object_get(call, "function");
            args = json_object_get(fn, "arguments");
            if (json_is_object(args)) {
                char *text;
                if (out == NULL) out = json_deep_copy(messages);
                if (out == NULL) return NULL;
                text = llm_jinja_dumps(args);   /* as tojson writes it; keeps the marks of request text */
                if (text) {
                    json_object_set_new(json_object_get(json_array_get(json_object_get(json_array_get(out, i),
                                        "tool_calls"), k), "function"), "arguments", json_stringn_nocheck(text, strlen(text)));
                    free(text);
                }
            }
        }
    }
    return out;
}

/* ---- request text inside the prompt (llm_chat_render_prompt) ---- */

/*
 * Special-token text in request strings is marked before rendering: one
 * byte 0xFF (never part of valid UTF-8, so never in request or template
 * text) after the first character of each occurrence.  The template moves
 * request text around as it likes; the marks travel with it.  After the
 * render they are taken out, and where each stood the tokenizer is told
 * that the special token there is text (llm_tok_encode_opts.plain_at).
 * Inside the mark a special token's text is broken, so a template that
 * slices request text cannot uncover it either.
 */
#define MARK  ((char) 0xFF)

static size_t
utf8_char_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && ((unsigned char) s[k] & 0xC0) == 0x80) k++;
    return k;
}

/* s with marks, malloc'd into *out; 0 with *out NULL when s has no special-token text; -1 out of memory */
static int
mark_text(const llm_tokenizer *tok, const char *s, size_t n, char **out, size_t *outn)
{
    size_t i, j = 0, hits = 0, k;
    char  *o;

    *out = NULL;
    for (i = 0; i < n; i++) if (llm_tokenizer_special_at(tok, s + i, n - i)) hits++;
    if (hits == 0) return 0;
    o = malloc(n + hits + 1);
    if (o == NULL) return -1;
    for (i = 0; i < n; ) {
        if (llm_tokenizer_special_at(tok, s + i, n - i)) {
            k = utf8_char_len(s + i, n - i);
            memcpy(o + j, s + i, k);
            j += k;
            o[j++] = MARK;
            i += k;
            continue;
        }
        o[j++] = s[i++];
    }
    o[j] = '\0';
    *out = o;
    *outn = j;
    return 0;
}

/* v with marks in every string and object key (a new reference; v itself when nothing changes); NULL out of memory */
static json_t *
mark_value(const llm_tokenizer *tok, json_t *v)
{
    json_t     *r = NULL, *x, *y;
    const char *key;
    size_t      i, kn;
    char       *text;

    switch (json_typeof(v)) {
    case JSON_STRING:
        if (mark_text(tok, json_string_value(v), json_string_length(v), &text, &kn) < 0) return NULL;
        if (text == NULL) return json_incref(v);
        r = json_stringn_nocheck(text, kn);
        free(text);
        return r;
    case JSON_ARRAY:
        json_array_foreach(v, i, x) {
            if ((y = mark_value(tok, x)) == NULL) { json_decref(r); return NULL; }
            if (r == NULL && y != x) {
                size_t k;
                r = json_array();
                for (k = 0; k < i; k++) json_array_append(r, json_array_get(v, k));
            }
            if (r) json_array_append(r, y);
            json_decref(y);
        }
        return r ? r : json_incref(v);
    case JSON_OBJECT: {
        int changed = 0;
        r = json_object();
        if (r == NULL) return NULL;
        json_object_foreach(v, key, x) {
            if ((y = mark_value(tok, x)) == NULL
                || mark_text(tok, key, strlen(key), &text, &kn) < 0)
            {
                json_decref(y);
                json_decref(r);
                return NULL;
            }
            changed |= y != x || text != NULL;
            json_object_set_new_nocheck(r, text ? text : key, y);
            free(text);
        }
        if (changed) return r;
        json_decref(r);
        return json_incref(v);
    }
    default:
        return json_incref(v);
    }
}

/* takes the marks out of p->text and lists where they stood */
static int
unmark(llm_chat_prompt *p)
{
    size_t i, j = 0, last = (size_t) -1, n = 0, cap = 0;
    char  *t = p->text;

    for (i = 0; i < p->len; i++) {
        if (t[i] == MARK) {
            if (last == (size_t) -1 || (n && p->plain_at[n - 1] == last)) continue;
            if (n == cap) {
                size_t *np = realloc(p->plain_at, (cap ? cap * 2 : 16) * sizeof(size_t));
                if (np == NULL) return -1;
                p->plain_at = np;
                cap = cap ? cap * 2 : 16;
            }
            p->plain_at[n++] = last;
            continue;
        }
        if (((unsigned char) t[i] & 0xC0) != 0x80) last = j;
        t[j++] = t[i];
    }
    t[j] = '\0';
    p->len = j;
    p->n_plain_at = n;
    return 0;
}

void
llm_chat_prompt_free(llm_chat_prompt *p)
{
    free(p->text);
    free(p->plain_at);
    memset(p, 0, sizeof(*p));
}

int
llm_chat_prompt_encode(const llm_chat_prompt *p, const llm_tokenizer *tok, int add_special,
                       int32_t **ids, size_t *n_ids)
{
    llm_tok_encode_opts o = { 0 };

    o.add_special = add_special;
    o.parse_special = 1;
    o.plain_at = p->plain_at;
    o.n_plain_at = p->n_plain_at;
    return llm_tokenizer_encode_opts(tok, p->text, p->len, &o, ids, n_ids);
}

int
llm_chat_render(const llm_chat *c, const llm_request *req, char **prompt, size_t *len,
                char *err, size_t errlen)
{
    llm_chat_prompt p;
    int             rc = llm_chat_render_prompt(c, NULL, req, &p, err, errlen);

    *prompt = p.text;
    *len = p.len;
    free(p.plain_at);
    return rc;
}

/*
 * continue_final_message: the prompt is cut where the final assistant
 * message's text (without surrounding white space) last appears, as
 * transformers does, so that the model goes on with that text instead of
 * ending the turn and opening a new one.
 */
static int
cut_after_final_message(llm_chat_prompt *p, const llm_request *req,
                        char *err, size_t errlen)
{
    json_t     *last;
    const char *c, *role;
    size_t      b, e, n, i;

    last = json_array_get(req->messages, json_array_size(req->messages) - 1);
    role = json_string_value(json_object_get(last, "role"));
    c = json_string_value(json_object_get(last, "content"));
    if (role == NULL || strcmp(role, "assistant") != 0) {
        ERR("the final message must be an assistant message to be continued");
        return LLM_CHAT_ERR_REQUEST;
    }
    n = c ? strlen(c) : 0;
    for (b = 0; b < n && strchr(" \t\r\n", c[b]); b++) { }
    for (e = n; e > b && strchr(" \t\r\n", c[e - 1]); e--) { }
    if (e == b) {
        ERR("the final assistant message to continue has no text");
        return LLM_CHAT_ERR_REQUEST;
    }
    for (i = p->len >= e - b ? p->len - (e - b) + 1 : 0; i-- > 0; ) {
        if (memcmp(p->text + i, c + b, e - b) == 0) {
            p->len = i + (e - b);
            p->text[p->len] = '\0';
            while (p->n_plain_at && p->plain_at[p->n_plain_at - 1] >= p->len) {
                p->n_plain_at--;
            }
            return LLM_CHAT_OK;
        }
    }
    ERR("the final assistant message does not appear in the prompt the chat "
        "template renders, so it cannot be continued");
    return LLM_CHAT_ERR_REQUEST;
}

int
llm_chat_render_prompt(const llm_chat *c, const llm_tokenizer *tok, const llm_request *req,
                       llm_chat_prompt *p, char *err, size_t errlen)
{
    json_t     *ctx = json_object(), *msgs, *tools, *kwargs = NULL;
    int         deliver_tools, hermes, rc;
    const char *k;
    json_t     *v;
    llm_jinja  *t = c->tmpl;
    char        e[1024];

    memset(p, 0, sizeof(*p));
    if (ctx == NULL) {
        ERR("out of memory");
        return LLM_CHAT_ERR_INTERNAL;
    }
    deliver_tools = req->tools && json_is_array(req->tools) && json_array_size(req->tools) > 0
                    && req->tool_choice != LLM_TOOL_CHOICE_NONE;
    msgs = req->messages ? json_incref(req->messages) : json_array();
    tools = req->tools ? json_incref(req->tools) : NULL;
    hermes = deliver_tools && c->tool_prompt && !c->uses_tools && !c->system_tools
             && !(c->tool_tmpl && llm_jinja_uses_var(c->tool_tmpl, "tools"));
    if (hermes) msgs = replace(msgs, messages_with_tools(msgs, req->tools));
    /* request text is marked before the model's own markup is added to it below */
    if (tok && msgs) msgs = replace(msgs, mark_value(tok, msgs));
    if (tok && tools) tools = replace(tools, mark_value(tok, tools));
    if (msgs && c->tool_prompt && c->system_tools && deliver_tools) msgs = replace(msgs, messages_with_system_tools(msgs, tools));
    if (msgs && c->tool_prompt && c->call_text) msgs = replace(msgs, messages_with_call_text(msgs));
    if (msgs && c->tool_prompt && c->observations) msgs = replace(msgs, messages_as_observations(msgs));
    if (msgs == NULL || (req->tools && tools == NULL)) {
        json_decref(msgs);
        json_decref(tools);
        json_decref(ctx);
        ERR("out of memory");
        return LLM_CHAT_ERR_INTERNAL;
    }
    if (deliver_tools && !hermes && !(c->tool_prompt && c->system_tools)) {
        json_object_set(ctx, "tools", tools);
        if (c->tool_tmpl) t = c->tool_tmpl;
    }
    json_decref(tools);
    /* transformers always passes tools and documents, None when absent */
    if (json_object_get(ctx, "tools") == NULL) json_object_set_new(ctx, "tools", json_null());
    json_object_set_new(ctx, "documents", json_null());
    json_object_set(ctx, "messages", msgs);
    json_object_set_new(ctx, "add_generation_prompt",
                        json_boolean(req->add_generation_prompt && !req->continue_final_message));
    /* like transformers' special_tokens_map: only tokens that are set */
    if (*c->bos) json_object_set_new(ctx, "bos_token", json_string(c->bos));
    if (*c->eos) json_object_set_new(ctx, "eos_token", json_string(c->eos));
    json_object_update(ctx, c->special);
    if (req->reasoning >= 0) json_object_set_new(ctx, "enable_thinking", json_boolean(req->reasoning));
    if (json_is_object(req->template_kwargs)) {
        /* messages and tools reach the template only as validated (and
         * counted) by the API layer, never replaced by a kwarg */
        kwargs = tok ? mark_value(tok, req->template_kwargs) : json_incref(req->template_kwargs);
        json_object_foreach(kwargs, k, v) {
            if (strcmp(k, "messages") != 0 && strcmp(k, "tools") != 0) json_object_set(ctx, k, v);
        }
    }
    if (tok && req->template_kwargs && kwargs == NULL) {
        json_decref(kwargs);
        json_decref(msgs);
        json_decref(ctx);
        ERR("out of memory");
        return LLM_CHAT_ERR_INTERNAL;
    }
    json_decref(kwargs);
    rc = llm_jinja_render(t, ctx, &p->text, &p->len, e, sizeof(e));
    if (rc == LLM_JINJA_ERROR && c->args_retry) {
        /* templates that concatenate tool-call arguments want them as JSON text */
        json_t *alt = arguments_as_text(msgs);
        if (alt != NULL) {
            char   e2[sizeof(e)];
            json_object_set_new(ctx, "messages", alt);
            if (llm_jinja_render(t, ctx, &p->text, &p->len, e2, sizeof(e2)) == LLM_JINJA_OK) rc = LLM_JINJA_OK;
        }
    }
    json_decref(msgs);
    json_decref(ctx);
    if (rc == LLM_JINJA_OK) {
        if (tok && unmark(p) < 0) {
            llm_chat_prompt_free(p);
            ERR("out of memory");
            return LLM_CHAT_ERR_INTERNAL;
        }
        if (req->continue_final_message) {
            rc = cut_after_final_message(p, req, err, errlen);
            if (rc != LLM_CHAT_OK) llm_chat_prompt_free(p);
            return rc;
        }
        return LLM_CHAT_OK;
    }
    ERR("%s", e);
    if (rc == LLM_JINJA_ERROR && strstr(e, "out of memory")) return LLM_CHAT_ERR_INTERNAL;
    return LLM_CHAT_ERR_REQUEST;
}
