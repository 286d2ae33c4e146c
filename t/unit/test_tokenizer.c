/*
 * Tokenizer on small hand-made tokenizer.json files (no downloads): byte-level
 * BPE with a Split regex, both merge forms, added and special tokens,
 * TemplateProcessing; SentencePiece-style BPE with Prepend/Replace, byte
 * fallback and the Strip decoder; the incremental detokenizer; load errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "tap.h"
#include "engine/llm_detok.h"
#include "engine/llm_tokenizer.h"

static char dir[64];

/* GPT-2 byte -> character mapping */
static unsigned
byte_char(unsigned b)
{
    unsigned i, n = 0;
    int      printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (printable) return b;
    for (i = 0; i < b; i++) {
        if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE)) n++;
    }
    return 256 + n;
}

static void
utf8(unsigned cp, char *o)
{
    if (cp < 0x80) { o[0] = (char) cp; o[1] = 0; }
    else if (cp < 0x800) { o[0] = (char) (0xC0 | (cp >> 6)); o[1] = (char) (0x80 | (cp & 0x3F)); o[2] = 0; }
    else { o[0] = (char) (0xE0 | (cp >> 12)); o[1] = (char) (0x80 | ((cp >> 6) & 0x3F)); o[2] = (char) (0x80 | (cp & 0x3F)); o[3] = 0; }
}

static int
save(const char *name, json_t *j)
{
    char path[128];
    int  rc;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    rc = json_dump_file(j, path, JSON_INDENT(1));
    json_decref(j);
    return rc;
}

static llm_tokenizer *
load(char *err, size_t errlen)
{
    return llm_tokenizer_load(dir, err, errlen);
}

static int
ids_are(llm_tokenizer *t, const char *text, int special, const int32_t *want, size_t nw)
{
    int32_t *ids;
    size_t   n, i;
    int      same;

    if (llm_tokenizer_encode(t, text, strlen(text), special, &ids, &n)) return 0;
    same = n == nw && memcmp(ids, want, n * sizeof(int32_t)) == 0;
    if (!same) {
        printf("#  got");
        for (i = 0; i < n; i++) printf(" %d", ids[i]);
        printf("\n");
    }
    free(ids);
    return same;
}

static void
byte_level(int pair_merges)
{
    static const char *merges[][2] = {
        { "h", "e" }, { "l", "l" }, { "he", "ll" }, { "hell", "o" }, { "\xC4\xA0", "w" }, { "o", "r" },
        { "\xC4\xA0w", "or" }, { "\xC4\xA0wor", "l" }, { "\xC4\xA0worl", "d" },
    };
    json_t *vocab = json_object(), *m = json_array(), *tok, *cfg;
    char    c[8], err[512], *text;
    size_t  i, len;
    int32_t next = 256, id;
    llm_tokenizer *t;

    for (i = 0; i < 256; i++) {
        utf8(byte_char((unsigned) i), c);
        json_object_set_new(vocab, c, json_integer((json_int_t) i));
    }
    for (i = 0; i < sizeof(merges) / sizeof(merges[0]); i++) {
        char joined[32];
        snprintf(joined, sizeof(joined), "%s%s", merges[i][0], merges[i][1]);
        if (!json_object_get(vocab, joined)) json_object_set_new(vocab, joined, json_integer(next++));
        if (pair_merges) json_array_append_new(m, json_pack("[ss]", merges[i][0], merges[i][1]));
        else {
            snprintf(joined, sizeof(joined), "%s %s", merges[i][0], merges[i][1]);
            json_array_append_new(m, json_string(joined));
        }
    }
    /* 256 he, 257 ll, 258 hell, 259 hello, 260 Ġw, 261 or, 262 Ġwor, 263 Ġworl, 264 Ġworld */
    tok = json_pack("{s:{s:s, s:o, s:o}, s:n,"
                    " s:{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]},"
                    " s:{s:s},"
                    " s:{s:s, s:[{s:{s:s}}, {s:{s:s}}], s:{s:{s:s, s:[i], s:[s]}}},"
                    " s:[{s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b, s:b, s:b}]}",
                    "model", "type", "BPE", "vocab", vocab, "merges", m,
                    "normalizer",
                    "pre_tokenizer", "type", "Sequence", "pretokenizers",
                    "type", "Split", "pattern", "Regex", " ?\\p{L}+| ?\\p{N}| ?[^\\s\\p{L}\\p{N}]+|\\s+", "behavior", "Isolated", "invert", 0,
                    "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 0,
                    "decoder", "type", "ByteLevel",
                    "post_processor", "type", "TemplateProcessing", "single",
                    "SpecialToken", "id", "<|start|>", "Sequence", "id", "A",
                    "special_tokens", "<|start|>", "id", "<|start|>", "ids", 300, "tokens", "<|start|>",
                    "added_tokens", "id", 300, "content", "<|start|>", "special", 1,
                    "id", 301, "content", "<|end|>", "special", 1,
                    "id", 302, "content", "<x>", "special", 0,
                    "id", 303, "content", "<|sep|>", "special", 1, "lstrip", 1, "rstrip", 1);
    cfg = json_pack("{s:s, s:{s:s}, s:f}", "bos_token", "<|start|>", "eos_token", "content", "<|end|>", "model_max_length", 1e30);
    if (!ok(tok && cfg && save("tokenizer.json", tok) == 0 && save("tokenizer_config.json", cfg) == 0, "byte-level files written")) return;
    t = load(err, sizeof(err));
    if (!ok(t != NULL, "byte-level tokenizer loads (%s merges)", pair_merges ? "pair" : "string")) {
        diag(err);
        return;
    }
    {
        static const int32_t a[] = { 259, 264 };
        static const int32_t b[] = { 300, 259, 301, 302, 264 };
        static const int32_t c2[] = { 300, 259 };
        static const int32_t d[] = { 259, 301, 301, 60, 301 };
        ok(ids_are(t, "hello world", 0, a, 2), "merges applied by rank");
        ok(ids_are(t, "<|start|>hello<|end|><x> world", 0, b, 5), "special and added tokens recognised in text");
        ok(ids_are(t, "hello", 1, c2, 2), "add_special follows TemplateProcessing");
        ok(ids_are(t, "hello<|end|><|end|><<|end|>", 0, d, 5), "adjacent added tokens, partial prefix");
    }
    {
        static const int32_t e[] = { 259, 303, 259, 264 };
        ok(ids_are(t, "hello \n <|sep|>\t \u3000hello world", 0, e, 4), "lstrip/rstrip added token absorbs whitespace");
    }
    is_int((long long) llm_tokenizer_n_vocab(t), 304, "n_vocab counts added tokens");
    is_int(llm_tokenizer_token_id(t, "<|end|>"), 301, "token_id of a special token");
    is_int(llm_tokenizer_token_id(t, "hello"), 259, "token_id of a vocabulary token");
    is_int(llm_tokenizer_token_id(t, "<|nope|>"), -1, "token_id of an absent token");
    is_str(llm_tokenizer_piece(t, 264), "\xC4\xA0world", "piece text");
    ok(llm_tokenizer_is_special(t, 301) && !llm_tokenizer_is_special(t, 302) && !llm_tokenizer_is_special(t, 5), "is_special");
    is_str(llm_tokenizer_bos(t), "<|start|>", "bos string from config");
    is_int(llm_tokenizer_eos_id(t), 301, "eos id from config ({content} form)");
    {
        static const int32_t ids[] = { 300, 259, 264, 301 };
        ok(llm_tokenizer_decode(t, ids, 4, 0, &text, &len) == 0 && strcmp(text, "<|start|>hello world<|end|>") == 0, "decode");
        free(text);
        ok(llm_tokenizer_decode(t, ids, 4, 1, &text, &len) == 0 && strcmp(text, "hello world") == 0, "decode skipping specials");
        free(text);
    }
    /* a 4-byte character split over byte tokens streams only when complete */
    {
        llm_detok   d;
        const char *out;
        size_t      ol;
        int32_t     emoji[4];
        const unsigned char e[4] = { 0xF0, 0x9F, 0x98, 0x80 };
        int         k, empty = 1;
        for (k = 0; k < 4; k++) {
            utf8(byte_char(e[k]), c);
            emoji[k] = llm_tokenizer_token_id(t, c);
        }
        llm_detok_init(&d, t, 0);
        for (k = 0; k < 3; k++) {
            llm_detok_push(&d, emoji[k], &out, &ol);
            if (ol) empty = 0;
        }
        ok(empty, "detok holds back an incomplete character");
        llm_detok_push(&d, emoji[3], &out, &ol);
        ok(ol == 4 && memcmp(out, e, 4) == 0, "detok emits it once complete");
        llm_detok_push(&d, emoji[0], &out, &ol);
        llm_detok_flush(&d, &out, &ol);
        is_str(out, "\xEF\xBF\xBD", "flush turns a dangling byte into U+FFFD");
        llm_detok_free(&d);
    }
    id = llm_tokenizer_token_id(t, "he");
    is_int(id, 256, "merge result ids");
    llm_tokenizer_free(t);
}

static void
sentencepiece(void)
{
    json_t        *vocab = json_object(), *tok;
    char           hex[8], err[512], *text;
    size_t         i, len;
    llm_tokenizer *t;
    int32_t        next;

    json_object_set_new(vocab, "<unk>", json_integer(0));
    json_object_set_new(vocab, "<s>", json_integer(1));
    json_object_set_new(vocab, "</s>", json_integer(2));
    for (i = 0; i < 256; i++) {
        snprintf(hex, sizeof(hex), "<0x%02X>", (unsigned) i);
        json_object_set_new(vocab, hex, json_integer((json_int_t) i + 3));
    }
    next = 259;
    json_object_set_new(vocab, "\xE2\x96\x81", json_integer(next++));          /* 259 ▁ */
    json_object_set_new(vocab, "a", json_integer(next++));                     /* 260 */
    json_object_set_new(vocab, "b", json_integer(next++));                     /* 261 */
    json_object_set_new(vocab, "\xE2\x96\x81" "a", json_integer(next++));      /* 262 ▁a */
    json_object_set_new(vocab, "\xE2\x96\x81" "ab", json_integer(next++));     /* 263 ▁ab */
    tok = json_pack("{s:{s:s, s:o, s:[sss], s:s, s:b, s:b},"
                    " s:{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}, s:n,"
                    " s:{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}, {s:s, s:s, s:i, s:i}]},"
                    " s:[{s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b}]}",
                    "model", "type", "BPE", "vocab", vocab, "merges", "\xE2\x96\x81 a", "\xE2\x96\x81" "a b", "a b",
                    "unk_token", "<unk>", "byte_fallback", 1, "fuse_unk", 1,
                    "normalizer", "type", "Sequence", "normalizers",
                    "type", "Prepend", "prepend", "\xE2\x96\x81",
                    "type", "Replace", "pattern", "String", " ", "content", "\xE2\x96\x81",
                    "pre_tokenizer",
                    "decoder", "type", "Sequence", "decoders",
                    "type", "Replace", "pattern", "String", "\xE2\x96\x81", "content", " ",
                    "type", "ByteFallback", "type", "Fuse",
                    "type", "Strip", "content", " ", "start", 1, "stop", 0,
                    "added_tokens", "id", 0, "content", "<unk>", "special", 1, "id", 1, "content", "<s>", "special", 1,
                    "id", 2, "content", "</s>", "special", 1);
    if (!ok(tok && save("tokenizer.json", tok) == 0, "sentencepiece file written")) return;
    {
        char path[128];
        snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
        unlink(path);
    }
    t = load(err, sizeof(err));
    if (!ok(t != NULL, "sentencepiece tokenizer loads")) {
        diag(err);
        return;
    }
    {
        static const int32_t a[] = { 263, 262 };
        static const int32_t b[] = { 259, 0xC3 + 3, 0xA9 + 3 };
        static const int32_t c[] = { 1, 263, 2, 262 };
        ok(ids_are(t, "ab a", 0, a, 2), "prepend + replace + merges");
        ok(ids_are(t, "\xC3\xA9", 0, b, 3), "byte fallback for characters outside the vocabulary");
        ok(ids_are(t, "<s>ab</s>a", 0, c, 4), "special tokens split the text; each piece gets the prefix");
    }
    {
        static const int32_t ids[] = { 263, 259, 0xC3 + 3, 0xA9 + 3, 262 };
        ok(llm_tokenizer_decode(t, ids, 5, 0, &text, &len) == 0 && strcmp(text, "ab \xC3\xA9 a") == 0, "decode: leading space stripped, bytes fused");
        free(text);
    }
    {
        llm_detok   d;
        const char *out;
        size_t      ol;
        char        acc[64] = "";
        static const int32_t ids[] = { 263, 259, 0xC3 + 3, 0xA9 + 3, 262 };
        llm_detok_init(&d, t, 0);
        acc[0] = '\0';
        for (i = 0; i < 5; i++) {
            llm_detok_push(&d, ids[i], &out, &ol);
            strncat(acc, out, ol);
        }
        is_str(acc, "ab \xC3\xA9 a", "detok: leading space stripped at stream start");
        llm_detok_free(&d);
        llm_detok_init(&d, t, LLM_DETOK_CONTINUATION);
        llm_detok_push(&d, 263, &out, &ol);
        ok(ol == 3 && memcmp(out, " ab", 3) == 0, "detok continuation keeps the space");
        llm_detok_free(&d);
    }
    llm_tokenizer_free(t);
}

/* Metaspace pre-tokenizer and decoder (prepend_scheme first, split on the replacement) */
static void
metaspace(void)
{
    json_t        *vocab = json_object(), *tok;
    char           err[512], *text;
    size_t         len;
    llm_tokenizer *t;

    json_object_set_new(vocab, "<unk>", json_integer(0));
    json_object_set_new(vocab, "\xE2\x96\x81", json_integer(1));
    json_object_set_new(vocab, "a", json_integer(2));
    json_object_set_new(vocab, "b", json_integer(3));
    json_object_set_new(vocab, "\xE2\x96\x81" "a", json_integer(4));
    json_object_set_new(vocab, "\xE2\x96\x81" "ab", json_integer(5));
    json_object_set_new(vocab, "ab", json_integer(6));
    json_object_set_new(vocab, "<s>", json_integer(7));
    tok = json_pack("{s:{s:s, s:o, s:[sss], s:s}, s:n, s:{s:s, s:s, s:s, s:b}, s:{s:s, s:s, s:s},"
                    " s:[{s:i, s:s, s:b}]}",
                    "model", "type", "BPE", "vocab", vocab, "merges", "\xE2\x96\x81 a", "\xE2\x96\x81" "a b", "a b",
                    "unk_token", "<unk>",
                    "normalizer",
                    "pre_tokenizer", "type", "Metaspace", "replacement", "\xE2\x96\x81", "prepend_scheme", "first", "split", 1,
                    "decoder", "type", "Metaspace", "replacement", "\xE2\x96\x81", "prepend_scheme", "first",
                    "added_tokens", "id", 7, "content", "<s>", "special", 1);
    if (!ok(tok && save("tokenizer.json", tok) == 0, "metaspace file written")) return;
    t = load(err, sizeof(err));
    if (!ok(t != NULL, "metaspace tokenizer loads (%s)", t ? "" : err)) return;
    {
        static const int32_t a[] = { 5, 4 };
        static const int32_t b[] = { 7, 6, 4 };
        ok(ids_are(t, "ab a", 0, a, 2), "metaspace: spaces replaced, first word prefixed, split before each");
        ok(ids_are(t, "<s>ab a", 0, b, 3), "metaspace first: no prefix after a special token");
    }
    {
        static const int32_t ids[] = { 5, 4 };
        ok(llm_tokenizer_decode(t, ids, 2, 0, &text, &len) == 0 && strcmp(text, "ab a") == 0, "metaspace decoder drops the first space");
        free(text);
    }
    llm_tokenizer_free(t);
}

static void
load_errors(void)
{
    char           err[512];
    llm_tokenizer *t;

    save("tokenizer.json", json_pack("{s:{s:s, s:{s:i}}, s:[]}", "model", "type", "WordPiece", "vocab", "a", 0, "added_tokens"));
    t = load(err, sizeof(err));
    ok(t == NULL && strstr(err, "WordPiece"), "unsupported model type named: %s", err);
    save("tokenizer.json", json_pack("{s:{s:s, s:{s:i}, s:[]}, s:{s:s}, s:[]}", "model", "type", "BPE", "vocab", "a", 0, "merges",
                                     "normalizer", "type", "NFKD", "added_tokens"));
    t = load(err, sizeof(err));
    ok(t == NULL && strstr(err, "NFKD"), "unsupported normalizer named: %s", err);
    t = llm_tokenizer_load("/nonexistent/model", err, sizeof(err));
    ok(t == NULL && strstr(err, "/nonexistent/model/tokenizer.json"), "missing file named: %s", err);
}

int
main(void)
{
    char tmpl[] = "/tmp/llm_tok_testXXXXXX";
    char path[128];

    if (mkdtemp(tmpl) == NULL) return skip_all("no temp dir");
    snprintf(dir, sizeof(dir), "%s", tmpl);
    byte_level(0);
    byte_level(1);
    sentencepiece();
    metaspace();
    load_errors();
    snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
