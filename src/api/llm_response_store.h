/*
 * The kept responses of the Responses API (previous_response_id, GET and
 * DELETE /v1/responses/{id}): records keyed by response id, bounded by the
 * memory they are given, each expiring `ttl` seconds after it was stored.
 *
 * Policy only.  The memory comes from the caller's allocator (the server
 * gives it an nginx shared memory zone, so that every worker reads what any
 * worker stored; the unit tests give it malloc with a byte budget), and the
 * caller serialises the calls (the zone's mutex).  Everything the store
 * holds is inside that memory: plain pointers work because the zone is
 * mapped at one address in every worker; the allocator is passed to every
 * call instead of being kept, since function addresses need not survive a
 * reload.
 *
 * When an allocation fails, a put first drops every expired record, then
 * the least recently used ones (a get or a put makes a record the most
 * recent), until the new record fits; a record that does not fit in the
 * empty store is refused.  A record is opaque bytes (llm_responses.h
 * encodes them).  No nginx.
 */
#ifndef LLM_RESPONSE_STORE_H
#define LLM_RESPONSE_STORE_H

#include <stddef.h>

#include "core/llm_buf.h"

typedef struct {
    void  *(*alloc)(void *ctx, size_t size);   /* NULL: no room */
    void   (*free)(void *ctx, void *p);
    void   *ctx;
} llm_store_mem;

typedef struct llm_response_store llm_response_store;

/* A store with n_buckets hash chains (at least 1), in mem's memory; NULL
 * when even that does not fit. */
llm_response_store *llm_response_store_create(const llm_store_mem *mem,
    size_t n_buckets);

/*
 * Keeps record under id (replacing a record of that id) until now + ttl
 * (unix seconds), evicting as above.  0, or -1 when the record does not fit
 * in the empty store (the store is then left without that id).
 */
int llm_response_store_put(llm_response_store *st, const llm_store_mem *mem,
    const char *id, size_t id_len, const void *record, size_t len,
    long long now, long long ttl);

/*
 * Appends id's record to out and makes it the most recent: 1; 0 when no
 * record has that id or it expired (an expired one is dropped); -1 when out
 * could not grow.
 */
int llm_response_store_get(llm_response_store *st, const llm_store_mem *mem,
    const char *id, size_t id_len, long long now, llm_buf *out);

/* Drops id's record: 1, or 0 when there was none (or it had expired). */
int llm_response_store_delete(llm_response_store *st,
    const llm_store_mem *mem, const char *id, size_t id_len, long long now);

/* Records held (expired ones not yet dropped included). */
size_t llm_response_store_count(const llm_response_store *st);

#endif
