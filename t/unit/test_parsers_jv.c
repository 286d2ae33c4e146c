/*
 * The incremental JSON normalizer (repairs, completion of cut-off values)
 * and schema-typed parameter values.
 */
#include "tap.h"
#include "parsers/llm_parser_impl.h"

#include <jansson.h>

/* feed all of in; returns the normalized text (completed when cut off) */
static char *
norm(const char *in, int *status)
{
    llm_jv  v;
    size_t  i, n = strlen(in);
    int     r = LLM_JV_MORE;
    char   *out;

    llm_jv_init(&v);
    llm_jv_reset(&v);
    for (i = 0; i < n && (r == LLM_JV_MORE); i++) {
        r = llm_jv_put(&v, in[i]);
    }
    if (r == LLM_JV_MORE) {
        llm_jv_close(&v);
    }
    *status = r;
    out = strdup(v.out.p ? v.out.p : "");
    llm_jv_free(&v);
    return out;
}

static const struct { const char *in, *want; int status; } cases[] = {
    { "{\"a\": 1, \"b\": [true, null, -2.5e3]}", "{\"a\":1,\"b\":[true,null,-2.5e3]}", LLM_JV_DONE },
    { "{'a': 'it\\'s', 'b': \"say \\\"hi\\\"\"}", "{\"a\":\"it's\",\"b\":\"say \\\"hi\\\"\"}", LLM_JV_DONE },
    { "{'q': 'a \"quoted\" word'}", "{\"q\":\"a \\\"quoted\\\" word\"}", LLM_JV_DONE },
    { "{\"t\": True, \"f\": False, \"n\": None}", "{\"t\":true,\"f\":false,\"n\":null}", LLM_JV_DONE },
    { "{\"a\": [1, 2,], \"b\": {\"c\": 3,},}", "{\"a\":[1,2],\"b\":{\"c\":3}}", LLM_JV_DONE },
    { "{\"s\": \"line1\nline2\ttab\"}", "{\"s\":\"line1\\nline2\\ttab\"}", LLM_JV_DONE },
    { "{city: \"Paris\", max_days: 3}", "{\"city\":\"Paris\",\"max_days\":3}", LLM_JV_DONE },
    { "{\"u\": \"\\u00e9\\ud83d\\ude00\"}", "{\"u\":\"\\u00e9\\ud83d\\ude00\"}", LLM_JV_DONE },
    { "{\"u\": \"\\ud83d x \\ude00\"}", "{\"u\":\"\\ufffd x \\ufffd\"}", LLM_JV_DONE },
    { "{\"w\": \"\\q\\x41\"}", "{\"w\":\"\\\\q\\\\x41\"}", LLM_JV_DONE },
    { "{\"a\": [1, {\"b\": 2}", "{\"a\":[1,{\"b\":2}]}", LLM_JV_MORE },          /* cut off */
    { "{\"a\": \"tex", "{\"a\":\"tex\"}", LLM_JV_MORE },
    { "{\"a\": 1, \"b", "{\"a\":1}", LLM_JV_MORE },
    { "{\"a\": 1, \"b\":", "{\"a\":1}", LLM_JV_MORE },
    { "{\"a\": 1, \"b\": tr", "{\"a\":1}", LLM_JV_MORE },
    { "{\"a\": 1.", "{}", LLM_JV_MORE },
    { "{\"a\": \"x\\u00", "{\"a\":\"x\"}", LLM_JV_MORE },
    { "{\"a\": [1}", "{\"a\":[1]}", LLM_JV_DONE },                           /* missing ] */
    { "{\"a\": 01x}", "{", LLM_JV_ERR },
    { "{\"a\" 1}", "{", LLM_JV_ERR },
    { "[1, 2] tail", "[1,2]", LLM_JV_DONE },
    { "42,", "42", LLM_JV_END },
    { "\"str\"", "\"str\"", LLM_JV_DONE },
};

static const struct { const char *val, *type; int try_json; const char *want; } typed[] = {
    { "Paris", "string", 0, "\"Paris\"" },
    { "  42 ", "string", 0, "\"  42 \"" },
    { "42", "integer", 0, "42" },
    { " -7 ", "integer", 0, "-7" },
    { "3.0", "integer", 0, "3" },
    { "three", "integer", 0, "\"three\"" },
    { "0.1", "number", 0, "0.1" },
    { "1e3", "number", 0, "1e3" },
    { "5.0", "number", 0, "5.0" },
    { "+5", "number", 0, "5" },
    { ".5", "number", 0, "0.5" },
    { "2.5", "integer", 0, "2.5" },
    { "NaN", "number", 0, "\"NaN\"" },
    { "5", "number", 0, "5" },
    { "True", "boolean", 0, "true" },
    { "false", "boolean", 0, "false" },
    { "yes", "boolean", 0, "\"yes\"" },
    { "null", "integer", 0, "null" },
    { "null", LLM_TYPE_STRING_OR_NULL, 0, "null" },
    { "nil", LLM_TYPE_STRING_OR_NULL, 0, "\"nil\"" },
    { "{'a': [1, 2]}", "object", 0, "{\"a\":[1,2]}" },
    { "[\"x\", 'y',]", "array", 0, "[\"x\",\"y\"]" },
    { "{broken", "object", 0, "\"{broken\"" },
    { "12", NULL, 1, "12" },
    { "hello world", NULL, 1, "\"hello world\"" },
    { "12", NULL, 0, "\"12\"" },
    { "a \"q\"\n", "string", 0, "\"a \\\"q\\\"\\n\"" },
};

int
main(void)
{
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int   st;
        char *got = norm(cases[i].in, &st);

        is_str(got, cases[i].want, "normalize %s", cases[i].in);
        is_int(st, cases[i].status, "status of %s", cases[i].in);
        if (cases[i].status != LLM_JV_ERR) {
            json_error_t e;
            json_t      *j = json_loads(got, JSON_DECODE_ANY, &e);

            ok(j != NULL, "jansson reads %s", got);
            json_decref(j);
        }
        free(got);
    }

    for (i = 0; i < sizeof(typed) / sizeof(typed[0]); i++) {
        llm_pbuf out = { NULL, 0, 0 };

        llm_typed_value(&out, typed[i].val, strlen(typed[i].val), typed[i].type,
                        typed[i].try_json);
        is_str(llm_pbuf_str(&out), typed[i].want, "typed %s as %s", typed[i].val,
               typed[i].type ? typed[i].type : "(none)");
        llm_pbuf_free(&out);
    }

    /* UTF-8 cleaning */
    {
        llm_pbuf out = { NULL, 0, 0 };
        size_t   used;

        used = llm_utf8_clean("ab\xc3", 3, 0, &out);
        is_int(used, 2, "incomplete character held");
        is_str(llm_pbuf_str(&out), "ab", "complete part out");
        llm_pbuf_reset(&out);
        used = llm_utf8_clean("a\xff" "b\xe2\x82" "c\xed\xa0\x80" "d", 10, 0, &out);
        is_int(used, 10, "invalid bytes consumed");
        is_str(llm_pbuf_str(&out), "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d",
               "invalid bytes replaced");
        llm_pbuf_reset(&out);
        used = llm_utf8_clean("x\xf0\x9f\x98", 4, 1, &out);
        is_str(llm_pbuf_str(&out), "x\xef\xbf\xbd", "cut-off character at the end replaced once");
        llm_pbuf_free(&out);
    }

    /* marker scanner: held only while a prefix */
    {
        static const char *const marks[] = { "<tool_call>", "</tool_call>", NULL };
        llm_mscan m;
        llm_pbuf  rel = { NULL, 0, 0 };
        const char *in = "a<to<tool_call>";
        int        k = -1;

        memset(&m, 0, sizeof(m));
        for (i = 0; in[i]; i++) {
            k = llm_mscan_push(&m, marks, in[i], &rel);
            if (i == 3) {
                is_str(llm_pbuf_str(&rel), "a", "'<to' held");
            }
        }
        is_int(k, 0, "marker found");
        is_str(llm_pbuf_str(&rel), "a<to", "released in order");
        llm_pbuf_free(&rel);
    }
    return done_testing();
}
