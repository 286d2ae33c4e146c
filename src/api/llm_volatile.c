/* Volatile prompt lines (see llm_volatile.h). */
#include "api/llm_volatile.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Line prefixes (compared without case: they are header names) that mark a
 * volatile line.  Claude Code sends its billing header as system[0]; the
 * whole line is metadata for Anthropic's billing, never read by the model.
 */
static const char *const llm_volatile_prefixes[] = {
    "x-anthropic-billing-header:",
};

static const llm_volatile_set llm_volatile_defaults = {
    llm_volatile_prefixes, sizeof(llm_volatile_prefixes) / sizeof(char *)
};

const llm_volatile_set *
llm_volatile_default(void)
{
    return &llm_volatile_defaults;
}

int
llm_volatile_line(const llm_volatile_set *set, const char *s, size_t len)
{
    size_t  i, n;

    if (set == NULL) {
        set = &llm_volatile_defaults;
    }
    for (i = 0; i < set->n; i++) {
        n = strlen(set->prefixes[i]);
        if (n > 0 && len >= n && strncasecmp(s, set->prefixes[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

int
llm_volatile_strip_messages(const llm_volatile_set *set, json_t *messages)
{
    size_t       i, len, n;
    int          removed = 0;
    json_t      *msg, *content;
    const char  *role, *text;
    char        *buf;

    json_array_foreach(messages, i, msg) {
        role = json_string_value(json_object_get(msg, "role"));
        content = json_object_get(msg, "content");
        if (role == NULL || strcmp(role, "system") != 0 || !json_is_string(content)) {
            continue;
        }
        text = json_string_value(content);
        len = json_string_length(content);
        buf = malloc(len ? len : 1);
        if (buf == NULL) {
            return -1;
        }
        n = llm_volatile_strip(set, text, len, buf);
        if (n != len) {
            removed++;
            if (json_string_setn(content, buf, n) != 0) {
                free(buf);
                return -1;
            }
        }
        free(buf);
    }
    return removed;
}

size_t
llm_volatile_strip(const llm_volatile_set *set, const char *text, size_t len, char *out)
{
    const char  *p = text, *end = text + len, *nl;
    size_t       n, kept = 0;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        n = nl ? (size_t) (nl - p) : (size_t) (end - p);

        if (!llm_volatile_line(set, p, n)) {
            if (nl) {
                n++;                      /* keep the line with its newline */
            }
            memmove(out + kept, p, n);
            kept += n;
            p += n;

        } else {
            p += nl ? n + 1 : n;          /* drop it with its newline */
        }
    }
    return kept;
}
