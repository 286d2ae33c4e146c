/* Internal layout of llm_tokenizer, shared by the llm_tokenizer*.c files. */
#ifndef LLM_TOKENIZER_INT_H
#define LLM_TOKENIZER_INT_H

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/llm_tokenizer.h"

/* string -> id, open addressing over ids; keys live in the tokenizer's piece table */
typedef struct {
    int32_t *slot;      /* id or -1 */
    size_t   mask;
} llm_tok_strmap;

/* (left id, right id) -> merge rank and merged id */
typedef struct {
    uint64_t key;       /* UINT64_MAX = empty */
    uint32_t rank;
    int32_t  id;
} llm_tok_merge;

/* growable list of byte strings (pre-token words, decoder tokens) */
typedef struct {
    char   *buf;        /* all bytes, back to back */
    size_t  len, cap;
    size_t *off;        /* n + 1 offsets into buf */
    size_t  n, ncap;
} llm_tok_list;

typedef enum {
    LLM_NORM_NFC, LLM_NORM_PREPEND, LLM_NORM_REPLACE, LLM_NORM_REPLACE_RE,
    LLM_NORM_STRIP, LLM_NORM_LOWERCASE
} llm_norm_kind;

typedef enum {
    LLM_PRE_SPLIT_RE, LLM_PRE_SPLIT_STR, LLM_PRE_BYTELEVEL, LLM_PRE_METASPACE,
    LLM_PRE_DIGITS, LLM_PRE_WHITESPACE_SPLIT
} llm_pre_kind;

typedef enum {
    LLM_SPLIT_ISOLATED, LLM_SPLIT_REMOVED, LLM_SPLIT_MERGED_PREV,
    LLM_SPLIT_MERGED_NEXT, LLM_SPLIT_CONTIGUOUS
} llm_split_behavior;

typedef enum {
    LLM_DEC_BYTELEVEL, LLM_DEC_METASPACE, LLM_DEC_REPLACE, LLM_DEC_BYTEFALLBACK,
    LLM_DEC_FUSE, LLM_DEC_STRIP
} llm_dec_kind;

typedef struct {
    int          kind;
    char        *pat, *content;     /* Replace/Prepend/Split strings, Metaspace replacement */
    size_t       pat_len, content_len;
    pcre2_code  *re;
    int          behavior, invert;
    int          flag_a, flag_b;    /* ByteLevel add_prefix_space/use_regex; Metaspace prepend(0 never,1 first,2 always)/split; Strip left/right */
    int          start, stop;       /* Strip decoder counts */
} llm_tok_step;

struct llm_tokenizer {
    size_t          n_vocab;        /* max id + 1 */
    char          **piece;          /* by id; NULL for holes */
    uint32_t       *piece_len;
    uint8_t        *flags;          /* LLM_TOKF_* */
    char           *arena;          /* piece bytes */

    llm_tok_strmap  vocab;          /* model vocabulary */
    llm_tok_strmap  added;          /* added tokens */
    llm_tok_merge  *merges;
    size_t          merges_mask;

    int             byte_fallback, fuse_unk, ignore_merges;
    int32_t         unk_id;
    int32_t         byte_id[256];   /* "<0xNN>" tokens, -1 if absent */
    char           *cont_prefix;    /* continuing_subword_prefix (unsupported unless empty) */

    llm_tok_step   *norm;   size_t n_norm;
    llm_tok_step   *pre;    size_t n_pre;
    llm_tok_step   *dec;    size_t n_dec;
    int             has_decoder;
    int             byte_level;     /* a ByteLevel pre-tokenizer is present */

    /* added-token matcher: byte trie, edges in a hash table keyed (node << 8 | byte) */
    uint64_t       *edge_key;       /* UINT64_MAX = empty */
    int32_t        *edge_child;
    size_t          edge_mask;
    int32_t        *trie_tok;       /* node -> token id or -1 */
    size_t          trie_nodes, trie_cap;
    uint8_t         first_byte[256];

    int32_t        *prefix_ids; size_t n_prefix;   /* add_special: before */
    int32_t        *suffix_ids; size_t n_suffix;   /*              after */

    char           *bos, *eos;
    int32_t         bos_id, eos_id;
    int             strip_leading;  /* decoder strips one leading space at text start */

    /*
     * SentencePiece words can be cut before a "▁" that follows character c
     * when no vocabulary token contains c + "▁": no merge can cross there.
     * meta_split is 0 when that does not hold often enough to be useful.
     */
    int             meta_split;
    uint32_t        meta_glue[32];  /* characters c that do occur before "▁" in a token */
    size_t          n_meta_glue;
};

enum {
    LLM_TOKF_SPECIAL = 1, LLM_TOKF_ADDED = 2,
    LLM_TOKF_LSTRIP = 4, LLM_TOKF_RSTRIP = 8   /* added token absorbs whitespace on that side */
};

/* hashing */
uint64_t llm_tok_hash(const char *s, size_t n);
int32_t  llm_tok_strmap_get(const llm_tokenizer *t, const llm_tok_strmap *m, const char *s, size_t n);

/* lists */
int  llm_tok_list_push(llm_tok_list *l, const char *s, size_t n);
void llm_tok_list_clear(llm_tok_list *l);
void llm_tok_list_free(llm_tok_list *l);
#define LLM_TOK_ITEM(l, i) ((l)->buf + (l)->off[i])
#define LLM_TOK_ILEN(l, i) ((l)->off[(i) + 1] - (l)->off[i])

/* UTF-8 */
int    llm_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);  /* bytes used, 0 if invalid */
size_t llm_utf8_encode(uint32_t cp, char *out);
size_t llm_utf8_bad_len(const char *s, size_t n);   /* bytes of the ill-formed or truncated sequence at s */
size_t llm_utf8_valid_prefix(const char *s, size_t n);  /* length of the longest complete valid prefix */
int    llm_utf8_lossy(const char *s, size_t n, char **out, size_t *outlen);  /* invalid -> U+FFFD, Rust rules */
/* The same, moving the n_offs ascending byte offsets of s in offs to where they land in *out. */
int    llm_utf8_lossy_map(const char *s, size_t n, char **out, size_t *outlen, size_t *offs, size_t n_offs);

/* normalizers / pre-tokenizers (llm_tokenizer_pre.c) */
int llm_tok_normalize(const llm_tokenizer *t, const char *s, size_t n, int first,
                      char **out, size_t *outlen);
int llm_tok_pretokenize(const llm_tokenizer *t, const char *s, size_t n, int first,
                        llm_tok_list *words);
int llm_tok_nfc(const char *s, size_t n, char **out, size_t *outlen);
void llm_tok_bytelevel_char(unsigned char b, char out[3], size_t *len);
int  llm_tok_bytelevel_byte(uint32_t cp);   /* char -> byte, or -1 */

/* BPE model (llm_tokenizer_bpe.c) */
int llm_tok_bpe_word(const llm_tokenizer *t, const char *w, size_t n,
                     int32_t **ids, size_t *n_ids, size_t *cap);

/* decoder chain (llm_tokenizer_dec.c); raw: keep bytes, no U+FFFD, no start strip */
int llm_tok_decode_chain(const llm_tokenizer *t, llm_tok_list *toks, int raw,
                         char **out, size_t *outlen);

#endif
