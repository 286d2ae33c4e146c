/*
 * Incremental detokenizer for streaming: one per sequence (request-scoped),
 * reading a shared llm_tokenizer.  Feed generated ids one at a time; it
 * hands back only text that is complete UTF-8, holding back the bytes of a
 * character split across tokens (byte-level BPE, SentencePiece byte
 * fallback).  The concatenation of everything it emits equals
 * llm_tokenizer_decode() of all ids pushed (with the same skip_special),
 * except that LLM_DETOK_CONTINUATION keeps a leading space and an invalid
 * byte sequence becomes one U+FFFD per ill-formed part (decode() gives one
 * per byte for SentencePiece byte-fallback groups, as HF does).
 */
#ifndef LLM_DETOK_H
#define LLM_DETOK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/llm_tokenizer.h"

enum {
    LLM_DETOK_SKIP_SPECIAL = 1,   /* drop special tokens (e.g. <|im_end|>) */
    LLM_DETOK_CONTINUATION = 2    /* text continues a prompt: keep the leading
                                     space SentencePiece decoders strip at the
                                     start of a text */
};

typedef struct {
    const llm_tokenizer *tok;
    int                  flags;
    int                  started;   /* some text was produced (for the leading-space strip) */
    char                *pending;   /* bytes of an incomplete UTF-8 character */
    size_t               n_pending;
    char                *out;       /* last emitted text, valid until the next call */
    size_t               out_cap;
} llm_detok;

void llm_detok_init(llm_detok *d, const llm_tokenizer *tok, int flags);

/*
 * Add one token.  On return (*text, *len) is the newly complete text (possibly
 * empty), valid until the next call on d.  Returns 0, or -1 on allocation failure.
 */
int llm_detok_push(llm_detok *d, int32_t id, const char **text, size_t *len);

/* End of stream: remaining held-back bytes, each invalid byte as U+FFFD. */
int llm_detok_flush(llm_detok *d, const char **text, size_t *len);

void llm_detok_free(llm_detok *d);   /* frees buffers, not d */

#endif
