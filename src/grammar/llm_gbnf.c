/*
 * GBNF (llama.cpp's grammar syntax) -> grammar.
 *
 *   root  ::= "{" ws pair ("," ws pair)* "}"      # comments run to the line end
 *   ws    ::= [ \t\n]*
 *   digit ::= [0-9] | [^\x00-\x7F]{1,2}
 *
 * A rule ends at a newline outside parentheses; `|` may be followed by a
 * newline.  Literals and classes are Unicode code points (UTF-8 in the text,
 * or escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH); `.` is any
 * character.  Token references (<[id]>) are not supported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_grammar_int.h"

typedef struct {
    llm_gbuild *b;
    const char *prefix;       /* put before every rule name (embedding) */
    const char *s, *end;
    const char *p;
    char       *err;
    size_t      errlen;
    int         failed;
    int         depth;
} gp;

static int
fail(gp *g, const char *what)
{
    if (!g->failed) {
        size_t off = (size_t) (g->p - g->s);
        int line = 1;
        const char *q;
        for (q = g->s; q < g->p; q++) if (*q == '\n') line++;
        llm_gerr(g->err, g->errlen, "grammar: %s at line %d (offset %zu)", what, line, off);
    }
    g->failed = 1;
    return -1;
}

static int
is_word(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || c == '-' || c == '_';
}

static void
skip_space(gp *g, int newlines)
{
    while (g->p < g->end) {
        char c = *g->p;
        if (c == '#') {
            while (g->p < g->end && *g->p != '\n') g->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            g->p++;
        } else {
            break;
        }
    }
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One code point from a literal or a class; -1 on error. */
static long
read_char(gp *g)
{
    const unsigned char *u = (const unsigned char *) g->p;
    long c;
    int n, i;

    if (g->p >= g->end) return fail(g, "unexpected end");
    if (*u == '\\') {
        if (g->p + 1 >= g->end) return fail(g, "unexpected end after '\\'");
        g->p += 2;
        switch (u[1]) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': return u[1];
        case 'x': n = 2; break;
        case 'u': n = 4; break;
        case 'U': n = 8; break;
        default: g->p -= 2; return fail(g, "unknown escape");
        }
        c = 0;
        for (i = 0; i < n; i++) {
            int h = g->p < g->end ? hexval((unsigned char) *g->p) : -1;
            if (h < 0) return fail(g, "bad hex escape");
            c = c * 16 + h;
            g->p++;
        }
        if (c > 0x10FFFF) return fail(g, "code point out of range");
        return c;
    }
    /* UTF-8 */
    if (u[0] < 0x80) { g->p++; return u[0]; }
    if ((u[0] & 0xE0) == 0xC0) { n = 2; c = u[0] & 0x1F; }
    else if ((u[0] & 0xF0) == 0xE0) { n = 3; c = u[0] & 0x0F; }
    else if ((u[0] & 0xF8) == 0xF0) { n = 4; c = u[0] & 0x07; }
    else return fail(g, "invalid UTF-8");
    if (g->p + n > g->end) return fail(g, "invalid UTF-8");
    for (i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return fail(g, "invalid UTF-8");
        c = (c << 6) | (u[i] & 0x3F);
    }
    g->p += n;
    return c;
}

static int
push_codepoint(gp *g, llm_gseq *s, uint32_t c)
{
    uint32_t r[2] = { c, c };
    int rule;
    if (c < 0x80) {
        char ch = (char) c;
        return llm_gseq_bytes(g->b, s, &ch, 1);
    }
    rule = llm_gbuild_codepoints(g->b, r, 1, 0);
    if (rule < 0) return fail(g, "invalid code point");
    return llm_gseq_ref(s, rule);
}

/* [...] -> one element (a byte class when every member is ASCII) */
static int
parse_class(gp *g, llm_gseq *s)
{
    uint32_t *r = NULL;
    size_t n = 0, cap = 0;
    int negate = 0, ascii = 1, rc = -1;

    g->p++;   /* [ */
    if (g->p < g->end && *g->p == '^') { negate = 1; g->p++; }
    while (g->p < g->end && *g->p != ']') {
        long lo = read_char(g), hi;
        if (lo < 0) goto out;
        hi = lo;
        if (g->p + 1 < g->end && *g->p == '-' && g->p[1] != ']') {
            g->p++;
            hi = read_char(g);
            if (hi < 0) goto out;
            if (hi < lo) { fail(g, "class range out of order"); goto out; }
        }
        if (n == cap) {
            uint32_t *t;
            cap = cap ? cap * 2 : 16;
            t = realloc(r, cap * 2 * sizeof(uint32_t));
            if (t == NULL) { fail(g, "out of memory"); goto out; }
            r = t;
        }
        r[2 * n] = (uint32_t) lo;
        r[2 * n + 1] = (uint32_t) hi;
        if (hi >= 0x80) ascii = 0;
        n++;
    }
    if (g->p >= g->end) { fail(g, "unterminated character class"); goto out; }
    g->p++;   /* ] */
    if (ascii && !negate) {
        uint8_t set[32] = {0};
        size_t i;
        uint32_t c;
        if (n == 0) { fail(g, "empty character class"); goto out; }
        for (i = 0; i < n; i++) for (c = r[2 * i]; c <= r[2 * i + 1]; c++) llm_gset_add(set, c);
        rc = llm_gseq_class(g->b, s, set);
    } else {
        int rule = llm_gbuild_codepoints(g->b, r, n, negate);
        if (rule < 0) { fail(g, "character class matches nothing"); goto out; }
        rc = llm_gseq_ref(s, rule);
    }
out:
    free(r);
    return rc;
}

static int parse_alternates(gp *g, llm_gseq *s, int nested);

/* the rule a name refers to, created on first mention */
static int
named_rule(gp *g, const char *name)
{
    char full[192];
    int rule;
    snprintf(full, sizeof(full), "%s%s", g->prefix, name);
    rule = llm_gbuild_find(g->b, full);
    return rule >= 0 ? rule : llm_gbuild_rule(g->b, full);
}

static int
parse_int(gp *g, long *v)
{
    long x = 0;
    if (g->p >= g->end || *g->p < '0' || *g->p > '9') return fail(g, "expected a number");
    while (g->p < g->end && *g->p >= '0' && *g->p <= '9') {
        x = x * 10 + (*g->p - '0');
        if (x > 100000) return fail(g, "repetition count too large");
        g->p++;
    }
    *v = x;
    return 0;
}

static int
parse_sequence(gp *g, llm_gseq *s, int nested)
{
    size_t last = (size_t) -1;

    for ( ;; ) {
        char c;
        skip_space(g, nested);
        if (g->failed) return -1;
        if (g->p >= g->end) return 0;
        c = *g->p;
        if (c == '"') {
            g->p++;
            last = llm_gseq_len(s);
            while (g->p < g->end && *g->p != '"') {
                long cp = read_char(g);
                if (cp < 0 || push_codepoint(g, s, (uint32_t) cp) < 0) return -1;
            }
            if (g->p >= g->end) return fail(g, "unterminated literal");
            g->p++;
            if (llm_gseq_len(s) == last) last = (size_t) -1;   /* "" */
        } else if (c == '[') {
            last = llm_gseq_len(s);
            if (parse_class(g, s) < 0) return -1;
        } else if (c == '.') {
            uint32_t all[2] = { 0, 0x10FFFF };
            int rule = llm_gbuild_codepoints(g->b, all, 1, 0);
            g->p++;
            last = llm_gseq_len(s);
            if (llm_gseq_ref(s, rule) < 0) return fail(g, "out of memory");
        } else if (c == '(') {
            llm_gseq *sub = llm_gseq_new();
            int rule;
            g->p++;
            if (sub == NULL) return fail(g, "out of memory");
            if (++g->depth > 200) { llm_gseq_free(sub); return fail(g, "groups nest too deeply"); }
            if (parse_alternates(g, sub, 1) < 0) { llm_gseq_free(sub); return -1; }
            g->depth--;
            skip_space(g, 1);
            if (g->p >= g->end || *g->p != ')') { llm_gseq_free(sub); return fail(g, "expected ')'"); }
            g->p++;
            rule = llm_gbuild_rule(g->b, "group");
            if (rule < 0 || llm_gbuild_define(g->b, rule, sub) < 0) {
                llm_gseq_free(sub);
                return fail(g, "out of memory");
            }
            llm_gseq_free(sub);
            last = llm_gseq_len(s);
            llm_gseq_ref(s, rule);
        } else if (is_word((unsigned char) c)) {
            const char *w = g->p;
            char name[128];
            int rule;
            while (g->p < g->end && is_word((unsigned char) *g->p)) g->p++;
            if ((size_t) (g->p - w) >= sizeof(name)) return fail(g, "rule name too long");
            memcpy(name, w, (size_t) (g->p - w));
            name[g->p - w] = 0;
            {   /* a name followed by ::= starts the next rule */
                const char *save = g->p;
                skip_space(g, 0);
                if (g->end - g->p >= 3 && memcmp(g->p, "::=", 3) == 0) { g->p = w; return 0; }
                g->p = save;
            }
            rule = named_rule(g, name);
            last = llm_gseq_len(s);
            if (llm_gseq_ref(s, rule) < 0) return fail(g, "out of memory");
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            long min = 0, max = -1;
            int item, rep;
            if (last == (size_t) -1) return fail(g, "quantifier without an item");
            g->p++;
            if (c == '+') min = 1;
            else if (c == '?') max = 1;
            else if (c == '{') {
                skip_space(g, 0);
                if (parse_int(g, &min) < 0) return -1;
                skip_space(g, 0);
                max = min;
                if (g->p < g->end && *g->p == ',') {
                    g->p++;
                    skip_space(g, 0);
                    max = -1;
                    if (g->p < g->end && *g->p != '}' && parse_int(g, &max) < 0) return -1;
                    skip_space(g, 0);
                }
                if (g->p >= g->end || *g->p != '}') return fail(g, "expected '}'");
                g->p++;
                if (max >= 0 && max < min) return fail(g, "repetition {m,n} with n < m");
            }
            item = llm_gseq_take_rule(g->b, s, last, "item");
            rep = llm_gbuild_repeat(g->b, item, min, max);
            if (item < 0 || rep < 0) return fail(g, "out of memory");
            llm_gseq_ref(s, rep);
            last = (size_t) -1;
        } else if (c == '<') {
            return fail(g, "token references are not supported");
        } else {
            return 0;   /* | ) newline: the caller decides */
        }
    }
}

static int
parse_alternates(gp *g, llm_gseq *s, int nested)
{
    if (parse_sequence(g, s, nested) < 0) return -1;
    while (g->p < g->end && *g->p == '|') {
        g->p++;
        skip_space(g, 1);
        if (llm_gseq_alt(s) < 0) return fail(g, "out of memory");
        if (parse_sequence(g, s, nested) < 0) return -1;
    }
    return 0;
}

/* Parses src into b with rule names prefixed; returns the root rule. */
static int
parse_into(llm_gbuild *b, const char *prefix, const char *src, size_t len, char *err, size_t errlen)
{
    gp g = {0};
    llm_gseq *s = llm_gseq_new();
    int root = -1;
    char full[192];

    g.b = b;
    g.prefix = prefix;
    g.s = g.p = src;
    g.end = src + len;
    g.err = err;
    g.errlen = errlen;
    if (s == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    for ( ;; ) {
        const char *w;
        char name[128];
        int rule;

        skip_space(&g, 1);
        if (g.p >= g.end) break;
        w = g.p;
        while (g.p < g.end && is_word((unsigned char) *g.p)) g.p++;
        if (g.p == w) { fail(&g, "expected a rule name"); goto out; }
        if ((size_t) (g.p - w) >= sizeof(name)) { fail(&g, "rule name too long"); goto out; }
        memcpy(name, w, (size_t) (g.p - w));
        name[g.p - w] = 0;
        skip_space(&g, 0);
        if (g.end - g.p < 3 || memcmp(g.p, "::=", 3) != 0) { fail(&g, "expected '::='"); goto out; }
        g.p += 3;
        skip_space(&g, 1);
        llm_gseq_clear(s);
        if (parse_alternates(&g, s, 0) < 0) goto out;
        skip_space(&g, 0);
        if (g.p < g.end && *g.p != '\n' && !is_word((unsigned char) *g.p)) {
            fail(&g, "unexpected character");
            goto out;
        }
        rule = named_rule(&g, name);
        if (rule < 0) { fail(&g, "out of memory"); goto out; }
        if (llm_gbuild_define(g.b, rule, s) < 0) {
            llm_gerr(err, errlen, "grammar: rule '%s' is defined twice", name);
            goto out;
        }
    }
    snprintf(full, sizeof(full), "%sroot", prefix);
    root = llm_gbuild_find(g.b, full);
    if (root < 0) llm_gerr(err, errlen, "grammar: no 'root' rule");
out:
    llm_gseq_free(s);
    return root;
}

int
llm_gbuild_gbnf(llm_gbuild *b, const char *src, size_t len, char *err, size_t errlen)
{
    return parse_into(b, "gbnf-", src, len, err, errlen);
}

llm_grammar *
llm_grammar_from_gbnf(const char *src, size_t len, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    llm_grammar *gr = NULL;
    int root;

    if (b == NULL) { llm_gerr(err, errlen, "out of memory"); return NULL; }
    root = parse_into(b, "", src, len, err, errlen);
    if (root >= 0) {
        gr = llm_gbuild_finish(b, root, err, errlen);
        if (gr == NULL && err && errlen && strncmp(err, "grammar:", 8) != 0) {
            char tmp[256];
            snprintf(tmp, sizeof(tmp), "grammar: %s", err);
            llm_gerr(err, errlen, "%s", tmp);
        }
    }
    llm_gbuild_free(b);
    return gr;
}
