/*
 * The prefix key and size estimate of a request body (api/llm_prefix_key.h):
 * a one-pass scanner over untrusted bytes on the front nginx.  Beyond "no
 * fault, no leak", checked against jansson: a body jansson decodes (without
 * duplicate keys) as an object with a "messages" array or a non-null
 * "prompt", nested at most 64 deep, has a key, and its estimate is the one
 * computed from the decoded tree by the definition in the header.  (Bodies
 * with a NUL byte are left out of the comparison: jansson skips one between
 * tokens, which JSON does not allow and the scanner refuses.)
 */
#include "llm_fuzz.h"

#include <jansson.h>

#include "api/llm_prefix_key.h"

typedef struct {
    size_t  ascii, other, atoms;
} tree_count;

static void
count_string(tree_count *c, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char) s[i];
        if (b < 0x80) c->ascii++;
        else if ((b & 0xc0) != 0x80) c->other++;
    }
}

static void
count_value(tree_count *c, json_t *v)
{
    const char *key;
    json_t     *item;
    size_t      i;

    switch (json_typeof(v)) {
    case JSON_STRING:
        count_string(c, json_string_value(v), json_string_length(v));
        break;
    case JSON_ARRAY:
        json_array_foreach(v, i, item) count_value(c, item);
        break;
    case JSON_OBJECT:
        json_object_foreach(v, key, item) {
            if (strcmp(key, "cache_control") == 0) continue;
            count_string(c, key, strlen(key));
            count_value(c, item);
        }
        break;
    default:
        c->atoms++;
    }
}

static int
depth(json_t *v)
{
    const char *key;
    json_t     *item;
    size_t      i;
    int         d = 0, k;

    if (json_is_array(v)) {
        json_array_foreach(v, i, item) if ((k = depth(item)) > d) d = k;
        return d + 1;
    }
    if (json_is_object(v)) {
        json_object_foreach(v, key, item) if ((k = depth(item)) > d) d = k;
        return d + 1;
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fields[] = { "messages", "system", "tools", "prompt" };
    llm_prefix_opts  opts = { 1 + size % 64, 0 };
    llm_prefix_info  info;
    json_t          *root, *ms, *pr;
    tree_count       c = { 0, 0, 0 };
    int              rc;

    rc = llm_prefix_key((const char *) data, size, &opts, &info);
    if (rc == 0 && (strlen(info.key) != LLM_PREFIX_KEY_LEN || info.prompt_tokens_estimate < 0))
        __builtin_trap();
    if (rc != 0 && (info.key[0] != '\0' || info.prompt_tokens_estimate != -1))
        __builtin_trap();

    /* jansson reads a NUL byte between tokens as if it were not there */
    if (memchr(data, '\0', size)) return 0;
    root = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
    if (root == NULL) return 0;
    ms = json_object_get(root, "messages");
    pr = json_object_get(root, "prompt");
    if (json_is_object(root) && depth(root) <= 64
        && (json_is_array(ms) || (pr && !json_is_null(pr))))
    {
        if (rc != 0) __builtin_trap();
        for (size_t i = 0; i < 4; i++) {
            json_t *v = json_object_get(root, fields[i]);
            if (v && !json_is_null(v)) count_value(&c, v);
        }
        if (info.prompt_tokens_estimate != (long) ((c.ascii + 3) / 4 + c.other + c.atoms))
            __builtin_trap();
    }
    json_decref(root);
    return 0;
}
