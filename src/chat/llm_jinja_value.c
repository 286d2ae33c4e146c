/*
 * Jinja values are jansson values (NULL = undefined).  Printing follows
 * Python: str() for {{ }}, repr() inside containers, and tojson with
 * json.dumps' separators, key order and float formatting.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_jinja_int.h"

int
llm_jbuf_add(llm_jbuf *b, const char *s, size_t n)
{
    if (b->fail) return -1;
    if (n > LLM_JINJA_MAX_OUTPUT - b->n) {
        b->fail = LLM_JBUF_LONG;
        return -1;
    }
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        char  *p;
        while (nc < b->n + n + 1) nc *= 2;
        p = realloc(b->p, nc);
        if (p == NULL) {
            b->fail = LLM_JBUF_NOMEM;
            return -1;
        }
        b->p = p;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int
addz(llm_jbuf *b, const char *s)
{
    return llm_jbuf_add(b, s, strlen(s));
}

int
llm_jv_truthy(json_t *v)
{
    if (v == NULL) return 0;
    switch (json_typeof(v)) {
    case JSON_NULL: case JSON_FALSE: return 0;
    case JSON_TRUE: return 1;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0.0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_OBJECT: return json_object_size(v) != 0;
    }
    return 0;
}

int
llm_jv_is_number(json_t *v)
{
    return v != NULL && (json_is_integer(v) || json_is_real(v) || json_is_boolean(v));
}

double
llm_jv_num(json_t *v)
{
    if (json_is_integer(v)) return (double) json_integer_value(v);
    if (json_is_real(v)) return json_real_value(v);
    if (json_is_true(v)) return 1;
    return 0;
}

const char *
llm_jv_type(json_t *v)
{
    if (v == NULL) return "Undefined";
    switch (json_typeof(v)) {
    case JSON_NULL: return "NoneType";
    case JSON_TRUE: case JSON_FALSE: return "bool";
    case JSON_INTEGER: return "int";
    case JSON_REAL: return "float";
    case JSON_STRING: return "str";
    case JSON_ARRAY: return "list";
    case JSON_OBJECT: return "dict";
    }
    return "object";
}

long
llm_jv_strlen(json_t *s)
{
    const unsigned char *p = (const unsigned char *) json_string_value(s);
    size_t               n = json_string_length(s), i;
    long                 c = 0;

    for (i = 0; i < n; i++) if ((p[i] & 0xC0) != 0x80) c++;
    return c;
}

/* Python repr() of a float: shortest text that reads back, 'e' form outside 1e-4 .. 1e16 */
static int
float_repr(double d, llm_jbuf *out)
{
    char   buf[64], digits[32];
    int    prec, exp10, i, nd;
    char  *e;

    if (isnan(d)) return addz(out, "nan");
    if (isinf(d)) return addz(out, d < 0 ? "-inf" : "inf");
    if (d == 0) return addz(out, signbit(d) ? "-0.0" : "0.0");
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d) break;
    }
    /* buf = [-]D.DDDDe[+-]XX */
    e = strchr(buf, 'e');
    exp10 = atoi(e + 1);
    nd = 0;
    for (i = 0; buf + i < e; i++) if (buf[i] >= '0' && buf[i] <= '9') digits[nd++] = buf[i];
    digits[nd] = '\0';
    if (d < 0 && addz(out, "-")) return -1;
    if (exp10 < -4 || exp10 >= 16) {
        char tail[16];
        if (llm_jbuf_add(out, digits, 1)) return -1;
        if (nd > 1 && (addz(out, ".") || llm_jbuf_add(out, digits + 1, (size_t) nd - 1))) return -1;
        snprintf(tail, sizeof(tail), "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return addz(out, tail);
    }
    if (exp10 < 0) {
        if (addz(out, "0.")) return -1;
        for (i = 0; i < -exp10 - 1; i++) if (addz(out, "0")) return -1;
        return llm_jbuf_add(out, digits, (size_t) nd);
    }
    if (nd <= exp10 + 1) {
        if (llm_jbuf_add(out, digits, (size_t) nd)) return -1;
        for (i = nd; i <= exp10; i++) if (addz(out, "0")) return -1;
        return addz(out, ".0");
    }
    return llm_jbuf_add(out, digits, (size_t) exp10 + 1) || addz(out, ".")
           || llm_jbuf_add(out, digits + exp10 + 1, (size_t) (nd - exp10 - 1));
}

static int
str_repr(const char *s, size_t n, llm_jbuf *out)
{
    char   q = (memchr(s, '\'', n) && !memchr(s, '"', n)) ? '"' : '\'';
    size_t i;

    if (llm_jbuf_add(out, &q, 1)) return -1;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        char          esc[8];
        if (c == '\\') { if (addz(out, "\\\\")) return -1; }
        else if (c == (unsigned char) q) { esc[0] = '\\'; esc[1] = q; if (llm_jbuf_add(out, esc, 2)) return -1; }
        else if (c == '\n') { if (addz(out, "\\n")) return -1; }
        else if (c == '\r') { if (addz(out, "\\r")) return -1; }
        else if (c == '\t') { if (addz(out, "\\t")) return -1; }
        else if (c < 0x20 || c == 0x7f) { snprintf(esc, sizeof(esc), "\\x%02x", c); if (addz(out, esc)) return -1; }
        else if (llm_jbuf_add(out, s + i, 1)) return -1;
    }
    return llm_jbuf_add(out, &q, 1);
}

static int
is_tuple(json_t *v, json_t *tuples)
{
    size_t  i;
    json_t *x;

    json_array_foreach(tuples, i, x) if (x == v) return 1;
    return 0;
}

int
llm_jv_repr_ex(json_t *v, llm_jbuf *out, json_t *tuples)
{
    size_t      i;
    const char *k;
    json_t     *x;
    int         first = 1, tup;

    if (v == NULL) return 0;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return str_repr(json_string_value(v), json_string_length(v), out);
    case JSON_ARRAY:
        tup = tuples && is_tuple(v, tuples);
        if (addz(out, tup ? "(" : "[")) return -1;
        json_array_foreach(v, i, x) {
            if ((i && addz(out, ", ")) || llm_jv_repr_ex(x, out, tuples)) return -1;
        }
        if (tup && json_array_size(v) == 1 && addz(out, ",")) return -1;
        return addz(out, tup ? ")" : "]");
    case JSON_OBJECT:
        if (addz(out, "{")) return -1;
        json_object_foreach(v, k, x) {
            if ((!first && addz(out, ", ")) || str_repr(k, strlen(k), out) || addz(out, ": ")
                || llm_jv_repr_ex(x, out, tuples)) return -1;
            first = 0;
        }
        return addz(out, "}");
    default:
        return llm_jv_str(v, out);
    }
}

int
llm_jv_repr(json_t *v, llm_jbuf *out)
{
    return llm_jv_repr_ex(v, out, NULL);
}

int
llm_jv_str_ex(json_t *v, llm_jbuf *out, json_t *tuples)
{
    if (v != NULL && (json_is_array(v) || json_is_object(v))) return llm_jv_repr_ex(v, out, tuples);
    return llm_jv_str(v, out);
}

int
llm_jv_str(json_t *v, llm_jbuf *out)
{
    char buf[32];

    if (v == NULL) return 0;
    switch (json_typeof(v)) {
    case JSON_NULL: return addz(out, "None");
    case JSON_TRUE: return addz(out, "True");
    case JSON_FALSE: return addz(out, "False");
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return addz(out, buf);
    case JSON_REAL: return float_repr(json_real_value(v), out);
    case JSON_STRING: return llm_jbuf_add(out, json_string_value(v), json_string_length(v));
    default: return llm_jv_repr(v, out);
    }
}

/* json.dumps string escaping; ascii: ensure_ascii=True (\uXXXX, surrogate pairs) */
static int
json_str(const char *s, size_t n, int ascii, llm_jbuf *out)
{
    size_t i, start = 0;

    if (addz(out, "\"")) return -1;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        const char   *esc = NULL;
        char          u[16];
        /* bytes that start no UTF-8 character (the chat adapter's marks
           of request text) are kept as they are */
        if (ascii && c >= 0xC2 && c <= 0xF4) {
            uint32_t cp = 0;
            size_t   k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2, j;
            cp = c & (k == 4 ? 0x07 : k == 3 ? 0x0F : 0x1F);
            for (j = 1; j < k && i + j < n; j++) cp = (cp << 6) | ((unsigned char) s[i + j] & 0x3F);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                snprintf(u, sizeof(u), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                snprintf(u, sizeof(u), "\\u%04x", cp);
            }
            if (llm_jbuf_add(out, s + start, i - start) || addz(out, u)) return -1;
            i += k - 1;
            start = i + 1;
            continue;
        }
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) { snprintf(u, sizeof(u), "\\u%04x", c); esc = u; }
        if (esc) {
            if (llm_jbuf_add(out, s + start, i - start) || addz(out, esc)) return -1;
            start = i + 1;
        }
    }
    return llm_jbuf_add(out, s + start, n - start) || addz(out, "\"");
}

static int
indent_to(llm_jbuf *out, int indent, int level)
{
    static const char spaces[] = "                                                                ";
    unsigned long long n = (unsigned long long) indent * (unsigned long long) level, k;

    if (addz(out, "\n")) return -1;
    for (; n > 0; n -= k) {
        k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
        if (llm_jbuf_add(out, spaces, (size_t) k)) return -1;
    }
    return 0;
}

static int
cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int
llm_jv_tojson(json_t *v, int indent, const char *item_sep, const char *key_sep,
              int flags, int level, llm_jbuf *out)
{
    int sort_keys = flags & LLM_JV_SORT_KEYS, ascii = (flags & LLM_JV_ASCII) != 0;

    size_t i;
    json_t *x;

    if (v == NULL) return addz(out, "null");
    switch (json_typeof(v)) {
    case JSON_NULL: return addz(out, "null");
    case JSON_TRUE: return addz(out, "true");
    case JSON_FALSE: return addz(out, "false");
    case JSON_INTEGER: case JSON_REAL: {
        if (json_is_real(v) && isnan(json_real_value(v))) return addz(out, "NaN");
        if (json_is_real(v) && isinf(json_real_value(v))) return addz(out, json_real_value(v) < 0 ? "-Infinity" : "Infinity");
        return llm_jv_str(v, out);
    }
    case JSON_STRING: return json_str(json_string_value(v), json_string_length(v), ascii, out);
    case JSON_ARRAY:
        if (json_array_size(v) == 0) return addz(out, "[]");
        if (addz(out, "[")) return -1;
        json_array_foreach(v, i, x) {
            if (i && addz(out, item_sep)) return -1;
            if (indent >= 0 && indent_to(out, indent, level + 1)) return -1;
            if (llm_jv_tojson(x, indent, item_sep, key_sep, flags, level + 1, out)) return -1;
        }
        if (indent >= 0 && indent_to(out, indent, level)) return -1;
        return addz(out, "]");
    case JSON_OBJECT: {
        size_t       n = json_object_size(v), k = 0;
        const char **keys, *key;
        if (n == 0) return addz(out, "{}");
        keys = malloc(n * sizeof(char *));
        if (keys == NULL) return -1;
        json_object_foreach(v, key, x) keys[k++] = key;
        if (sort_keys) qsort(keys, n, sizeof(char *), cmp_keys);
        if (addz(out, "{")) { free(keys); return -1; }
        for (k = 0; k < n; k++) {
            if ((k && addz(out, item_sep)) || (indent >= 0 && indent_to(out, indent, level + 1))
                || json_str(keys[k], strlen(keys[k]), ascii, out) || addz(out, key_sep)
                || llm_jv_tojson(json_object_get(v, keys[k]), indent, item_sep, key_sep, flags, level + 1, out))
            {
                free(keys);
                return -1;
            }
        }
        free(keys);
        if (indent >= 0 && indent_to(out, indent, level)) return -1;
        return addz(out, "}");
    }
    }
    return -1;
}

int
llm_jv_equal(json_t *a, json_t *b)
{
    if (a == NULL || b == NULL) return a == b;
    if (llm_jv_is_number(a) && llm_jv_is_number(b)) return llm_jv_num(a) == llm_jv_num(b);
    if (json_is_array(a) && json_is_array(b)) {
        size_t i;
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (i = 0; i < json_array_size(a); i++) {
            if (!llm_jv_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        }
        return 1;
    }
    return json_equal(a, b);
}

int
llm_jv_compare(json_t *a, json_t *b, int *res)
{
    if (llm_jv_is_number(a) && llm_jv_is_number(b)) {
        double x = llm_jv_num(a), y = llm_jv_num(b);
        *res = x < y ? -1 : x > y;
        return 0;
    }
    if (json_is_string(a) && json_is_string(b)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        int    c = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
        *res = c ? (c < 0 ? -1 : 1) : (la < lb ? -1 : la > lb);
        return 0;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t i;
        for (i = 0; i < json_array_size(a) && i < json_array_size(b); i++) {
            if (llm_jv_compare(json_array_get(a, i), json_array_get(b, i), res)) return -1;
            if (*res) return 0;
        }
        *res = json_array_size(a) < json_array_size(b) ? -1 : json_array_size(a) > json_array_size(b);
        return 0;
    }
    return -1;
}
