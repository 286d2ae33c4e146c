/* Prefix key and prompt-size estimate of a request body (llm_prefix_key.h). */
#include "api/llm_prefix_key.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/llm_api.h"
#include "core/llm_fnv.h"
#include "api/llm_volatile.h"


/*
 * 64-bit FNV-1a over tagged, length-prefixed pieces (so "ab"+"c" and
 * "a"+"bc" differ), finished with a 64-bit avalanche so that keys which
 * differ in one byte differ everywhere: nginx's consistent hash reads the
 * key through CRC32, which would otherwise see neighbouring values.
 */
typedef struct {
    uint64_t  h;
    int       failed;    /* out of memory while building a piece */
} llm_prefix_hash;

static void
hash_bytes(llm_prefix_hash *ph, const void *data, size_t n)
{
    ph->h = llm_fnv1a(ph->h, data, n);
}

static void
hash_piece(llm_prefix_hash *ph, char tag, const char *data, size_t n)
{
    unsigned char  len[8];
    int            i;

    for (i = 0; i < 8; i++) {
        len[i] = (unsigned char) ((uint64_t) n >> (8 * i));
    }
    hash_bytes(ph, &tag, 1);
    hash_bytes(ph, len, sizeof(len));
    hash_bytes(ph, data, n);
}

static uint64_t
hash_finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* Text, normalised; at most `limit` bytes of the result (0: all). */
static void
hash_text(llm_prefix_hash *ph, char tag, const char *s, size_t n,
    size_t limit)
{
    char  *buf;

    buf = malloc(n ? n : 1);
    if (buf == NULL) {
        ph->failed = 1;
        return;
    }
    n = llm_volatile_strip(NULL, s, n, buf);
    if (limit && n > limit) {
        n = limit;
    }
    hash_piece(ph, tag, buf, n);
    free(buf);
}

/* Compact JSON with sorted keys; an object's own cache_control left out. */
static char *
canonical_json(const json_t *v)
{
    json_t  *copy = NULL;
    char    *s;

    if (json_is_object(v) && json_object_get(v, "cache_control")) {
        copy = json_copy((json_t *) v);
        if (copy == NULL) {
            return NULL;
        }
        json_object_del(copy, "cache_control");
        v = copy;
    }
    s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(copy);
    return s;
}

static void
hash_json(llm_prefix_hash *ph, char tag, const json_t *v, size_t limit)
{
    char    *s;
    size_t   n;

    s = canonical_json(v);
    if (s == NULL) {
        ph->failed = 1;
        return;
    }
    n = strlen(s);
    hash_piece(ph, tag, s, limit && n > limit ? limit : n);
    free(s);
}

/*
 * Message content or an Anthropic system prompt: a string, or an array of
 * parts where text parts count by their text (so cache_control and other
 * markers on them do not matter) and other parts by their canonical JSON.
 */
static void
hash_content(llm_prefix_hash *ph, char tag, const json_t *content)
{
    size_t         i;
    const json_t  *part, *text;

    if (json_is_string(content)) {
        hash_text(ph, tag, json_string_value(content),
                  json_string_length(content), 0);
        return;
    }
    if (!json_is_array(content)) {
        hash_json(ph, tag, content, 0);
        return;
    }
    json_array_foreach(content, i, part) {
        text = json_object_get(part, "text");
        if (json_is_string(text)) {
            hash_text(ph, tag, json_string_value(text),
                      json_string_length(text), 0);
        } else {
            hash_json(ph, tag, part, 0);
        }
    }
}

static void
hash_str_field(llm_prefix_hash *ph, char tag, const json_t *obj,
    const char *key)
{
    const json_t  *v = json_object_get(obj, key);
    const char    *s = json_is_string(v) ? json_string_value(v) : "";

    hash_piece(ph, tag, s, strlen(s));
}

static void
hash_prompt(llm_prefix_hash *ph, const json_t *prompt, size_t limit)
{
    const json_t  *first;

    /* a batch of prompts ("prompt": ["a", "b"] or [[1, 2], [3]]): the first */
    if (json_is_array(prompt) && json_array_size(prompt) > 0) {
        first = json_array_get(prompt, 0);
        if (json_is_string(first) || json_is_array(first)) {
            prompt = first;
        }
    }

    if (json_is_string(prompt)) {
        hash_text(ph, 'P', json_string_value(prompt),
                  json_string_length(prompt), limit);
    } else {
        hash_json(ph, 'P', prompt, limit);
    }
}


/*
 * ---- one pass over the body ----
 *
 * Agent bodies grow with every turn (a megabyte is common), while the key
 * needs only their first messages.  So the body is not decoded into a tree:
 * one pass checks its syntax and nesting, counts the text of the estimate,
 * and notes where the fields of the key are; only those values are decoded.
 */

typedef struct {
    size_t  ascii;       /* ASCII characters of keys and strings */
    size_t  other;       /* other characters */
    size_t  atoms;       /* numbers, booleans, nulls */
} llm_text_count;

typedef struct {
    const char  *p, *end;
    int          depth, max_depth;
} llm_json_scan;

typedef struct {
    const char  *start;
    size_t       len;
} llm_span;

static int scan_value(llm_json_scan *s, llm_text_count *c);

static void
skip_space(llm_json_scan *s)
{
    while (s->p < s->end
           && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    {
        s->p++;
    }
}

static int
hex4(const char *p, unsigned *v)
{
    int  i;

    *v = 0;
    for (i = 0; i < 4; i++) {
        char  h = p[i];

        *v <<= 4;
        if (h >= '0' && h <= '9') {
            *v |= (unsigned) (h - '0');
        } else if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') {
            *v |= (unsigned) ((h | 0x20) - 'a' + 10);
        } else {
            return -1;
        }
    }
    return 0;
}

/* The string at s->p, its decoded characters counted into c (if any). */
static int
scan_string(llm_json_scan *s, llm_text_count *c)
{
    const char  *p = s->p + 1;
    unsigned     v;

    while (p < s->end) {
        unsigned char  b = (unsigned char) *p;

        if (b == '"') {
            s->p = p + 1;
            return 0;
        }
        if (b < 0x20) {
            return -1;
        }
        if (b != '\\') {
            if (c && b < 0x80) {
                c->ascii++;
            } else if (c && (b & 0xc0) != 0x80) {
                c->other++;
            }
            p++;
            continue;
        }
        if (p + 1 >= s->end) {
            return -1;
        }
        if (p[1] == 'u') {
            if (s->end - p < 6 || hex4(p + 2, &v) != 0) {
                return -1;
            }
            /* a surrogate pair is one character: count its first half */
            if (c && v < 0x80) {
                c->ascii++;
            } else if (c && (v < 0xdc00 || v > 0xdfff)) {
                c->other++;
            }
            p += 6;
        } else if (strchr("\"\\/bfnrt", p[1]) && p[1] != '\0') {
            if (c) {
                c->ascii++;
            }
            p += 2;
        } else {
            return -1;
        }
    }
    return -1;
}

/* An object or array; cache_control members are not counted. */
static int
scan_container(llm_json_scan *s, llm_text_count *c)
{
    char            close = *s->p == '{' ? '}' : ']';
    const char     *key;
    llm_text_count  kc;
    int             skip;

    if (++s->depth > s->max_depth) {
        return -1;
    }
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return 0;
    }
    for ( ;; ) {
        if (close == '}') {
            skip_space(s);
            if (s->p >= s->end || *s->p != '"') {
                return -1;
            }
            key = s->p;
            memset(&kc, 0, sizeof(kc));
            if (scan_string(s, &kc) != 0) {
                return -1;
            }
            skip = s->p - key == 15 && memcmp(key, "\"cache_control\"", 15) == 0;
            if (c && !skip) {
                c->ascii += kc.ascii;
                c->other += kc.other;
            }
            skip_space(s);
            if (s->p >= s->end || *s->p != ':') {
                return -1;
            }
            s->p++;
            if (scan_value(s, skip ? NULL : c) != 0) {
                return -1;
            }
        } else if (scan_value(s, c) != 0) {
            return -1;
        }
        skip_space(s);
        if (s->p >= s->end) {
            return -1;
        }
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != close) {
            return -1;
        }
        s->p++;
        s->depth--;
        return 0;
    }
}

static int
scan_value(llm_json_scan *s, llm_text_count *c)
{
    const char  *start;

    skip_space(s);
    if (s->p >= s->end) {
        return -1;
    }
    switch (*s->p) {
    case '"':
        return scan_string(s, c);
    case '{':
    case '[':
        return scan_container(s, c);
    default:
        /* number, true, false, null: checked when decoded, if ever */
        start = s->p;
        while (s->p < s->end
               && ((*s->p >= '0' && *s->p <= '9') || (*s->p >= 'a' && *s->p <= 'z')
                   || *s->p == '-' || *s->p == '+' || *s->p == '.' || *s->p == 'E'))
        {
            s->p++;
        }
        if (s->p == start) {
            return -1;
        }
        if (c) {
            c->atoms++;
        }
        return 0;
    }
}

/* The value at s->p, counted into c; its bytes in *span. */
static int
scan_field(llm_json_scan *s, llm_text_count *c, llm_span *span)
{
    skip_space(s);
    span->start = s->p;
    if (scan_value(s, c) != 0) {
        return -1;
    }
    span->len = (size_t) (s->p - span->start);
    return 0;
}

static json_t *
decode_span(const llm_span *span)
{
    return span->start ? json_loadb(span->start, span->len, JSON_DECODE_ANY, NULL)
                       : NULL;
}

/*
 * The "messages" array at s->p: every message counted into c; those up to
 * and including the first user message decoded into head.
 */
static int
scan_messages(llm_json_scan *s, llm_text_count *c, json_t *head)
{
    int          done = 0;
    const char  *role;
    json_t      *m;
    llm_span     span;

    if (++s->depth > s->max_depth) {
        return -1;
    }
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        s->depth--;
        return 0;
    }
    for ( ;; ) {
        if (scan_field(s, c, &span) != 0) {
            return -1;
        }
        if (!done) {
            m = decode_span(&span);
            if (m == NULL) {
                return -1;
            }
            role = json_string_value(json_object_get(m, "role"));
            /* items that are not objects (an embeddings input's texts)
             * are no conversation: nothing more is decoded */
            done = !json_is_object(m) || (role && strcmp(role, "user") == 0);
            json_array_append_new(head, m);
        }
        skip_space(s);
        if (s->p >= s->end) {
            return -1;
        }
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != ']') {
            return -1;
        }
        s->p++;
        s->depth--;
        return 0;
    }
}

/* Fields of a top-level body object, as the key and estimate need them. */
typedef struct {
    llm_span        model, system, tools, prompt;
    json_t         *head;         /* messages up to the first user message */
    int             chat;         /* "messages" is an array */
    llm_text_count  count;
} llm_body_fields;

static int
is_key(const char *key, size_t len, const char *name)
{
    return len == strlen(name) + 2 && memcmp(key + 1, name, len - 2) == 0;
}

/* A Responses input string: the conversation's one user message. */
static int
input_message(const llm_span *span, json_t *head)
{
    json_t  *v = decode_span(span), *m;

    if (v == NULL) {
        return -1;
    }
    m = json_object();
    if (m == NULL) {
        json_decref(v);
        return -1;
    }
    if (json_object_set_new(m, "role", json_string("user")) != 0
        || json_object_set_new(m, "content", v) != 0)
    {
        json_decref(m);
        return -1;
    }
    return json_array_append_new(head, m) != 0 ? -1 : 0;
}

static int
scan_body(llm_json_scan *s, llm_body_fields *f)
{
    const char  *key;
    size_t       klen;
    llm_span     ignored, *span;

    skip_space(s);
    if (s->p >= s->end || *s->p != '{') {
        return -1;
    }
    s->depth = 1;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        goto end;
    }
    for ( ;; ) {
        skip_space(s);
        if (s->p >= s->end || *s->p != '"') {
            return -1;
        }
        key = s->p;
        if (scan_string(s, NULL) != 0) {
            return -1;
        }
        klen = (size_t) (s->p - key);
        skip_space(s);
        if (s->p >= s->end || *s->p != ':') {
            return -1;
        }
        s->p++;
        skip_space(s);

        if (is_key(key, klen, "messages")) {
            json_array_clear(f->head);    /* a repeated key: the last counts */
            f->chat = s->p < s->end && *s->p == '[';
            if (f->chat ? scan_messages(s, &f->count, f->head)
                        : scan_value(s, &f->count))
            {
                return -1;
            }
        } else if (is_key(key, klen, "input")) {
            /* the Responses API: items read as messages, or a string that
             * is one user message */
            json_array_clear(f->head);
            f->chat = 1;
            if (s->p < s->end && *s->p == '[') {
                if (scan_messages(s, &f->count, f->head) != 0) {
                    return -1;
                }
            } else if (scan_field(s, &f->count, span = &ignored) != 0
                       || input_message(span, f->head) != 0)
            {
                return -1;
            }
        } else if (is_key(key, klen, "model")) {
            if (scan_field(s, NULL, &f->model) != 0) {
                return -1;
            }
        } else {
            span = is_key(key, klen, "system")
                   || is_key(key, klen, "instructions") ? &f->system
                   : is_key(key, klen, "tools") ? &f->tools
                   : is_key(key, klen, "prompt") ? &f->prompt
                   : NULL;
            /* other fields are not text the model reads: not counted */
            if (scan_field(s, span ? &f->count : NULL, span ? span : &ignored)
                != 0)
            {
                return -1;
            }
        }

        skip_space(s);
        if (s->p >= s->end) {
            return -1;
        }
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != '}') {
            return -1;
        }
        s->p++;
        break;
    }

end:
    skip_space(s);
    return s->p == s->end ? 0 : -1;
}


static void
hash_chat(llm_prefix_hash *ph, const llm_body_fields *f)
{
    size_t         i;
    json_t        *v;
    const json_t  *m, *tool, *part;

    v = decode_span(&f->system);
    if (v && !json_is_null(v)) {
        hash_content(ph, 'S', v);
    }
    json_decref(v);

    v = decode_span(&f->tools);
    if (json_is_array(v)) {
        json_array_foreach(v, i, tool) {
            hash_json(ph, 'T', tool, 0);
        }
    }
    json_decref(v);

    json_array_foreach(f->head, i, m) {
        hash_str_field(ph, 'R', m, "role");
        part = json_object_get(m, "content");
        if (part && !json_is_null(part)) {
            hash_content(ph, 'C', part);
        }
        part = json_object_get(m, "tool_calls");
        if (part && !json_is_null(part)) {
            hash_json(ph, 'K', part, 0);
        }
    }
}


int
llm_prefix_key(const char *body, size_t len, const llm_prefix_opts *opts,
    llm_prefix_info *info)
{
    int              rc = -1;
    size_t           prompt_bytes;
    json_t          *model, *prompt;
    const char      *name;
    llm_json_scan    s;
    llm_body_fields  f;
    llm_prefix_hash  ph = { LLM_FNV_BASIS, 0 };

    info->key[0] = '\0';
    info->prompt_tokens_estimate = -1;

    prompt_bytes = opts && opts->prompt_bytes ? opts->prompt_bytes
                                              : LLM_PREFIX_DEFAULT_PROMPT_BYTES;
    s.p = body;
    s.end = body ? body + len : body;
    s.depth = 0;
    s.max_depth = opts && opts->max_depth > 0 ? opts->max_depth
                                              : LLM_API_DEFAULT_MAX_DEPTH;

    memset(&f, 0, sizeof(f));
    f.head = json_array();
    if (f.head == NULL || body == NULL || scan_body(&s, &f) != 0) {
        goto done;
    }

    model = decode_span(&f.model);
    name = json_is_string(model) ? json_string_value(model) : "";
    hash_piece(&ph, 'M', name, strlen(name));
    json_decref(model);

    if (f.chat) {
        hash_chat(&ph, &f);

    } else if (f.prompt.start
               && (prompt = decode_span(&f.prompt)) != NULL
               && !json_is_null(prompt))
    {
        hash_prompt(&ph, prompt, prompt_bytes);
        json_decref(prompt);

    } else {
        goto done;
    }

    if (ph.failed) {
        goto done;
    }

    snprintf(info->key, sizeof(info->key), "%016llx",
             (unsigned long long) hash_finish(ph.h));
    info->prompt_tokens_estimate = (long) ((f.count.ascii + 3) / 4
                                           + f.count.other + f.count.atoms);
    rc = 0;

done:
    json_decref(f.head);
    return rc;
}

int
llm_route_condition(const char *s, size_t len, long *min)
{
    static const char  cond[] = "if_prompt_tokens>";
    size_t             i, n = sizeof(cond) - 1;
    long               v = 0;

    if (len <= n || memcmp(s, cond, n) != 0) {
        return -1;
    }
    for (i = n; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (LONG_MAX - (s[i] - '0')) / 10) {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    *min = v;
    return 0;
}
