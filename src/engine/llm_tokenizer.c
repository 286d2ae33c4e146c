/*
 * Tokenizer: loading tokenizer.json / tokenizer_config.json, encoding
 * (added-token split -> normalizers -> pre-tokenizers -> BPE), decoding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "core/llm_file.h"
#include "engine/llm_gguf.h"
#include "engine/llm_tokenizer_int.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

static const char GPT2_RE[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- building tables ---- */

static size_t
pow2_above(size_t n)
{
    size_t c = 16;

    while (c < n * 2) {
        c <<= 1;
    }
    return c;
}

static int
strmap_init(llm_tok_strmap *m, size_t n)
{
    size_t c = pow2_above(n);

    m->slot = malloc(c * sizeof(int32_t));
    if (m->slot == NULL) {
        return -1;
    }
    memset(m->slot, 0xff, c * sizeof(int32_t));
    m->mask = c - 1;
    return 0;
}

static void
strmap_put(const llm_tokenizer *t, llm_tok_strmap *m, int32_t id)
{
    size_t i;

    for (i = llm_tok_hash(t->piece[id], t->piece_len[id]) & m->mask; m->slot[i] >= 0; i = (i + 1) & m->mask) {
        if (t->piece_len[m->slot[i]] == t->piece_len[id]
            && memcmp(t->piece[m->slot[i]], t->piece[id], t->piece_len[id]) == 0)
        {
            return;   /* first id wins */
        }
    }
    m->slot[i] = id;
}

static int
set_piece(llm_tokenizer *t, int32_t id, const char *s, size_t n)
{
    char *p;

    if (id < 0 || (size_t) id >= t->n_vocab) {
        return -1;
    }
    if (t->piece[id] != NULL) {
        return 0;
    }
    p = malloc(n + 1);
    if (p == NULL) {
        return -1;
    }
    memcpy(p, s, n);
    p[n] = '\0';
    t->piece[id] = p;
    t->piece_len[id] = (uint32_t) n;
    return 0;
}

static int
trie_node_new(llm_tokenizer *t)
{
    if (t->trie_nodes == t->trie_cap) {
        size_t   nc = t->trie_cap ? t->trie_cap * 2 : 256;
        int32_t *p = realloc(t->trie_tok, nc * sizeof(int32_t));
        if (p == NULL) {
            return -1;
        }
        t->trie_tok = p;
        t->trie_cap = nc;
    }
    t->trie_tok[t->trie_nodes] = -1;
    return (int) t->trie_nodes++;
}

static int32_t
trie_child(const llm_tokenizer *t, int32_t node, unsigned char b)
{
    uint64_t key = ((uint64_t) node << 8) | b;
    size_t   i;

    for (i = llm_tok_hash((const char *) &key, sizeof(key)) & t->edge_mask;
         t->edge_key[i] != UINT64_MAX; i = (i + 1) & t->edge_mask)
    {
        if (t->edge_key[i] == key) {
            return t->edge_child[i];
        }
    }
    return -1;
}

static int
trie_insert(llm_tokenizer *t, const char *s, size_t n, int32_t id)
{
    int32_t node = 0, c;
    size_t  k, i;

    if (n == 0) {
        return 0;
    }
    t->first_byte[(unsigned char) s[0]] = 1;
    for (k = 0; k < n; k++) {
        c = trie_child(t, node, (unsigned char) s[k]);
        if (c < 0) {
            uint64_t key = ((uint64_t) node << 8) | (unsigned char) s[k];
            if ((c = trie_node_new(t)) < 0) {
                return -1;
            }
            for (i = llm_tok_hash((const char *) &key, sizeof(key)) & t->edge_mask;
                 t->edge_key[i] != UINT64_MAX; i = (i + 1) & t->edge_mask) { }
            t->edge_key[i] = key;
            t->edge_child[i] = c;
        }
        node = c;
    }
    if (t->trie_tok[node] < 0) {
        t->trie_tok[node] = id;
    }
    return 0;
}

/* ---- JSON helpers ---- */

static const char *
jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int
jbool(json_t *o, const char *key, int dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static char *
dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static pcre2_code *
compile_re(const char *pat, char *err, size_t errlen)
{
    int         ec;
    PCRE2_SIZE  eo;
    /* MATCH_INVALID_UTF: text may hold invalid UTF-8 (matching it unchecked
     * reads out of bounds); such bytes then match nothing, as a barrier */
    pcre2_code *re = pcre2_compile((PCRE2_SPTR) pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                                   &ec, &eo, NULL);
    if (re == NULL) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(ec, msg, sizeof(msg));
        ERR("tokenizer.json: regex /%s/ at offset %zu: %s", pat, (size_t) eo, (char *) msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* falls back to the interpreter if JIT is unavailable */
    return re;
}

/* pattern {"String": s} or {"Regex": r} */
static int
load_pattern(llm_tok_step *st, json_t *pat, int kind_str, int kind_re, char *err, size_t errlen)
{
    const char *s;

    if ((s = jstr(pat, "String")) != NULL) {
        st->kind = kind_str;
        st->pat = dupn(s, strlen(s));
        st->pat_len = strlen(s);
        return st->pat ? 0 : -1;
    }
    if ((s = jstr(pat, "Regex")) != NULL) {
        st->kind = kind_re;
        st->re = compile_re(s, err, errlen);
        return st->re ? 0 : -1;
    }
    ERR("tokenizer.json: pattern is neither String nor Regex");
    return -1;
}

static int
add_step(llm_tok_step **steps, size_t *n, llm_tok_step **out)
{
    llm_tok_step *p = realloc(*steps, (*n + 1) * sizeof(llm_tok_step));

    if (p == NULL) {
        return -1;
    }
    *steps = p;
    *out = &p[*n];
    memset(*out, 0, sizeof(llm_tok_step));
    (*n)++;
    return 0;
}

static int
prepend_scheme(json_t *o)
{
    const char *ps = jstr(o, "prepend_scheme");

    if (ps == NULL) {
        return jbool(o, "add_prefix_space", 1) ? 2 : 0;
    }
    return strcmp(ps, "always") == 0 ? 2 : strcmp(ps, "first") == 0 ? 1 : 0;
}

static int
load_normalizer(llm_tokenizer *t, json_t *n, char *err, size_t errlen)
{
    const char   *type;
    llm_tok_step *st;

    if (n == NULL || json_is_null(n)) {
        return 0;
    }
    type = jstr(n, "type");
    if (type == NULL) {
        ERR("tokenizer.json: normalizer without type");
        return -1;
    }
    if (strcmp(type, "Sequence") == 0) {
        size_t  i;
        json_t *v;
        json_array_foreach(json_object_get(n, "normalizers"), i, v) {
            if (load_normalizer(t, v, err, errlen)) return -1;
        }
        return 0;
    }
    if (add_step(&t->norm, &t->n_norm, &st)) return -1;
    if (strcmp(type, "NFC") == 0) {
        st->kind = LLM_NORM_NFC;
    } else if (strcmp(type, "Prepend") == 0) {
        const char *p = jstr(n, "prepend");
        st->kind = LLM_NORM_PREPEND;
        st->content = dupn(p ? p : "", p ? strlen(p) : 0);
        st->content_len = p ? strlen(p) : 0;
    } else if (strcmp(type, "Replace") == 0) {
        const char *c = jstr(n, "content");
        if (load_pattern(st, json_object_get(n, "pattern"), LLM_NORM_REPLACE, LLM_NORM_REPLACE_RE, err, errlen)) return -1;
        st->content = dupn(c ? c : "", c ? strlen(c) : 0);
        st->content_len = c ? strlen(c) : 0;
    } else if (strcmp(type, "Strip") == 0) {
        st->kind = LLM_NORM_STRIP;
        st->flag_a = jbool(n, "strip_left", 1);
        st->flag_b = jbool(n, "strip_right", 1);
    } else if (strcmp(type, "Lowercase") == 0) {
        st->kind = LLM_NORM_LOWERCASE;
    } else {
        ERR("tokenizer.json: unsupported normalizer '%s'", type);
        return -1;
    }
    return 0;
}

static int
split_behavior(const char *b)
{
    if (b == NULL || strcmp(b, "Isolated") == 0) return LLM_SPLIT_ISOLATED;
    if (strcmp(b, "Removed") == 0) return LLM_SPLIT_REMOVED;
    if (strcmp(b, "MergedWithPrevious") == 0) return LLM_SPLIT_MERGED_PREV;
    if (strcmp(b, "MergedWithNext") == 0) return LLM_SPLIT_MERGED_NEXT;
    if (strcmp(b, "Contiguous") == 0) return LLM_SPLIT_CONTIGUOUS;
    return -1;
}

static int
load_pre(llm_tokenizer *t, json_t *n, char *err, size_t errlen)
{
    const char   *type;
    llm_tok_step *st;

    if (n == NULL || json_is_null(n)) {
        return 0;
    }
    type = jstr(n, "type");
    if (type == NULL) {
        ERR("tokenizer.json: pre_tokenizer without type");
        return -1;
    }
    if (strcmp(type, "Sequence") == 0) {
        size_t  i;
        json_t *v;
        json_array_foreach(json_object_get(n, "pretokenizers"), i, v) {
            if (load_pre(t, v, err, errlen)) return -1;
        }
        return 0;
    }
    if (add_step(&t->pre, &t->n_pre, &st)) return -1;
    if (strcmp(type, "Split") == 0) {
        if (load_pattern(st, json_object_get(n, "pattern"), LLM_PRE_SPLIT_STR, LLM_PRE_SPLIT_RE, err, errlen)) return -1;
        st->behavior = split_behavior(jstr(n, "behavior"));
        if (st->behavior < 0) {
            ERR("tokenizer.json: unsupported Split behavior '%s'", jstr(n, "behavior"));
            return -1;
        }
        st->invert = jbool(n, "invert", 0);
    } else if (strcmp(type, "ByteLevel") == 0) {
        st->kind = LLM_PRE_BYTELEVEL;
        st->flag_a = jbool(n, "add_prefix_space", 1);
        st->flag_b = jbool(n, "use_regex", 1);
        if (st->flag_b && (st->re = compile_re(GPT2_RE, err, errlen)) == NULL) return -1;
        t->byte_level = 1;
    } else if (strcmp(type, "Metaspace") == 0) {
        const char *r = jstr(n, "replacement");
        st->kind = LLM_PRE_METASPACE;
        st->content = dupn(r ? r : "\xE2\x96\x81", r ? strlen(r) : 3);
        st->content_len = r ? strlen(r) : 3;
        st->flag_a = prepend_scheme(n);
        st->flag_b = jbool(n, "split", 1);
    } else if (strcmp(type, "Digits") == 0) {
        st->kind = LLM_PRE_DIGITS;
        st->flag_a = jbool(n, "individual_digits", 0);
    } else if (strcmp(type, "WhitespaceSplit") == 0) {
        st->kind = LLM_PRE_WHITESPACE_SPLIT;
    } else {
        ERR("tokenizer.json: unsupported pre_tokenizer '%s'", type);
        return -1;
    }
    return 0;
}

static int
load_decoder(llm_tokenizer *t, json_t *n, char *err, size_t errlen)
{
    const char   *type;
    llm_tok_step *st;

    if (n == NULL || json_is_null(n)) {
        return 0;
    }
    t->has_decoder = 1;
    type = jstr(n, "type");
    if (type == NULL) {
        ERR("tokenizer.json: decoder without type");
        return -1;
    }
    if (strcmp(type, "Sequence") == 0) {
        size_t  i;
        json_t *v;
        json_array_foreach(json_object_get(n, "decoders"), i, v) {
            if (load_decoder(t, v, err, errlen)) return -1;
        }
        return 0;
    }
    if (add_step(&t->dec, &t->n_dec, &st)) return -1;
    if (strcmp(type, "ByteLevel") == 0) {
        st->kind = LLM_DEC_BYTELEVEL;
    } else if (strcmp(type, "Metaspace") == 0) {
        const char *r = jstr(n, "replacement");
        st->kind = LLM_DEC_METASPACE;
        st->content = dupn(r ? r : "\xE2\x96\x81", r ? strlen(r) : 3);
        st->content_len = r ? strlen(r) : 3;
        st->flag_a = prepend_scheme(n);
        if (st->flag_a) t->strip_leading = 1;
    } else if (strcmp(type, "Replace") == 0) {
        const char *c = jstr(n, "content");
        if (load_pattern(st, json_object_get(n, "pattern"), LLM_DEC_REPLACE, -1, err, errlen)) return -1;
        if (st->kind != LLM_DEC_REPLACE) {
            ERR("tokenizer.json: Replace decoder with a regex is not supported");
            return -1;
        }
        st->content = dupn(c ? c : "", c ? strlen(c) : 0);
        st->content_len = c ? strlen(c) : 0;
    } else if (strcmp(type, "ByteFallback") == 0) {
        st->kind = LLM_DEC_BYTEFALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        st->kind = LLM_DEC_FUSE;
    } else if (strcmp(type, "Strip") == 0) {
        const char *c = jstr(n, "content");
        st->kind = LLM_DEC_STRIP;
        st->content = dupn(c ? c : " ", c ? strlen(c) : 1);
        st->content_len = c ? strlen(c) : 1;
        st->start = (int) json_integer_value(json_object_get(n, "start"));
        st->stop = (int) json_integer_value(json_object_get(n, "stop"));
        if (st->start > 0 && st->content_len == 1 && st->content[0] == ' ') t->strip_leading = 1;
    } else {
        ERR("tokenizer.json: unsupported decoder '%s'", type);
        return -1;
    }
    return 0;
}

/* special-token ids of a TemplateProcessing "single" template: before/after $A */
static int
load_post(llm_tokenizer *t, json_t *pp)
{
    const char *type = jstr(pp, "type");
    json_t     *v, *specials;
    size_t      i, j;
    int         after = 0;

    if (type == NULL) {
        return 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        json_array_foreach(json_object_get(pp, "processors"), i, v) {
            if (load_post(t, v)) return -1;
        }
        return 0;
    }
    if (strcmp(type, "TemplateProcessing") != 0) {
        return 0;
    }
    specials = json_object_get(pp, "special_tokens");
    json_array_foreach(json_object_get(pp, "single"), i, v) {
        json_t *sp = json_object_get(v, "SpecialToken"), *ids, *idv;
        if (json_object_get(v, "Sequence")) {
            after = 1;
            continue;
        }
        if (sp == NULL) continue;
        ids = json_object_get(json_object_get(specials, jstr(sp, "id") ? jstr(sp, "id") : ""), "ids");
        json_array_foreach(ids, j, idv) {
            int32_t  **arr = after ? &t->suffix_ids : &t->prefix_ids;
            size_t    *na = after ? &t->n_suffix : &t->n_prefix;
            int32_t   *p = realloc(*arr, (*na + 1) * sizeof(int32_t));
            if (p == NULL) return -1;
            *arr = p;
            p[(*na)++] = (int32_t) json_integer_value(idv);
        }
    }
    return 0;
}

static char *
config_token(json_t *cfg, const char *key)
{
    json_t *v = json_object_get(cfg, key);

    if (json_is_object(v)) {
        v = json_object_get(v, "content");
    }
    return json_is_string(v) ? dupn(json_string_value(v), json_string_length(v)) : NULL;
}

/* merges: "a b" strings or ["a", "b"] pairs; rank = position */
static int
load_merges(llm_tokenizer *t, json_t *merges, char *err, size_t errlen)
{
    size_t  n = json_array_size(merges), i, c;
    json_t *m;
    char   *buf = NULL;
    size_t  bcap = 0;

    c = pow2_above(n);
    t->merges = malloc(c * sizeof(llm_tok_merge));
    if (t->merges == NULL) return -1;
    for (i = 0; i < c; i++) t->merges[i].key = UINT64_MAX;
    t->merges_mask = c - 1;

    json_array_foreach(merges, i, m) {
        const char *a, *b;
        size_t      la, lb, h;
        int32_t     ia, ib, im;
        uint64_t    key;

        if (json_is_string(m)) {
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            if (sp == NULL) {
                ERR("tokenizer.json: merge %zu '%s' has no space", i, s);
                free(buf);
                return -1;
            }
            a = s; la = (size_t) (sp - s);
            b = sp + 1; lb = strlen(b);
        } else if (json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            a = json_string_value(json_array_get(m, 0));
            la = json_string_length(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1));
            lb = json_string_length(json_array_get(m, 1));
        } else {
            ERR("tokenizer.json: merge %zu is neither \"a b\" nor [a, b]", i);
            free(buf);
            return -1;
        }
        ia = llm_tok_strmap_get(t, &t->vocab, a, la);
        ib = llm_tok_strmap_get(t, &t->vocab, b, lb);
        if (la + lb > bcap) {
            char *nb = realloc(buf, la + lb + 64);
            if (nb == NULL) { free(buf); return -1; }
            buf = nb;
            bcap = la + lb + 64;
        }
        memcpy(buf, a, la);
        memcpy(buf + la, b, lb);
        im = llm_tok_strmap_get(t, &t->vocab, buf, la + lb);
        if (ia < 0 || ib < 0 || im < 0) {
            continue;   /* HF refuses such files; a merge we cannot apply is dropped */
        }
        key = ((uint64_t) (uint32_t) ia << 32) | (uint32_t) ib;
        for (h = llm_tok_hash((const char *) &key, sizeof(key)) & t->merges_mask;
             t->merges[h].key != UINT64_MAX && t->merges[h].key != key; h = (h + 1) & t->merges_mask) { }
        if (t->merges[h].key == key) {
            continue;   /* keep the first (lowest) rank */
        }
        t->merges[h].key = key;
        t->merges[h].rank = (uint32_t) i;
        t->merges[h].id = im;
    }
    free(buf);
    return 0;
}

#define META "\xE2\x96\x81"   /* U+2581, SentencePiece's space */

static void
find_meta_splits(llm_tokenizer *t)
{
    size_t id, k;

    if (llm_tok_strmap_get(t, &t->vocab, META, 3) < 0) {
        return;
    }
    t->meta_split = 1;
    for (id = 0; id < t->n_vocab && t->meta_split; id++) {
        const char *p = t->piece[id];
        size_t      n = t->piece_len[id], i;
        if (p == NULL || (t->flags[id] & LLM_TOKF_ADDED)) continue;
        for (i = 1; i + 3 <= n; i++) {
            uint32_t cp;
            size_t   b = i;
            if (memcmp(p + i, META, 3) != 0) continue;
            while (b > 0 && ((unsigned char) p[b - 1] & 0xC0) == 0x80) b--;
            if (b > 0) b--;
            if (llm_utf8_decode((const unsigned char *) p + b, i - b, &cp) == 0 || cp == 0x2581) continue;
            for (k = 0; k < t->n_meta_glue && t->meta_glue[k] != cp; k++) { }
            if (k == t->n_meta_glue) {
                if (t->n_meta_glue == sizeof(t->meta_glue) / sizeof(t->meta_glue[0])) {
                    t->meta_split = 0;
                    break;
                }
                t->meta_glue[t->n_meta_glue++] = cp;
            }
        }
    }
}

static int
load_model(llm_tokenizer *t, json_t *root, char *err, size_t errlen)
{
    json_t     *model = json_object_get(root, "model"), *vocab, *added, *v;
    const char *type = jstr(model, "type"), *key, *s;
    size_t      i, nadded;
    int64_t     maxid = -1;

    if (type == NULL && json_object_get(model, "merges")) {
        type = "BPE";
    }
    if (type == NULL || strcmp(type, "BPE") != 0) {
        ERR("tokenizer.json: model type '%s' is not supported (only BPE)", type ? type : "?");
        return -1;
    }
    s = jstr(model, "continuing_subword_prefix");
    if ((s && *s) || ((s = jstr(model, "end_of_word_suffix")) && *s)) {
        ERR("tokenizer.json: BPE continuing_subword_prefix/end_of_word_suffix are not supported");
        return -1;
    }
    vocab = json_object_get(model, "vocab");
    added = json_object_get(root, "added_tokens");
    if (!json_is_object(vocab)) {
        ERR("tokenizer.json: model.vocab is not an object");
        return -1;
    }
    json_object_foreach(vocab, key, v) {
        if (json_integer_value(v) > maxid) maxid = json_integer_value(v);
    }
    json_array_foreach(added, i, v) {
        if (json_integer_value(json_object_get(v, "id")) > maxid) maxid = json_integer_value(json_object_get(v, "id"));
    }
    if (maxid < 0 || maxid > 50000000) {
        ERR("tokenizer.json: empty or absurd vocabulary");
        return -1;
    }
    t->n_vocab = (size_t) maxid + 1;
    t->piece = calloc(t->n_vocab, sizeof(char *));
    t->piece_len = calloc(t->n_vocab, sizeof(uint32_t));
    t->flags = calloc(t->n_vocab, 1);
    if (t->piece == NULL || t->piece_len == NULL || t->flags == NULL) return -1;
    if (strmap_init(&t->vocab, json_object_size(vocab))) return -1;
    json_object_foreach(vocab, key, v) {
        int64_t id = json_integer_value(v);
        if (!json_is_integer(v) || id < 0) {
            ERR("tokenizer.json: vocab entry '%s' has no valid id", key);
            return -1;
        }
        if (set_piece(t, (int32_t) id, key, strlen(key))) return -1;
        strmap_put(t, &t->vocab, (int32_t) id);
    }
    /* added tokens */
    nadded = json_array_size(added);
    if (strmap_init(&t->added, nadded + 1)) return -1;
    {
        size_t total = 1;
        json_array_foreach(added, i, v) {
            s = jstr(v, "content");
            total += s ? strlen(s) : 0;
        }
        t->edge_mask = pow2_above(total) - 1;
        t->edge_key = malloc((t->edge_mask + 1) * sizeof(uint64_t));
        t->edge_child = malloc((t->edge_mask + 1) * sizeof(int32_t));
        if (t->edge_key == NULL || t->edge_child == NULL || trie_node_new(t) < 0) return -1;
        memset(t->edge_key, 0xff, (t->edge_mask + 1) * sizeof(uint64_t));
    }
    json_array_foreach(added, i, v) {
        int64_t id = json_integer_value(json_object_get(v, "id"));
        s = jstr(v, "content");
        if (s == NULL || id < 0) {
            ERR("tokenizer.json: added_tokens[%zu] lacks content or id", i);
            return -1;
        }
        if (set_piece(t, (int32_t) id, s, strlen(s))) return -1;
        t->flags[id] |= LLM_TOKF_ADDED | (jbool(v, "special", 0) ? LLM_TOKF_SPECIAL : 0)
                        | (jbool(v, "lstrip", 0) ? LLM_TOKF_LSTRIP : 0) | (jbool(v, "rstrip", 0) ? LLM_TOKF_RSTRIP : 0);
        strmap_put(t, &t->added, (int32_t) id);
        if (trie_insert(t, s, strlen(s), (int32_t) id)) return -1;
    }
    /* model options */
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    t->fuse_unk = jbool(model, "fuse_unk", 0);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    s = jstr(model, "unk_token");
    t->unk_id = s ? llm_tok_strmap_get(t, &t->vocab, s, strlen(s)) : -1;
    for (i = 0; i < 256; i++) {
        char hex[8];
        snprintf(hex, sizeof(hex), "<0x%02X>", (unsigned) i);
        t->byte_id[i] = llm_tok_strmap_get(t, &t->vocab, hex, 6);
    }
    find_meta_splits(t);
    return load_merges(t, json_object_get(model, "merges"), err, errlen);
}

/* root: tokenizer.json; cfg: tokenizer_config.json or NULL (both borrowed) */
static llm_tokenizer *
load_docs(json_t *root, json_t *cfg, char *err, size_t errlen)
{
    llm_tokenizer *t;
    char           e2[256];

    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        ERR("out of memory");
        return NULL;
    }
    t->bos_id = t->eos_id = -1;
    e2[0] = '\0';
    if (load_model(t, root, e2, sizeof(e2))
        || load_normalizer(t, json_object_get(root, "normalizer"), e2, sizeof(e2))
        || load_pre(t, json_object_get(root, "pre_tokenizer"), e2, sizeof(e2))
        || load_decoder(t, json_object_get(root, "decoder"), e2, sizeof(e2))
        || load_post(t, json_object_get(root, "post_processor")))
    {
        ERR("%s", e2[0] ? e2 : "tokenizer.json: out of memory");
        llm_tokenizer_free(t);
        return NULL;
    }
    if (cfg != NULL) {
        t->bos = config_token(cfg, "bos_token");
        t->eos = config_token(cfg, "eos_token");
    }
    if (t->bos) t->bos_id = llm_tokenizer_token_id(t, t->bos);
    if (t->eos) t->eos_id = llm_tokenizer_token_id(t, t->eos);
    return t;
}

llm_tokenizer *
llm_tokenizer_load_files(const char *tokenizer_json, const char *config_path,
                         char *err, size_t errlen)
{
    llm_tokenizer *t;
    json_t        *root, *cfg = NULL;
    char           e2[256];

    e2[0] = '\0';
    root = llm_file_json(tokenizer_json, 0, e2, sizeof(e2));
    if (root == NULL) {
        ERR("%s", e2);
        return NULL;
    }
    /* absent is fine; present but unreadable or broken is an error */
    if (config_path != NULL && llm_file_exists(config_path)
        && (cfg = llm_file_json(config_path, JSON_DECODE_INT_AS_REAL, e2, sizeof(e2))) == NULL)
    {
        ERR("%s", e2);
        json_decref(root);
        return NULL;
    }
    t = load_docs(root, cfg, err, errlen);
    json_decref(root);
    json_decref(cfg);
    return t;
}

llm_tokenizer *
llm_tokenizer_load(const char *model_path, char *err, size_t errlen)
{
    llm_tokenizer *t;
    json_t        *root, *cfg;
    char           e2[512];
    int            absent;

    root = llm_model_doc(model_path, "tokenizer.json", 0, &absent, e2, sizeof(e2));
    if (root == NULL) {
        ERR("%s", e2);
        return NULL;
    }
    cfg = llm_model_doc(model_path, "tokenizer_config.json", JSON_DECODE_INT_AS_REAL, &absent, e2, sizeof(e2));
    if (cfg == NULL && !absent) {
        ERR("%s", e2);
        json_decref(root);
        return NULL;
    }
    t = load_docs(root, cfg, err, errlen);
    json_decref(root);
    json_decref(cfg);
    return t;
}

void
llm_tokenizer_free(llm_tokenizer *t)
{
    size_t i;
    llm_tok_step *lists[3];
    size_t        counts[3], k;

    if (t == NULL) {
        return;
    }
    if (t->piece) {
        for (i = 0; i < t->n_vocab; i++) free(t->piece[i]);
    }
    free(t->piece);
    free(t->piece_len);
    free(t->flags);
    free(t->vocab.slot);
    free(t->added.slot);
    free(t->merges);
    lists[0] = t->norm; counts[0] = t->n_norm;
    lists[1] = t->pre;  counts[1] = t->n_pre;
    lists[2] = t->dec;  counts[2] = t->n_dec;
    for (k = 0; k < 3; k++) {
        for (i = 0; i < counts[k]; i++) {
            free(lists[k][i].pat);
            free(lists[k][i].content);
            if (lists[k][i].re) pcre2_code_free(lists[k][i].re);
        }
        free(lists[k]);
    }
    free(t->edge_key);
    free(t->edge_child);
    free(t->trie_tok);
    free(t->prefix_ids);
    free(t->suffix_ids);
    free(t->bos);
    free(t->eos);
    free(t);
}

/* ---- encode ---- */

static int
push_ids(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t k)
{
    if (*n + k > *cap) {
        size_t   nc = *cap ? *cap : 64;
        int32_t *p;
        while (nc < *n + k) nc *= 2;
        p = realloc(*ids, nc * sizeof(int32_t));
        if (p == NULL) return -1;
        *ids = p;
        *cap = nc;
    }
    if (k) memcpy(*ids + *n, src, k * sizeof(int32_t));
    *n += k;
    return 0;
}

/*
 * Per-call cache of short words -> ids: long texts repeat their words, and
 * BPE of a word is the expensive part.  Lives only during one encode call.
 */
typedef struct {
    uint64_t h;       /* 0 = empty */
    uint32_t woff, wlen, ioff, nid;
} wc_entry;

typedef struct {
    wc_entry *e;
    size_t    mask, used;
    char     *words;
    size_t    nwords, capwords;
    int32_t  *ids;
    size_t    nids, capids;
} word_cache;

#define WC_SLOTS   (1u << 15)
#define WC_MAXWORD 64

static void
wc_free(word_cache *c)
{
    free(c->e);
    free(c->words);
    free(c->ids);
}

static const wc_entry *
wc_get(const word_cache *c, uint64_t h, const char *w, size_t n)
{
    size_t i;

    for (i = h & c->mask; c->e[i].h != 0; i = (i + 1) & c->mask) {
        if (c->e[i].h == h && c->e[i].wlen == n && memcmp(c->words + c->e[i].woff, w, n) == 0) {
            return &c->e[i];
        }
    }
    return NULL;
}

static void
wc_put(word_cache *c, uint64_t h, const char *w, size_t n, const int32_t *ids, size_t k)
{
    size_t i;

    if (c->used * 2 >= c->mask + 1) return;   /* full enough: stop caching */
    if (c->nwords + n > c->capwords) {
        size_t nc = c->capwords ? c->capwords * 2 : 1 << 16;
        char  *p = realloc(c->words, nc);
        if (p == NULL) return;
        c->words = p;
        c->capwords = nc;
    }
    if (c->nids + k > c->capids) {
        size_t   nc = c->capids ? c->capids * 2 : 1 << 14;
        int32_t *p = realloc(c->ids, nc * sizeof(int32_t));
        if (p == NULL) return;
        c->ids = p;
        c->capids = nc;
    }
    for (i = h & c->mask; c->e[i].h != 0; i = (i + 1) & c->mask) { }
    c->e[i].h = h;
    c->e[i].woff = (uint32_t) c->nwords;
    c->e[i].wlen = (uint32_t) n;
    c->e[i].ioff = (uint32_t) c->nids;
    c->e[i].nid = (uint32_t) k;
    memcpy(c->words + c->nwords, w, n);
    c->nwords += n;
    memcpy(c->ids + c->nids, ids, k * sizeof(int32_t));
    c->nids += k;
    c->used++;
}

static int push_ids(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t k);

static int
bpe_cached(const llm_tokenizer *t, word_cache *c, const char *w, size_t n,
           int32_t **ids, size_t *nid, size_t *cap)
{
    uint64_t        h;
    const wc_entry *e;
    size_t          before = *nid;

    if (c == NULL || n > WC_MAXWORD) {
        return llm_tok_bpe_word(t, w, n, ids, nid, cap);
    }
    h = llm_tok_hash(w, n) | 1;
    if ((e = wc_get(c, h, w, n)) != NULL) {
        return push_ids(ids, nid, cap, c->ids + e->ioff, e->nid);
    }
    if (llm_tok_bpe_word(t, w, n, ids, nid, cap)) {
        return -1;
    }
    wc_put(c, h, w, n, *ids + before, *nid - before);
    return 0;
}

/* a long SentencePiece word, cut before each "▁" that no merge can reach across */
static int
bpe_meta_pieces(const llm_tokenizer *t, word_cache *wc, const char *w, size_t n,
                int32_t **ids, size_t *nid, size_t *cap)
{
    size_t start = 0, i, k;

    for (i = 1; i + 3 <= n; i++) {
        uint32_t cp;
        size_t   b = i;
        int      glue = 0;
        if (memcmp(w + i, META, 3) != 0) continue;
        while (b > 0 && ((unsigned char) w[b - 1] & 0xC0) == 0x80) b--;
        if (b > 0) b--;
        if (llm_utf8_decode((const unsigned char *) w + b, i - b, &cp) == 0 || cp == 0x2581) continue;
        for (k = 0; k < t->n_meta_glue; k++) if (t->meta_glue[k] == cp) glue = 1;
        if (glue || b < start) continue;
        if (bpe_cached(t, wc, w + start, i - start, ids, nid, cap)) return -1;
        start = i;
    }
    return bpe_cached(t, wc, w + start, n - start, ids, nid, cap);
}

static int
encode_segment(const llm_tokenizer *t, const char *s, size_t n, int first,
               llm_tok_list *words, word_cache *wc, int32_t **ids, size_t *nid, size_t *cap)
{
    char  *norm;
    size_t nl, i;
    int    rc = 0;

    if (n == 0) {
        return 0;
    }
    if (llm_tok_normalize(t, s, n, first, &norm, &nl)) {
        return -1;
    }
    llm_tok_list_clear(words);
    if (llm_tok_pretokenize(t, norm, nl, first, words)) {
        free(norm);
        return -1;
    }
    free(norm);
    for (i = 0; i < words->n && rc == 0; i++) {
        const char *w = LLM_TOK_ITEM(words, i);
        size_t      wl = LLM_TOK_ILEN(words, i);
        if (t->meta_split && wl > WC_MAXWORD) {
            rc = bpe_meta_pieces(t, wc, w, wl, ids, nid, cap);
        } else {
            rc = bpe_cached(t, wc, w, wl, ids, nid, cap);
        }
    }
    return rc;
}

/* length of a White_Space character (Rust char::is_whitespace) at s, or 0 */
static size_t
ws_at(const char *s, size_t n)
{
    uint32_t cp;
    int      k = llm_utf8_decode((const unsigned char *) s, n, &cp);

    if (k == 0) return 0;
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
        || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F
        || cp == 0x205F || cp == 0x3000)
    {
        return (size_t) k;
    }
    return 0;
}

/* length of a whitespace character ending at s + n, or 0 */
static size_t
ws_before(const char *s, size_t n)
{
    size_t k = 1;

    while (k < n && k < 4 && ((unsigned char) s[n - k] & 0xC0) == 0x80) k++;
    return ws_at(s + n - k, k) == k ? k : 0;
}

/*
 * The longest added token written at text + i: -1 if none.  special: also
 * special tokens (else only the others, as HF split_special_tokens does).
 */
static int32_t
added_at(const llm_tokenizer *t, const unsigned char *u, size_t len, size_t i, int special, size_t *best_len)
{
    int32_t node = 0, best = -1, id;
    size_t  k;

    if (!t->first_byte[u[i]]) return -1;
    for (k = i; k < len; k++) {
        node = trie_child(t, node, u[k]);
        if (node < 0) break;
        id = t->trie_tok[node];
        if (id >= 0 && (special || !(t->flags[id] & LLM_TOKF_SPECIAL))) {
            best = id;
            *best_len = k - i + 1;
        }
    }
    return best;
}

size_t
llm_tokenizer_special_at(const llm_tokenizer *t, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *) s;
    int32_t              node = 0, id;
    size_t               k, best = 0;

    if (n == 0 || !t->first_byte[u[0]]) return 0;
    for (k = 0; k < n; k++) {
        node = trie_child(t, node, u[k]);
        if (node < 0) break;
        id = t->trie_tok[node];
        if (id >= 0 && (t->flags[id] & LLM_TOKF_SPECIAL)) best = k + 1;
    }
    return best;
}

int
llm_tokenizer_encode(const llm_tokenizer *t, const char *text, size_t len,
                     int add_special, int32_t **ids, size_t *n_ids)
{
    llm_tok_encode_opts o = { 0 };

    o.add_special = add_special;
    o.parse_special = 1;
    return llm_tokenizer_encode_opts(t, text, len, &o, ids, n_ids);
}

int
llm_tokenizer_encode_opts(const llm_tokenizer *t, const char *text, size_t len,
                          const llm_tok_encode_opts *o, int32_t **ids, size_t *n_ids)
{
    const unsigned char *u = (const unsigned char *) text;
    llm_tok_list         words = { 0 };
    int32_t             *out = NULL;
    size_t               n = 0, cap = 0, i = 0, seg = 0, next_plain = 0;
    word_cache           cache = { 0 }, *wc = NULL;

    *ids = NULL;
    *n_ids = 0;
    if (llm_utf8_valid_prefix(text, len) != len) {
        /* HF only ever sees valid text: invalid bytes become U+FFFD first */
        llm_tok_encode_opts fo = *o;
        size_t             *moved = NULL;
        char               *fixed;
        size_t              fl;
        int                 rc;
        if (o->n_plain_at) {
            moved = malloc(o->n_plain_at * sizeof(size_t));
            if (moved == NULL) return -1;
            memcpy(moved, o->plain_at, o->n_plain_at * sizeof(size_t));
        }
        if (llm_utf8_lossy_map(text, len, &fixed, &fl, moved, o->n_plain_at)) {
            free(moved);
            return -1;
        }
        fo.plain_at = moved;
        rc = llm_tokenizer_encode_opts(t, fixed, fl, &fo, ids, n_ids);
        free(fixed);
        free(moved);
        return rc;
    }
    if (len >= 4096 && (cache.e = calloc(WC_SLOTS, sizeof(wc_entry))) != NULL) {
        cache.mask = WC_SLOTS - 1;
        wc = &cache;
    }
    if (o->add_special && push_ids(&out, &n, &cap, t->prefix_ids, t->n_prefix)) goto fail;
    while (i < len) {
        int32_t best;
        size_t  best_len = 0;
        int     special = o->parse_special;

        while (next_plain < o->n_plain_at && o->plain_at[next_plain] < i) next_plain++;
        if (next_plain < o->n_plain_at && o->plain_at[next_plain] == i) special = 0;
        best = added_at(t, u, len, i, special, &best_len);
        if (best < 0) {
            i++;
            continue;
        }
        {
            size_t before = i;   /* end of the text before the token */
            if (t->flags[best] & LLM_TOKF_LSTRIP) {
                size_t k;
                while (before > seg && (k = ws_before(text + seg, before - seg)) > 0) before -= k;
            }
            if (encode_segment(t, text + seg, before - seg, seg == 0, &words, wc, &out, &n, &cap)
                || push_ids(&out, &n, &cap, &best, 1))
            {
                goto fail;
            }
        }
        i += best_len;
        if (t->flags[best] & LLM_TOKF_RSTRIP) {
            size_t k;
            while (i < len && (k = ws_at(text + i, len - i)) > 0) i += k;
        }
        seg = i;
    }
    if (encode_segment(t, text + seg, len - seg, seg == 0, &words, wc, &out, &n, &cap)) goto fail;
    if (o->add_special && push_ids(&out, &n, &cap, t->suffix_ids, t->n_suffix)) goto fail;
    if (out == NULL && (out = malloc(sizeof(int32_t))) == NULL) goto fail;
    llm_tok_list_free(&words);
    wc_free(&cache);
    *ids = out;
    *n_ids = n;
    return 0;
fail:
    llm_tok_list_free(&words);
    wc_free(&cache);
    free(out);
    return -1;
}

/* ---- decode and accessors ---- */

int
llm_tokenizer_decode(const llm_tokenizer *t, const int32_t *ids, size_t n,
                     int skip_special, char **text, size_t *len)
{
    llm_tok_list toks = { 0 };
    size_t       i;
    int          rc;

    for (i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t) id >= t->n_vocab || t->piece[id] == NULL) continue;
        if (skip_special && (t->flags[id] & LLM_TOKF_SPECIAL)) continue;
        if (llm_tok_list_push(&toks, t->piece[id], t->piece_len[id])) {
            llm_tok_list_free(&toks);
            return -1;
        }
    }
    rc = llm_tok_decode_chain(t, &toks, 0, text, len);
    llm_tok_list_free(&toks);
    return rc;
}

int
llm_tokenizer_token_bytes(const llm_tokenizer *t, int32_t id, char *out, size_t outlen)
{
    llm_tok_list toks = { 0 };
    char        *s;
    size_t       n;
    int          rc;

    if (id < 0 || (size_t) id >= t->n_vocab || t->piece[id] == NULL) return -1;
    if (llm_tok_list_push(&toks, t->piece[id], t->piece_len[id])) return -1;
    rc = llm_tok_decode_chain(t, &toks, 1, &s, &n);
    llm_tok_list_free(&toks);
    if (rc) return -1;
    if (n > outlen) n = outlen;
    memcpy(out, s, n);
    free(s);
    return (int) n;
}

size_t llm_tokenizer_n_vocab(const llm_tokenizer *t) { return t->n_vocab; }

int32_t
llm_tokenizer_token_id(const llm_tokenizer *t, const char *piece)
{
    size_t  n = strlen(piece);
    int32_t id = llm_tok_strmap_get(t, &t->added, piece, n);

    return id >= 0 ? id : llm_tok_strmap_get(t, &t->vocab, piece, n);
}

const char *
llm_tokenizer_piece(const llm_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t) id < t->n_vocab ? t->piece[id] : NULL;
}

int
llm_tokenizer_is_special(const llm_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t) id < t->n_vocab && (t->flags[id] & LLM_TOKF_SPECIAL);
}

int
llm_tokenizer_is_added(const llm_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t) id < t->n_vocab && (t->flags[id] & LLM_TOKF_ADDED);
}

const char *llm_tokenizer_bos(const llm_tokenizer *t) { return t->bos; }
const char *llm_tokenizer_eos(const llm_tokenizer *t) { return t->eos; }
int32_t llm_tokenizer_bos_id(const llm_tokenizer *t) { return t->bos_id; }
int32_t llm_tokenizer_eos_id(const llm_tokenizer *t) { return t->eos_id; }
int llm_tokenizer_strips_leading_space(const llm_tokenizer *t) { return t->strip_leading; }
