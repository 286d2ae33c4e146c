/*
 * Jinja builtins: filters, tests, methods of str/dict/list, global
 * functions (range, namespace, dict, raise_exception, strftime_now), with
 * Python's behaviour where chat templates depend on it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/llm_jinja_int.h"


static int
in_list(const char *const *l, const char *s)
{
    for (; *l; l++) if (strcmp(*l, s) == 0) return 1;
    return 0;
}

/* ---- helpers ---- */

static json_t *
kwarg(char **kwn, json_t **kwv, size_t nkw, const char *name)
{
    size_t i;
    for (i = 0; i < nkw; i++) if (strcmp(kwn[i], name) == 0) return kwv[i];
    return NULL;
}

/* positional i or keyword name */
static json_t *
arg(json_t **args, size_t nargs, size_t i, char **kwn, json_t **kwv, size_t nkw, const char *name)
{
    json_t *k = name ? kwarg(kwn, kwv, nkw, name) : NULL;
    if (k) return k;
    return i < nargs ? args[i] : NULL;
}

static json_t *
mkstr(const char *s, size_t n)
{
    return json_stringn_nocheck(s ? s : "", n);
}

static json_t *
to_str(llm_jstate *st, json_t *v)
{
    llm_jbuf b = { 0 };
    llm_jv_str_ex(v, &b, st->tuples);
    return llm_jbuf_take(st, 0, &b);
}

/* Python str.isspace() characters */
static size_t
space_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *) s;
    if (n == 0) return 0;
    if (u[0] == ' ' || (u[0] >= 0x09 && u[0] <= 0x0d) || (u[0] >= 0x1c && u[0] <= 0x1f)) return 1;
    if (n >= 2 && u[0] == 0xC2 && (u[1] == 0x85 || u[1] == 0xA0)) return 2;
    if (n >= 3 && u[0] == 0xE1 && u[1] == 0x9A && u[2] == 0x80) return 3;
    if (n >= 3 && u[0] == 0xE2 && u[1] == 0x80 && ((u[2] >= 0x80 && u[2] <= 0x8A) || u[2] == 0xA8 || u[2] == 0xA9 || u[2] == 0xAF)) return 3;
    if (n >= 3 && u[0] == 0xE2 && u[1] == 0x81 && u[2] == 0x9F) return 3;
    if (n >= 3 && u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) return 3;
    return 0;
}

static size_t
char_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && ((unsigned char) s[k] & 0xC0) == 0x80) k++;
    return k;
}

/* length of the last character ending at s+n */
static size_t
last_char_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && ((unsigned char) s[n - k] & 0xC0) == 0x80) k++;
    return k;
}

static int
char_in(const char *c, size_t cl, json_t *chars)
{
    const char *s = json_string_value(chars);
    size_t      n = json_string_length(chars), i = 0;
    while (i < n) {
        size_t k = char_len(s + i, n - i);
        if (k == cl && memcmp(s + i, c, cl) == 0) return 1;
        i += k;
    }
    return 0;
}

/* strip: which 1 = left, 2 = right, 3 = both; chars NULL/None = whitespace */
static json_t *
strip(json_t *v, json_t *chars, int which)
{
    const char *s = json_string_value(v);
    size_t      a = 0, b = json_string_length(v), k;
    int         ws = chars == NULL || !json_is_string(chars);

    if (which & 1) {
        while (a < b) {
            if (ws) { k = space_len(s + a, b - a); if (!k) break; }
            else { k = char_len(s + a, b - a); if (!char_in(s + a, k, chars)) break; }
            a += k;
        }
    }
    if (which & 2) {
        while (b > a) {
            k = last_char_len(s + a, b - a);
            if (ws) { if (space_len(s + b - k, k) != k) break; }
            else if (!char_in(s + b - k, k, chars)) break;
            b -= k;
        }
    }
    return mkstr(s + a, b - a);
}

static json_t *
case_map(json_t *v, int mode)   /* 1 upper, 2 lower, 3 title, 4 capitalize (ASCII letters) */
{
    const char *s = json_string_value(v);
    size_t      n = json_string_length(v), i;
    char       *o = malloc(n + 1);
    int         prev_alpha = 0;
    json_t     *r;

    if (o == NULL) return NULL;
    for (i = 0; i < n; i++) {
        char c = s[i];
        int  up = mode == 1 || (mode == 3 && !prev_alpha) || (mode == 4 && i == 0);
        if (c >= 'a' && c <= 'z' && up) c = (char) (c - 32);
        else if (c >= 'A' && c <= 'Z' && !up) c = (char) (c + 32);
        o[i] = c;
        prev_alpha = ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || ((unsigned char) c >= 0x80);
    }
    r = mkstr(o, n);
    free(o);
    return r;
}

/* str.replace: the result's size is known before it is built */
static json_t *
replace(llm_jstate *st, int line, json_t *v, json_t *old, json_t *new_, long count)
{
    const char *s = json_string_value(v), *o = json_string_value(old), *nw = json_string_value(new_);
    size_t      n = json_string_length(v), ol = json_string_length(old), nl = json_string_length(new_), i, start = 0;
    unsigned long long found = 0;
    llm_jbuf    b = { 0 };
    long        done = 0;

    if (ol == 0) return json_incref(v);
    for (i = 0; i + ol <= n && (count < 0 || (long long) found < count); ) {
        if (memcmp(s + i, o, ol) == 0) { found++; i += ol; } else i++;
    }
    if (found == 0) return json_incref(v);
    if (llm_jcheck_len(st, line, n - found * ol + found * nl)) return NULL;
    i = 0;
    while (i + ol <= n && (count < 0 || done < count)) {
        if (memcmp(s + i, o, ol) == 0) {
            llm_jbuf_add(&b, s + start, i - start);
            llm_jbuf_add(&b, nw, nl);
            i += ol;
            start = i;
            done++;
        } else {
            i++;
        }
    }
    llm_jbuf_add(&b, s + start, n - start);
    return llm_jbuf_take(st, line, &b);
}

static json_t *
split(llm_jstate *st, int line, json_t *v, json_t *sep, long maxsplit)
{
    const char *s = json_string_value(v);
    size_t      n = json_string_length(v), i = 0, start;
    json_t     *r = json_array();
    long        done = 0;

    if (sep == NULL || json_is_null(sep)) {
        unsigned long long words = 0;
        int                in_word = 0;
        for (i = 0; i < n; ) {
            size_t k = space_len(s + i, n - i);
            if (k) { in_word = 0; i += k; continue; }
            if (!in_word) words++;
            in_word = 1;
            i += char_len(s + i, n - i);
        }
        if (llm_jcheck_items(st, line, words)) { json_decref(r); return NULL; }
        i = 0;
        for (;;) {
            size_t k;
            while (i < n && (k = space_len(s + i, n - i)) > 0) i += k;
            if (i >= n) break;
            start = i;
            if (maxsplit >= 0 && done >= maxsplit) {
                size_t e = n;
                while (e > start && (k = last_char_len(s + start, e - start)) && space_len(s + e - k, k) == k) e -= k;
                json_array_append_new(r, mkstr(s + start, e - start));
                break;
            }
            while (i < n && space_len(s + i, n - i) == 0) i += char_len(s + i, n - i);
            if (json_array_size(r) >= LLM_JINJA_MAX_ITEMS) {
                llm_jcheck_items(st, line, LLM_JINJA_MAX_ITEMS + 1ULL);
                json_decref(r);
                return NULL;
            }
            json_array_append_new(r, mkstr(s + start, i - start));
            done++;
        }
        return r;
    } else {
        const char *p = json_string_value(sep);
        size_t      pl = json_string_length(sep);
        unsigned long long pieces = 1;
        if (pl == 0) { json_decref(r); return NULL; }
        for (i = 0; i + pl <= n && (maxsplit < 0 || (long long) pieces <= maxsplit); ) {
            if (memcmp(s + i, p, pl) == 0) { pieces++; i += pl; } else i++;
        }
        if (llm_jcheck_items(st, line, pieces)) { json_decref(r); return NULL; }
        i = 0;
        start = 0;
        while (i + pl <= n && (maxsplit < 0 || done < maxsplit)) {
            if (memcmp(s + i, p, pl) == 0) {
                if (json_array_size(r) >= LLM_JINJA_MAX_ITEMS) {
                    llm_jcheck_items(st, line, LLM_JINJA_MAX_ITEMS + 1ULL);
                    json_decref(r);
                    return NULL;
                }
                json_array_append_new(r, mkstr(s + start, i - start));
                i += pl;
                start = i;
                done++;
            } else {
                i++;
            }
        }
        json_array_append_new(r, mkstr(s + start, n - start));
        return r;
    }
}

static int
starts_ends(json_t *v, json_t *x, int end)
{
    size_t i;
    json_t *e;

    if (json_is_array(x)) {
        json_array_foreach(x, i, e) if (starts_ends(v, e, end)) return 1;
        return 0;
    }
    if (!json_is_string(x)) return 0;
    {
        size_t n = json_string_length(v), m = json_string_length(x);
        if (m > n) return 0;
        return memcmp(json_string_value(v) + (end ? n - m : 0), json_string_value(x), m) == 0;
    }
}

/* attribute path "a.b.0" on a value */
static json_t *
attr_path(llm_jstate *st, int line, json_t *v, const char *path)
{
    char   *p, *tok, *save = NULL, *dup = strdup(path);
    json_t *cur = json_incref(v);

    if (dup == NULL) { json_decref(cur); return NULL; }
    for (tok = strtok_r(dup, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
        json_t *nx;
        long    idx = strtol(tok, &p, 10);
        if (*p == '\0' && json_is_array(cur)) nx = json_incref(json_array_get(cur, (size_t) idx));
        else nx = llm_jgetattr(st, line, cur, tok);
        json_decref(cur);
        cur = nx;
    }
    free(dup);
    return cur;
}

static json_t *
as_list(llm_jstate *st, int line, json_t *v)
{
    json_t *r;
    size_t  i = 0;

    if (v == NULL) return json_array();
    if (json_is_array(v)) return json_incref(v);
    r = json_array();
    if (json_is_object(v)) {
        const char *k;
        json_t     *x;
        json_object_foreach(v, k, x) json_array_append_new(r, json_string(k));
        return r;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t      n = json_string_length(v);
        if (llm_jcheck_items(st, line, (unsigned long long) llm_jv_strlen(v))) {
            json_decref(r);
            return NULL;
        }
        while (i < n) {
            size_t k = char_len(s + i, n - i);
            if (json_array_size(r) >= LLM_JINJA_MAX_ITEMS) {
                llm_jcheck_items(st, line, LLM_JINJA_MAX_ITEMS + 1ULL);
                json_decref(r);
                return NULL;
            }
            json_array_append_new(r, mkstr(s + i, k));
            i += k;
        }
        return r;
    }
    json_decref(r);
    llm_jfail(st, line, "'%s' object is not iterable", llm_jv_type(v));
    return NULL;
}

/* key comparison for sort filters; case-insensitive on strings unless case_sensitive */
static int
key_cmp(json_t *x, json_t *y, int case_sensitive)
{
    int r = 0;

    if (!case_sensitive && json_is_string(x) && json_is_string(y)) {
        const char *p = json_string_value(x), *q = json_string_value(y);
        size_t      n = json_string_length(x), m = json_string_length(y), i;
        for (i = 0; i < n && i < m; i++) {
            int c = (p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) - (q[i] >= 'A' && q[i] <= 'Z' ? q[i] + 32 : q[i]);
            if (c) return c;
        }
        return n < m ? -1 : n > m;
    }
    if (llm_jv_compare(x, y, &r)) return 0;
    return r;
}

/* stable insertion sort by key (attribute path, pair element, or the item itself) */
static json_t *
sorted(llm_jstate *st, int line, json_t *list, const char *attribute, int reverse, int case_sensitive, int by_value_of_pair)
{
    size_t   n = json_array_size(list), i, j;
    json_t **keys = malloc((n + 1) * sizeof(json_t *));
    size_t  *order = malloc((n + 1) * sizeof(size_t));
    json_t  *r;

    if (keys == NULL || order == NULL) { free(keys); free(order); return NULL; }
    for (i = 0; i < n; i++) {
        json_t *it = json_array_get(list, i);
        if (by_value_of_pair >= 0) keys[i] = json_incref(json_array_get(it, (size_t) by_value_of_pair));
        else keys[i] = attribute ? attr_path(st, line, it, attribute) : json_incref(it);
        order[i] = i;
    }
    for (i = 1; i < n; i++) {
        size_t cur = order[i];
        for (j = i; j > 0; j--) {
            int c = key_cmp(keys[order[j - 1]], keys[cur], case_sensitive);
            if (reverse ? c >= 0 : c <= 0) break;
            order[j] = order[j - 1];
        }
        order[j] = cur;
    }
    r = json_array();
    for (i = 0; i < n; i++) json_array_append(r, json_array_get(list, order[i]));
    for (i = 0; i < n; i++) json_decref(keys[i]);
    free(keys);
    free(order);
    return r;
}

/*
 * Python's printf-style formatting (the format filter and str % value):
 * %s %r %d %i %f %x %%, with flags '-' '0', width and precision.
 */
json_t *
llm_jpyformat(llm_jstate *st, int line, json_t *fmt, json_t **args, size_t nargs)
{
    const char *s = json_string_value(fmt);
    size_t      n = json_string_length(fmt), i, ai = 0;
    llm_jbuf    b = { 0 };

    for (i = 0; i < n && !b.fail; i++) {
        char               spec[32], conv;
        size_t             k = 0, len = 0;
        unsigned long long width = 0, prec = 0;
        int                in_prec = 0, rc = 0;
        char              *o;
        llm_jbuf           v = { 0 };

        if (s[i] != '%' || i + 1 >= n) { llm_jbuf_add(&b, s + i, 1); continue; }
        i++;
        if (s[i] == '%') { llm_jbuf_add(&b, "%", 1); continue; }
        spec[k++] = '%';
        while (i < n && k < 20 && (s[i] == '-' || s[i] == '0' || s[i] == ' ' || s[i] == '+' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9'))) {
            /* width and precision are bounded like every string a template builds */
            if (s[i] == '.') in_prec = 1, prec = 0;
            else if (s[i] >= '0' && s[i] <= '9') {
                unsigned long long *d = in_prec ? &prec : &width;
                if (!(s[i] == '0' && !in_prec && width == 0)) *d = *d * 10 + (unsigned long long) (s[i] - '0');
                if (*d > LLM_JINJA_MAX_OUTPUT) { free(b.p); llm_jcheck_len(st, line, *d); return NULL; }
            }
            spec[k++] = s[i++];
        }
        if (i < n && k == 20 && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) {
            free(b.p);
            llm_jfail(st, line, "format specification too long");
            return NULL;
        }
        if (i >= n) break;
        conv = s[i];
        if (ai >= nargs) { free(b.p); llm_jfail(st, line, "not enough arguments for format string"); return NULL; }
        if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'f' || conv == 'e' || conv == 'g') {
            if (!llm_jv_is_number(args[ai])) { free(b.p); llm_jfail(st, line, "%%%c format: a number is required, not %s", conv, llm_jv_type(args[ai])); return NULL; }
        } else if (conv == 's' || conv == 'r') {
            if (conv == 'r') rc = llm_jv_repr(args[ai], &v); else rc = llm_jv_str(args[ai], &v);
            if (rc) { free(b.p); llm_jbuf_take(st, line, &v); return NULL; }
        } else {
            free(b.p);
            llm_jfail(st, line, "unsupported format character '%c'", conv);
            return NULL;
        }
        if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X') {
            spec[k++] = 'l'; spec[k++] = 'l'; spec[k++] = conv == 'i' ? 'd' : conv; spec[k] = '\0';
            len = (size_t) snprintf(NULL, 0, spec, (long long) llm_jv_num(args[ai]));
        } else if (conv == 's' || conv == 'r') {
            spec[k++] = 's'; spec[k] = '\0';
            len = (size_t) (width > v.n ? width : v.n);
        } else {
            spec[k++] = conv; spec[k] = '\0';
            len = (size_t) snprintf(NULL, 0, spec, llm_jv_num(args[ai]));
        }
        if (llm_jcheck_len(st, line, (unsigned long long) b.n + len)) { free(b.p); free(v.p); return NULL; }
        o = malloc(len + 1);
        if (o == NULL) { free(b.p); free(v.p); llm_jfail(st, line, "out of memory"); return NULL; }
        if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X') snprintf(o, len + 1, spec, (long long) llm_jv_num(args[ai]));
        else if (conv == 's' || conv == 'r') len = (size_t) snprintf(o, len + 1, spec, v.p ? v.p : "");
        else snprintf(o, len + 1, spec, llm_jv_num(args[ai]));
        llm_jbuf_add(&b, o, len);
        free(o);
        free(v.p);
        ai++;
    }
    return llm_jbuf_take(st, line, &b);
}

/* ---- attribute / item access ---- */

json_t *
llm_jgetattr(llm_jstate *st, int line, json_t *obj, const char *name)
{
    static const char *const dict_methods[] = {
        "items", "keys", "values", "get", "pop", "update", "copy", "clear", "setdefault", "popitem", NULL
    };

    (void) line;
    if (obj == NULL || !json_is_object(obj)) return NULL;
    /* Jinja's obj.name prefers a Python attribute: on a dict, d.items is the
       bound method (truthy), not the "items" key; stand in with true */
    if (in_list(dict_methods, name) && !llm_jis_ours(st, obj)) return json_true();
    return json_incref(json_object_get(obj, name));
}

json_t *
llm_jgetitem(llm_jstate *st, int line, json_t *obj, json_t *key)
{
    (void) st; (void) line;
    if (obj == NULL || key == NULL) return NULL;
    if (json_is_array(obj) && json_is_integer(key)) {
        long long i = json_integer_value(key), n = (long long) json_array_size(obj);
        if (i < 0) i += n;
        return i >= 0 && i < n ? json_incref(json_array_get(obj, (size_t) i)) : NULL;
    }
    if (json_is_object(obj) && json_is_string(key)) return json_incref(json_object_get(obj, json_string_value(key)));
    if (json_is_string(obj) && json_is_integer(key)) {
        const char *s = json_string_value(obj);
        size_t      n = json_string_length(obj), i = 0;
        long long   want = json_integer_value(key), idx = 0, len = llm_jv_strlen(obj);
        if (want < 0) want += len;
        if (want < 0 || want >= len) return NULL;
        while (i < n) {
            size_t k = char_len(s + i, n - i);
            if (idx++ == want) return mkstr(s + i, k);
            i += k;
        }
    }
    return NULL;
}

/* ---- tests: `x is name(args)` ---- */

enum { T_DEFINED, T_UNDEFINED, T_NONE, T_STRING, T_NUMBER, T_INTEGER, T_FLOAT, T_MAPPING,
       T_ITERABLE, T_SEQUENCE, T_BOOLEAN, T_TRUE, T_FALSE, T_CALLABLE };

static int
test_kind(llm_jcall *c, json_t *v)
{
    switch (c->op) {
    case T_DEFINED:   return v != NULL;
    case T_UNDEFINED: return v == NULL;
    case T_NONE:      return v != NULL && json_is_null(v);
    case T_STRING:    return v != NULL && json_is_string(v);
    case T_NUMBER:    return v != NULL && (json_is_integer(v) || json_is_real(v) || json_is_boolean(v));
    case T_INTEGER:   return v != NULL && (json_is_integer(v) || json_is_boolean(v));
    case T_FLOAT:     return v != NULL && json_is_real(v);
    case T_MAPPING:   return v != NULL && json_is_object(v);
    case T_ITERABLE:  return v == NULL || json_is_array(v) || json_is_object(v) || json_is_string(v);
    case T_SEQUENCE:  return v != NULL && (json_is_array(v) || json_is_object(v) || json_is_string(v));
    case T_BOOLEAN:   return v != NULL && json_is_boolean(v);
    case T_TRUE:      return v != NULL && json_is_true(v);
    case T_FALSE:     return v != NULL && json_is_false(v);
    default:          return 0;   /* callable: nothing a template reads is */
    }
}

enum { EQ_EQUAL, EQ_NOT_EQUAL, EQ_SAME };

static int
test_equal(llm_jcall *c, json_t *v)
{
    json_t *a = c->nargs ? c->args[0] : NULL;

    if (c->op == EQ_NOT_EQUAL) return !llm_jv_equal(v, a);
    if (c->op == EQ_SAME) return (v == NULL && a == NULL) || (v && a && json_typeof(v) == json_typeof(a) && llm_jv_equal(v, a));
    return llm_jv_equal(v, a);
}

enum { CMP_LT, CMP_LE, CMP_GT, CMP_GE };

static int
test_compare(llm_jcall *c, json_t *v)
{
    json_t *a = c->nargs ? c->args[0] : NULL;
    int     r;

    if (llm_jv_compare(v, a, &r)) return llm_jfail(c->st, c->line, "cannot compare %s and %s", llm_jv_type(v), llm_jv_type(a));
    return c->op == CMP_LT ? r < 0 : c->op == CMP_LE ? r <= 0 : c->op == CMP_GT ? r > 0 : r >= 0;
}

static int
test_in(llm_jcall *c, json_t *v)
{
    json_t *a = c->nargs ? c->args[0] : NULL, *x;
    size_t  i;

    if (json_is_array(a)) { json_array_foreach(a, i, x) if (llm_jv_equal(v, x)) return 1; return 0; }
    if (json_is_object(a)) return json_is_string(v) && json_object_get(a, json_string_value(v)) != NULL;
    if (json_is_string(a) && json_is_string(v)) return strstr(json_string_value(a), json_string_value(v)) != NULL;
    return 0;
}

enum { DIV_BY_ARG, DIV_ODD, DIV_EVEN };

static int
test_divisible(llm_jcall *c, json_t *v)
{
    long long x = (long long) llm_jv_num(v);
    long long d = c->op == DIV_BY_ARG ? (long long) llm_jv_num(c->nargs ? c->args[0] : NULL) : 2;

    if (!json_is_integer(v) || d == 0) return llm_jfail(c->st, c->line, "test '%s' needs integers", c->name);
    if (c->op == DIV_ODD) return x % 2 != 0;
    return x % d == 0;
}

/* lower / upper: some cased letter and none of the other case */
static int
test_case(llm_jcall *c, json_t *v)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    int         has = 0;

    for (; *s; s++) {
        if (*s >= 'a' && *s <= 'z') { if (c->op == 'u') return 0; has = 1; }
        if (*s >= 'A' && *s <= 'Z') { if (c->op == 'l') return 0; has = 1; }
    }
    return has;
}

static const llm_jtest_def TESTS[] = {
    { "defined", test_kind, T_DEFINED },       { "undefined", test_kind, T_UNDEFINED },
    { "none", test_kind, T_NONE },             { "string", test_kind, T_STRING },
    { "number", test_kind, T_NUMBER },         { "integer", test_kind, T_INTEGER },
    { "float", test_kind, T_FLOAT },           { "mapping", test_kind, T_MAPPING },
    { "iterable", test_kind, T_ITERABLE },     { "sequence", test_kind, T_SEQUENCE },
    { "boolean", test_kind, T_BOOLEAN },       { "true", test_kind, T_TRUE },
    { "false", test_kind, T_FALSE },           { "callable", test_kind, T_CALLABLE },
    { "eq", test_equal, EQ_EQUAL },            { "equalto", test_equal, EQ_EQUAL },
    { "==", test_equal, EQ_EQUAL },            { "ne", test_equal, EQ_NOT_EQUAL },
    { "sameas", test_equal, EQ_SAME },
    { "lt", test_compare, CMP_LT },            { "lessthan", test_compare, CMP_LT },
    { "le", test_compare, CMP_LE },            { "gt", test_compare, CMP_GT },
    { "greaterthan", test_compare, CMP_GT },   { "ge", test_compare, CMP_GE },
    { "in", test_in, 0 },
    { "odd", test_divisible, DIV_ODD },        { "even", test_divisible, DIV_EVEN },
    { "divisibleby", test_divisible, DIV_BY_ARG },
    { "lower", test_case, 'l' },               { "upper", test_case, 'u' },
    { NULL, NULL, 0 }
};

/* ---- methods of str, dict and list: `obj.name(args)` ---- */

static json_t *
no_attribute(llm_jcall *c, json_t *obj)
{
    llm_jfail(c->st, c->line, "'%s object' has no attribute '%s'", llm_jv_type(obj), c->name);
    return NULL;
}

static json_t *
bad_argument(llm_jcall *c, json_t *obj)
{
    llm_jfail(c->st, c->line, "bad argument to %s.%s()", llm_jv_type(obj), c->name);
    return NULL;
}

#define ARG(c, i, kw)  arg((c)->args, (c)->nargs, (i), (c)->kwn, (c)->kwv, (c)->nkw, (kw))
#define KWARG(c, kw)   kwarg((c)->kwn, (c)->kwv, (c)->nkw, (kw))

/* startswith (op 0) / endswith (op 1) */
static json_t *
str_starts_ends(llm_jcall *c, json_t *s)
{
    json_t *a0 = ARG(c, 0, NULL);

    if (a0 == NULL || (!json_is_string(a0) && !json_is_array(a0))) return bad_argument(c, s);
    return json_boolean(starts_ends(s, a0, c->op));
}

/* lstrip (op 1), rstrip (2), strip (3) */
static json_t *
str_strip(llm_jcall *c, json_t *s)
{
    return strip(s, ARG(c, 0, NULL), c->op);
}

/* split (op 0) / rsplit (op 1, without maxsplit) */
static json_t *
str_split(llm_jcall *c, json_t *s)
{
    json_t *sep = ARG(c, 0, "sep"), *mx = ARG(c, 1, "maxsplit");

    if (sep && !json_is_null(sep) && (!json_is_string(sep) || json_string_length(sep) == 0)) return bad_argument(c, s);
    if (c->op == 1 && mx && json_integer_value(mx) >= 0) {
        llm_jfail(c->st, c->line, "rsplit with maxsplit is not supported");
        return NULL;
    }
    return split(c->st, c->line, s, sep, mx && json_is_integer(mx) ? (long) json_integer_value(mx) : -1);
}

/* upper (op 1), lower (2), title (3), capitalize (4) */
static json_t *
str_case(llm_jcall *c, json_t *s)
{
    return case_map(s, c->op);
}

static json_t *
str_replace(llm_jcall *c, json_t *s)
{
    json_t *a0 = ARG(c, 0, NULL), *b = ARG(c, 1, NULL), *n = ARG(c, 2, NULL);

    if (!json_is_string(a0) || !json_is_string(b)) return bad_argument(c, s);
    return replace(c->st, c->line, s, a0, b, n && json_is_integer(n) ? (long) json_integer_value(n) : -1);
}

enum { FIND_FIRST, FIND_LAST, FIND_COUNT, FIND_INDEX };

/* find / rfind / count / index of a substring, in characters */
static json_t *
str_find(llm_jcall *c, json_t *str)
{
    json_t     *a0 = ARG(c, 0, NULL);
    const char *s = json_string_value(str), *p;
    size_t      n = json_string_length(str), m, i;
    long        cnt = 0, pos = -1, chars = 0;

    if (!json_is_string(a0)) return bad_argument(c, str);
    p = json_string_value(a0);
    m = json_string_length(a0);
    for (i = 0; i + m <= n; ) {
        if (memcmp(s + i, p, m) == 0) {
            if (pos < 0 || c->op == FIND_LAST) pos = chars;
            cnt++;
            if (c->op == FIND_FIRST || c->op == FIND_INDEX) break;
            if (m) { size_t k; for (k = 0; k < m; k += char_len(s + i + k, m - k)) chars++; i += m; continue; }
        }
        if (i >= n) break;
        i += char_len(s + i, n - i);
        chars++;
    }
    if (c->op == FIND_COUNT) return json_integer(cnt);
    if (c->op == FIND_INDEX && pos < 0) { llm_jfail(c->st, c->line, "substring not found"); return NULL; }
    return json_integer(pos);
}

static json_t *
str_join(llm_jcall *c, json_t *str)
{
    llm_jbuf b = { 0 };
    json_t  *items = as_list(c->st, c->line, ARG(c, 0, NULL)), *x;
    size_t   i;

    if (items == NULL) return NULL;
    json_array_foreach(items, i, x) {
        if (i) llm_jbuf_add(&b, json_string_value(str), json_string_length(str));
        if (llm_jv_str_ex(x, &b, c->st->tuples)) break;
    }
    json_decref(items);
    return llm_jbuf_take(c->st, c->line, &b);
}

static json_t *
str_splitlines(llm_jcall *c, json_t *str)
{
    const char *s = json_string_value(str);
    size_t      n = json_string_length(str), i = 0, start = 0;
    json_t     *r = json_array();

    while (i < n) {
        if (s[i] == '\n' || s[i] == '\r') {
            if (json_array_size(r) >= LLM_JINJA_MAX_ITEMS) {
                llm_jcheck_items(c->st, c->line, LLM_JINJA_MAX_ITEMS + 1ULL);
                json_decref(r);
                return NULL;
            }
            json_array_append_new(r, mkstr(s + start, i - start));
            if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n') i++;
            start = ++i;
        } else {
            i++;
        }
    }
    if (start < n) json_array_append_new(r, mkstr(s + start, n - start));
    return r;
}

enum { IS_DIGIT, IS_ALPHA, IS_ALNUM, IS_SPACE, IS_UPPER, IS_LOWER };

/* isdigit ... islower: every character of a non-empty string (ASCII classes) */
static json_t *
str_is(llm_jcall *c, json_t *str)
{
    const char *s = json_string_value(str);
    size_t      n = json_string_length(str), i;
    int         ok = n > 0, cased = 0;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char) s[i];
        int d = ch >= '0' && ch <= '9', al = (ch | 32) >= 'a' && (ch | 32) <= 'z';
        if (c->op == IS_DIGIT && !d) ok = 0;
        if (c->op == IS_ALPHA && !al) ok = 0;
        if (c->op == IS_ALNUM && !al && !d) ok = 0;
        if (c->op == IS_SPACE && !space_len(s + i, n - i)) ok = 0;
        if (c->op == IS_UPPER && ch >= 'a' && ch <= 'z') ok = 0;
        if (c->op == IS_LOWER && ch >= 'A' && ch <= 'Z') ok = 0;
        if (al) cased = 1;
    }
    if (c->op == IS_UPPER || c->op == IS_LOWER) ok = ok && cased;
    return json_boolean(ok);
}

/* str.format: "{}", "{0}" and "{name}" placeholders */
static json_t *
str_format(llm_jcall *c, json_t *str)
{
    const char *s = json_string_value(str);
    size_t      n = json_string_length(str), i, ai = 0;
    llm_jbuf    b = { 0 };

    for (i = 0; i < n; i++) {
        if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') { llm_jbuf_add(&b, "{", 1); i++; continue; }
        if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') { llm_jbuf_add(&b, "}", 1); i++; continue; }
        if (s[i] == '{') {
            size_t e = i + 1;
            while (e < n && s[e] != '}') e++;
            if (e > i + 1) {
                char key[64];
                snprintf(key, sizeof(key), "%.*s", (int) (e - i - 1), s + i + 1);
                if (key[0] >= '0' && key[0] <= '9') llm_jv_str(arg(c->args, c->nargs, (size_t) atoi(key), NULL, NULL, 0, NULL), &b);
                else llm_jv_str(KWARG(c, key), &b);
            } else {
                llm_jv_str(ai < c->nargs ? c->args[ai] : NULL, &b);
                ai++;
            }
            i = e;
            continue;
        }
        llm_jbuf_add(&b, s + i, 1);
    }
    return llm_jbuf_take(c->st, c->line, &b);
}

enum { DICT_ITEMS, DICT_KEYS, DICT_VALUES };

static json_t *
dict_view(llm_jcall *c, json_t *obj)
{
    json_t     *r = json_array(), *x;
    const char *k;

    json_object_foreach(obj, k, x) {
        if (c->op == DICT_ITEMS) {
            json_t *pair = json_pack("[sO]", k, x);
            llm_jtuple(c->st, pair);
            json_array_append_new(r, pair);
        }
        else if (c->op == DICT_KEYS) json_array_append_new(r, json_string(k));
        else json_array_append(r, x);
    }
    return r;
}

static json_t *
dict_get(llm_jcall *c, json_t *obj)
{
    json_t *a0 = ARG(c, 0, NULL), *d = ARG(c, 1, NULL), *v;

    if (!json_is_string(a0)) return json_incref(d ? d : json_null());
    v = json_object_get(obj, json_string_value(a0));
    return json_incref(v ? v : (d ? d : json_null()));
}

/* loop.cycle(a, b, ...): the loop object is a dict with index0 */
static json_t *
loop_cycle(llm_jcall *c, json_t *obj)
{
    json_t *i0 = json_object_get(obj, "index0");

    if (!json_is_integer(i0) || c->nargs == 0) return no_attribute(c, obj);
    return json_incref(c->args[(size_t) json_integer_value(i0) % c->nargs]);
}

/* list.index (op FIND_INDEX) / list.count (op FIND_COUNT) */
static json_t *
list_find(llm_jcall *c, json_t *obj)
{
    json_t *a0 = ARG(c, 0, NULL), *x;
    size_t  i;
    long    n = 0;

    json_array_foreach(obj, i, x) {
        if (llm_jv_equal(x, a0)) {
            if (c->op == FIND_INDEX) return json_integer((json_int_t) i);
            n++;
        }
    }
    if (c->op == FIND_INDEX) { llm_jfail(c->st, c->line, "value is not in list"); return NULL; }
    return json_integer(n);
}

static const llm_jmethod_def METHODS[] = {
    /* name          on a str         on a dict   on a list   op */
    { "startswith",  str_starts_ends, NULL,       NULL,       0 },
    { "endswith",    str_starts_ends, NULL,       NULL,       1 },
    { "lstrip",      str_strip,       NULL,       NULL,       1 },
    { "rstrip",      str_strip,       NULL,       NULL,       2 },
    { "strip",       str_strip,       NULL,       NULL,       3 },
    { "split",       str_split,       NULL,       NULL,       0 },
    { "rsplit",      str_split,       NULL,       NULL,       1 },
    { "upper",       str_case,        NULL,       NULL,       1 },
    { "lower",       str_case,        NULL,       NULL,       2 },
    { "title",       str_case,        NULL,       NULL,       3 },
    { "capitalize",  str_case,        NULL,       NULL,       4 },
    { "replace",     str_replace,     NULL,       NULL,       0 },
    { "find",        str_find,        NULL,       NULL,       FIND_FIRST },
    { "rfind",       str_find,        NULL,       NULL,       FIND_LAST },
    { "count",       str_find,        NULL,       list_find,  FIND_COUNT },
    { "index",       str_find,        NULL,       list_find,  FIND_INDEX },
    { "join",        str_join,        NULL,       NULL,       0 },
    { "splitlines",  str_splitlines,  NULL,       NULL,       0 },
    { "isdigit",     str_is,          NULL,       NULL,       IS_DIGIT },
    { "isalpha",     str_is,          NULL,       NULL,       IS_ALPHA },
    { "isalnum",     str_is,          NULL,       NULL,       IS_ALNUM },
    { "isspace",     str_is,          NULL,       NULL,       IS_SPACE },
    { "isupper",     str_is,          NULL,       NULL,       IS_UPPER },
    { "islower",     str_is,          NULL,       NULL,       IS_LOWER },
    { "format",      str_format,      NULL,       NULL,       0 },
    { "items",       NULL,            dict_view,  NULL,       DICT_ITEMS },
    { "keys",        NULL,            dict_view,  NULL,       DICT_KEYS },
    { "values",      NULL,            dict_view,  NULL,       DICT_VALUES },
    { "get",         NULL,            dict_get,   NULL,       0 },
    { "cycle",       NULL,            loop_cycle, NULL,       0 },
    { NULL, NULL, NULL, NULL, 0 }
};

/* ---- global functions: `name(args)` ---- */

static json_t *
global_raise_exception(llm_jcall *c)
{
    llm_jstate *st = c->st;
    json_t     *m = c->nargs ? c->args[0] : NULL;

    if (!st->failed) {
        st->failed = LLM_JINJA_RAISED;
        if (st->err && st->errlen) {
            llm_jbuf b = { 0 };
            llm_jv_str(m, &b);
            snprintf(st->err, st->errlen, "%s", b.p ? b.p : "");
            free(b.p);
        }
    }
    return NULL;
}

static json_t *
global_strftime_now(llm_jcall *c)
{
    char      buf[256];
    time_t    now = time(NULL);
    struct tm tmv;
    size_t    k;

    if (c->nargs < 1 || !json_is_string(c->args[0])) {
        llm_jfail(c->st, c->line, "strftime_now() needs a format string");
        return NULL;
    }
    localtime_r(&now, &tmv);
    k = strftime(buf, sizeof(buf), json_string_value(c->args[0]), &tmv);
    return mkstr(buf, k);
}

#define LLM_JINJA_MAX_RANGE  100000   /* items of one range() */

static json_t *
global_range(llm_jcall *c)
{
    long long a, b, s, v;
    double    da = 0, db, ds = 1;
    json_t   *r;

    if (c->nargs == 1) db = llm_jv_num(c->args[0]);
    else if (c->nargs >= 2) {
        da = llm_jv_num(c->args[0]);
        db = llm_jv_num(c->args[1]);
        if (c->nargs > 2) ds = llm_jv_num(c->args[2]);
    } else {
        llm_jfail(c->st, c->line, "range() needs arguments");
        return NULL;
    }
    /* checked as doubles: converting or subtracting huge values would overflow */
    if (!(fabs(da) < 1e15 && fabs(db) < 1e15 && fabs(ds) < 1e15) || (long long) ds == 0
        || (db - da) / (double) (long long) ds > LLM_JINJA_MAX_RANGE)
    {
        llm_jfail(c->st, c->line, "range() too large or zero step");
        return NULL;
    }
    a = (long long) da; b = (long long) db; s = (long long) ds;
    r = json_array();
    for (v = a; s > 0 ? v < b : v > b; v += s) json_array_append_new(r, json_integer(v));
    return r;
}

/* namespace(...) (op 1: an object the template may assign into) and dict(...) */
static json_t *
global_mapping(llm_jcall *c)
{
    json_t *o = c->op ? llm_jnamespace_new(c->st) : json_object();
    size_t  i;

    if (o == NULL) return NULL;
    if (c->nargs && json_is_object(c->args[0])) json_object_update(o, c->args[0]);
    for (i = 0; i < c->nkw; i++) json_object_set(o, c->kwn[i], c->kwv[i] ? c->kwv[i] : json_null());
    return o;
}

static const llm_jglobal_def GLOBALS[] = {
    { "raise_exception", global_raise_exception, 0 },
    { "strftime_now",    global_strftime_now,    0 },
    { "range",           global_range,           0 },
    { "namespace",       global_mapping,         1 },
    { "dict",            global_mapping,         0 },
    { NULL, NULL, 0 }
};

/* ---- filters: `x | name(args)` ---- */

static json_t *
filter_default(llm_jcall *c, json_t *v)
{
    json_t *d = ARG(c, 0, "default_value"), *boolean = ARG(c, 1, "boolean");

    if (v == NULL || (llm_jv_truthy(boolean) && !llm_jv_truthy(v))) return d ? json_incref(d) : json_string("");
    return json_incref(v);
}

static json_t *
filter_length(llm_jcall *c, json_t *v)
{
    if (v == NULL) return json_integer(0);
    if (json_is_string(v)) return json_integer(llm_jv_strlen(v));
    if (json_is_array(v)) return json_integer((json_int_t) json_array_size(v));
    if (json_is_object(v)) return json_integer((json_int_t) json_object_size(v));
    llm_jfail(c->st, c->line, "object of type '%s' has no len()", llm_jv_type(v));
    return NULL;
}

static json_t *
filter_tojson(llm_jcall *c, json_t *v)
{
    json_t     *ind = ARG(c, 0, "indent"), *seps = KWARG(c, "separators"), *sk = KWARG(c, "sort_keys");
    int         indent;
    const char *isep = ", ", *ksep = ": ";
    llm_jbuf    b = { 0 };

    if (ind && json_is_integer(ind)
        && llm_jcheck_len(c->st, c->line, (unsigned long long) (json_integer_value(ind) < 0 ? 0 : json_integer_value(ind))))
    {
        return NULL;
    }
    indent = ind && json_is_integer(ind) ? (int) json_integer_value(ind) : -1;
    if (indent >= 0) isep = ",";
    if (json_is_array(seps) && json_array_size(seps) == 2) {
        isep = json_string_value(json_array_get(seps, 0));
        ksep = json_string_value(json_array_get(seps, 1));
        if (isep == NULL || ksep == NULL) { llm_jfail(c->st, c->line, "tojson separators must be strings"); return NULL; }
    }
    if (llm_jv_tojson(v, indent, isep, ksep, (llm_jv_truthy(sk) ? LLM_JV_SORT_KEYS : 0)
                      | (llm_jv_truthy(KWARG(c, "ensure_ascii")) ? LLM_JV_ASCII : 0), 0, &b)
        && !b.fail)
    {
        free(b.p);
        llm_jfail(c->st, c->line, "tojson failed");
        return NULL;
    }
    return llm_jbuf_take(c->st, c->line, &b);
}

static json_t *
filter_string(llm_jcall *c, json_t *v)
{
    if (v == NULL) return json_string("");
    return json_is_string(v) ? json_incref(v) : to_str(c->st, v);
}

static json_t *
filter_safe(llm_jcall *c, json_t *v)
{
    (void) c;
    return json_incref(v);
}

static json_t *
filter_items(llm_jcall *c, json_t *v)
{
    llm_jcall items = { c->st, c->line, "items", DICT_ITEMS, NULL, 0, NULL, NULL, 0 };

    if (v == NULL) return json_array();
    if (!json_is_object(v)) { llm_jfail(c->st, c->line, "items filter needs a mapping, got %s", llm_jv_type(v)); return NULL; }
    return dict_view(&items, v);
}

static json_t *
filter_list(llm_jcall *c, json_t *v)
{
    return as_list(c->st, c->line, v);
}

/* first (op 0) / last (op 1) */
static json_t *
filter_first_last(llm_jcall *c, json_t *v)
{
    json_t *l = as_list(c->st, c->line, v), *r;
    size_t  n;

    if (l == NULL) return NULL;
    n = json_array_size(l);
    r = n ? json_incref(json_array_get(l, c->op ? n - 1 : 0)) : NULL;
    json_decref(l);
    return r;
}

static json_t *
filter_join(llm_jcall *c, json_t *v)
{
    json_t  *sep = ARG(c, 0, "d"), *attr = KWARG(c, "attribute"), *l = as_list(c->st, c->line, v), *x;
    llm_jbuf b = { 0 };
    size_t   i;

    if (l == NULL) return NULL;
    json_array_foreach(l, i, x) {
        if (i && sep) llm_jv_str(sep, &b);
        if (attr && json_is_string(attr)) {
            json_t *y = attr_path(c->st, c->line, x, json_string_value(attr));
            llm_jv_str_ex(y, &b, c->st->tuples);
            json_decref(y);
        } else {
            llm_jv_str_ex(x, &b, c->st->tuples);
        }
        if (b.fail) break;
    }
    json_decref(l);
    return llm_jbuf_take(c->st, c->line, &b);
}

/* map(attribute=...) or map('filter', args...) */
static json_t *
filter_map(llm_jcall *c, json_t *v)
{
    json_t                *attr = KWARG(c, "attribute"), *l = as_list(c->st, c->line, v), *r, *x;
    const llm_jfilter_def *f = c->nargs >= 1 && json_is_string(c->args[0]) ? llm_jfilter_find(json_string_value(c->args[0])) : NULL;
    size_t                 i;

    if (l == NULL) return NULL;
    r = json_array();
    json_array_foreach(l, i, x) {
        json_t *y;
        if (attr && json_is_string(attr)) {
            y = attr_path(c->st, c->line, x, json_string_value(attr));
            if (y == NULL) { json_t *d = KWARG(c, "default"); y = d ? json_incref(d) : NULL; }
        } else if (f) {
            y = llm_jfilter_apply(f, c->st, c->line, x, c->args + 1, c->nargs - 1, NULL, NULL, 0);
        } else {
            llm_jfail(c->st, c->line, "map needs attribute= or a filter name");
            y = NULL;
        }
        if (c->st->failed) { json_decref(r); json_decref(l); return NULL; }
        json_array_append_new(r, y ? y : json_null());
    }
    json_decref(l);
    return r;
}

enum { SELECT = 1, BY_ATTRIBUTE = 2 };

/* select / reject (by a test, default truthiness), selectattr / rejectattr (of an attribute) */
static json_t *
filter_select(llm_jcall *c, json_t *v)
{
    int                  by_attr = (c->op & BY_ATTRIBUTE) != 0, want = (c->op & SELECT) != 0;
    size_t               first = by_attr ? 1 : 0, i;
    const char          *tname = first < c->nargs && json_is_string(c->args[first]) ? json_string_value(c->args[first]) : NULL;
    const llm_jtest_def *test = tname ? llm_jtest_find(tname) : NULL;
    json_t              *l = as_list(c->st, c->line, v), *r, *x;

    if (l == NULL) return NULL;
    if (by_attr && (c->nargs < 1 || !json_is_string(c->args[0]))) {
        json_decref(l);
        llm_jfail(c->st, c->line, "%s needs an attribute name", c->name);
        return NULL;
    }
    r = json_array();
    json_array_foreach(l, i, x) {
        json_t *y = by_attr ? attr_path(c->st, c->line, x, json_string_value(c->args[0])) : json_incref(x);
        int     t;
        if (first >= c->nargs) t = llm_jv_truthy(y);
        else if (tname == NULL) t = llm_jfail(c->st, c->line, "test name must be a string");
        else if (test == NULL) t = llm_jfail(c->st, c->line, "unknown test '%s'", tname);
        else t = llm_jtest_apply(test, c->st, c->line, y, c->args + first + 1, c->nargs - first - 1);
        json_decref(y);
        if (c->st->failed) { json_decref(r); json_decref(l); return NULL; }
        if (t == want) json_array_append(r, x);
    }
    json_decref(l);
    return r;
}

static json_t *
filter_attr(llm_jcall *c, json_t *v)
{
    if (c->nargs < 1 || !json_is_string(c->args[0])) { llm_jfail(c->st, c->line, "attr needs a name"); return NULL; }
    return llm_jgetattr(c->st, c->line, v, json_string_value(c->args[0]));
}

static json_t *
filter_unique(llm_jcall *c, json_t *v)
{
    json_t *l = as_list(c->st, c->line, v), *r, *x;
    size_t  i, j;

    if (l == NULL) return NULL;
    r = json_array();
    json_array_foreach(l, i, x) {
        int seen = 0;
        for (j = 0; j < json_array_size(r); j++) if (llm_jv_equal(json_array_get(r, j), x)) seen = 1;
        if (!seen) json_array_append(r, x);
    }
    json_decref(l);
    return r;
}

static json_t *
filter_sort(llm_jcall *c, json_t *v)
{
    json_t *rev = ARG(c, 0, "reverse"), *cs = ARG(c, 1, "case_sensitive"), *attr = KWARG(c, "attribute");
    json_t *l = as_list(c->st, c->line, v), *r;

    if (l == NULL) return NULL;
    r = sorted(c->st, c->line, l, attr && json_is_string(attr) ? json_string_value(attr) : NULL,
               llm_jv_truthy(rev), llm_jv_truthy(cs), -1);
    json_decref(l);
    return r;
}

static json_t *
filter_dictsort(llm_jcall *c, json_t *v)
{
    json_t   *cs = ARG(c, 0, "case_sensitive"), *rev = ARG(c, 2, "reverse"), *by = KWARG(c, "by"), *l, *r;
    llm_jcall items = { c->st, c->line, "items", DICT_ITEMS, NULL, 0, NULL, NULL, 0 };

    if (!json_is_object(v)) { llm_jfail(c->st, c->line, "dictsort needs a mapping"); return NULL; }
    l = dict_view(&items, v);
    r = sorted(c->st, c->line, l, NULL, llm_jv_truthy(rev), llm_jv_truthy(cs),
               by && json_is_string(by) && !strcmp(json_string_value(by), "value") ? 1 : 0);
    json_decref(l);
    return r;
}

static json_t *
filter_reverse(llm_jcall *c, json_t *v)
{
    json_t *l = as_list(c->st, c->line, v), *r;
    size_t  i;

    if (l == NULL) return NULL;
    if (json_is_string(v)) {
        llm_jbuf b = { 0 };
        for (i = json_array_size(l); i-- > 0; ) llm_jv_str(json_array_get(l, i), &b);
        json_decref(l);
        return llm_jbuf_take(c->st, c->line, &b);
    }
    r = json_array();
    for (i = json_array_size(l); i-- > 0; ) json_array_append(r, json_array_get(l, i));
    json_decref(l);
    return r;
}

enum { AGG_SUM, AGG_MIN, AGG_MAX };

static json_t *
filter_aggregate(llm_jcall *c, json_t *v)
{
    json_t *attr = KWARG(c, "attribute"), *l = as_list(c->st, c->line, v), *best = NULL, *x;
    double  total = 0;
    int     real = 0;
    size_t  i;

    if (l == NULL) return NULL;
    if (c->op == AGG_SUM) {
        json_t *start = KWARG(c, "start");
        if (start) { total = llm_jv_num(start); real = json_is_real(start); }
    }
    json_array_foreach(l, i, x) {
        json_t *y = attr && json_is_string(attr) ? attr_path(c->st, c->line, x, json_string_value(attr)) : json_incref(x);
        if (c->op == AGG_SUM) {
            if (!llm_jv_is_number(y)) { json_decref(y); json_decref(l); llm_jfail(c->st, c->line, "sum of non-numbers"); return NULL; }
            total += llm_jv_num(y);
            real |= json_is_real(y);
            json_decref(y);
        } else {
            int cmp = 0;
            if (best == NULL || (llm_jv_compare(y, best, &cmp) == 0 && (c->op == AGG_MIN ? cmp < 0 : cmp > 0))) {
                json_decref(best);
                best = y;
            } else {
                json_decref(y);
            }
        }
    }
    json_decref(l);
    if (c->op == AGG_SUM) return real ? json_real(total) : json_integer((json_int_t) total);
    return best;
}

static json_t *
filter_int(llm_jcall *c, json_t *v)
{
    json_t *d = ARG(c, 0, "default");

    if (json_is_string(v)) {
        char     *end;
        long long k = strtoll(json_string_value(v), &end, 10);
        if (end != json_string_value(v)) return json_integer(k);
        return d ? json_incref(d) : json_integer(0);
    }
    if (llm_jv_is_number(v)) return json_integer((json_int_t) llm_jv_num(v));
    return d ? json_incref(d) : json_integer(0);
}

static json_t *
filter_float(llm_jcall *c, json_t *v)
{
    (void) c;
    if (json_is_string(v)) return json_real(strtod(json_string_value(v), NULL));
    return json_real(llm_jv_is_number(v) ? llm_jv_num(v) : 0.0);
}

static json_t *
filter_abs(llm_jcall *c, json_t *v)
{
    if (json_is_integer(v)) return json_integer(json_integer_value(v) < 0 ? -json_integer_value(v) : json_integer_value(v));
    if (json_is_real(v)) return json_real(fabs(json_real_value(v)));
    llm_jfail(c->st, c->line, "bad operand type for abs(): '%s'", llm_jv_type(v));
    return NULL;
}

static json_t *
filter_round(llm_jcall *c, json_t *v)
{
    json_t     *pr = ARG(c, 0, "precision"), *m = ARG(c, 1, "method");
    double      p = pow(10, pr ? llm_jv_num(pr) : 0), x = llm_jv_num(v) * p;
    const char *meth = m && json_is_string(m) ? json_string_value(m) : "common";

    x = !strcmp(meth, "floor") ? floor(x) : !strcmp(meth, "ceil") ? ceil(x) : rint(x);   /* Python round(): ties to even */
    return json_real(x / p);
}

/* The filters below read their input as text (LLM_JFILTER_TEXT): v is a string. */

static json_t *
filter_trim(llm_jcall *c, json_t *v)
{
    return strip(v, ARG(c, 0, "chars"), 3);
}

/* upper (op 1), lower (2), title (3); capitalize (4) lowers the rest first */
static json_t *
filter_case(llm_jcall *c, json_t *v)
{
    json_t *low, *r;

    if (c->op != 4) return case_map(v, c->op);
    low = case_map(v, 2);
    r = case_map(low, 4);
    json_decref(low);
    return r;
}

static json_t *
filter_replace(llm_jcall *c, json_t *v)
{
    json_t *a = ARG(c, 0, "old"), *b = ARG(c, 1, "new"), *n = ARG(c, 2, "count");

    if (!json_is_string(a) || !json_is_string(b)) { llm_jfail(c->st, c->line, "replace needs two strings"); return NULL; }
    return replace(c->st, c->line, v, a, b, n && json_is_integer(n) ? (long) json_integer_value(n) : -1);
}

static json_t *
filter_escape(llm_jcall *c, json_t *v)
{
    const char *s = json_string_value(v);
    size_t      n = json_string_length(v), i;
    llm_jbuf    b = { 0 };

    for (i = 0; i < n; i++) {
        const char *esc = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;"
                        : s[i] == '"' ? "&#34;" : s[i] == '\'' ? "&#39;" : NULL;
        if (esc) llm_jbuf_add(&b, esc, strlen(esc));
        else llm_jbuf_add(&b, s + i, 1);
    }
    return llm_jbuf_take(c->st, c->line, &b);
}

static json_t *
filter_indent(llm_jcall *c, json_t *v)
{
    json_t     *w = ARG(c, 0, "width"), *first = ARG(c, 1, "first"), *blank = ARG(c, 2, "blank");
    llm_jbuf    pad = { 0 }, b = { 0 };
    const char *s = json_string_value(v);
    size_t      n = json_string_length(v), start = 0, i;
    int         lineno = 0;
    unsigned long long lines = 1, padded, width;
    json_t     *r;

    for (i = 0; i < n; i++) lines += s[i] == '\n';
    /* the result's size is known before it is built */
    width = w && json_is_string(w) ? json_string_length(w)
          : w ? (llm_jv_num(w) > 0 ? (unsigned long long) fmin(llm_jv_num(w), 1e18) : 0) : 4;
    padded = width > LLM_JINJA_MAX_OUTPUT ? LLM_JINJA_MAX_OUTPUT + 1ULL : width * lines;
    if (llm_jcheck_len(c->st, c->line, padded + n)) return NULL;
    if (w && json_is_string(w)) llm_jbuf_add(&pad, json_string_value(w), json_string_length(w));
    else { unsigned long long k; for (k = 0; k < width; k++) llm_jbuf_add(&pad, " ", 1); }
    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == '\n') {
            int empty = i == start;
            if ((lineno > 0 || llm_jv_truthy(first)) && (!empty || llm_jv_truthy(blank))) llm_jbuf_add(&b, pad.p ? pad.p : "", pad.n);
            llm_jbuf_add(&b, s + start, i - start);
            if (i < n) llm_jbuf_add(&b, "\n", 1);
            start = i + 1;
            lineno++;
        }
    }
    r = llm_jbuf_take(c->st, c->line, &b);
    free(pad.p);
    return r;
}

static json_t *
filter_wordcount(llm_jcall *c, json_t *v)
{
    json_t *l = split(c->st, c->line, v, NULL, -1), *r;

    r = json_integer((json_int_t) json_array_size(l));
    json_decref(l);
    return r;
}

static json_t *
filter_center(llm_jcall *c, json_t *v)
{
    json_t *w = ARG(c, 0, "width"), *r = NULL;
    double  want = w ? llm_jv_num(w) : 80;
    long    len = llm_jv_strlen(v), width, left;
    size_t  bytes = json_string_length(v);
    char   *o;

    /* Python pads to width characters; checked before anything is built */
    if (want > (double) len && llm_jcheck_len(c->st, c->line, (unsigned long long) fmin(want - (double) len, 1e18) + bytes)) {
        return NULL;
    }
    width = want > (double) len ? (long) want : len;
    left = (width - len) / 2 + ((width - len) & width & 1);   /* as CPython's str.center */
    o = malloc(bytes + (size_t) (width - len) + 1);
    if (o == NULL) {
        llm_jfail(c->st, c->line, "out of memory");
        return NULL;
    }
    memset(o, ' ', (size_t) left);
    memcpy(o + left, json_string_value(v), bytes);
    memset(o + left + bytes, ' ', (size_t) (width - len - left));
    r = mkstr(o, bytes + (size_t) (width - len));
    free(o);
    return r;
}

static json_t *
filter_format(llm_jcall *c, json_t *v)
{
    return llm_jpyformat(c->st, c->line, v, c->args, c->nargs);
}

#define TEXT  LLM_JFILTER_TEXT

static const llm_jfilter_def FILTERS[] = {
    { "abs", filter_abs, 0, 0 },                  { "attr", filter_attr, 0, 0 },
    { "capitalize", filter_case, 4, TEXT },       { "center", filter_center, 0, TEXT },
    { "count", filter_length, 0, 0 },             { "d", filter_default, 0, 0 },
    { "default", filter_default, 0, 0 },          { "dictsort", filter_dictsort, 0, 0 },
    { "e", filter_escape, 0, TEXT },              { "escape", filter_escape, 0, TEXT },
    { "first", filter_first_last, 0, 0 },         { "float", filter_float, 0, 0 },
    { "format", filter_format, 0, TEXT },         { "indent", filter_indent, 0, TEXT },
    { "int", filter_int, 0, 0 },                  { "items", filter_items, 0, 0 },
    { "join", filter_join, 0, 0 },                { "last", filter_first_last, 1, 0 },
    { "length", filter_length, 0, 0 },            { "list", filter_list, 0, 0 },
    { "lower", filter_case, 2, TEXT },            { "map", filter_map, 0, 0 },
    { "max", filter_aggregate, AGG_MAX, 0 },      { "min", filter_aggregate, AGG_MIN, 0 },
    { "reject", filter_select, 0, 0 },            { "rejectattr", filter_select, BY_ATTRIBUTE, 0 },
    { "replace", filter_replace, 0, TEXT },       { "reverse", filter_reverse, 0, 0 },
    { "round", filter_round, 0, 0 },              { "safe", filter_safe, 0, 0 },
    { "select", filter_select, SELECT, 0 },       { "selectattr", filter_select, SELECT | BY_ATTRIBUTE, 0 },
    { "sort", filter_sort, 0, 0 },                { "string", filter_string, 0, 0 },
    { "sum", filter_aggregate, AGG_SUM, 0 },      { "title", filter_case, 3, TEXT },
    { "tojson", filter_tojson, 0, 0 },            { "trim", filter_trim, 0, TEXT },
    { "unique", filter_unique, 0, 0 },            { "upper", filter_case, 1, TEXT },
    { "wordcount", filter_wordcount, 0, TEXT },
    { NULL, NULL, 0, 0 }
};

#undef TEXT

/* ---- lookup (when a template is parsed) and calls (when it renders) ---- */

const llm_jfilter_def *
llm_jfilter_find(const char *name)
{
    const llm_jfilter_def *d;
    for (d = FILTERS; d->name; d++) if (strcmp(d->name, name) == 0) return d;
    return NULL;
}

const llm_jtest_def *
llm_jtest_find(const char *name)
{
    const llm_jtest_def *d;
    for (d = TESTS; d->name; d++) if (strcmp(d->name, name) == 0) return d;
    return NULL;
}

const llm_jmethod_def *
llm_jmethod_find(const char *name)
{
    const llm_jmethod_def *d;
    for (d = METHODS; d->name; d++) if (strcmp(d->name, name) == 0) return d;
    return NULL;
}

const llm_jglobal_def *
llm_jglobal_find(const char *name)
{
    const llm_jglobal_def *d;
    for (d = GLOBALS; d->name; d++) if (strcmp(d->name, name) == 0) return d;
    return NULL;
}

json_t *
llm_jfilter_apply(const llm_jfilter_def *f, llm_jstate *st, int line, json_t *v, json_t **args, size_t nargs,
                  char **kwn, json_t **kwv, size_t nkw)
{
    llm_jcall c = { st, line, f->name, f->op, args, nargs, kwn, kwv, nkw };
    json_t   *text, *r;

    if (!(f->flags & LLM_JFILTER_TEXT)) return f->fn(&c, v);
    if (v == NULL) text = json_string("");
    else if (!json_is_string(v)) text = to_str(st, v);
    else text = json_incref(v);
    if (text == NULL) return NULL;
    r = f->fn(&c, text);
    json_decref(text);
    return r;
}

int
llm_jtest_apply(const llm_jtest_def *t, llm_jstate *st, int line, json_t *v, json_t **args, size_t nargs)
{
    llm_jcall c = { st, line, t->name, t->op, args, nargs, NULL, NULL, 0 };
    return t->fn(&c, v);
}

json_t *
llm_jmethod_apply(const llm_jmethod_def *m, llm_jstate *st, int line, json_t *obj, json_t **args, size_t nargs,
                  char **kwn, json_t **kwv, size_t nkw)
{
    llm_jcall c = { st, line, m->name, m->op, args, nargs, kwn, kwv, nkw };
    json_t *(*fn)(llm_jcall *, json_t *) = json_is_string(obj) ? m->on_str
                                         : json_is_object(obj) ? m->on_dict
                                         : json_is_array(obj) ? m->on_list : NULL;

    return fn ? fn(&c, obj) : no_attribute(&c, obj);
}

json_t *
llm_jglobal_apply(const llm_jglobal_def *g, llm_jstate *st, int line, json_t **args, size_t nargs,
                  char **kwn, json_t **kwv, size_t nkw)
{
    llm_jcall c = { st, line, g->name, g->op, args, nargs, kwn, kwv, nkw };
    return g->fn(&c);
}
