/* Base64 encoding (llm_base64.h). */
#include <stdint.h>

#include "core/llm_base64.h"

size_t
llm_base64_encode(const void *src, size_t n, char *dst)
{
    static const char    tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = src;
    char                *d = dst;
    size_t               i;
    uint32_t             v;

    for (i = 0; i + 2 < n; i += 3) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
        *d++ = tab[v >> 18];
        *d++ = tab[(v >> 12) & 63];
        *d++ = tab[(v >> 6) & 63];
        *d++ = tab[v & 63];
    }
    if (i < n) {
        v = (uint32_t) p[i] << 16 | (i + 1 < n ? (uint32_t) p[i + 1] << 8 : 0);
        *d++ = tab[v >> 18];
        *d++ = tab[(v >> 12) & 63];
        *d++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *d++ = '=';
    }
    *d = '\0';
    return (size_t) (d - dst);
}
