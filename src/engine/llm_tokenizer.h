/*
 * Tokenizer read from a Hugging Face model directory (tokenizer.json and
 * tokenizer_config.json).  Loaded once per model, then shared read-only by
 * all threads; every function here is thread-safe on a loaded tokenizer.
 *
 * Supported: BPE models with the byte-level pre-tokenizer and Split regexes
 * (PCRE2, Unicode properties), SentencePiece-style BPE (Metaspace, Prepend,
 * Replace, NFC normalizers; byte fallback), added and special tokens,
 * the ByteLevel / Metaspace / Replace / ByteFallback / Fuse / Strip decoders.
 */
#ifndef LLM_TOKENIZER_H
#define LLM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct llm_tokenizer llm_tokenizer;

/*
 * model_path: a folder with tokenizer.json and (optionally)
 * tokenizer_config.json, or a GGUF file (those files beside it, else its
 * tokenizer.ggml.* metadata: llm_gguf.h).
 */
llm_tokenizer *llm_tokenizer_load(const char *model_path, char *err, size_t errlen);
/* Explicit paths; config_path may be NULL. */
llm_tokenizer *llm_tokenizer_load_files(const char *tokenizer_json,
                                        const char *config_path,
                                        char *err, size_t errlen);
void llm_tokenizer_free(llm_tokenizer *tok);

/* One more than the largest token id (vocabulary plus added tokens). */
size_t llm_tokenizer_n_vocab(const llm_tokenizer *tok);

/* How llm_tokenizer_encode_opts reads text. */
typedef struct {
    int           add_special;   /* BOS/EOS as HF add_special_tokens=True */
    /*
     * 1: special tokens written in the text are control tokens (HF's
     *    default, right for a rendered chat prompt's own markup);
     * 0: they are plain text, tokenized like any other (HF
     *    split_special_tokens=True).  Added tokens that are not special
     *    are recognised either way, as in HF.
     */
    int           parse_special;
    /*
     * With parse_special: byte offsets of text, ascending, at which a
     * special token written there is plain text all the same: the places
     * where text from a request landed inside a rendered prompt
     * (llm_chat_render_prompt).  May be NULL.
     */
    const size_t *plain_at;
    size_t        n_plain_at;
} llm_tok_encode_opts;

/* text -> ids as opts say.  *ids is malloc'd.  0, or -1 out of memory. */
int llm_tokenizer_encode_opts(const llm_tokenizer *tok, const char *text,
                              size_t len, const llm_tok_encode_opts *opts,
                              int32_t **ids, size_t *n_ids);

/*
 * Bytes of the longest special token (an added token marked "special")
 * written at the start of s, or 0.
 */
size_t llm_tokenizer_special_at(const llm_tokenizer *tok, const char *s,
                                size_t n);

/*
 * text -> ids.  Added/special tokens written in the text are always
 * recognised (as HF does when encoding a rendered chat prompt).
 * add_special: prepend/append BOS/EOS like HF add_special_tokens=True
 * (tokenizer_config add_bos_token/add_eos_token, else the tokenizer.json
 * TemplateProcessing).  *ids is malloc'd; the caller frees it.
 * Returns 0, or -1 on allocation failure.
 */
int llm_tokenizer_encode(const llm_tokenizer *tok, const char *text, size_t len,
                         int add_special, int32_t **ids, size_t *n_ids);

/*
 * ids -> text through the tokenizer.json decoder (no clean-up of spaces).
 * skip_special drops special tokens.  *text is malloc'd and NUL-terminated;
 * bytes that do not form valid UTF-8 become U+FFFD as in HF.  Unknown ids
 * are skipped.  Returns 0, or -1 on allocation failure.
 */
int llm_tokenizer_decode(const llm_tokenizer *tok, const int32_t *ids, size_t n,
                         int skip_special, char **text, size_t *len);

/* Id of a vocabulary or added token written exactly, e.g. "<|im_end|>"; -1 if absent. */
int32_t llm_tokenizer_token_id(const llm_tokenizer *tok, const char *piece);

/* The token's string as stored in the vocabulary (e.g. "Ġhello", "▁the"); NULL if unknown id. */
const char *llm_tokenizer_piece(const llm_tokenizer *tok, int32_t id);

/* 1 for added tokens marked "special": true. */
int llm_tokenizer_is_special(const llm_tokenizer *tok, int32_t id);

/* 1 for added tokens (tokenizer.json added_tokens), special or not. */
int llm_tokenizer_is_added(const llm_tokenizer *tok, int32_t id);

/* BOS/EOS from tokenizer_config.json (string or {"content": ...}); NULL / -1 if not set. */
const char *llm_tokenizer_bos(const llm_tokenizer *tok);
const char *llm_tokenizer_eos(const llm_tokenizer *tok);
int32_t     llm_tokenizer_bos_id(const llm_tokenizer *tok);
int32_t     llm_tokenizer_eos_id(const llm_tokenizer *tok);

/*
 * Raw bytes a single token contributes to decoded text, in isolation of its
 * neighbours (byte-level pieces mapped back to bytes, "▁" to space,
 * "<0xNN>" to byte NN).  Used by the incremental detokenizer.  Returns the
 * number of bytes written to out (at most outlen) or -1 for an unknown id.
 */
int llm_tokenizer_token_bytes(const llm_tokenizer *tok, int32_t id,
                              char *out, size_t outlen);

/* 1 when the decoder strips one leading space at the start of text (SentencePiece). */
int llm_tokenizer_strips_leading_space(const llm_tokenizer *tok);

#endif
