/* Base64 encoding and decoding (llm_base64.h). */
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

/* The 6 bits of an alphabet character, or -1. */
static int
llm_base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long
llm_base64_decode(const char *src, size_t n, void *dst)
{
    unsigned char *d = dst;
    size_t         i, j, pad;
    int            v[4];
    uint32_t       w;

    if (n % 4 != 0) {
        return -1;
    }
    for (i = 0; i < n; i += 4) {
        pad = 0;
        for (j = 0; j < 4; j++) {
            /* '=' only in the last group's last two places, at the end */
            if (src[i + j] == '=' && i + 4 == n && j >= 2
                && (j == 3 || src[i + 3] == '='))
            {
                v[j] = 0;
                pad++;
                continue;
            }
            v[j] = pad ? -1 : llm_base64_value((unsigned char) src[i + j]);
            if (v[j] < 0) {
                return -1;
            }
        }
        w = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12
            | (uint32_t) v[2] << 6 | (uint32_t) v[3];
        *d++ = (unsigned char) (w >> 16);
        if (pad < 2) {
            *d++ = (unsigned char) (w >> 8);
        }
        if (pad < 1) {
            *d++ = (unsigned char) w;
        }
    }
    return (long) (d - (unsigned char *) dst);
}
