/*
 * Grammar engine: GBNF, regex and JSON Schema front ends (acceptance and
 * rejection of many strings per construct, errors naming what is not
 * supported), token masks against a brute-force check over a small
 * vocabulary, jump-forward, and random walks that sample only allowed tokens
 * and must always end in text valid against the schema (checked by the
 * independent checker in jschema_check.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "jschema_check.h"
#include "grammar/llm_grammar.h"

/* ---- a small vocabulary: every byte, some multi-byte pieces, a stop ---- */

static const char *pieces[] = {
    "{\"", "\":", "\": ", ", \"", "\",", "\"}", "}}", "]}", "[\"", "\"]", "true", "false", "null",
    "nu", "ll", "tr", "ue", "abc", " the", "name", "\"name\"", "arguments", "\u00e9", "\xe4\xb8\xad",
    "12", "345", ".5", "-1", "0.", "\\n", "\\\"", "\\u00", "{}", "[]", "2024-", "-01", "T1", ":00",
    "Z\"", "@", ".com",
    /* pieces that run across several rules' ends (they reach below a cut) */
    "\"}]}", "\"}, {\"", "\", \"n\": ", "\": \"", "ab\"}", "1}]", "e\"]}}", "]}]}", "\": [", "\": {\"",
    /* pieces longer than LLM_GVOCAB_LONG bytes (a long count's twin walk
     * leaves these to the state) */
    "abcdefghijklmnopqrstuvwxyz0123", "the quick brown fox jumps over the lazy dog",
    "abcdefghijklmnopqrstuvwxy\"}", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"",
    "</s>", NULL
};
#define N_PIECES ((int) (sizeof(pieces) / sizeof(pieces[0])) - 1)
#define STOP_ID (256 + N_PIECES - 1)    /* "</s>" */

static int
vocab_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    (void) ctx;
    if (id < 256) { out[0] = (char) id; return 1; }
    if (id - 256 < N_PIECES && pieces[id - 256]) {
        size_t n = strlen(pieces[id - 256]);
        if (n > cap) n = cap;
        memcpy(out, pieces[id - 256], n);
        return (int) n;
    }
    return -1;
}

static llm_gvocab *V;

static llm_gindex *
index_of(llm_grammar *g)
{
    int32_t stop = STOP_ID;
    char err[256];
    llm_gindex *x = llm_gindex_create(g, V, &stop, 1, NULL, 0, err, sizeof(err));
    if (x == NULL) printf("# index: %s\n", err);
    return x;
}

/* accept / reject lists: NULL-terminated */
static void
check_strings(const char *what, llm_grammar *g, const char *const *yes, const char *const *no)
{
    llm_gindex *x;
    if (!ok(g != NULL, "%s: compiles", what)) return;
    x = index_of(g);
    if (!ok(x != NULL, "%s: index", what)) return;
    for ( ; yes && *yes; yes++) ok(llm_grammar_accepts(x, *yes, strlen(*yes)), "%s accepts '%s'", what, *yes);
    for ( ; no && *no; no++) ok(!llm_grammar_accepts(x, *no, strlen(*no)), "%s rejects '%s'", what, *no);
    llm_gindex_free(x);
}

static void
gbnf(const char *what, const char *src, const char *const *yes, const char *const *no)
{
    char err[256] = "";
    llm_grammar *g = llm_grammar_from_gbnf(src, strlen(src), err, sizeof(err));
    if (g == NULL) printf("# %s\n", err);
    check_strings(what, g, yes, no);
    llm_grammar_free(g);
}

static void
gbnf_err(const char *src, const char *want)
{
    char err[256] = "";
    llm_grammar *g = llm_grammar_from_gbnf(src, strlen(src), err, sizeof(err));
    ok(g == NULL && strstr(err, want) != NULL, "gbnf error '%s' (got '%s')", want, err);
    llm_grammar_free(g);
}

static void
regex(const char *re, const char *const *yes, const char *const *no)
{
    char err[256] = "";
    llm_grammar *g = llm_grammar_from_regex(re, strlen(re), err, sizeof(err));
    if (g == NULL) printf("# %s\n", err);
    check_strings(re, g, yes, no);
    llm_grammar_free(g);
}

static void
regex_err(const char *re, const char *want)
{
    char err[256] = "";
    llm_grammar *g = llm_grammar_from_regex(re, strlen(re), err, sizeof(err));
    ok(g == NULL && strstr(err, want) != NULL, "regex /%s/ error '%s' (got '%s')", re, want, err);
    llm_grammar_free(g);
}

static json_t *
js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (v == NULL) printf("# bad test json %s: %s\n", text, e.text);
    return v;
}

static void
schema(const char *sch, const char *const *yes, const char *const *no)
{
    char err[256] = "";
    json_t *s = js(sch);
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    if (g == NULL) printf("# %s\n", err);
    check_strings(sch, g, yes, no);
    /* what the grammar accepts the checker must accept too */
    for ( ; yes && *yes; yes++) {
        json_t *v = js(*yes);
        ok(v && jsc_valid(v, s, s), "checker agrees on '%s'", *yes);
        json_decref(v);
    }
    llm_grammar_free(g);
    json_decref(s);
}

static void
schema_err(const char *sch, const char *want)
{
    char err[256] = "";
    json_t *s = js(sch);
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    ok(g == NULL && strstr(err, want) != NULL, "schema %s: error names '%s' (got '%s')", sch, want, err);
    llm_grammar_free(g);
    json_decref(s);
}

#define L(...) ((const char *const[]) { __VA_ARGS__, NULL })

static void
test_gbnf(void)
{
    gbnf("literal", "root ::= \"ab\" \"c\"", L("abc"), L("ab", "abcd", ""));
    gbnf("alternation", "root ::= \"a\" | \"bc\" | x\nx ::= \"d\"+", L("a", "bc", "d", "dddd"), L("", "ab", "bcd"));
    gbnf("star", "root ::= [a-c]* \"!\"", L("!", "a!", "abcabc!"), L("", "d!", "a"));
    gbnf("optional", "root ::= \"x\"? \"y\"", L("y", "xy"), L("xxy", "x"));
    gbnf("counts", "root ::= [0-9]{2,3} \"-\" [a]{2} [b]{1,}", L("12-aab", "123-aabbb"), L("1-aab", "1234-aab", "12-ab"));
    gbnf("group", "root ::= (\"a\" | \"b\")+ (\"c\" \"d\")?", L("a", "abba", "abcd"), L("", "c", "abc"));
    gbnf("negated class", "root ::= [^a-z\\n]+", L("ABC", "12", "\xc3\xa9"), L("a", "A\n", ""));
    gbnf("unicode class", "root ::= [\\u00e0-\\u00ff\\u4e00-\\u4e2f]+", L("\xc3\xa9", "\xe4\xb8\xad\xc3\xa0"), L("a", "\xe4\xb8\xb0"));
    gbnf("any char", "root ::= \"<\" . \">\"", L("<a>", "<\xe2\x82\xac>", "<\xf0\x9f\x98\x80>"), L("<>", "<ab>", "<\xc3>"));
    gbnf("comments and newlines",
         "# a comment\nroot ::= item (\",\" item)*   # trailing\nitem ::= [0-9] |\n  \"x\"\n",
         L("1", "1,x,3"), L("1,", ",1"));
    gbnf("escapes", "root ::= \"\\x41\\t\\\"\\\\\" [\\]]", L("A\t\"\\]"), L("A\t\"\\"));
    gbnf("recursion", "root ::= \"(\" root \")\" | \"\"", L("", "()", "((()))"), L("(()", ")("));
    gbnf("json-ish", "root ::= obj\nobj ::= \"{\" ( pair (\",\" pair)* )? \"}\"\npair ::= str \":\" val\n"
         "val ::= str | [0-9]+ | obj\nstr ::= \"\\\"\" [a-z]* \"\\\"\"",
         L("{}", "{\"a\":1}", "{\"a\":{\"b\":\"c\"},\"d\":22}"), L("{", "{\"a\"}", "{\"a\":1,}"));
    gbnf_err("root ::= foo", "'foo' is used but not defined");
    gbnf_err("root ::= root \"a\" | \"b\"", "left-recursive");
    gbnf_err("root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"", "left-recursive");
    gbnf_err("root ::= \"a", "unterminated literal");
    gbnf_err("root ::= [a-", "unterminated");
    gbnf_err("root ::= (\"a\"", "expected ')'");
    gbnf_err("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
    gbnf_err("x ::= \"a\"", "no 'root' rule");
    gbnf_err("root ::= *", "quantifier without an item");
    gbnf_err("root ::= <[1]>", "token references are not supported");
    gbnf_err("root ::= [z-a]", "out of order");
}

static void
test_regex(void)
{
    regex("abc", L("abc"), L("ab", "abcd", "xabc"));
    regex("a|bc|", L("a", "bc", ""), L("b", "abc"));
    regex("[a-c]+x?", L("a", "abcx", "cc"), L("", "x", "abxx"));
    regex("\\d{3}-\\d{2,}", L("123-45", "000-99999"), L("12-45", "123-4", "abc-12"));
    regex("(ab)*c", L("c", "abc", "ababc"), L("ac", "abab"));
    regex("(?:x|y){2}", L("xx", "xy", "yy"), L("x", "xyx"));
    regex("(?<year>\\d{4})-(?P<m>\\d\\d)", L("2024-01"), L("24-01"));
    regex("[^0-9]", L("a", "\xc3\xa9", " "), L("5", "ab"));
    regex("\\w+@\\w+\\.com", L("a_b@x1.com"), L("a@b.org", "@x.com"));
    regex("\\s\\S", L(" a", "\tb"), L("ab", "  "));
    regex("a.c", L("abc", "a\xe2\x82\xac" "c"), L("a\nc", "ac"));
    regex("^x[\\]\\-]$", L("x]", "x-"), L("x", "x\\"));
    regex("\\x41\\u00e9\\u{4e2d}\\.\\*", L("A\xc3\xa9\xe4\xb8\xad.*"), L("A\xc3\xa9\xe4\xb8\xad.x"));
    regex("a{2}b{1,2}?c+?", L("aabc", "aabbcc"), L("abc", "aabbbc"));
    regex("x{,2}", L("x{,2}"), L("x", "xx"));
    regex_err("(a)\\1", "backreferences");
    regex_err("a(?=b)", "lookaround");
    regex_err("\\bword", "word boundaries");
    regex_err("a^b", "'^' is supported only at the start");
    regex_err("a$b", "'$' is supported only at the end");
    regex_err("(ab", "expected ')'");
    regex_err("ab)", "unbalanced ')'");
    regex_err("[[:alpha:]]", "POSIX classes");
    regex_err("a{3,2}", "n < m");
    regex_err("\\p{L}", "Unicode properties");
}

static void
test_schema(void)
{
    /* types */
    schema("{\"type\":\"string\"}", L("\"\"", "\"abc\"", "\"a\\\"b\\\\c\\n\"", "\"\xc3\xa9\xe4\xb8\xad\"", "\"\\u001f\""),
           
           L("abc", "\"a", "\"a\nb\"", "\"\\x\"", "1", "\"\\ud800\""));
    schema("{\"type\":\"integer\"}", L("0", "-7", "123456789012345"), L("01", "1.5", "1e3", "+1", "1234567890123456", "-"));
    schema("{\"type\":\"number\"}", L("0", "-7.25", "3.14159", "0.5"), L("1.", ".5", "1e3", "00.1", "-"));
    schema("{\"type\":\"boolean\"}", L("true", "false"), L("True", "1", "null"));
    schema("{\"type\":\"null\"}", L("null"), L("nul", "\"null\""));
    schema("{\"type\":[\"string\",\"null\"]}", L("\"x\"", "null"), L("1", "true"));
    schema("{}", L("{}", "[]", "1", "\"s\"", "{\"a\": [1, {\"b\":null}]}", "true"), L("{", "[1,]", "{\"a\"}"));
    schema("true", L("null", "[[]]"), L("nope"));
    /* enum / const */
    schema("{\"enum\":[\"red\",\"green\",3,null,{\"a\":1}]}", L("\"red\"", "\"green\"", "3", "null", "{\"a\":1}"),
           L("\"blue\"", "\"Red\"", "4", "{\"a\":2}"));
    schema("{\"type\":\"string\",\"enum\":[\"a\",1]}", L("\"a\""), L("1"));
    schema("{\"const\":\"fixed\"}", L("\"fixed\""), L("\"fixe\"", "\"other\""));
    /* objects */
    schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
           "\"required\":[\"a\"],\"additionalProperties\":false}",
           L("{\"a\":1}", "{\"a\": 1, \"b\": \"x\"}", "{\"a\":1,\"b\":\"\"}"),
           L("{}", "{\"b\":\"x\"}", "{\"b\":\"x\",\"a\":1}", "{\"a\":1,\"c\":2}", "{\"a\":\"1\"}", "{\"a\":1,}"));
    schema("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"boolean\"},\"y\":{\"type\":\"null\"},\"z\":{\"type\":\"integer\"}}}",
           L("{}", "{\"x\":true}", "{\"y\":null}", "{\"x\":false,\"z\":3}", "{\"x\":true, \"y\":null, \"z\":0}"),
           L("{,\"y\":null}", "{\"z\":1,\"x\":true}", "{\"x\":true,}"));
    schema("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",
           L("{}", "{\"k\":1}", "{\"k\":1, \"j\":-2}"), L("{\"k\":\"v\"}", "{\"k\"}"));
    schema("{\"type\":\"object\",\"additionalProperties\":false}", L("{}"), L("{\"a\":1}"));
    schema("{\"type\":\"object\",\"required\":[\"q\"]}", L("{\"q\":1}", "{\"q\":[\"x\"]}"), L("{}"));
    /* arrays */
    schema("{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", L("[]", "[1]", "[1, 2,3]"), L("[", "[1,]", "[\"a\"]", "[1 2]"));
    schema("{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":2,\"maxItems\":3}",
           L("[\"a\",\"b\"]", "[\"a\", \"b\", \"c\"]"), L("[]", "[\"a\"]", "[\"a\",\"b\",\"c\",\"d\"]"));
    schema("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"items\":{\"type\":\"boolean\"}}",
           L("[1,\"a\"]", "[1,\"a\",true]", "[1, \"a\", true, false]"), L("[\"a\",1]", "[1,\"a\",2]", "[1]"));
    schema("{\"type\":\"array\",\"prefixItems\":[{\"const\":1}],\"items\":false}", L("[1]"), L("[1,1]", "[]"));
    schema("{\"type\":\"array\",\"maxItems\":0}", L("[]"), L("[1]"));
    /* strings */
    schema("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", L("\"ab\"", "\"abc\"", "\"\xc3\xa9\xc3\xa9\"", "\"\\n\\t\""),
           L("\"a\"", "\"abcd\"", "\"\""));
    schema("{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d+$\"}", L("\"AB-1\"", "\"XY-123\""), L("\"A-1\"", "\"AB-\"", "\"xAB-1\""));
    schema("{\"type\":\"string\",\"pattern\":\"cat\"}", L("\"cat\"", "\"concatenate\""), L("\"dog\""));
    schema("{\"type\":\"string\",\"pattern\":\"^a\\\"b$\"}", L("\"a\\\"b\""), L("\"a\"b\""));
    schema("{\"type\":\"string\",\"format\":\"date\"}", L("\"2024-01-28\"", "\"1999-12-01\""), L("\"2024-13-01\"", "\"2024-1-1\"", "\"x\""));
    schema("{\"type\":\"string\",\"format\":\"time\"}", L("\"23:59:59Z\"", "\"01:02:03.5+05:30\""), L("\"24:00:00Z\"", "\"12:00\""));
    schema("{\"type\":\"string\",\"format\":\"date-time\"}", L("\"2024-02-28T10:00:00Z\""), L("\"2024-02-28 10:00:00Z\""));
    schema("{\"type\":\"string\",\"format\":\"uuid\"}", L("\"123e4567-e89b-12d3-a456-426614174000\""), L("\"123e4567e89b12d3a456426614174000\""));
    schema("{\"type\":\"string\",\"format\":\"email\"}", L("\"a.b@example.com\"", "\"x@y.io\""), L("\"a@b\"", "\"@x.com\"", "\"a..b@x.com\""));
    /* numbers */
    schema("{\"type\":\"integer\",\"minimum\":1,\"maximum\":12}", L("1", "9", "10", "12"), L("0", "13", "-1", "01", "100"));
    schema("{\"type\":\"integer\",\"minimum\":-20,\"maximum\":-3}", L("-20", "-3", "-10", "-15"), L("-2", "-21", "0", "3"));
    schema("{\"type\":\"integer\",\"minimum\":0}", L("0", "7", "100000"), L("-1"));
    schema("{\"type\":\"integer\",\"maximum\":5}", L("5", "-100", "0"), L("6", "10"));
    schema("{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":100}", L("1", "99", "50"), L("0", "100"));
    schema("{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,\"maximum\":3}", L("1", "3"), L("0"));
    schema("{\"type\":\"integer\",\"minimum\":137,\"maximum\":2048}", L("137", "999", "2048", "1000", "200"), L("136", "2049", "99", "3000"));
    schema("{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", L("0", "1", "0.5", "0.999"), L("1.5", "-0.1", "2"));
    schema("{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":2.5}", L("-1", "2", "0.5", "1.25"), L("3", "-2", "2.7", "-1.75"));
    schema("{\"type\":\"number\",\"exclusiveMaximum\":0}", L("-1", "-3.5"), L("0", "0.5"));
    /* composition */
    schema("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}", L("5", "\"a\""), L("\"ab\"", "true"));
    schema("{\"oneOf\":[{\"type\":\"boolean\"},{\"type\":\"null\"}]}", L("true", "null"), L("0"));
    /* oneOf is exact: branches kept apart by type, const/enum, a required
     * discriminator or a key the other never writes; else a 400 naming it */
    schema("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"array\",\"items\":{\"type\":\"string\"}}]}",
           L("\"a\"", "3", "[\"x\"]"), L("true", "1.5"));
    schema("{\"oneOf\":[{\"const\":\"a\"},{\"enum\":[\"b\",1]},{\"type\":\"boolean\"}]}", L("\"a\"", "\"b\"", "1", "false"), L("\"c\""));
    schema("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"circle\"},\"r\":{\"type\":\"number\"}},"
           "\"required\":[\"kind\",\"r\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"square\"},"
           "\"side\":{\"type\":\"number\"}},\"required\":[\"kind\",\"side\"]}]}",
           L("{\"kind\":\"circle\",\"r\":1}", "{\"kind\":\"square\",\"side\":2}"), L("{\"kind\":\"circle\",\"side\":2}"));
    schema("{\"oneOf\":[{\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]},"
           "{\"properties\":{\"url\":{\"type\":\"string\"}},\"required\":[\"url\"]}]}",
           L("{\"path\":\"/a\"}", "{\"url\":\"u\"}"), L("{}", "{\"path\":\"/a\",\"url\":\"u\"}"));
    schema("{\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{\"t\":{\"enum\":[1,2]}},\"required\":[\"t\"]}},"
           "\"oneOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"object\",\"properties\":{\"t\":{\"const\":3}},\"required\":[\"t\"]},"
           "{\"type\":\"string\",\"nullable\":true}]}", L("{\"t\":1}", "{\"t\":3}", "null", "\"s\""), L("{\"t\":4}"));
    schema_err("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "'oneOf' branches 0 and 1");
    schema_err("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\",\"maxLength\":3}]}", "'oneOf'");
    schema_err("{\"oneOf\":[{\"const\":1},{\"const\":1.0}]}", "'oneOf'");
    schema_err("{\"oneOf\":[{\"type\":\"string\",\"nullable\":true},{\"type\":\"null\"}]}", "'oneOf'");
    schema_err("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]},"
               "{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"string\"}}}]}", "'oneOf' branches 0 and 1");
    schema_err("{\"oneOf\":[{\"type\":\"object\"},{\"type\":\"object\",\"required\":[\"k\"]}]}", "'oneOf'");
    schema_err("{\"type\":\"object\",\"properties\":{\"v\":{\"oneOf\":[{\"type\":\"string\"},{}]}}}", "'oneOf' branches 0 and 1");
    schema("{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
           "{\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}]}",
           L("{\"a\":1,\"b\":\"x\"}"), L("{\"a\":1}", "{\"b\":\"x\"}"));
    schema("{\"type\":\"string\",\"nullable\":true}", L("\"s\"", "null"), L("1"));
    schema("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
           "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},\"required\":[\"v\",\"next\"],"
           "\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}",
           L("{\"v\":1,\"next\":null}", "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3,\"next\":null}}}"),
           L("{\"v\":1}", "{\"v\":1,\"next\":{\"v\":2}}"));
    schema("{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}},"
           "\"additionalProperties\":false}", L("{}", "{\"kids\":[]}", "{\"kids\":[{},{\"kids\":[{}]}]}"), L("{\"kids\":[1]}"));
    schema("{\"definitions\":{\"a~b/c\":{\"type\":\"integer\"}},\"$ref\":\"#/definitions/a~0b~1c\"}", L("1"), L("\"1\""));
    /* unsupported keywords name themselves */
    schema_err("{\"type\":\"string\",\"not\":{}}", "'not'");
    schema_err("{\"if\":{},\"then\":{}}", "'if'");
    schema_err("{\"type\":\"object\",\"patternProperties\":{}}", "'patternProperties'");
    schema_err("{\"type\":\"object\",\"minProperties\":1}", "'minProperties'");
    schema_err("{\"type\":\"number\",\"multipleOf\":2}", "'multipleOf'");
    schema_err("{\"type\":\"array\",\"uniqueItems\":true}", "'uniqueItems'");
    schema_err("{\"type\":\"array\",\"contains\":{}}", "'contains'");
    schema_err("{\"type\":\"string\",\"format\":\"hostname\"}", "'hostname'");
    schema_err("{\"type\":\"strin\"}", "'strin'");
    schema_err("{\"$ref\":\"#/$defs/missing\"}", "cannot be resolved");
    schema_err("{\"$ref\":\"http://x/y.json\"}", "cannot be resolved");
    schema_err("{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "backreferences");
    schema_err("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "no integer");
    schema_err("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"foo\":1}}}", "'foo'");
    schema_err("false", "matches nothing");
    schema_err("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "'type'");
}

/* ---- tool-call arguments in a format's own syntax ---- */

/* read like qwen3_coder: strings (and untyped values) as text */
static int
reads_text(const json_t *prop, const char **type)
{
    const json_t *t = json_object_get(prop, "type");
    *type = NULL;
    if (t == NULL || (json_is_string(t) && strcmp(json_string_value(t), "string") == 0)) return 1;
    if (json_is_array(t)) *type = json_string_value(json_array_get(t, 0));
    return 0;
}

static llm_grammar *
args_grammar(const char *sch, const llm_gargs_style *st, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    json_t *s = js(sch);
    int r = llm_gbuild_json_args(b, s, st, st->reads ? LLM_GJSON_NO_LT : 0, err, errlen);
    llm_grammar *g = r >= 0 ? llm_gbuild_finish(b, r, err, errlen) : NULL;
    llm_gbuild_free(b);
    json_decref(s);
    return g;
}

static void
test_args(void)
{
    static const llm_gargs_style xml = {
        "xml", "<parameter=", ">\n", "\n</parameter>\n", "", 0, reads_text };
    static const llm_gargs_style kw = { "kw", "", "=", "", ", ", 1, NULL };
    const char *sch = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":8},"
                      "\"days\":{\"type\":[\"integer\",\"string\"],\"minimum\":1,\"maximum\":7},"
                      "\"note\":{\"type\":\"string\"},\"unit\":{\"enum\":[\"c\",\"f\",3]}},\"required\":[\"city\"]}";
    static const char *const xml_yes[] = {
        "<parameter=city>\nParis\n</parameter>\n",
        "<parameter=city>\n\n</parameter>\n<parameter=days>\n7\n</parameter>\n",
        "<parameter=city>\na\"b\\c\n</parameter>\n<parameter=note>\nx < 3 && y<=2\nz\n</parameter>\n",
        "<parameter=city>\nP\n</parameter>\n<parameter=unit>\nf\n</parameter>\n", NULL };
    static const char *const xml_no[] = {
        "",                                                               /* city is required */
        "<parameter=city>\n\"Paris\"xy\n</parameter>\n",                  /* > 8 characters */
        "<parameter=days>\n7\n</parameter>\n<parameter=city>\nP\n</parameter>\n",   /* order */
        "<parameter=city>\nP\n</parameter>\n<parameter=days>\n\"7\"\n</parameter>\n", /* integer only */
        "<parameter=city>\nP\n</parameter>\n<parameter=note>\na</parameter>\n</parameter>\n",
        "<parameter=city>\nP\n</parameter>\n<parameter=note>\n<b>\n</parameter>\n",
        "<parameter=city>\nP\n</parameter>\n<parameter=unit>\n3\n</parameter>\n",   /* text reads as "3" */
        NULL };
    static const char *const kw_yes[] = {
        "city=\"Paris\"", "city=\"P\", days=3", "city=\"P\", unit=3", "city=\"<\", note=\"<b>\"", NULL };
    static const char *const kw_no[] = {
        "city='Paris'", "days=3, city=\"P\"", "city=\"P\",days=3", "city=\"P\", days=9", NULL };
    char err[256] = "";
    llm_grammar *g = args_grammar(sch, &xml, err, sizeof(err));
    if (g == NULL) printf("# %s\n", err);
    check_strings("xml arguments", g, xml_yes, xml_no);
    llm_grammar_free(g);
    g = args_grammar(sch, &kw, err, sizeof(err));
    if (g == NULL) printf("# %s\n", err);
    check_strings("keyword arguments", g, kw_yes, kw_no);
    llm_grammar_free(g);
    g = args_grammar("{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"integer\"}]}}}",
                     &xml, err, sizeof(err));
    ok(g == NULL && strstr(err, "parameter 'a': 'anyOf' cannot be enforced on a text value"), "text value refuses anyOf (%s)", err);
    llm_grammar_free(g);
    g = args_grammar("{\"type\":\"object\",\"properties\":{\"u\":{\"type\":\"string\",\"pattern\":\"^[a-z.]+$\"}}}",
                     &xml, err, sizeof(err));
    ok(g != NULL, "a pattern without '<' is enforced on text (%s)", g ? "" : err);
    llm_grammar_free(g);
    g = args_grammar("{\"type\":\"object\",\"properties\":{\"u\":{\"type\":\"string\",\"pattern\":\"^h.*$\"}}}",
                     &xml, err, sizeof(err));
    ok(g == NULL && strstr(err, "'pattern' that allows '<'"), "a pattern that may write '<' is refused (%s)", err);
    llm_grammar_free(g);
    g = args_grammar("{\"type\":\"object\",\"properties\":{\"my-key\":{\"type\":\"integer\"}}}",
                     &kw, err, sizeof(err));
    ok(g == NULL && strstr(err, "parameter name 'my-key' cannot be written in the kw"), "keyword names are identifiers (%s)", err);
    llm_grammar_free(g);
    g = args_grammar("{\"anyOf\":[{\"type\":\"object\"}]}", &kw, err, sizeof(err));
    ok(g == NULL && strstr(err, "'anyOf' at the top of the parameters"), "top-level anyOf refused (%s)", err);
    llm_grammar_free(g);
}

/* mask == brute force over every token, along a path through the grammar */
static void
test_masks(void)
{
    const char *src = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":4},"
                      "\"n\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":300}},\"required\":[\"name\"]}";
    const char *path = "{\"name\": \"ab\\n\xc3\xa9\", \"n\": -5}";
    char err[256];
    json_t *s = js(src);
    llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
    llm_gindex *x = g ? index_of(g) : NULL;
    size_t words = (llm_gvocab_n_vocab(V) + 63) / 64, i, n = strlen(path);
    uint64_t *bits = calloc(words, 8);
    int bad = 0, steps = 0;
    char forced[64];
    size_t nf;

    ok(x != NULL, "mask test grammar");
    if (!x) return;
    for (i = 0; i <= n; i++) {
        llm_gmatcher *m = llm_gmatcher_create(x);
        int32_t id;
        llm_gmatcher_accept_bytes(m, path, i);
        if (llm_gmatcher_mask(m, bits) < 0) { bad++; llm_gmatcher_free(m); continue; }
        for (id = 0; id < (int32_t) llm_gvocab_n_vocab(V); id++) {
            int in = (int) ((bits[id >> 6] >> (id & 63)) & 1);
            if (in != llm_gmatcher_allows(m, id)) bad++;
        }
        steps++;
        llm_gmatcher_free(m);
    }
    is_int(bad, 0, "masks equal a token-by-token check at %d positions", steps);
    {
        llm_gmatcher *m = llm_gmatcher_create(x);
        nf = llm_gmatcher_forced(m, forced, sizeof(forced));
        forced[nf] = 0;
        is_str(forced, "{\"name\":", "jump-forward at the start: the forced key");
        llm_gmatcher_accept_bytes(m, "{\"name\": \"a\"", 12);
        nf = llm_gmatcher_forced(m, forced, sizeof(forced));
        is_int((long long) nf, 0, "nothing forced where '}' and ',' are both possible");
        llm_gmatcher_accept_bytes(m, ",", 1);
        nf = llm_gmatcher_forced(m, forced, sizeof(forced));
        forced[nf] = 0;
        is_str(forced, "", "after ',' a space is optional: nothing forced");
        llm_gmatcher_accept_bytes(m, " ", 1);
        nf = llm_gmatcher_forced(m, forced, sizeof(forced));
        forced[nf] = 0;
        is_str(forced, "\"n\":", "after ', ' the only remaining key is forced");
        ok(!llm_gmatcher_allows(m, STOP_ID), "stop refused before the object closes");
        llm_gmatcher_accept_bytes(m, "\"n\":7}", 6);
        ok(llm_gmatcher_complete(m), "complete after '}'");
        llm_gmatcher_mask(m, bits);
        ok((bits[STOP_ID >> 6] >> (STOP_ID & 63)) & 1, "stop allowed when complete");
        is_int(llm_gmatcher_accept(m, '}'), -1, "a byte after the end is refused");
        is_int(llm_gmatcher_accept(m, STOP_ID), 0, "stop accepted");
        ok(llm_gmatcher_done(m), "done after stop");
        llm_gmatcher_free(m);
    }
    {
        size_t before = llm_gindex_n_states(x);
        llm_gmatcher *m = llm_gmatcher_create(x);
        llm_gmatcher_accept_bytes(m, path, n);
        ok(llm_gindex_n_states(x) == before, "a path walked before creates no new states (%zu)", before);
        llm_gmatcher_free(m);
    }
    free(bits);
    llm_gindex_free(x);
    llm_grammar_free(g);
    json_decref(s);
}

/* ---- random walks: uniform over allowed tokens (a random-weight model) ---- */

static uint64_t rng = 0x853c49e6748fea9bull;
static uint32_t
rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t) (rng >> 32);
}

static const char *walk_schemas[] = {
    "{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"},\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"]}},\"required\":[\"location\"],\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":3},\"maxItems\":3}},\"required\":[\"q\"]}",
    "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":-2.5,\"maximum\":10},\"minItems\":1,\"maxItems\":4}",
    "{\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\",\"format\":\"date-time\"},\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"to\":{\"type\":\"string\",\"format\":\"email\"},\"day\":{\"type\":\"string\",\"format\":\"date\"}},\"required\":[\"when\",\"id\",\"to\",\"day\"]}",
    "{\"anyOf\":[{\"type\":\"integer\",\"exclusiveMinimum\":-10,\"maximum\":10},{\"type\":\"boolean\"},{\"type\":\"string\",\"pattern\":\"^[a-c]{2}[0-9]$\"},{\"type\":\"null\"}]}",
    "{\"$defs\":{\"t\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/t\"},\"maxItems\":2}},\"required\":[\"v\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/t\"}",
    "{\"type\":\"object\",\"properties\":{\"mode\":{\"const\":\"fast\"},\"flags\":{\"type\":\"array\",\"prefixItems\":[{\"type\":\"boolean\"},{\"type\":\"null\"}],\"items\":false}},\"required\":[\"mode\",\"flags\"]}",
    "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"nullable\":true}},\"required\":[\"a\"]},{\"properties\":{\"b\":{\"type\":\"integer\",\"maximum\":-3}},\"required\":[\"b\"]}]}",
    "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":99}}",
    "{\"type\":\"object\"}",
    /* counts of at least LLM_GVOCAB_LONG (24): cuts use the repetition's twin */
    "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\",\"maxLength\":30},\"t\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":28},\"maxItems\":2}},\"required\":[\"s\",\"t\"],\"additionalProperties\":false}",
    /* oneOf kept exact: a const discriminator, a required key the other never writes, a type */
    "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},\"n\":{\"type\":\"integer\",\"maximum\":9}},\"required\":[\"kind\"]},"
    "{\"type\":\"object\",\"properties\":{\"kind\":{\"enum\":[\"b\",\"c\"]},\"n\":{\"type\":\"integer\"}},\"required\":[\"kind\",\"n\"]},"
    "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"maxLength\":4}},\"required\":[\"url\"]},{\"type\":[\"string\",\"null\"],\"maxLength\":2}]}",
    NULL
};

static void
test_random_walks(void)
{
    size_t words = (llm_gvocab_n_vocab(V) + 63) / 64;
    uint64_t *bits = calloc(words, 8), *ref = calloc(words, 8);
    int32_t *allowed = malloc(llm_gvocab_n_vocab(V) * sizeof(int32_t));
    char *out = malloc(1 << 16);
    int si;

    for (si = 0; walk_schemas[si]; si++) {
        char err[256];
        json_t *s = js(walk_schemas[si]);
        llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
        llm_gindex *x = g ? index_of(g) : NULL;
        int run, finished = 0, invalid = 0, stuck = 0, compared = 0, differ = 0;
        if (!ok(x != NULL, "walk schema %d compiles (%s)", si, g ? "" : err)) continue;
        for (run = 0; run < 200; run++) {
            llm_gmatcher *m = llm_gmatcher_create(x);
            size_t len = 0, step;
            for (step = 0; step < 4000 && !llm_gmatcher_done(m); step++) {
                size_t n_allowed = 0, w;
                int32_t pick;
                if (llm_gmatcher_mask(m, bits) < 0) { stuck++; break; }
                if (run < 20) {
                    /* the fast mask (cut walks, caches) equals the plain walk */
                    llm_gmatcher_mask_reference(m, ref);
                    compared++;
                    if (memcmp(ref, bits, words * sizeof(uint64_t)) != 0) differ++;
                }
                for (w = 0; w < words; w++) {
                    uint64_t b = bits[w];
                    while (b) {
                        allowed[n_allowed++] = (int32_t) (w * 64 + (size_t) __builtin_ctzll(b));
                        b &= b - 1;
                    }
                }
                pick = allowed[rnd() % n_allowed];
                if (llm_gmatcher_accept(m, pick) < 0) { stuck++; break; }
                if (pick != STOP_ID) {
                    size_t tl;
                    const char *tb = llm_gvocab_token(V, pick, &tl);
                    if (len + tl < (1 << 16)) { memcpy(out + len, tb, tl); len += tl; }
                }
            }
            if (llm_gmatcher_done(m)) {
                json_error_t e;
                json_t *v = json_loadb(out, len, JSON_DECODE_ANY, &e);
                finished++;
                if (v == NULL || !jsc_valid(v, s, s)) {
                    if (invalid++ < 3) printf("# invalid (%s): %.*s\n", v ? jsc_why : e.text, (int) len, out);
                }
                json_decref(v);
            }
            llm_gmatcher_free(m);
        }
        is_int(invalid, 0, "schema %d: every finished random walk is valid (%d of 200 finished)", si, finished);
        is_int(stuck, 0, "schema %d: a walk never reaches a state without allowed tokens", si);
        is_int(differ, 0, "schema %d: fast mask equals the reference walk at %d steps", si, compared);
        ok(finished >= 20, "schema %d: walks do finish (%d)", si, finished);
        llm_gindex_free(x);
        llm_grammar_free(g);
        json_decref(s);
    }
    free(bits);
    free(ref);
    free(allowed);
    free(out);
}

/* Walks are shared through the vocabulary: a fresh index of a schema
 * served before walks nothing on the same paths (but its own top level),
 * and its masks (from the
 * shared walks) still equal the reference. */
static void
test_shared_walks(void)
{
    static const int again[] = { 0, 3, 10 };
    size_t words = (llm_gvocab_n_vocab(V) + 63) / 64, k, cap = 1 << 16;
    uint64_t *bits = calloc(words, 8), *ref = calloc(words, 8);
    int32_t *allowed = malloc(llm_gvocab_n_vocab(V) * sizeof(int32_t));
    int32_t *picks = malloc(cap * sizeof(int32_t));

    for (k = 0; k < sizeof(again) / sizeof(again[0]); k++) {
        char err[256];
        json_t *s = js(walk_schemas[again[k]]);
        int pass, compared = 0, differ = 0;
        size_t n_picks = 0;
        long walks[2] = { 0, 0 };
        for (pass = 0; pass < 2; pass++) {
            llm_grammar *g = llm_grammar_from_json_schema(s, err, sizeof(err));
            llm_gindex *x = g ? index_of(g) : NULL;
            size_t at = 0;
            int run;
            if (!ok(x != NULL, "schema %d compiles again", again[k])) break;
            for (run = 0; run < 10; run++) {
                llm_gmatcher *m = llm_gmatcher_create(x);
                size_t step;
                for (step = 0; step < 4000 && !llm_gmatcher_done(m); step++) {
                    size_t n_allowed = 0, w;
                    int32_t pick;
                    if (llm_gmatcher_mask(m, bits) < 0) break;
                    if (pass == 1) {
                        llm_gmatcher_mask_reference(m, ref);
                        compared++;
                        if (memcmp(ref, bits, words * sizeof(uint64_t)) != 0) differ++;
                        if (at >= n_picks) break;
                        pick = picks[at++];
                    } else {
                        for (w = 0; w < words; w++) {
                            uint64_t b = bits[w];
                            while (b) { allowed[n_allowed++] = (int32_t) (w * 64 + (size_t) __builtin_ctzll(b)); b &= b - 1; }
                        }
                        pick = allowed[rnd() % n_allowed];
                        if (n_picks < cap) picks[n_picks++] = pick;
                    }
                    if (llm_gmatcher_accept(m, pick) < 0) break;
                }
                llm_gmatcher_free(m);
            }
            walks[pass] = llm_gindex_n_cut_walks(x) - llm_gindex_n_top_walks(x);
            llm_gindex_free(x);
            llm_grammar_free(g);
        }
        is_int(differ, 0, "schema %d, second index: masks from shared walks equal the reference at %d steps",
               again[k], compared);
        is_int(walks[1], 0, "schema %d, second index on the same paths: no vocabulary walk of its own "
               "below the grammar's top level (the first made %ld)", again[k], walks[0]);
        json_decref(s);
    }
    free(bits);
    free(ref);
    free(allowed);
    free(picks);
}

int
main(void)
{
    char err[256];
    int32_t stop = STOP_ID;

    V = llm_gvocab_create(256 + N_PIECES, vocab_bytes, NULL, &stop, 1, err, sizeof(err));
    if (!ok(V != NULL, "vocabulary trie (%s)", V ? "" : err)) return done_testing();
    ok(llm_gvocab_n_nodes(V) > 256, "trie has %zu nodes", llm_gvocab_n_nodes(V));
    test_gbnf();
    test_regex();
    test_schema();
    test_args();
    test_masks();
    test_random_walks();
    test_shared_walks();
    llm_gvocab_free(V);
    return done_testing();
}
