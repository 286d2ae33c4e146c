/*
 * Decoding of quantized blocks into 256-bit registers, shared by the AVX2
 * and AVX-512 quantized matmuls (static inline, AVX2 target: they inline
 * into AVX-512 functions too).  Internal to kernels/cpu.
 *
 * A 32-value block becomes 32 code bytes (unsigned, or signed for Q8_0 and
 * the lookup formats), a float scale and a float per-value offset applied
 * through the activation block sums.  A K-quant super-block is decoded once
 * per row (hdr256: scales, minimums) and then chunk by chunk: 32 code bytes
 * and an int16 scale vector for vpmaddwd.
 */
#ifndef LLM_KERNELS_Q_DEC_H
#define LLM_KERNELS_Q_DEC_H

#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/llm_quant.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

AVX2 INLINE float
h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

AVX2 INLINE float
hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2 INLINE int
hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 32 values of 4 bits from 16 bytes: low nibbles are values 0-15, high nibbles 16-31 */
AVX2 INLINE __m256i
nib32(const uint8_t *qs)
{
    /* one broadcast load, the high lane shifted by 4 */
    __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) qs));
    return _mm256_and_si256(_mm256_srlv_epi32(t, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                            _mm256_set1_epi8(0x0F));
}

/* 0x10 in byte j where bit j of the 32-bit little-endian word is set (Q5 fifth bits) */
AVX2 INLINE __m256i
bits_x10(const uint8_t *qh)
{
    uint32_t h;
    __m256i v, bit = _mm256_set1_epi64x((long long) 0x8040201008040201ull);

    memcpy(&h, qh, 4);
    v = _mm256_shuffle_epi8(_mm256_set1_epi32((int) h),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

AVX2 INLINE __m256i
lookup16(const int8_t *table, __m256i idx)
{
    __m128i t = _mm_loadu_si128((const __m128i *) table);
    return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), idx);
}

/* 2^(e - 128), as llm_quant.c */
INLINE float
e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* sum of w*a over 32 bytes in 8 int32 lanes; w unsigned (< 128) or signed */
AVX2 INLINE __m256i
dot_u(__m256i w, __m256i a)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
}

AVX2 INLINE __m256i
dot_s(__m256i wabs, __m256i w, __m256i a)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(a, w)), _mm256_set1_epi16(1));
}

/* block size and bytes as compile-time constants of the type (the traits table is data) */
INLINE int
kquant(llm_wtype t)
{
    return t == LLM_WT_Q2_K || t == LLM_WT_Q3_K || t == LLM_WT_Q4_K || t == LLM_WT_Q5_K
        || t == LLM_WT_Q6_K || t == LLM_WT_IQ4_XS;
}

INLINE int
block_bytes(llm_wtype t)
{
    switch (t) {
    case LLM_WT_Q8_0:   return sizeof(llm_block_q8_0);
    case LLM_WT_Q4_0:   return sizeof(llm_block_q4_0);
    case LLM_WT_Q4_1:   return sizeof(llm_block_q4_1);
    case LLM_WT_Q5_0:   return sizeof(llm_block_q5_0);
    case LLM_WT_Q5_1:   return sizeof(llm_block_q5_1);
    case LLM_WT_Q2_K:   return sizeof(llm_block_q2_k);
    case LLM_WT_Q3_K:   return sizeof(llm_block_q3_k);
    case LLM_WT_Q4_K:   return sizeof(llm_block_q4_k);
    case LLM_WT_Q5_K:   return sizeof(llm_block_q5_k);
    case LLM_WT_Q6_K:   return sizeof(llm_block_q6_k);
    case LLM_WT_IQ4_NL: return sizeof(llm_block_iq4_nl);
    case LLM_WT_IQ4_XS: return sizeof(llm_block_iq4_xs);
    case LLM_WT_AQ8:    return sizeof(llm_block_aq8);
    default:            return sizeof(llm_block_mxfp4);
    }
}

/* ================= formats with 32-value blocks ================= */

typedef struct {
    __m256i q;       /* codes: unsigned, or signed for the signed formats */
    __m256i qa;      /* |q| for the signed formats */
    float   d;       /* scale */
    float   m;       /* per-value offset (d*-8, min, ...); 0 for none */
} blk32;

INLINE int
signed_fmt(llm_wtype t)
{
    return t == LLM_WT_Q8_0 || t == LLM_WT_IQ4_NL || t == LLM_WT_MXFP4 || t == LLM_WT_AQ8;
}

INLINE int
has_offset(llm_wtype t)
{
    return t == LLM_WT_Q4_0 || t == LLM_WT_Q4_1 || t == LLM_WT_Q5_0 || t == LLM_WT_Q5_1 || t == LLM_WT_AQ8;
}

AVX2 INLINE blk32
dec32(llm_wtype t, const char *p)
{
    blk32 b;

    switch (t) {
    case LLM_WT_Q8_0: {
        const llm_block_q8_0 *x = (const void *) p;
        b.q = _mm256_loadu_si256((const __m256i *) x->qs);
        b.d = h2f(x->d);
        b.m = 0;
        break;
    }
    case LLM_WT_Q4_0: {
        const llm_block_q4_0 *x = (const void *) p;
        b.q = nib32(x->qs);
        b.d = h2f(x->d);
        b.m = -8.0f * b.d;
        break;
    }
    case LLM_WT_Q4_1: {
        const llm_block_q4_1 *x = (const void *) p;
        b.q = nib32(x->qs);
        b.d = h2f(x->d);
        b.m = h2f(x->m);
        break;
    }
    case LLM_WT_Q5_0: {
        const llm_block_q5_0 *x = (const void *) p;
        b.q = _mm256_or_si256(nib32(x->qs), bits_x10(x->qh));
        b.d = h2f(x->d);
        b.m = -16.0f * b.d;
        break;
    }
    case LLM_WT_Q5_1: {
        const llm_block_q5_1 *x = (const void *) p;
        b.q = _mm256_or_si256(nib32(x->qs), bits_x10(x->qh));
        b.d = h2f(x->d);
        b.m = h2f(x->m);
        break;
    }
    case LLM_WT_IQ4_NL: {
        const llm_block_iq4_nl *x = (const void *) p;
        b.q = lookup16(llm_iq4nl_values, nib32(x->qs));
        b.d = h2f(x->d);
        b.m = 0;
        break;
    }
    case LLM_WT_AQ8: {
        /* q - 128 as signed bytes; the 128 comes back through the offset */
        const llm_block_aq8 *x = (const void *) p;
        b.q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) x->qs), _mm256_set1_epi8((char) 0x80));
        b.d = x->d;
        b.m = x->m + 128.0f * x->d;
        break;
    }
    default: {
        const llm_block_mxfp4 *x = (const void *) p;
        b.q = lookup16(llm_mxfp4_values, nib32(x->qs));
        b.d = e8m0_half(x->e);
        b.m = 0;
        break;
    }
    }
    b.qa = signed_fmt(t) ? _mm256_abs_epi8(b.q) : b.q;
    return b;
}

/* per-value offset of a block as a multiple of its scale (Q4_0, Q5_0), or 0: the offset is its own field */
INLINE float
offset_mult(llm_wtype t)
{
    return t == LLM_WT_Q4_0 ? -8.0f : t == LLM_WT_Q5_0 ? -16.0f : 0.0f;
}

/*
 * Scales (field 0) or minimums (field 1, Q4_1 and Q5_1) of the 8 blocks
 * `bytes` apart from p, as f32: one conversion instead of 8.
 */
AVX2 INLINE int
ld16(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

AVX2 INLINE __m256
scales8(llm_wtype t, const char *p, int bytes, int field)
{
    __m128i h;

    if (t == LLM_WT_AQ8) {
        /* f32 fields: d (field 0), and the offset m + 128 d (field 1) */
        float f[8];
        int i;
        for (i = 0; i < 8; i++) {
            const llm_block_aq8 *x = (const void *) (p + i * bytes);
            f[i] = field ? x->m + 128.0f * x->d : x->d;
        }
        return _mm256_loadu_ps(f);
    }
    if (t == LLM_WT_MXFP4) {
        return _mm256_setr_ps(e8m0_half((uint8_t) p[0]), e8m0_half((uint8_t) p[bytes]),
                              e8m0_half((uint8_t) p[2 * bytes]), e8m0_half((uint8_t) p[3 * bytes]),
                              e8m0_half((uint8_t) p[4 * bytes]), e8m0_half((uint8_t) p[5 * bytes]),
                              e8m0_half((uint8_t) p[6 * bytes]), e8m0_half((uint8_t) p[7 * bytes]));
    }
    /* 8 halves inserted into one register: no gather (slow on the AMD cores this path is
     * for) and no store/reload through memory (a store-forwarding stall) */
    p += 2 * field;
    h = _mm_cvtsi32_si128(ld16(p));
    h = _mm_insert_epi16(h, ld16(p + bytes), 1);
    h = _mm_insert_epi16(h, ld16(p + 2 * bytes), 2);
    h = _mm_insert_epi16(h, ld16(p + 3 * bytes), 3);
    h = _mm_insert_epi16(h, ld16(p + 4 * bytes), 4);
    h = _mm_insert_epi16(h, ld16(p + 5 * bytes), 5);
    h = _mm_insert_epi16(h, ld16(p + 6 * bytes), 6);
    h = _mm_insert_epi16(h, ld16(p + 7 * bytes), 7);
    return _mm256_cvtph_ps(h);
}

/* ================= K-quants: 256-value super-blocks ================= */

/* per row and super-block: scales decoded once, used for all 8 chunks of 32 */
typedef struct {
    const char *p;
    float   d, dmin;
    __m256i sc8;        /* Q4_K/Q5_K/IQ4_XS: 8 int16 chunk scales in both lanes */
    __m128i sc16b;      /* Q2_K/Q3_K/Q6_K: the 16 int8 (Q2_K: 4-bit) scales of 16 values */
    __m256i mins;       /* 16 int16 minimums or scales per 16 values, for the activation sums */
} hdr256;

INLINE int
signed_k(llm_wtype t)
{
    return t == LLM_WT_IQ4_XS;
}

AVX2 INLINE hdr256
dec_hdr(llm_wtype t, const char *p)
{
    hdr256 h;
    uint32_t u[4];

    memset(&h, 0, sizeof(h));
    h.p = p;
    switch (t) {
    case LLM_WT_Q4_K:
    case LLM_WT_Q5_K: {
        const llm_block_q4_k *x = (const void *) p;     /* Q5_K starts the same way */
        __m128i sm;
        h.d = h2f(x->d);
        h.dmin = h2f(x->dmin);
        memcpy(u, x->scales, 12);
        /* bytes 0-7: the 6-bit scales of chunks 0-7; bytes 8-15: the minimums */
        u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
        u[2] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
        {
            uint32_t m0 = u[1] & 0x3f3f3f3f;
            u[0] &= 0x3f3f3f3f;
            u[1] = u[2];
            u[2] = m0;
        }
        sm = _mm_loadu_si128((const __m128i *) u);
        h.sc8 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        /* minimum of chunk c for both halves of 16: bytes 8,8,9,9,...,15,15 */
        h.mins = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm,
            _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
        break;
    }
    case LLM_WT_Q6_K: {
        const llm_block_q6_k *x = (const void *) p;
        h.d = h2f(x->d);
        h.sc16b = _mm_loadu_si128((const __m128i *) x->scales);
        h.mins = _mm256_cvtepi8_epi16(h.sc16b);
        break;
    }
    case LLM_WT_Q2_K: {
        const llm_block_q2_k *x = (const void *) p;
        __m128i s = _mm_loadu_si128((const __m128i *) x->scales);
        h.d = h2f(x->d);
        h.dmin = h2f(x->dmin);
        h.sc16b = _mm_and_si128(s, _mm_set1_epi8(0x0F));
        h.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0F)));
        break;
    }
    case LLM_WT_Q3_K: {
        const llm_block_q3_k *x = (const void *) p;
        const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
        uint32_t tmp;
        h.d = h2f(x->d);
        memcpy(u, x->scales, 12);
        tmp = u[2];
        u[2] = ((u[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
        u[3] = ((u[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
        u[0] = (u[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
        u[1] = (u[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
        h.sc16b = _mm_sub_epi8(_mm_loadu_si128((const __m128i *) u), _mm_set1_epi8(32));
        h.mins = _mm256_cvtepi8_epi16(h.sc16b);
        break;
    }
    default: {     /* IQ4_XS */
        const llm_block_iq4_xs *x = (const void *) p;
        int16_t ls[8];
        int ib;
        h.d = h2f(x->d);
        for (ib = 0; ib < 8; ib++) {
            ls[ib] = (int16_t) ((((x->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF)
                                 | (((x->scales_h >> 2 * ib) & 3) << 4)) - 32);
        }
        h.sc8 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) ls));
        break;
    }
    }
    return h;
}

/* int16 scale vector of chunk c: one scale for 32 values, or one per 16 (first in the low lane) */
AVX2 INLINE __m256i
chunk_scale(llm_wtype t, const hdr256 *h, int c)
{
    if (t == LLM_WT_Q4_K || t == LLM_WT_Q5_K || t == LLM_WT_IQ4_XS) {
        return _mm256_shuffle_epi8(h->sc8, _mm256_set1_epi16((short) ((2 * c) | ((2 * c + 1) << 8))));
    }
    {
        __m128i pair = _mm_shuffle_epi8(h->sc16b, _mm_setr_epi8(
            (char) (2 * c), (char) (2 * c), (char) (2 * c), (char) (2 * c),
            (char) (2 * c), (char) (2 * c), (char) (2 * c), (char) (2 * c),
            (char) (2 * c + 1), (char) (2 * c + 1), (char) (2 * c + 1), (char) (2 * c + 1),
            (char) (2 * c + 1), (char) (2 * c + 1), (char) (2 * c + 1), (char) (2 * c + 1)));
        return t == LLM_WT_Q2_K ? _mm256_cvtepu8_epi16(pair) : _mm256_cvtepi8_epi16(pair);
    }
}

/* codes of values 32c..32c+31 of a super-block: unsigned (IQ4_XS: signed) bytes */
AVX2 INLINE __m256i
chunk_codes(llm_wtype t, const hdr256 *h, int c)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03), m1 = _mm256_set1_epi8(0x01);

    switch (t) {
    case LLM_WT_Q4_K: {
        const llm_block_q4_k *x = (const void *) h->p;
        __m256i q = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (c / 2)));
        return _mm256_and_si256(c % 2 ? _mm256_srli_epi16(q, 4) : q, m4);
    }
    case LLM_WT_Q5_K: {
        const llm_block_q5_k *x = (const void *) h->p;
        __m256i q = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (c / 2)));
        __m256i hb = _mm256_loadu_si256((const __m256i *) x->qh);
        hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, c), m1), 4);
        return _mm256_or_si256(_mm256_and_si256(c % 2 ? _mm256_srli_epi16(q, 4) : q, m4), hb);
    }
    case LLM_WT_Q6_K: {
        const llm_block_q6_k *x = (const void *) h->p;
        int n = c / 4, m = c % 4;
        __m256i lo = _mm256_loadu_si256((const __m256i *) (x->ql + 64 * n + 32 * (m & 1)));
        __m256i hb = _mm256_loadu_si256((const __m256i *) (x->qh + 32 * n));
        hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * m), m2), 4);
        return _mm256_or_si256(_mm256_and_si256(m < 2 ? lo : _mm256_srli_epi16(lo, 4), m4), hb);
    }
    case LLM_WT_Q2_K: {
        const llm_block_q2_k *x = (const void *) h->p;
        __m256i q = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (c / 4)));
        return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), m2);
    }
    case LLM_WT_Q3_K: {
        const llm_block_q3_k *x = (const void *) h->p;
        __m256i q = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (c / 4)));
        __m256i hm = _mm256_loadu_si256((const __m256i *) x->hmask);
        hm = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), m1), 2);
        return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), m2), hm);
    }
    default: {
        const llm_block_iq4_xs *x = (const void *) h->p;
        return lookup16(llm_iq4nl_values, nib32(x->qs + 16 * c));
    }
    }
}

/*
 * Integer total of one super-block for one token, before d * dk:
 *   sum_c scale_c * (codes_c . a_c)  -  offset * sum_16 scale16 * bsum16
 * (Q6_K offset 32, Q3_K offset 4); minimums are handled by the caller.
 */
AVX2 INLINE __m256i
offset_fix(llm_wtype t, const hdr256 *h, __m256i s, __m256i bs)
{
    if (t == LLM_WT_Q6_K) return _mm256_sub_epi32(s, _mm256_slli_epi32(_mm256_madd_epi16(h->mins, bs), 5));
    if (t == LLM_WT_Q3_K) return _mm256_sub_epi32(s, _mm256_slli_epi32(_mm256_madd_epi16(h->mins, bs), 2));
    return s;
}

INLINE int
has_min(llm_wtype t)
{
    return t == LLM_WT_Q4_K || t == LLM_WT_Q5_K || t == LLM_WT_Q2_K;
}

#endif
