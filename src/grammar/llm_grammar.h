/*
 * Constrained decoding: grammars over bytes, and token masks from them.
 *
 * A grammar (llm_grammar) is a set of rules over single bytes, built from a
 * JSON Schema, a GBNF text (llama.cpp syntax), a regular expression, or by
 * hand with the builder below; characters outside ASCII are spelled as their
 * UTF-8 byte sequences, so a grammar matches byte strings and token bytes
 * from a byte-level BPE vocabulary can be checked directly.
 *
 * Recognition is a pushdown automaton: a parse state is a set of stacks of
 * grammar positions (llama.cpp's scheme, stacks hash-consed so that a state
 * is a small set of integers).  States are interned and their byte
 * transitions memoized, so a compiled grammar grows a lazily built automaton
 * that every request on it shares; token masks are computed per state by a
 * walk over a trie of the vocabulary's token bytes that skips whole subtrees
 * at the first dead byte, and are cached per state.
 *
 *   llm_grammar   rules; immutable once built.  From a schema/GBNF/regex.
 *   llm_gvocab    token bytes of one tokenizer as a trie; built once per model.
 *                 Also keeps the vocabulary walks of every grammar on it (by
 *                 the canonical text of a grammar position), so a new schema
 *                 reuses what earlier ones walked; internally locked.
 *   llm_gindex    grammar x vocabulary: interned states, transitions, masks.
 *                 Shared by the requests that use the same grammar; internally
 *                 locked, so requests on different threads may share it.
 *   llm_gmatcher  one generation's position in the grammar (request-scoped).
 *
 * No nginx; plain C11 with jansson (JSON Schema input).  Errors come back as
 * NULL / -1 with a message in err[errlen]; for schema input the message
 * names the unsupported keyword (the API layer answers it with a 400).
 */
#ifndef LLM_GRAMMAR_H
#define LLM_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef struct llm_grammar  llm_grammar;
typedef struct llm_gvocab   llm_gvocab;
typedef struct llm_gindex   llm_gindex;
typedef struct llm_gmatcher llm_gmatcher;

/* ---- grammars from text ---- */

/* GBNF (llama.cpp): `name ::= alternatives`, "literals", [classes], ( ), * + ?
 * {m,n}, `.`, # comments; the start rule is `root`. */
llm_grammar *llm_grammar_from_gbnf(const char *src, size_t len, char *err, size_t errlen);

/* A regular expression matched against the whole output (implicitly anchored):
 * literals, escapes, classes, `.`, groups, |, * + ? {m,n}; no backreferences
 * or lookaround. */
llm_grammar *llm_grammar_from_regex(const char *re, size_t len, char *err, size_t errlen);

/* JSON Schema (the subset in docs/api.md) -> one JSON value valid against it.
 * schema NULL: any JSON object (response_format json_object). */
llm_grammar *llm_grammar_from_json_schema(const json_t *schema, char *err, size_t errlen);

void llm_grammar_free(llm_grammar *g);
size_t llm_grammar_n_rules(const llm_grammar *g);
/* The rules as GBNF text (malloc'd), for tests and debugging. */
char *llm_grammar_to_gbnf(const llm_grammar *g);

/* ---- building grammars (used by the front ends and by tool-call formats) ---- */

typedef struct llm_gbuild llm_gbuild;
typedef struct llm_gseq   llm_gseq;   /* one rule body under construction */

llm_gbuild *llm_gbuild_new(void);
void        llm_gbuild_free(llm_gbuild *b);
/* A new rule id; name is for diagnostics (made unique). */
int  llm_gbuild_rule(llm_gbuild *b, const char *name);
/* Rule id by name, -1 if none. */
int  llm_gbuild_find(const llm_gbuild *b, const char *name);

llm_gseq *llm_gseq_new(void);
void llm_gseq_free(llm_gseq *s);
void llm_gseq_clear(llm_gseq *s);
/* Append to the current alternative. */
int  llm_gseq_bytes(llm_gbuild *b, llm_gseq *s, const char *lit, size_t n);   /* literal bytes */
int  llm_gseq_class(llm_gbuild *b, llm_gseq *s, const uint8_t set[32]);       /* one byte in set */
int  llm_gseq_ref(llm_gseq *s, int rule);
int  llm_gseq_alt(llm_gseq *s);                                               /* start next alternative */
/* Rule body := s (s is left unchanged).  Each rule is defined once. */
int  llm_gbuild_define(llm_gbuild *b, int rule, const llm_gseq *s);
/* Helper rules: one code point in sorted ranges [lo,hi] (negate: outside them),
 * and `rule` repeated min..max times (max < 0: unbounded).  -1 on error. */
int  llm_gbuild_codepoints(llm_gbuild *b, const uint32_t *ranges, size_t n_ranges, int negate);
int  llm_gbuild_repeat(llm_gbuild *b, int rule, long min, long max);
/* Any text (UTF-8; printable, tab, newline) not containing the ASCII
 * marker stop; stop itself is not part of it.  -1 on error. */
int  llm_gbuild_text_until(llm_gbuild *b, const char *stop, size_t n);
/* Rule for a literal string. */
int  llm_gbuild_literal(llm_gbuild *b, const char *lit, size_t n);
/* Checks every rule is defined and none is left-recursive; takes root. */
llm_grammar *llm_gbuild_finish(llm_gbuild *b, int root, char *err, size_t errlen);

/* GBNF text / a regular expression added to a builder (GBNF rule names get a
 * prefix); returns the start rule, -1 with a message. */
int llm_gbuild_gbnf(llm_gbuild *b, const char *src, size_t len, char *err, size_t errlen);
int llm_gbuild_regex(llm_gbuild *b, const char *re, size_t len, char *err, size_t errlen);

/* Adds the JSON value grammar for a schema to a builder; returns its rule id
 * (for tool-call formats that embed several schemas in one grammar). */
int llm_gbuild_json_schema(llm_gbuild *b, const json_t *schema, char *err, size_t errlen);
/* The same with options: LLM_GJSON_NO_LT writes '<' in strings only as
 * \u003c, so a tool-call format's markers (<tool_call>...) cannot appear
 * inside a value. */
#define LLM_GJSON_NO_LT 1
int llm_gbuild_json_schema_flags(llm_gbuild *b, const json_t *schema, int flags,
                                 char *err, size_t errlen);

/*
 * Tool-call arguments in a format that does not write them as one JSON
 * object (qwen3_coder / glm4 XML-style parameters, pythonic keywords): the
 * top-level properties of schema (in its order, the required ones present)
 * each as  key_pre NAME key_post VALUE val_post,  sep between two.  VALUE is
 * JSON for the property's schema (flags as above), except when reads()
 * says the format's parser takes the value as text (returns 1): then the
 * string itself, unquoted and unescaped, where '<' is never followed by
 * '/', a letter or '<' (so no marker can appear in it).  reads() may name
 * the one type of a type list the parser converts the text to (*type).
 * Returns the rule of the members; -1 with a message naming what cannot be
 * enforced (a 400 for the request).
 */
typedef struct {
    const char *format;                       /* for messages: "qwen3_coder" */
    const char *key_pre, *key_post, *val_post, *sep;
    int         ident_keys;                   /* names must be identifiers */
    int       (*reads)(const json_t *prop, const char **type);
} llm_gargs_style;
int llm_gbuild_json_args(llm_gbuild *b, const json_t *schema, const llm_gargs_style *st, int flags,
                         char *err, size_t errlen);

/* ---- vocabulary ---- */

/*
 * n_vocab token ids; bytes_of(ctx, id, out, cap) writes a token's bytes and
 * returns their count (-1: no such id).  Ids listed in `excluded` (special
 * tokens, end-of-sequence ids) are never in the trie; the matcher allows
 * stop ids when the grammar is complete and `extra` ids where their bytes fit.
 */
typedef int (*llm_gvocab_bytes_fn)(void *ctx, int32_t id, char *out, size_t cap);
llm_gvocab *llm_gvocab_create(size_t n_vocab, llm_gvocab_bytes_fn bytes_of, void *ctx,
                              const int32_t *excluded, size_t n_excluded,
                              char *err, size_t errlen);
/* Walks of the JSON building blocks (the characters of strings and bounded
 * strings, inside each format, of numbers; plain and with '<' escaped) made
 * now and kept in v, so that the first masks of a schema never seen before
 * find them (llm_gprewarm.c; once per model, at load).  0, or -1 with a
 * message (v stays usable: its walks are then made on first use). */
int    llm_gvocab_prewarm(llm_gvocab *v, char *err, size_t errlen);
/* Bytes held by the vocabulary's table of walks. */
size_t llm_gvocab_walk_bytes(const llm_gvocab *v);
void   llm_gvocab_free(llm_gvocab *v);
size_t llm_gvocab_n_vocab(const llm_gvocab *v);
size_t llm_gvocab_n_nodes(const llm_gvocab *v);
/* Bytes of a token as seen by the grammar (NULL when excluded / unknown). */
const char *llm_gvocab_token(const llm_gvocab *v, int32_t id, size_t *len);

/* ---- index and matcher ---- */

/* stop ids: allowed exactly when the grammar is complete; extra ids: tokens
 * outside the trie (special tokens a format needs) allowed where their bytes
 * fit.  Both are copied.  The index keeps g and v borrowed (free it first). */
llm_gindex *llm_gindex_create(const llm_grammar *g, const llm_gvocab *v,
                              const int32_t *stop_ids, size_t n_stop,
                              const int32_t *extra_ids, size_t n_extra,
                              char *err, size_t errlen);
/* Reference counted: create gives one reference, retain adds one, free
 * drops one (the last frees it, with a grammar it adopted). */
void   llm_gindex_retain(llm_gindex *x);
void   llm_gindex_adopt(llm_gindex *x, llm_grammar *g);
void   llm_gindex_free(llm_gindex *x);
size_t llm_gindex_n_states(const llm_gindex *x);
long   llm_gindex_n_masks_computed(const llm_gindex *x);   /* cache misses so far */
long   llm_gindex_n_cut_walks(const llm_gindex *x);        /* vocabulary walks so far */
/* ... of which walks of the grammar's top level (stacks no deeper than the
 * cut: kept by the index, not shared through the vocabulary) */
long   llm_gindex_n_top_walks(const llm_gindex *x);
/* Live trie nodes those walks visited (their cost; dead bytes skip subtrees). */
long   llm_gindex_n_walk_nodes(const llm_gindex *x);
/* Drop cached masks (transitions stay); for memory tests and benchmarks. */
void   llm_gindex_drop_masks(llm_gindex *x);

llm_gmatcher *llm_gmatcher_create(llm_gindex *x);
void llm_gmatcher_free(llm_gmatcher *m);
/* A matcher at the same position (on the same index), to look ahead with. */
llm_gmatcher *llm_gmatcher_clone(const llm_gmatcher *m);
/* Allowed next tokens as a bitset of (n_vocab + 63) / 64 words.  0, or -1 when
 * no token is allowed (cannot happen for a grammar whose rules all produce
 * something; reported rather than assumed). */
int  llm_gmatcher_mask(llm_gmatcher *m, uint64_t *bits);
/* The same mask by the plain walk of the whole vocabulary from the state
 * (no cut stacks, no cache): the reference the fast mask is tested against. */
int  llm_gmatcher_mask_reference(llm_gmatcher *m, uint64_t *bits);
/* 1 if the grammar allows token id next (no mask needed: a sampler can try
 * its pick first and compute the mask only when the pick is refused). */
int  llm_gmatcher_allows(llm_gmatcher *m, int32_t id);
/* Advance by a token; -1 (state unchanged) when the grammar does not allow it. */
int  llm_gmatcher_accept(llm_gmatcher *m, int32_t id);
/* Advance by raw bytes (text that bypassed the sampler); -1 if not allowed. */
int  llm_gmatcher_accept_bytes(llm_gmatcher *m, const char *s, size_t n);
/* 1 once a stop id was accepted (generation must end). */
int  llm_gmatcher_done(const llm_gmatcher *m);
/* 1 when the text so far is a complete sentence of the grammar. */
int  llm_gmatcher_complete(const llm_gmatcher *m);
/* Bytes the grammar forces next (one possible byte at a time, stopping at a
 * complete state); returns their count, at most cap. */
size_t llm_gmatcher_forced(llm_gmatcher *m, char *out, size_t cap);

/* 1 if the whole byte string is a sentence of the grammar (tests). */
int llm_grammar_accepts(llm_gindex *x, const char *s, size_t n);

#endif
