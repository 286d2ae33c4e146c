/*
 * Regular expressions -> grammar rules.
 *
 * The syntax is the common core of ECMA-262 and PCRE: literals, escapes
 * (\d \w \s \D \W \S \n \r \t \f \v \xHH \uHHHH \u{H..} and escaped
 * punctuation), classes with ranges and negation, `.` (any character but a
 * newline), groups ( ) (?: ) (?<name> ) (?P<name> ), | and the quantifiers
 * * + ? {m} {m,} {m,n} (a lazy or possessive suffix changes nothing here).
 * `^` and `$` are accepted only at the ends.  Backreferences, lookaround and
 * word boundaries cannot be expressed as a context-free rule over characters
 * and are rejected by name.
 *
 * JSON mode emits the characters as they appear inside a JSON string literal:
 * `"` `\` and control characters as escapes, classes and `.` never producing
 * them (a restriction of the output, which stays valid).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_grammar_int.h"

typedef struct {
    llm_gbuild *b;
    const char *s, *p, *end;
    int         json;
    int         failed;
    int         depth;
    char       *err;
    size_t      errlen;
} rp;

typedef struct {
    uint32_t *r;     /* pairs */
    size_t    n, cap;
} rset;

static int
rfail(rp *g, const char *what)
{
    if (!g->failed) {
        llm_gerr(g->err, g->errlen, "regex: %s at offset %zu", what, (size_t) (g->p - g->s));
    }
    g->failed = 1;
    return -1;
}

static int
rset_add(rp *g, rset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        uint32_t *r = realloc(s->r, cap * 2 * sizeof(uint32_t));
        if (r == NULL) return rfail(g, "out of memory");
        s->r = r;
        s->cap = cap;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
    return 0;
}

static int
cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* sort + merge; then complement if negate */
static int
rset_norm(rp *g, rset *s, int negate)
{
    size_t i, n = 0;
    qsort(s->r, s->n, 2 * sizeof(uint32_t), cmp_pair);
    for (i = 0; i < s->n; i++) {
        if (n && s->r[2 * i] <= s->r[2 * n - 1] + 1) {
            if (s->r[2 * i + 1] > s->r[2 * n - 1]) s->r[2 * n - 1] = s->r[2 * i + 1];
        } else {
            s->r[2 * n] = s->r[2 * i];
            s->r[2 * n + 1] = s->r[2 * i + 1];
            n++;
        }
    }
    s->n = n;
    if (negate) {
        rset c = {0};
        uint32_t next = 0;
        for (i = 0; i < s->n; i++) {
            if (s->r[2 * i] > next && rset_add(g, &c, next, s->r[2 * i] - 1) < 0) return -1;
            next = s->r[2 * i + 1] + 1;
        }
        if (next <= 0x10FFFF && rset_add(g, &c, next, 0x10FFFF) < 0) return -1;
        free(s->r);
        *s = c;
    }
    return 0;
}

/* remove [lo,hi] from a normalized set */
static int
rset_sub(rp *g, rset *s, uint32_t lo, uint32_t hi)
{
    rset o = {0};
    size_t i;
    for (i = 0; i < s->n; i++) {
        uint32_t a = s->r[2 * i], z = s->r[2 * i + 1];
        if (z < lo || a > hi) { if (rset_add(g, &o, a, z) < 0) return -1; continue; }
        if (a < lo && rset_add(g, &o, a, lo - 1) < 0) return -1;
        if (z > hi && rset_add(g, &o, hi + 1, z) < 0) return -1;
    }
    free(s->r);
    *s = o;
    return 0;
}

/* Emit one character of a normalized set as a class element or rule. */
static int
emit_set(rp *g, llm_gseq *q, rset *s)
{
    size_t i;
    int rule;

    if (g->json) {
        if (rset_sub(g, s, 0, 0x1F) < 0 || rset_sub(g, s, '"', '"') < 0
            || rset_sub(g, s, '\\', '\\') < 0) return -1;
    }
    if (s->n == 0) return rfail(g, "character class matches nothing");
    if (s->r[2 * s->n - 1] < 0x80) {
        uint8_t set[32] = {0};
        uint32_t c;
        for (i = 0; i < s->n; i++) for (c = s->r[2 * i]; c <= s->r[2 * i + 1]; c++) llm_gset_add(set, c);
        return llm_gseq_class(g->b, q, set);
    }
    rule = llm_gbuild_codepoints(g->b, s->r, s->n, 0);
    if (rule < 0) return rfail(g, "character class matches nothing");
    return llm_gseq_ref(q, rule);
}

/* A literal code point (JSON-escaped in JSON mode). */
static int
emit_char(rp *g, llm_gseq *q, uint32_t c)
{
    char buf[8];
    if (g->json && (c < 0x20 || c == '"' || c == '\\')) {
        switch (c) {
        case '"': return llm_gseq_bytes(g->b, q, "\\\"", 2);
        case '\\': return llm_gseq_bytes(g->b, q, "\\\\", 2);
        case '\n': return llm_gseq_bytes(g->b, q, "\\n", 2);
        case '\r': return llm_gseq_bytes(g->b, q, "\\r", 2);
        case '\t': return llm_gseq_bytes(g->b, q, "\\t", 2);
        default:
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            return llm_gseq_bytes(g->b, q, buf, 6);
        }
    }
    if (c < 0x80) {
        buf[0] = (char) c;
        return llm_gseq_bytes(g->b, q, buf, 1);
    } else {
        rset s = {0};
        int rc = rset_add(g, &s, c, c) < 0 ? -1 : emit_set(g, q, &s);
        free(s.r);
        return rc;
    }
}

static int
hexv(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static long
read_utf8(rp *g)
{
    const unsigned char *u = (const unsigned char *) g->p;
    long c;
    int n, i;
    if (u[0] < 0x80) { g->p++; return u[0]; }
    if ((u[0] & 0xE0) == 0xC0) { n = 2; c = u[0] & 0x1F; }
    else if ((u[0] & 0xF0) == 0xE0) { n = 3; c = u[0] & 0x0F; }
    else if ((u[0] & 0xF8) == 0xF0) { n = 4; c = u[0] & 0x07; }
    else return rfail(g, "invalid UTF-8");
    if (g->p + n > g->end) return rfail(g, "invalid UTF-8");
    for (i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return rfail(g, "invalid UTF-8");
        c = (c << 6) | (u[i] & 0x3F);
    }
    g->p += n;
    return c;
}

/*
 * After a backslash.  A shorthand class (\d \w \s and their negations) is
 * added to *cls and -2 returned; a single character is returned as is.
 */
static long
read_escape(rp *g, rset *cls)
{
    char c;
    long v = 0;
    int n = 0, i;

    if (g->p >= g->end) return rfail(g, "trailing backslash");
    c = *g->p++;
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
        rset t = {0};
        int neg = c == 'D' || c == 'W' || c == 'S', rc = 0;
        if (c == 'd' || c == 'D') rc = rset_add(g, &t, '0', '9');
        else if (c == 'w' || c == 'W')
            rc = (rset_add(g, &t, '0', '9') < 0 || rset_add(g, &t, 'A', 'Z') < 0
                  || rset_add(g, &t, 'a', 'z') < 0 || rset_add(g, &t, '_', '_') < 0) ? -1 : 0;
        else
            rc = (rset_add(g, &t, ' ', ' ') < 0 || rset_add(g, &t, '\t', '\r') < 0) ? -1 : 0;
        if (rc == 0) rc = rset_norm(g, &t, neg);
        for (i = 0; rc == 0 && (size_t) i < t.n; i++) rc = rset_add(g, cls, t.r[2 * i], t.r[2 * i + 1]);
        free(t.r);
        return rc < 0 ? -1 : -2;
    }
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    case 'x': n = 2; break;
    case 'u':
        if (g->p < g->end && *g->p == '{') {
            g->p++;
            while (g->p < g->end && *g->p != '}') {
                int h = hexv((unsigned char) *g->p++);
                if (h < 0 || ++n > 6) return rfail(g, "bad \\u{} escape");
                v = v * 16 + h;
            }
            if (g->p >= g->end || n == 0) return rfail(g, "bad \\u{} escape");
            g->p++;
            return v > 0x10FFFF ? rfail(g, "code point out of range") : v;
        }
        n = 4;
        break;
    case 'b': case 'B': return rfail(g, "word boundaries (\\b) are not supported");
    case 'p': case 'P': return rfail(g, "Unicode properties (\\p) are not supported");
    default:
        if (c >= '1' && c <= '9') return rfail(g, "backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return rfail(g, "unknown escape");
        g->p--;
        return read_utf8(g);
    }
    for (i = 0; i < n; i++) {
        int h = g->p < g->end ? hexv((unsigned char) *g->p) : -1;
        if (h < 0) return rfail(g, "bad hex escape");
        v = v * 16 + h;
        g->p++;
    }
    return v;
}

static int
parse_class(rp *g, llm_gseq *q)
{
    rset s = {0};
    int negate = 0, rc = -1, first = 1;

    g->p++;   /* [ */
    if (g->p < g->end && *g->p == '^') { negate = 1; g->p++; }
    while (g->p < g->end && (*g->p != ']' || first)) {
        long lo, hi;
        first = 0;
        if (*g->p == '[' && g->p + 1 < g->end && (g->p[1] == ':' || g->p[1] == '=' || g->p[1] == '.')) {
            rfail(g, "POSIX classes are not supported");
            goto out;
        }
        if (*g->p == '\\') { g->p++; lo = read_escape(g, &s); }
        else lo = read_utf8(g);
        if (lo == -2) continue;
        if (lo < 0) goto out;
        hi = lo;
        if (g->p + 1 < g->end && *g->p == '-' && g->p[1] != ']') {
            g->p++;
            if (*g->p == '\\') { g->p++; hi = read_escape(g, &s); }
            else hi = read_utf8(g);
            if (hi == -2) { rfail(g, "a class shorthand cannot end a range"); goto out; }
            if (hi < 0) goto out;
            if (hi < lo) { rfail(g, "class range out of order"); goto out; }
        }
        if (rset_add(g, &s, (uint32_t) lo, (uint32_t) hi) < 0) goto out;
    }
    if (g->p >= g->end) { rfail(g, "unterminated character class"); goto out; }
    g->p++;
    if (rset_norm(g, &s, negate) < 0) goto out;
    rc = emit_set(g, q, &s);
out:
    free(s.r);
    return rc;
}

static int parse_alt(rp *g, llm_gseq *q);

static int
parse_count(rp *g, long *v)
{
    long x = 0;
    if (g->p >= g->end || *g->p < '0' || *g->p > '9') return -1;
    while (g->p < g->end && *g->p >= '0' && *g->p <= '9') {
        x = x * 10 + (*g->p++ - '0');
        if (x > 100000) return rfail(g, "repetition count too large");
    }
    *v = x;
    return 0;
}

static int
parse_concat(rp *g, llm_gseq *q)
{
    size_t last = (size_t) -1;

    while (g->p < g->end && !g->failed) {
        char c = *g->p;
        if (c == '|' || c == ')') break;
        if (c == '^') {
            if (g->p != g->s) return rfail(g, "'^' is supported only at the start");
            g->p++;
            continue;
        }
        if (c == '$') {
            if (g->p + 1 != g->end) return rfail(g, "'$' is supported only at the end");
            g->p++;
            continue;
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') {
            long min = 0, max = -1;
            int item, rep;
            const char *save = g->p;
            g->p++;
            if (c == '+') min = 1;
            else if (c == '?') max = 1;
            else if (c == '{') {
                if (parse_count(g, &min) < 0) {
                    if (g->failed) return -1;
                    g->p = save;      /* a literal '{' */
                    goto literal;
                }
                max = min;
                if (g->p < g->end && *g->p == ',') {
                    g->p++;
                    max = -1;
                    if (g->p < g->end && *g->p != '}' && parse_count(g, &max) < 0)
                        return rfail(g, "bad repetition");
                }
                if (g->p >= g->end || *g->p != '}') return rfail(g, "expected '}'");
                g->p++;
                if (max >= 0 && max < min) return rfail(g, "repetition {m,n} with n < m");
            }
            if (last == (size_t) -1) return rfail(g, "quantifier without an item");
            if (g->p < g->end && (*g->p == '?' || *g->p == '+')) g->p++;   /* lazy / possessive */
            item = llm_gseq_take_rule(g->b, q, last, "item");
            rep = llm_gbuild_repeat(g->b, item, min, max);
            if (item < 0 || rep < 0) return rfail(g, "out of memory");
            llm_gseq_ref(q, rep);
            last = (size_t) -1;
            continue;
        }
        last = llm_gseq_len(q);
        if (c == '(') {
            llm_gseq *sub;
            int rule;
            g->p++;
            if (g->p < g->end && *g->p == '?') {
                g->p++;
                if (g->p < g->end && *g->p == ':') g->p++;
                else if (g->p + 1 < g->end && *g->p == '<' && g->p[1] != '=' && g->p[1] != '!') {
                    while (g->p < g->end && *g->p != '>') g->p++;
                    if (g->p >= g->end) return rfail(g, "unterminated group name");
                    g->p++;
                } else if (g->p < g->end && *g->p == 'P' && g->p + 1 < g->end && g->p[1] == '<') {
                    while (g->p < g->end && *g->p != '>') g->p++;
                    if (g->p >= g->end) return rfail(g, "unterminated group name");
                    g->p++;
                } else {
                    return rfail(g, "lookaround and inline flags are not supported");
                }
            }
            if (++g->depth > 200) return rfail(g, "groups nest too deeply");
            sub = llm_gseq_new();
            if (sub == NULL) return rfail(g, "out of memory");
            if (parse_alt(g, sub) < 0) { llm_gseq_free(sub); return -1; }
            g->depth--;
            if (g->p >= g->end || *g->p != ')') { llm_gseq_free(sub); return rfail(g, "expected ')'"); }
            g->p++;
            rule = llm_gbuild_rule(g->b, "group");
            if (rule < 0 || llm_gbuild_define(g->b, rule, sub) < 0) {
                llm_gseq_free(sub);
                return rfail(g, "out of memory");
            }
            llm_gseq_free(sub);
            llm_gseq_ref(q, rule);
            continue;
        }
        if (c == '[') {
            if (parse_class(g, q) < 0) return -1;
            continue;
        }
        if (c == '.') {
            rset s = {0};
            int rc;
            g->p++;
            rc = (rset_add(g, &s, '\n', '\n') < 0 || rset_norm(g, &s, 1) < 0) ? -1 : emit_set(g, q, &s);
            free(s.r);
            if (rc < 0) return -1;
            continue;
        }
        if (c == '\\') {
            rset s = {0};
            long v;
            g->p++;
            v = read_escape(g, &s);
            if (v == -2) {
                int rc = rset_norm(g, &s, 0) < 0 ? -1 : emit_set(g, q, &s);
                free(s.r);
                if (rc < 0) return -1;
                continue;
            }
            free(s.r);
            if (v < 0 || emit_char(g, q, (uint32_t) v) < 0) return -1;
            continue;
        }
literal:
        {
            long v = read_utf8(g);
            if (v < 0 || emit_char(g, q, (uint32_t) v) < 0) return -1;
        }
    }
    return g->failed ? -1 : 0;
}

static int
parse_alt(rp *g, llm_gseq *q)
{
    if (parse_concat(g, q) < 0) return -1;
    while (g->p < g->end && *g->p == '|') {
        g->p++;
        if (llm_gseq_alt(q) < 0) return rfail(g, "out of memory");
        if (parse_concat(g, q) < 0) return -1;
    }
    return 0;
}

int
llm_gregex_rule(llm_gbuild *b, const char *re, size_t len, int json, char *err, size_t errlen)
{
    rp g = {0};
    llm_gseq *q = llm_gseq_new();
    int rule = -1;

    g.b = b;
    g.s = g.p = re;
    g.end = re + len;
    g.json = json;
    g.err = err;
    g.errlen = errlen;
    if (q == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    if (parse_alt(&g, q) == 0) {
        if (g.p < g.end) rfail(&g, "unbalanced ')'");
        else {
            rule = llm_gbuild_rule(b, "regex");
            if (rule < 0 || llm_gbuild_define(b, rule, q) < 0) {
                llm_gerr(err, errlen, "out of memory");
                rule = -1;
            }
        }
    }
    llm_gseq_free(q);
    return rule;
}

int
llm_gbuild_regex(llm_gbuild *b, const char *re, size_t len, char *err, size_t errlen)
{
    return llm_gregex_rule(b, re, len, 0, err, errlen);
}

llm_grammar *
llm_grammar_from_regex(const char *re, size_t len, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    llm_grammar *g = NULL;
    int rule;

    if (b == NULL) { llm_gerr(err, errlen, "out of memory"); return NULL; }
    rule = llm_gregex_rule(b, re, len, 0, err, errlen);
    if (rule >= 0) g = llm_gbuild_finish(b, rule, err, errlen);
    llm_gbuild_free(b);
    return g;
}
