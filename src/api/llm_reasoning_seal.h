/*
 * Responses API reasoning.encrypted_content: a reasoning item's text sealed
 * with the server's key (the llm_thinking_key of Anthropic's signatures), so
 * that a stateless client (store: false) can carry the model's reasoning to
 * its next request without reading or changing it, and the server renders
 * exactly what the model thought.
 *
 *   sealed = base64( version | nonce | ciphertext | tag )
 *   version     one byte, LLM_REASONING_SEAL_VERSION
 *   nonce       LLM_REASONING_SEAL_NONCE random bytes
 *   ciphertext  text XOR keystream, block i of the keystream being
 *               HMAC-SHA256(enc_key, nonce | i as 4 bytes big-endian)
 *   tag         HMAC-SHA256(mac_key, version | nonce | ciphertext)
 *
 * enc_key and mac_key are HMAC-SHA256(key, label) with labels of their own,
 * so neither equals the key that signs thinking blocks.  Encrypt-then-MAC:
 * the tag is checked (in constant time) before anything is decrypted.  A
 * restart without llm_thinking_key makes a new key, and items sealed before
 * it no longer open.  No nginx.
 */
#ifndef LLM_REASONING_SEAL_H
#define LLM_REASONING_SEAL_H

#include <stddef.h>

#include "api/llm_thinking_sig.h"
#include "core/llm_buf.h"

#define LLM_REASONING_SEAL_VERSION  1
#define LLM_REASONING_SEAL_NONCE    16

/* The sealed form of text, NUL-terminated, to free(); NULL when out of
 * memory or when the kernel gives no random bytes. */
char *llm_reasoning_seal(const llm_thinking_key *k, const char *text,
    size_t len);

/* The text sealed in s[0..len) appended to out: 0, or -1 when s is not an
 * item this key sealed (malformed, changed, or another key's), or out could
 * not grow (out->failed). */
int llm_reasoning_open(const llm_thinking_key *k, const char *s, size_t len,
    llm_buf *out);

#endif
