/*
 * Local `$ref` resolution for JSON Schema: "#" or a JSON pointer "#/a/b"
 * (with ~0 / ~1 escapes, array indexes) within the root schema.  Remote
 * references resolve to nothing (the callers refuse them, naming `$ref`).
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_grammar_int.h"

const json_t *
llm_jschema_ref(const json_t *root, const char *ref)
{
    const json_t *cur = root;
    const char *p;
    char seg[256];

    if (strcmp(ref, "#") == 0) return cur;
    if (strncmp(ref, "#/", 2) != 0) return NULL;
    p = ref + 2;
    while (*p) {
        size_t n = 0;
        while (*p && *p != '/') {
            char c = *p++;
            if (c == '~' && *p == '0') { c = '~'; p++; }
            else if (c == '~' && *p == '1') { c = '/'; p++; }
            if (n + 1 >= sizeof(seg)) return NULL;
            seg[n++] = c;
        }
        seg[n] = 0;
        if (*p == '/') p++;
        if (json_is_object(cur)) cur = json_object_get(cur, seg);
        else if (json_is_array(cur)) cur = json_array_get(cur, (size_t) strtoul(seg, NULL, 10));
        else return NULL;
        if (cur == NULL) return NULL;
    }
    return cur;
}
