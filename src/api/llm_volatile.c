/* Volatile prompt lines (see llm_volatile.h). */
#include "api/llm_volatile.h"

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

int
llm_volatile_line(const char *s, size_t len)
{
    size_t  i, n;

    for (i = 0; i < sizeof(llm_volatile_prefixes) / sizeof(char *); i++) {
        n = strlen(llm_volatile_prefixes[i]);
        if (len >= n && strncasecmp(s, llm_volatile_prefixes[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

size_t
llm_volatile_strip(const char *text, size_t len, char *out)
{
    const char  *p = text, *end = text + len, *nl;
    size_t       n, kept = 0;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        n = nl ? (size_t) (nl - p) : (size_t) (end - p);

        if (!llm_volatile_line(p, n)) {
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
