/*
 * SHA-256 and HMAC-SHA256 (llm_sha256.h), from FIPS 180-4 section 6.2 and
 * RFC 2104.
 */
#include <string.h>

#include "core/llm_sha256.h"

/* The first 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (FIPS 180-4 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

static uint32_t
rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void
compress(uint32_t h[8], const unsigned char *p)
{
    uint32_t  w[64], a, b, c, d, e, f, g, k, t1, t2;
    int       i;

    for (i = 0; i < 16; i++) {
        w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16
               | (uint32_t) p[4 * i + 2] << 8 | (uint32_t) p[4 * i + 3];
    }
    for (i = 16; i < 64; i++) {
        w[i] = (rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10))
               + w[i - 7]
               + (rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3))
               + w[i - 16];
    }

    a = h[0]; b = h[1]; c = h[2]; d = h[3];
    e = h[4]; f = h[5]; g = h[6]; k = h[7];

    for (i = 0; i < 64; i++) {
        t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g))
             + K[i] + w[i];
        t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22))
             + ((a & b) ^ (a & c) ^ (b & c));
        k = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }

    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void
llm_sha256_init(llm_sha256 *c)
{
    /* the fractional parts of the square roots of the first 8 primes */
    static const uint32_t  h0[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    };

    memcpy(c->h, h0, sizeof(h0));
    c->bytes = 0;
    c->n_buf = 0;
}

void
llm_sha256_update(llm_sha256 *c, const void *data, size_t len)
{
    const unsigned char  *p = data;
    size_t                take;

    c->bytes += len;
    while (len > 0) {
        if (c->n_buf == 0 && len >= LLM_SHA256_BLOCK) {
            compress(c->h, p);
            p += LLM_SHA256_BLOCK;
            len -= LLM_SHA256_BLOCK;
            continue;
        }
        take = LLM_SHA256_BLOCK - c->n_buf;
        take = take < len ? take : len;
        memcpy(c->buf + c->n_buf, p, take);
        c->n_buf += take;
        p += take;
        len -= take;
        if (c->n_buf == LLM_SHA256_BLOCK) {
            compress(c->h, c->buf);
            c->n_buf = 0;
        }
    }
}

void
llm_sha256_final(llm_sha256 *c, unsigned char out[LLM_SHA256_SIZE])
{
    uint64_t  bits = c->bytes * 8;
    int       i;

    /* 0x80, zeros to 56 bytes of the block, the length in bits big-endian */
    c->buf[c->n_buf++] = 0x80;
    if (c->n_buf > LLM_SHA256_BLOCK - 8) {
        memset(c->buf + c->n_buf, 0, LLM_SHA256_BLOCK - c->n_buf);
        compress(c->h, c->buf);
        c->n_buf = 0;
    }
    memset(c->buf + c->n_buf, 0, LLM_SHA256_BLOCK - 8 - c->n_buf);
    for (i = 0; i < 8; i++) {
        c->buf[LLM_SHA256_BLOCK - 1 - i] = (unsigned char) (bits >> (8 * i));
    }
    compress(c->h, c->buf);

    for (i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char) (c->h[i] >> 24);
        out[4 * i + 1] = (unsigned char) (c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char) (c->h[i] >> 8);
        out[4 * i + 3] = (unsigned char) c->h[i];
    }
}

void
llm_hmac_sha256_init(llm_hmac_sha256 *h, const void *key, size_t keylen)
{
    unsigned char  k[LLM_SHA256_BLOCK], pad[LLM_SHA256_BLOCK];
    llm_sha256     kh;
    int            i;

    memset(k, 0, sizeof(k));
    if (keylen > LLM_SHA256_BLOCK) {
        llm_sha256_init(&kh);
        llm_sha256_update(&kh, key, keylen);
        llm_sha256_final(&kh, k);
    } else if (keylen > 0) {
        memcpy(k, key, keylen);
    }

    for (i = 0; i < LLM_SHA256_BLOCK; i++) {
        pad[i] = k[i] ^ 0x36;
    }
    llm_sha256_init(&h->inner);
    llm_sha256_update(&h->inner, pad, sizeof(pad));

    for (i = 0; i < LLM_SHA256_BLOCK; i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    llm_sha256_init(&h->outer);
    llm_sha256_update(&h->outer, pad, sizeof(pad));
}

void
llm_hmac_sha256_update(llm_hmac_sha256 *h, const void *data, size_t len)
{
    llm_sha256_update(&h->inner, data, len);
}

void
llm_hmac_sha256_final(llm_hmac_sha256 *h, unsigned char out[LLM_SHA256_SIZE])
{
    unsigned char  inner[LLM_SHA256_SIZE];

    llm_sha256_final(&h->inner, inner);
    llm_sha256_update(&h->outer, inner, sizeof(inner));
    llm_sha256_final(&h->outer, out);
}
