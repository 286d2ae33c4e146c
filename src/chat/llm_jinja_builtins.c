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


static const char *const FILTERS[] = {
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first",
    "float", "format", "indent", "int", "items", "join", "last", "length", "list", "lower",
    "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round", "safe",
    "select", "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique",
    "upper", "wordcount", "center", NULL
};
static const char *const TESTS[] = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "mapping",
    "iterable", "sequence", "boolean", "true", "false", "callable", "eq", "equalto", "ne",
    "lt", "gt", "le", "ge", "lessthan", "greaterthan", "in", "odd", "even", "divisibleby",
    "lower", "upper", "sameas", NULL
};
static const char *const METHODS[] = {
    "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "upper", "lower",
    "title", "capitalize", "replace", "find", "rfind", "count", "join", "splitlines",
    "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "items", "keys",
    "values", "get", "index", "format", "cycle", NULL
};
static const char *const GLOBALS[] = {
    "range", "namespace", "dict", "raise_exception", "strftime_now", NULL
};

static int
in_list(const char *const *l, const char *s)
{
    for (; *l; l++) if (strcmp(*l, s) == 0) return 1;
    return 0;
}

int llm_jinja_known_filter(const char *n) { return in_list(FILTERS, n); }
int llm_jinja_known_test(const char *n) { return in_list(TESTS, n) || !strcmp(n, "==") ; }
int llm_jinja_known_method(const char *n) { return in_list(METHODS, n); }
int llm_jinja_known_global(const char *n) { return in_list(GLOBALS, n); }

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

/* ---- tests ---- */

int
llm_jtest(llm_jstate *st, int line, const char *name, json_t *v, json_t **args, size_t nargs)
{
    json_t *a = nargs ? args[0] : NULL;
    int     r;

    if (!strcmp(name, "defined")) return v != NULL;
    if (!strcmp(name, "undefined")) return v == NULL;
    if (!strcmp(name, "none")) return v != NULL && json_is_null(v);
    if (!strcmp(name, "string")) return v != NULL && json_is_string(v);
    if (!strcmp(name, "number")) return v != NULL && (json_is_integer(v) || json_is_real(v) || json_is_boolean(v));
    if (!strcmp(name, "integer")) return v != NULL && (json_is_integer(v) || json_is_boolean(v));
    if (!strcmp(name, "float")) return v != NULL && json_is_real(v);
    if (!strcmp(name, "mapping")) return v != NULL && json_is_object(v);
    if (!strcmp(name, "iterable")) return v == NULL || json_is_array(v) || json_is_object(v) || json_is_string(v);
    if (!strcmp(name, "sequence")) return v != NULL && (json_is_array(v) || json_is_object(v) || json_is_string(v));
    if (!strcmp(name, "boolean")) return v != NULL && json_is_boolean(v);
    if (!strcmp(name, "true")) return v != NULL && json_is_true(v);
    if (!strcmp(name, "false")) return v != NULL && json_is_false(v);
    if (!strcmp(name, "callable")) return 0;
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) return llm_jv_equal(v, a);
    if (!strcmp(name, "ne")) return !llm_jv_equal(v, a);
    if (!strcmp(name, "sameas")) return (v == NULL && a == NULL) || (v && a && json_typeof(v) == json_typeof(a) && llm_jv_equal(v, a));
    if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "gt") || !strcmp(name, "greaterthan")
        || !strcmp(name, "le") || !strcmp(name, "ge"))
    {
        if (llm_jv_compare(v, a, &r)) return llm_jfail(st, line, "cannot compare %s and %s", llm_jv_type(v), llm_jv_type(a));
        if (name[0] == 'l') return name[1] == 'e' ? r <= 0 : r < 0;
        return name[1] == 'e' ? r >= 0 : r > 0;
    }
    if (!strcmp(name, "in")) {
        size_t i;
        json_t *x;
        if (json_is_array(a)) { json_array_foreach(a, i, x) if (llm_jv_equal(v, x)) return 1; return 0; }
        if (json_is_object(a)) return json_is_string(v) && json_object_get(a, json_string_value(v)) != NULL;
        if (json_is_string(a) && json_is_string(v)) return strstr(json_string_value(a), json_string_value(v)) != NULL;
        return 0;
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
        long long x = (long long) llm_jv_num(v), d = !strcmp(name, "divisibleby") ? (long long) llm_jv_num(a) : 2;
        if (!json_is_integer(v) || d == 0) return llm_jfail(st, line, "test '%s' needs integers", name);
        if (!strcmp(name, "odd")) return x % 2 != 0;
        return x % d == 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        int has = 0;
        for (; *s; s++) {
            if (*s >= 'a' && *s <= 'z') { if (name[0] == 'u') return 0; has = 1; }
            if (*s >= 'A' && *s <= 'Z') { if (name[0] == 'l') return 0; has = 1; }
        }
        return has;
    }
    return llm_jfail(st, line, "unknown test '%s'", name);
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

/* ---- methods ---- */

json_t *
llm_jmethod(llm_jstate *st, int line, json_t *obj, const char *name, json_t **args, size_t nargs,
            char **kwn, json_t **kwv, size_t nkw)
{
    json_t *a0 = arg(args, nargs, 0, kwn, kwv, nkw, NULL);

    if (json_is_string(obj)) {
        const char *s = json_string_value(obj);
        size_t      n = json_string_length(obj);
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
            if (a0 == NULL || (!json_is_string(a0) && !json_is_array(a0))) goto badarg;
            return json_boolean(starts_ends(obj, a0, name[0] == 'e'));
        }
        if (!strcmp(name, "strip")) return strip(obj, a0, 3);
        if (!strcmp(name, "lstrip")) return strip(obj, a0, 1);
        if (!strcmp(name, "rstrip")) return strip(obj, a0, 2);
        if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
            json_t *sep = arg(args, nargs, 0, kwn, kwv, nkw, "sep");
            json_t *mx = arg(args, nargs, 1, kwn, kwv, nkw, "maxsplit");
            json_t *r;
            if (sep && !json_is_null(sep) && (!json_is_string(sep) || json_string_length(sep) == 0)) goto badarg;
            if (!strcmp(name, "rsplit") && mx && json_integer_value(mx) >= 0) {
                llm_jfail(st, line, "rsplit with maxsplit is not supported");
                return NULL;
            }
            r = split(st, line, obj, sep, mx && json_is_integer(mx) ? (long) json_integer_value(mx) : -1);
            return r;
        }
        if (!strcmp(name, "upper")) return case_map(obj, 1);
        if (!strcmp(name, "lower")) return case_map(obj, 2);
        if (!strcmp(name, "title")) return case_map(obj, 3);
        if (!strcmp(name, "capitalize")) return case_map(obj, 4);
        if (!strcmp(name, "replace")) {
            json_t *b = arg(args, nargs, 1, kwn, kwv, nkw, NULL), *c = arg(args, nargs, 2, kwn, kwv, nkw, NULL);
            if (!json_is_string(a0) || !json_is_string(b)) goto badarg;
            return replace(st, line, obj, a0, b, c && json_is_integer(c) ? (long) json_integer_value(c) : -1);
        }
        if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "count") || !strcmp(name, "index")) {
            const char *p;
            size_t      m, i;
            long        cnt = 0, pos = -1, chars = 0;
            if (!json_is_string(a0)) goto badarg;
            p = json_string_value(a0);
            m = json_string_length(a0);
            for (i = 0; i + m <= n; ) {
                if (memcmp(s + i, p, m) == 0) {
                    if (pos < 0 || name[0] == 'r') pos = chars;
                    cnt++;
                    if (name[0] == 'f' || name[0] == 'i') break;
                    if (m) { size_t k; for (k = 0; k < m; k += char_len(s + i + k, m - k)) chars++; i += m; continue; }
                }
                if (i >= n) break;
                i += char_len(s + i, n - i);
                chars++;
            }
            if (!strcmp(name, "count")) return json_integer(cnt);
            if (!strcmp(name, "index") && pos < 0) { llm_jfail(st, line, "substring not found"); return NULL; }
            return json_integer(pos);
        }
        if (!strcmp(name, "join")) {
            llm_jbuf b = { 0 };
            json_t  *items = as_list(st, line, a0), *x, *r;
            size_t   i;
            if (items == NULL) return NULL;
            json_array_foreach(items, i, x) {
                if (i) llm_jbuf_add(&b, s, n);
                if (llm_jv_str_ex(x, &b, st->tuples)) break;
            }
            json_decref(items);
            r = llm_jbuf_take(st, line, &b);
            return r;
        }
        if (!strcmp(name, "splitlines")) {
            json_t *r = json_array();
            size_t  i = 0, start = 0;
            while (i < n) {
                if (s[i] == '\n' || s[i] == '\r') {
                    if (json_array_size(r) >= LLM_JINJA_MAX_ITEMS) {
                        llm_jcheck_items(st, line, LLM_JINJA_MAX_ITEMS + 1ULL);
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
        if (!strncmp(name, "is", 2)) {
            size_t i;
            int    okc = n > 0, cased = 0;
            for (i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                int d = c >= '0' && c <= '9', al = (c | 32) >= 'a' && (c | 32) <= 'z';
                if (!strcmp(name, "isdigit") && !d) okc = 0;
                if (!strcmp(name, "isalpha") && !al) okc = 0;
                if (!strcmp(name, "isalnum") && !al && !d) okc = 0;
                if (!strcmp(name, "isspace") && !space_len(s + i, n - i)) okc = 0;
                if (!strcmp(name, "isupper") && c >= 'a' && c <= 'z') okc = 0;
                if (!strcmp(name, "islower") && c >= 'A' && c <= 'Z') okc = 0;
                if (al) cased = 1;
            }
            if (!strcmp(name, "isupper") || !strcmp(name, "islower")) okc = okc && cased;
            return json_boolean(okc);
        }
        if (!strcmp(name, "format")) {
            /* "{}"/"{0}" placeholders */
            llm_jbuf b = { 0 };
            size_t   i, ai = 0;
            for (i = 0; i < n; i++) {
                if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') { llm_jbuf_add(&b, "{", 1); i++; continue; }
                if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') { llm_jbuf_add(&b, "}", 1); i++; continue; }
                if (s[i] == '{') {
                    size_t e = i + 1;
                    while (e < n && s[e] != '}') e++;
                    if (e > i + 1) {
                        char key[64];
                        snprintf(key, sizeof(key), "%.*s", (int) (e - i - 1), s + i + 1);
                        if (key[0] >= '0' && key[0] <= '9') llm_jv_str(arg(args, nargs, (size_t) atoi(key), NULL, NULL, 0, NULL), &b);
                        else llm_jv_str(kwarg(kwn, kwv, nkw, key), &b);
                    } else {
                        llm_jv_str(ai < nargs ? args[ai] : NULL, &b);
                        ai++;
                    }
                    i = e;
                    continue;
                }
                llm_jbuf_add(&b, s + i, 1);
            }
            return llm_jbuf_take(st, line, &b);
        }
    } else if (json_is_object(obj)) {
        if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
            json_t     *r = json_array(), *x;
            const char *k;
            json_object_foreach(obj, k, x) {
                if (name[0] == 'i') {
                    json_t *pair = json_pack("[sO]", k, x);
                    llm_jtuple(st, pair);
                    json_array_append_new(r, pair);
                }
                else if (name[0] == 'k') json_array_append_new(r, json_string(k));
                else json_array_append(r, x);
            }
            return r;
        }
        if (!strcmp(name, "cycle") && json_is_integer(json_object_get(obj, "index0")) && nargs > 0) {
            /* loop.cycle(a, b, ...) */
            return json_incref(args[(size_t) json_integer_value(json_object_get(obj, "index0")) % nargs]);
        }
        if (!strcmp(name, "get")) {
            json_t *d = arg(args, nargs, 1, kwn, kwv, nkw, NULL), *v;
            if (!json_is_string(a0)) return json_incref(d ? d : json_null());
            v = json_object_get(obj, json_string_value(a0));
            return json_incref(v ? v : (d ? d : json_null()));
        }
    } else if (json_is_array(obj)) {
        if (!strcmp(name, "index") || !strcmp(name, "count")) {
            size_t  i;
            json_t *x;
            long    c = 0;
            json_array_foreach(obj, i, x) {
                if (llm_jv_equal(x, a0)) {
                    if (name[0] == 'i') return json_integer((json_int_t) i);
                    c++;
                }
            }
            if (name[0] == 'i') { llm_jfail(st, line, "value is not in list"); return NULL; }
            return json_integer(c);
        }
    }
    llm_jfail(st, line, "'%s object' has no attribute '%s'", llm_jv_type(obj), name);
    return NULL;
badarg:
    llm_jfail(st, line, "bad argument to %s.%s()", llm_jv_type(obj), name);
    return NULL;
}

/* ---- globals ---- */

json_t *
llm_jglobal_call(llm_jstate *st, int line, const char *name, json_t **args, size_t nargs,
                 char **kwn, json_t **kwv, size_t nkw)
{
    size_t i;

    if (!strcmp(name, "raise_exception")) {
        json_t *m = nargs ? args[0] : NULL;
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
    if (!strcmp(name, "strftime_now")) {
        char       buf[256];
        time_t     now = time(NULL);
        struct tm  tmv;
        size_t     k;
        if (nargs < 1 || !json_is_string(args[0])) { llm_jfail(st, line, "strftime_now() needs a format string"); return NULL; }
        localtime_r(&now, &tmv);
        k = strftime(buf, sizeof(buf), json_string_value(args[0]), &tmv);
        return mkstr(buf, k);
    }
    if (!strcmp(name, "range")) {
        long long a = 0, b, s = 1, v;
        double    da = 0, db, ds = 1;
        json_t   *r;
        if (nargs == 1) db = llm_jv_num(args[0]);
        else if (nargs >= 2) { da = llm_jv_num(args[0]); db = llm_jv_num(args[1]); if (nargs > 2) ds = llm_jv_num(args[2]); }
        else { llm_jfail(st, line, "range() needs arguments"); return NULL; }
        /* checked as doubles: converting or subtracting huge values would overflow */
        if (!(fabs(da) < 1e15 && fabs(db) < 1e15 && fabs(ds) < 1e15) || (long long) ds == 0
            || (db - da) / (double) (long long) ds > 100000)
        {
            llm_jfail(st, line, "range() too large or zero step");
            return NULL;
        }
        a = (long long) da; b = (long long) db; s = (long long) ds;
        r = json_array();
        for (v = a; s > 0 ? v < b : v > b; v += s) json_array_append_new(r, json_integer(v));
        return r;
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        json_t *o = !strcmp(name, "namespace") ? llm_jnamespace_new(st) : json_object();
        if (o == NULL) return NULL;
        if (nargs && json_is_object(args[0])) json_object_update(o, args[0]);
        for (i = 0; i < nkw; i++) json_object_set(o, kwn[i], kwv[i] ? kwv[i] : json_null());
        return o;
    }
    llm_jfail(st, line, "unknown function '%s'", name);
    return NULL;
}

/* ---- filters ---- */

static int
apply_test_or_filter_sel(llm_jstate *st, int line, json_t *item, json_t **args, size_t nargs, size_t first)
{
    /* select/reject: args[first] = test name (default truthy), rest = test args */
    if (first >= nargs) return llm_jv_truthy(item);
    if (!json_is_string(args[first])) return llm_jfail(st, line, "test name must be a string");
    return llm_jtest(st, line, json_string_value(args[first]), item, args + first + 1, nargs - first - 1);
}

json_t *
llm_jfilter(llm_jstate *st, int line, const char *name, json_t *v, json_t **args, size_t nargs,
            char **kwn, json_t **kwv, size_t nkw)
{
    size_t  i;
    json_t *x, *r;

    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        json_t *d = arg(args, nargs, 0, kwn, kwv, nkw, "default_value");
        json_t *boolean = arg(args, nargs, 1, kwn, kwv, nkw, "boolean");
        if (v == NULL || (llm_jv_truthy(boolean) && !llm_jv_truthy(v))) return d ? json_incref(d) : json_string("");
        return json_incref(v);
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        if (v == NULL) return json_integer(0);
        if (json_is_string(v)) return json_integer(llm_jv_strlen(v));
        if (json_is_array(v)) return json_integer((json_int_t) json_array_size(v));
        if (json_is_object(v)) return json_integer((json_int_t) json_object_size(v));
        llm_jfail(st, line, "object of type '%s' has no len()", llm_jv_type(v));
        return NULL;
    }
    if (!strcmp(name, "tojson")) {
        json_t     *ind = arg(args, nargs, 0, kwn, kwv, nkw, "indent");
        json_t     *seps = kwarg(kwn, kwv, nkw, "separators");
        json_t     *sk = kwarg(kwn, kwv, nkw, "sort_keys");
        int         indent;
        const char *isep = ", ", *ksep = ": ";
        llm_jbuf    b = { 0 };
        if (ind && json_is_integer(ind) && llm_jcheck_len(st, line, (unsigned long long) (json_integer_value(ind) < 0 ? 0 : json_integer_value(ind)))) return NULL;
        indent = ind && json_is_integer(ind) ? (int) json_integer_value(ind) : -1;
        if (indent >= 0) isep = ",";
        if (json_is_array(seps) && json_array_size(seps) == 2) {
            isep = json_string_value(json_array_get(seps, 0));
            ksep = json_string_value(json_array_get(seps, 1));
            if (isep == NULL || ksep == NULL) { llm_jfail(st, line, "tojson separators must be strings"); return NULL; }
        }
        if (llm_jv_tojson(v, indent, isep, ksep, (llm_jv_truthy(sk) ? LLM_JV_SORT_KEYS : 0)
                          | (llm_jv_truthy(kwarg(kwn, kwv, nkw, "ensure_ascii")) ? LLM_JV_ASCII : 0), 0, &b)
            && !b.fail)
        {
            free(b.p);
            llm_jfail(st, line, "tojson failed");
            return NULL;
        }
        return llm_jbuf_take(st, line, &b);
    }
    if (!strcmp(name, "string")) return v == NULL ? json_string("") : (json_is_string(v) ? json_incref(v) : to_str(st, v));
    if (!strcmp(name, "safe")) return json_incref(v);
    if (!strcmp(name, "items")) {
        if (v == NULL) return json_array();
        if (!json_is_object(v)) { llm_jfail(st, line, "items filter needs a mapping, got %s", llm_jv_type(v)); return NULL; }
        return llm_jmethod(st, line, v, "items", NULL, 0, NULL, NULL, 0);
    }
    if (!strcmp(name, "list")) return as_list(st, line, v);
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        json_t *l = as_list(st, line, v);
        if (l == NULL) return NULL;
        r = json_array_size(l) ? json_incref(json_array_get(l, name[0] == 'f' ? 0 : json_array_size(l) - 1)) : NULL;
        json_decref(l);
        return r;
    }
    if (!strcmp(name, "join")) {
        json_t  *sep = arg(args, nargs, 0, kwn, kwv, nkw, "d");
        json_t  *attr = kwarg(kwn, kwv, nkw, "attribute");
        json_t  *l = as_list(st, line, v);
        llm_jbuf b = { 0 };
        if (l == NULL) return NULL;
        json_array_foreach(l, i, x) {
            if (i && sep) llm_jv_str(sep, &b);
            if (attr && json_is_string(attr)) {
                json_t *y = attr_path(st, line, x, json_string_value(attr));
                llm_jv_str_ex(y, &b, st->tuples);
                json_decref(y);
            } else {
                llm_jv_str_ex(x, &b, st->tuples);
            }
            if (b.fail) break;
        }
        json_decref(l);
        return llm_jbuf_take(st, line, &b);
    }
    if (!strcmp(name, "map")) {
        json_t *attr = kwarg(kwn, kwv, nkw, "attribute"), *l = as_list(st, line, v);
        if (l == NULL) return NULL;
        r = json_array();
        json_array_foreach(l, i, x) {
            json_t *y;
            if (attr && json_is_string(attr)) {
                y = attr_path(st, line, x, json_string_value(attr));
                if (y == NULL) { json_t *d = kwarg(kwn, kwv, nkw, "default"); y = d ? json_incref(d) : NULL; }
            } else if (nargs >= 1 && json_is_string(args[0]) && llm_jinja_known_filter(json_string_value(args[0]))) {
                y = llm_jfilter(st, line, json_string_value(args[0]), x, args + 1, nargs - 1, NULL, NULL, 0);
            } else {
                llm_jfail(st, line, "map needs attribute= or a filter name");
                y = NULL;
            }
            if (st->failed) { json_decref(r); json_decref(l); return NULL; }
            json_array_append_new(r, y ? y : json_null());
        }
        json_decref(l);
        return r;
    }
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr") || !strcmp(name, "select") || !strcmp(name, "reject")) {
        int     attr_mode = strstr(name, "attr") != NULL, want = name[0] == 's';
        json_t *l = as_list(st, line, v);
        if (l == NULL) return NULL;
        if (attr_mode && (nargs < 1 || !json_is_string(args[0]))) { json_decref(l); llm_jfail(st, line, "%s needs an attribute name", name); return NULL; }
        r = json_array();
        json_array_foreach(l, i, x) {
            json_t *y = attr_mode ? attr_path(st, line, x, json_string_value(args[0])) : json_incref(x);
            int     t = apply_test_or_filter_sel(st, line, y, args, nargs, attr_mode ? 1 : 0);
            json_decref(y);
            if (st->failed) { json_decref(r); json_decref(l); return NULL; }
            if (t == want) json_array_append(r, x);
        }
        json_decref(l);
        return r;
    }
    if (!strcmp(name, "attr")) {
        if (nargs < 1 || !json_is_string(args[0])) { llm_jfail(st, line, "attr needs a name"); return NULL; }
        return llm_jgetattr(st, line, v, json_string_value(args[0]));
    }
    if (!strcmp(name, "unique")) {
        json_t *l = as_list(st, line, v);
        if (l == NULL) return NULL;
        r = json_array();
        json_array_foreach(l, i, x) {
            size_t j;
            int    seen = 0;
            for (j = 0; j < json_array_size(r); j++) if (llm_jv_equal(json_array_get(r, j), x)) seen = 1;
            if (!seen) json_array_append(r, x);
        }
        json_decref(l);
        return r;
    }
    if (!strcmp(name, "sort") || !strcmp(name, "dictsort")) {
        json_t *rev = arg(args, nargs, name[0] == 's' ? 0 : 2, kwn, kwv, nkw, "reverse");
        json_t *cs = arg(args, nargs, name[0] == 's' ? 1 : 0, kwn, kwv, nkw, "case_sensitive");
        json_t *attr = kwarg(kwn, kwv, nkw, "attribute");
        json_t *by = kwarg(kwn, kwv, nkw, "by");
        json_t *l;
        if (name[0] == 'd') {
            if (!json_is_object(v)) { llm_jfail(st, line, "dictsort needs a mapping"); return NULL; }
            l = llm_jmethod(st, line, v, "items", NULL, 0, NULL, NULL, 0);
            r = sorted(st, line, l, NULL, llm_jv_truthy(rev), llm_jv_truthy(cs),
                       by && json_is_string(by) && !strcmp(json_string_value(by), "value") ? 1 : 0);
        } else {
            l = as_list(st, line, v);
            if (l == NULL) return NULL;
            r = sorted(st, line, l, attr && json_is_string(attr) ? json_string_value(attr) : NULL,
                       llm_jv_truthy(rev), llm_jv_truthy(cs), -1);
        }
        json_decref(l);
        return r;
    }
    if (!strcmp(name, "reverse")) {
        if (json_is_string(v)) {
            json_t  *l = as_list(st, line, v);
            llm_jbuf b = { 0 };
            if (l == NULL) return NULL;
            for (i = json_array_size(l); i-- > 0; ) llm_jv_str(json_array_get(l, i), &b);
            json_decref(l);
            return llm_jbuf_take(st, line, &b);
        } else {
            json_t *l = as_list(st, line, v);
            if (l == NULL) return NULL;
            r = json_array();
            for (i = json_array_size(l); i-- > 0; ) json_array_append(r, json_array_get(l, i));
            json_decref(l);
            return r;
        }
    }
    if (!strcmp(name, "sum") || !strcmp(name, "min") || !strcmp(name, "max")) {
        json_t *attr = kwarg(kwn, kwv, nkw, "attribute");
        json_t *l = as_list(st, line, v), *best = NULL;
        double  total = 0;
        int     real = 0;
        if (l == NULL) return NULL;
        if (name[1] == 'u') {
            json_t *start = kwarg(kwn, kwv, nkw, "start");
            if (start) { total = llm_jv_num(start); real = json_is_real(start); }
        }
        json_array_foreach(l, i, x) {
            json_t *y = attr && json_is_string(attr) ? attr_path(st, line, x, json_string_value(attr)) : json_incref(x);
            if (name[1] == 'u') {
                if (!llm_jv_is_number(y)) { json_decref(y); json_decref(l); llm_jfail(st, line, "sum of non-numbers"); return NULL; }
                total += llm_jv_num(y);
                real |= json_is_real(y);
                json_decref(y);
            } else {
                int c = 0;
                if (best == NULL || (llm_jv_compare(y, best, &c) == 0 && (name[1] == 'i' ? c < 0 : c > 0))) {
                    json_decref(best);
                    best = y;
                } else {
                    json_decref(y);
                }
            }
        }
        json_decref(l);
        if (name[1] == 'u') return real ? json_real(total) : json_integer((json_int_t) total);
        return best;
    }
    if (!strcmp(name, "int")) {
        json_t *d = arg(args, nargs, 0, kwn, kwv, nkw, "default");
        if (json_is_string(v)) {
            char *end;
            long long k = strtoll(json_string_value(v), &end, 10);
            if (end != json_string_value(v)) return json_integer(k);
            return d ? json_incref(d) : json_integer(0);
        }
        if (llm_jv_is_number(v)) return json_integer((json_int_t) llm_jv_num(v));
        return d ? json_incref(d) : json_integer(0);
    }
    if (!strcmp(name, "float")) {
        if (json_is_string(v)) return json_real(strtod(json_string_value(v), NULL));
        return json_real(llm_jv_is_number(v) ? llm_jv_num(v) : 0.0);
    }
    if (!strcmp(name, "abs")) {
        if (json_is_integer(v)) return json_integer(json_integer_value(v) < 0 ? -json_integer_value(v) : json_integer_value(v));
        if (json_is_real(v)) return json_real(fabs(json_real_value(v)));
        llm_jfail(st, line, "bad operand type for abs(): '%s'", llm_jv_type(v));
        return NULL;
    }
    if (!strcmp(name, "round")) {
        json_t *pr = arg(args, nargs, 0, kwn, kwv, nkw, "precision");
        json_t *m = arg(args, nargs, 1, kwn, kwv, nkw, "method");
        double  p = pow(10, pr ? llm_jv_num(pr) : 0), x = llm_jv_num(v) * p;
        const char *meth = m && json_is_string(m) ? json_string_value(m) : "common";
        x = !strcmp(meth, "floor") ? floor(x) : !strcmp(meth, "ceil") ? ceil(x) : rint(x);   /* Python round(): ties to even */
        return json_real(x / p);
    }
    /* string filters */
    if (v == NULL) v = json_string("");
    else if (!json_is_string(v)) v = to_str(st, v);
    else json_incref(v);
    if (v == NULL) return NULL;
    r = NULL;
    if (!strcmp(name, "trim")) r = strip(v, arg(args, nargs, 0, kwn, kwv, nkw, "chars"), 3);
    else if (!strcmp(name, "upper")) r = case_map(v, 1);
    else if (!strcmp(name, "lower")) r = case_map(v, 2);
    else if (!strcmp(name, "title")) r = case_map(v, 3);
    else if (!strcmp(name, "capitalize")) {
        json_t *low = case_map(v, 2);
        r = case_map(low, 4);
        json_decref(low);
    } else if (!strcmp(name, "replace")) {
        json_t *a = arg(args, nargs, 0, kwn, kwv, nkw, "old"), *b = arg(args, nargs, 1, kwn, kwv, nkw, "new");
        json_t *c = arg(args, nargs, 2, kwn, kwv, nkw, "count");
        if (!json_is_string(a) || !json_is_string(b)) llm_jfail(st, line, "replace needs two strings");
        else r = replace(st, line, v, a, b, c && json_is_integer(c) ? (long) json_integer_value(c) : -1);
    } else if (!strcmp(name, "escape") || !strcmp(name, "e")) {
        const char *s = json_string_value(v);
        size_t      n = json_string_length(v);
        llm_jbuf    b = { 0 };
        for (i = 0; i < n; i++) {
            const char *esc = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;"
                            : s[i] == '"' ? "&#34;" : s[i] == '\'' ? "&#39;" : NULL;
            if (esc) llm_jbuf_add(&b, esc, strlen(esc));
            else llm_jbuf_add(&b, s + i, 1);
        }
        r = llm_jbuf_take(st, line, &b);
    } else if (!strcmp(name, "indent")) {
        json_t     *w = arg(args, nargs, 0, kwn, kwv, nkw, "width");
        json_t     *first = arg(args, nargs, 1, kwn, kwv, nkw, "first");
        json_t     *blank = arg(args, nargs, 2, kwn, kwv, nkw, "blank");
        llm_jbuf    pad = { 0 }, b = { 0 };
        const char *s = json_string_value(v);
        size_t      n = json_string_length(v), start = 0;
        int         lineno = 0;
        unsigned long long lines = 1, padded, width;
        for (i = 0; i < n; i++) lines += s[i] == '\n';
        /* the result's size is known before it is built */
        width = w && json_is_string(w) ? json_string_length(w)
              : w ? (llm_jv_num(w) > 0 ? (unsigned long long) fmin(llm_jv_num(w), 1e18) : 0) : 4;
        padded = width > LLM_JINJA_MAX_OUTPUT ? LLM_JINJA_MAX_OUTPUT + 1ULL : width * lines;
        if (llm_jcheck_len(st, line, padded + n)) { json_decref(v); return NULL; }
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
        r = llm_jbuf_take(st, line, &b);
        free(pad.p);
    } else if (!strcmp(name, "wordcount")) {
        json_t *l = split(st, line, v, NULL, -1);
        r = json_integer((json_int_t) json_array_size(l));
        json_decref(l);
    } else if (!strcmp(name, "center")) {
        json_t  *w = arg(args, nargs, 0, kwn, kwv, nkw, "width");
        double   want = w ? llm_jv_num(w) : 80;
        long     len = llm_jv_strlen(v), width, left;
        size_t   bytes = json_string_length(v);
        char    *o;
        /* Python pads to width characters; checked before anything is built */
        if (want > (double) len && llm_jcheck_len(st, line, (unsigned long long) fmin(want - (double) len, 1e18) + bytes)) {
            json_decref(v);
            return NULL;
        }
        width = want > (double) len ? (long) want : len;
        left = (width - len) / 2 + ((width - len) & width & 1);   /* as CPython's str.center */
        o = malloc(bytes + (size_t) (width - len) + 1);
        if (o == NULL) {
            llm_jfail(st, line, "out of memory");
        } else {
            memset(o, ' ', (size_t) left);
            memcpy(o + left, json_string_value(v), bytes);
            memset(o + left + bytes, ' ', (size_t) (width - len - left));
            r = mkstr(o, bytes + (size_t) (width - len));
            free(o);
        }
    } else if (!strcmp(name, "format")) {
        r = llm_jpyformat(st, line, v, args, nargs);
    } else {
        llm_jfail(st, line, "unknown filter '%s'", name);
    }
    json_decref(v);
    return r;
}
