/*
 * Incremental JSON normalizer: reads one value a byte at a time and writes
 * compact valid JSON as early as it is certain, repairing what models get
 * wrong (single quotes, Python literals, trailing commas, raw newlines in
 * strings, unquoted keys).  What it has written can always be completed by
 * closing the open string and containers, which is how a call cut off at
 * EOS or max_tokens is recovered.  Parsing is left to jansson elsewhere;
 * this only tracks structure.
 */
#include "parsers/llm_parser_impl.h"

#include <stdio.h>
#include <string.h>

enum {
    JV_VALUE = 0,   /* a value may start (top level, after ':' '[' ',') */
    JV_KEY,         /* a key or '}' */
    JV_BAREKEY,     /* unquoted key */
    JV_COLON,
    JV_AFTER,       /* after a value: ',' or a closer */
    JV_STR,
    JV_SCALAR,
    JV_FINISHED
};

void
llm_jv_init(llm_jv *v)
{
    memset(v, 0, sizeof(*v));
}

void
llm_jv_reset(llm_jv *v)
{
    llm_pbuf_reset(&v->out);
    llm_pbuf_reset(&v->pend);
    llm_pbuf_reset(&v->scal);
    v->elen = 0;
    v->has_hi = 0;
    v->depth = 0;
    v->st = JV_VALUE;
    v->quote = 0;
    v->in_key = 0;
    v->started = 0;
}

void
llm_jv_free(llm_jv *v)
{
    llm_pbuf_free(&v->out);
    llm_pbuf_free(&v->pend);
    llm_pbuf_free(&v->scal);
}

int
llm_jv_depth(const llm_jv *v)
{
    return v->depth;
}

static void
jv_emit(llm_jv *v, const char *s, size_t n)
{
    if (v->pend.len) {
        llm_pbuf_add(&v->out, v->pend.p, v->pend.len);
        llm_pbuf_reset(&v->pend);
    }
    llm_pbuf_add(&v->out, s, n);
    v->started = 1;
}

/* string bytes go to the held key or to out */
static void
jv_str(llm_jv *v, const char *s, size_t n)
{
    if (v->in_key) {
        llm_pbuf_add(&v->pend, s, n);
    } else {
        llm_pbuf_add(&v->out, s, n);
    }
}

static int
jv_is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
           || (c >= 'A' && c <= 'F');
}

static int
jv_is_scalar_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
           || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-'
           || c == '_';
}

/* Map held scalar text to JSON; NULL if it is neither a literal nor a number. */
static const char *
jv_scalar_json(const llm_pbuf *s)
{
    const char *p = llm_pbuf_str(s);
    const char *q;
    int         digits;

    if (!strcmp(p, "true") || !strcmp(p, "True")) {
        return "true";
    }
    if (!strcmp(p, "false") || !strcmp(p, "False")) {
        return "false";
    }
    if (!strcmp(p, "null") || !strcmp(p, "None")) {
        return "null";
    }
    /* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    q = p;
    if (*q == '-') {
        q++;
    }
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (*q >= '0' && *q <= '9') {
            q++;
        }
    } else {
        return NULL;
    }
    if (*q == '.') {
        q++;
        for (digits = 0; *q >= '0' && *q <= '9'; q++) {
            digits++;
        }
        if (!digits) {
            return NULL;
        }
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') {
            q++;
        }
        for (digits = 0; *q >= '0' && *q <= '9'; q++) {
            digits++;
        }
        if (!digits) {
            return NULL;
        }
    }
    return *q ? NULL : p;
}

static int
jv_closed(llm_jv *v)
{
    if (v->depth == 0) {
        v->st = JV_FINISHED;
        return LLM_JV_DONE;
    }
    v->st = JV_AFTER;
    return LLM_JV_MORE;
}

static int
jv_open(llm_jv *v, char c)
{
    if (v->depth == LLM_JV_DEPTH) {
        return LLM_JV_ERR;
    }
    jv_emit(v, &c, 1);
    v->stack[v->depth++] = c;
    v->st = (c == '{') ? JV_KEY : JV_VALUE;
    return LLM_JV_MORE;
}

static int
jv_close_to(llm_jv *v, char c)
{
    char want = (c == '}') ? '{' : '[';
    int  i, found = 0;

    for (i = v->depth - 1; i >= 0; i--) {
        if (v->stack[i] == want) {
            found = 1;
            break;
        }
    }
    if (!found) {
        return LLM_JV_ERR;
    }
    llm_pbuf_reset(&v->pend);        /* trailing comma or dangling key */
    /* close inner containers the model forgot */
    while (v->stack[v->depth - 1] != want) {
        char cl = v->stack[--v->depth] == '{' ? '}' : ']';
        llm_pbuf_addc(&v->out, cl);
    }
    llm_pbuf_addc(&v->out, c);
    v->depth--;
    return jv_closed(v);
}

/* a held high surrogate not followed by its low half: U+FFFD instead */
static void
jv_lone_hi(llm_jv *v)
{
    if (v->has_hi) {
        v->has_hi = 0;
        jv_str(v, "\\ufffd", 6);
    }
}

static int
jv_hexval(char c)
{
    return (c <= '9') ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* a complete \uXXXX in esc: surrogates only as proper pairs */
static int
jv_unicode_escape(llm_jv *v)
{
    unsigned cp = 0;
    int      i;

    for (i = 2; i < 6; i++) {
        cp = cp * 16 + (unsigned) jv_hexval(v->esc[i]);
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
        jv_lone_hi(v);
        memcpy(v->hi, v->esc, 6);
        v->has_hi = 1;
        return LLM_JV_MORE;
    }
    if (cp >= 0xdc00 && cp <= 0xdfff) {
        if (!v->has_hi) {
            jv_str(v, "\\ufffd", 6);
            return LLM_JV_MORE;
        }
        v->has_hi = 0;
        jv_str(v, v->hi, 6);
        jv_str(v, v->esc, 6);
        return LLM_JV_MORE;
    }
    jv_lone_hi(v);
    jv_str(v, v->esc, 6);
    return LLM_JV_MORE;
}

static int
jv_string_byte(llm_jv *v, char c)
{
    unsigned char uc = (unsigned char) c;
    char          tmp[8];

    if (v->elen) {                       /* inside an escape */
        v->esc[v->elen++] = c;
        if (v->esc[1] == 'u') {
            if (v->elen < 6) {
                if (v->elen > 2 && !jv_is_hex(c)) {
                    /* not an escape after all: keep it literally */
                    jv_lone_hi(v);
                    jv_str(v, "\\\\", 2);
                    jv_str(v, v->esc + 1, (size_t) v->elen - 2);
                    v->elen = 0;
                    return jv_string_byte(v, c);
                }
                return LLM_JV_MORE;
            }
            if (!jv_is_hex(c)) {
                jv_lone_hi(v);
                jv_str(v, "\\\\", 2);
                jv_str(v, v->esc + 1, 4);
                v->elen = 0;
                return jv_string_byte(v, c);
            }
            v->elen = 0;
            return jv_unicode_escape(v);
        }
        jv_lone_hi(v);
        v->elen = 0;
        switch (c) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n':
        case 'r': case 't':
            tmp[0] = '\\';
            tmp[1] = c;
            jv_str(v, tmp, 2);
            break;
        case '\'':
            jv_str(v, "'", 1);
            break;
        case '\n':                       /* line continuation */
            break;
        default:                         /* unknown escape: keep literally */
            jv_str(v, "\\\\", 2);
            return jv_string_byte(v, c);
        }
        return LLM_JV_MORE;
    }

    if (c != '\\') {
        jv_lone_hi(v);
    }
    if (c == v->quote) {
        jv_str(v, "\"", 1);
        if (v->in_key) {
            v->in_key = 0;
            v->st = JV_COLON;
            return LLM_JV_MORE;
        }
        if (v->depth == 0) {
            v->st = JV_FINISHED;
            return LLM_JV_DONE;
        }
        v->st = JV_AFTER;
        return LLM_JV_MORE;
    }
    if (c == '\\') {
        v->esc[0] = '\\';
        v->elen = 1;
        return LLM_JV_MORE;
    }
    if (c == '"') {                      /* inside a single-quoted string */
        jv_str(v, "\\\"", 2);
        return LLM_JV_MORE;
    }
    if (uc < 0x20 || uc == 0x7f) {
        switch (c) {
        case '\n': jv_str(v, "\\n", 2); break;
        case '\r': jv_str(v, "\\r", 2); break;
        case '\t': jv_str(v, "\\t", 2); break;
        default:
            snprintf(tmp, sizeof(tmp), "\\u%04x", uc);
            jv_str(v, tmp, 6);
        }
        return LLM_JV_MORE;
    }
    jv_str(v, &c, 1);
    return LLM_JV_MORE;
}

static int
jv_end_scalar(llm_jv *v)
{
    const char *j = jv_scalar_json(&v->scal);

    if (j == NULL) {
        return LLM_JV_ERR;
    }
    jv_emit(v, j, strlen(j));
    llm_pbuf_reset(&v->scal);
    if (v->depth == 0) {
        v->st = JV_FINISHED;
        return LLM_JV_END;
    }
    v->st = JV_AFTER;
    return LLM_JV_MORE;
}

int
llm_jv_put(llm_jv *v, char c)
{
    int r;

    switch (v->st) {
    case JV_VALUE:
        if (llm_is_space(c)) {
            return LLM_JV_MORE;
        }
        if (c == '{' || c == '[') {
            return jv_open(v, c);
        }
        if (c == '"' || c == '\'') {
            jv_emit(v, "\"", 1);
            v->quote = c;
            v->in_key = 0;
            v->st = JV_STR;
            return LLM_JV_MORE;
        }
        if (c == ']' || c == '}') {      /* "[1,]", "[]", "{"a":}" */
            if (v->depth == 0) {
                return LLM_JV_ERR;
            }
            return jv_close_to(v, c);
        }
        if (jv_is_scalar_char(c)) {
            llm_pbuf_reset(&v->scal);
            llm_pbuf_addc(&v->scal, c);
            v->st = JV_SCALAR;
            return LLM_JV_MORE;
        }
        return LLM_JV_ERR;

    case JV_KEY:
        if (llm_is_space(c)) {
            return LLM_JV_MORE;
        }
        if (c == '"' || c == '\'') {
            llm_pbuf_addc(&v->pend, '"');
            v->quote = c;
            v->in_key = 1;
            v->st = JV_STR;
            return LLM_JV_MORE;
        }
        if (c == '}') {
            return jv_close_to(v, c);
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            llm_pbuf_addc(&v->pend, '"');
            llm_pbuf_addc(&v->pend, c);
            v->st = JV_BAREKEY;
            return LLM_JV_MORE;
        }
        return LLM_JV_ERR;

    case JV_BAREKEY:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
            || (c >= '0' && c <= '9') || c == '-')
        {
            llm_pbuf_addc(&v->pend, c);
            return LLM_JV_MORE;
        }
        llm_pbuf_addc(&v->pend, '"');
        v->st = JV_COLON;
        return llm_jv_put(v, c);

    case JV_COLON:
        if (llm_is_space(c)) {
            return LLM_JV_MORE;
        }
        if (c == ':') {
            llm_pbuf_addc(&v->pend, ':');
            v->st = JV_VALUE;
            return LLM_JV_MORE;
        }
        return LLM_JV_ERR;

    case JV_AFTER:
        if (llm_is_space(c)) {
            return LLM_JV_MORE;
        }
        if (c == ',') {
            llm_pbuf_reset(&v->pend);
            llm_pbuf_addc(&v->pend, ',');
            v->st = v->stack[v->depth - 1] == '{' ? JV_KEY : JV_VALUE;
            return LLM_JV_MORE;
        }
        if (c == '}' || c == ']') {
            return jv_close_to(v, c);
        }
        return LLM_JV_ERR;

    case JV_STR:
        return jv_string_byte(v, c);

    case JV_SCALAR:
        if (jv_is_scalar_char(c)) {
            llm_pbuf_addc(&v->scal, c);
            return LLM_JV_MORE;
        }
        r = jv_end_scalar(v);
        if (r != LLM_JV_MORE) {
            return r;
        }
        return llm_jv_put(v, c);

    default:
        return LLM_JV_END;
    }
}

int
llm_jv_close(llm_jv *v)
{
    switch (v->st) {
    case JV_STR:
        v->elen = 0;
        v->has_hi = 0;
        if (v->in_key) {
            llm_pbuf_reset(&v->pend);
        } else {
            llm_pbuf_addc(&v->out, '"');
        }
        break;
    case JV_SCALAR:
        if (jv_scalar_json(&v->scal)) {
            jv_end_scalar(v);
        }
        break;
    default:
        break;
    }
    llm_pbuf_reset(&v->pend);
    llm_pbuf_reset(&v->scal);
    while (v->depth > 0) {
        llm_pbuf_addc(&v->out, v->stack[--v->depth] == '{' ? '}' : ']');
    }
    v->st = JV_FINISHED;
    return v->started ? 0 : -1;
}
