/*
 * 64-bit FNV-1a: the one non-cryptographic hash for keys and checksums that
 * must be equal across workers and restarts (prefix keys, KV disk files,
 * model fingerprints).  Chain calls to hash several pieces:
 *
 *     h = llm_fnv1a(llm_fnv1a(LLM_FNV_BASIS, a, na), b, nb);
 */
#ifndef LLM_FNV_H
#define LLM_FNV_H

#include <stddef.h>
#include <stdint.h>

#define LLM_FNV_BASIS  0xcbf29ce484222325ULL
#define LLM_FNV_PRIME  0x100000001b3ULL

static inline uint64_t
llm_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char  *p = data;
    size_t                i;

    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= LLM_FNV_PRIME;
    }
    return h;
}

#endif /* LLM_FNV_H */
