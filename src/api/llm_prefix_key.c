/* Prefix key and prompt-size estimate of a request body (llm_prefix_key.h). */
#include "api/llm_prefix_key.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/llm_api.h"
#include "api/llm_api_json.h"
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
    const unsigned char  *p = data;
    size_t                i;

    for (i = 0; i < n; i++) {
        ph->h ^= p[i];
        ph->h *= 0x100000001b3ULL;
    }
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
    n = llm_volatile_strip(s, n, buf);
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
hash_chat(llm_prefix_hash *ph, const json_t *root, const json_t *messages)
{
    size_t         i;
    const char    *role;
    const json_t  *m, *v;

    v = json_object_get(root, "system");
    if (v && !json_is_null(v)) {
        hash_content(ph, 'S', v);
    }

    v = json_object_get(root, "tools");
    if (json_is_array(v)) {
        const json_t  *tool;

        json_array_foreach(v, i, tool) {
            hash_json(ph, 'T', tool, 0);
        }
    }

    json_array_foreach(messages, i, m) {
        hash_str_field(ph, 'R', m, "role");
        v = json_object_get(m, "content");
        if (v && !json_is_null(v)) {
            hash_content(ph, 'C', v);
        }
        v = json_object_get(m, "tool_calls");
        if (v && !json_is_null(v)) {
            hash_json(ph, 'K', v, 0);
        }
        role = json_string_value(json_object_get(m, "role"));
        if (role && strcmp(role, "user") == 0) {
            break;
        }
    }
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


/* ---- size estimate ---- */

typedef struct {
    size_t  ascii;       /* ASCII bytes of keys and strings */
    size_t  other;       /* other characters (UTF-8 lead bytes) */
    size_t  atoms;       /* numbers, booleans, nulls */
} llm_text_count;

static void
count_string(llm_text_count *c, const char *s, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        unsigned char  b = (unsigned char) s[i];

        if (b < 0x80) {
            c->ascii++;
        } else if ((b & 0xc0) != 0x80) {
            c->other++;
        }
    }
}

static void
count_value(llm_text_count *c, const json_t *v)
{
    size_t       i;
    const char  *key;
    json_t      *item;

    switch (json_typeof(v)) {
    case JSON_STRING:
        count_string(c, json_string_value(v), json_string_length(v));
        break;
    case JSON_ARRAY:
        json_array_foreach(v, i, item) {
            count_value(c, item);
        }
        break;
    case JSON_OBJECT:
        json_object_foreach((json_t *) v, key, item) {
            if (strcmp(key, "cache_control") == 0) {
                continue;
            }
            count_string(c, key, strlen(key));
            count_value(c, item);
        }
        break;
    default:
        c->atoms++;
        break;
    }
}

static long
estimate_tokens(const json_t *root)
{
    static const char *const  fields[] = { "messages", "system", "tools",
                                           "prompt" };
    size_t                    i;
    const json_t             *v;
    llm_text_count            c = { 0, 0, 0 };

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        v = json_object_get(root, fields[i]);
        if (v && !json_is_null(v)) {
            count_value(&c, v);
        }
    }
    return (long) ((c.ascii + 3) / 4 + c.other + c.atoms);
}


int
llm_prefix_key(const char *body, size_t len, const llm_prefix_opts *opts,
    llm_prefix_info *info)
{
    int              max_depth;
    size_t           prompt_bytes;
    json_t          *root;
    const json_t    *messages, *prompt;
    llm_prefix_hash  ph = { 0xcbf29ce484222325ULL, 0 };

    info->key[0] = '\0';
    info->prompt_tokens_estimate = -1;

    max_depth = opts && opts->max_depth > 0 ? opts->max_depth
                                            : LLM_API_DEFAULT_MAX_DEPTH;
    prompt_bytes = opts && opts->prompt_bytes ? opts->prompt_bytes
                                              : LLM_PREFIX_DEFAULT_PROMPT_BYTES;

    if (body == NULL || len == 0
        || llm_api_json_depth(body, len, max_depth) > max_depth)
    {
        return -1;
    }

    root = json_loadb(body, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return -1;
    }

    messages = json_object_get(root, "messages");
    prompt = json_object_get(root, "prompt");

    if (json_is_array(messages)) {
        hash_str_field(&ph, 'M', root, "model");
        hash_chat(&ph, root, messages);

    } else if (prompt && !json_is_null(prompt)) {
        hash_str_field(&ph, 'M', root, "model");
        hash_prompt(&ph, prompt, prompt_bytes);

    } else {
        json_decref(root);
        return -1;
    }

    if (ph.failed) {
        json_decref(root);
        return -1;
    }

    snprintf(info->key, sizeof(info->key), "%016llx",
             (unsigned long long) hash_finish(ph.h));
    info->prompt_tokens_estimate = estimate_tokens(root);

    json_decref(root);
    return 0;
}
