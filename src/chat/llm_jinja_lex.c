/*
 * Jinja lexer: template text -> TEXT / tag delimiters / expression tokens,
 * with whitespace control applied here ({%- -%}, {{- -}}, trim_blocks,
 * lstrip_blocks, {%+ +%}) so the parser sees final text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_jinja_int.h"

typedef struct {
    llm_jtok *v;
    size_t    n, cap;
} tokvec;

static int
push(tokvec *tv, llm_jtok_kind kind, int line, const char *s, size_t len)
{
    llm_jtok *t;

    if (tv->n == tv->cap) {
        size_t    nc = tv->cap ? tv->cap * 2 : 256;
        llm_jtok *p = realloc(tv->v, nc * sizeof(llm_jtok));
        if (p == NULL) return -1;
        tv->v = p;
        tv->cap = nc;
    }
    t = &tv->v[tv->n++];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->line = line;
    if (s != NULL) {
        t->s = malloc(len + 1);
        if (t->s == NULL) return -1;
        memcpy(t->s, s, len);
        t->s[len] = '\0';
        t->len = len;
    }
    return 0;
}

static int
count_lines(const char *s, size_t a, size_t b)
{
    int n = 0;
    for (; a < b; a++) if (s[a] == '\n') n++;
    return n;
}

static int
is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

#define LEXERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

/* decode a quoted string at s[i] (quote char q); returns index after the closing quote or 0 */
static size_t
lex_string(const char *s, size_t n, size_t i, char **out, size_t *outlen)
{
    char   q = s[i];
    char  *o = malloc(n - i + 1);
    size_t j = 0;

    if (o == NULL) return 0;
    for (i++; i < n && s[i] != q; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            c = s[++i];
            switch (c) {
            case 'n': o[j++] = '\n'; break;
            case 't': o[j++] = '\t'; break;
            case 'r': o[j++] = '\r'; break;
            case '\\': o[j++] = '\\'; break;
            case '\'': o[j++] = '\''; break;
            case '"': o[j++] = '"'; break;
            case 'u': case 'x': case 'U': {
                int      digits = c == 'x' ? 2 : c == 'u' ? 4 : 8, k;
                uint32_t cp = 0;
                for (k = 0; k < digits && i + 1 < n; k++) {
                    char h = s[++i];
                    cp = cp * 16 + (uint32_t) (h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
                }
                if (cp < 0x80) o[j++] = (char) cp;
                else if (cp < 0x800) { o[j++] = (char) (0xC0 | (cp >> 6)); o[j++] = (char) (0x80 | (cp & 0x3F)); }
                else if (cp < 0x10000) { o[j++] = (char) (0xE0 | (cp >> 12)); o[j++] = (char) (0x80 | ((cp >> 6) & 0x3F)); o[j++] = (char) (0x80 | (cp & 0x3F)); }
                else { o[j++] = (char) (0xF0 | (cp >> 18)); o[j++] = (char) (0x80 | ((cp >> 12) & 0x3F)); o[j++] = (char) (0x80 | ((cp >> 6) & 0x3F)); o[j++] = (char) (0x80 | (cp & 0x3F)); }
                break;
            }
            default: o[j++] = '\\'; o[j++] = c; break;
            }
        } else {
            o[j++] = c;
        }
    }
    if (i >= n) {
        free(o);
        return 0;
    }
    o[j] = '\0';
    *out = o;
    *outlen = j;
    return i + 1;
}

static const char *OPS[] = {
    "**", "//", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "~", "|",
    ".", ",", ":", "(", ")", "[", "]", "{", "}", "=", NULL
};

int
llm_jinja_lex(const char *s, size_t n, int flags, llm_jtok **toks, size_t *ntoks,
              char *err, size_t errlen)
{
    tokvec tv = { 0 };
    size_t pos = 0;
    int    line = 1;
    int    lstrip_next = 0;   /* previous tag ended with '-': strip leading whitespace */
    int    trim_next = 0;     /* previous block/comment tag: drop one newline (trim_blocks) */

    /* Jinja drops one trailing newline of the template (keep_trailing_newline off) */
    if (n > 0 && s[n - 1] == '\n') {
        n--;
        if (n > 0 && s[n - 1] == '\r') n--;
    }
    while (pos <= n) {
        size_t k = pos, text_end, tag;
        char   kind = 0;

        while (k + 1 < n && !(s[k] == '{' && (s[k + 1] == '{' || s[k + 1] == '%' || s[k + 1] == '#'))) k++;
        if (k + 1 >= n) k = n;
        else kind = s[k + 1];
        text_end = k;

        /* text [pos, text_end) with whitespace control */
        {
            size_t a = pos, b = text_end;
            if (lstrip_next) {
                while (a < b && is_ws(s[a])) a++;
            } else if (trim_next) {
                if (a < b && s[a] == '\n') a++;
                else if (a + 1 < b && s[a] == '\r' && s[a + 1] == '\n') a += 2;
            }
            if (kind && k + 2 < n && s[k + 2] == '-') {
                while (b > a && is_ws(s[b - 1])) b--;
            } else if (kind && kind != '{' && (flags & LLM_JINJA_LSTRIP_BLOCKS) && !(k + 2 < n && s[k + 2] == '+')) {
                size_t c = b;
                while (c > a && (s[c - 1] == ' ' || s[c - 1] == '\t')) c--;
                if (c == 0 || s[c - 1] == '\n') b = c;
            }
            if (b > a && push(&tv, JT_TEXT, line + count_lines(s, pos, a), s + a, b - a)) goto oom;
        }
        line += count_lines(s, pos, text_end);
        if (kind == 0) break;

        tag = k + 2;
        if (tag < n && (s[tag] == '-' || s[tag] == '+')) tag++;
        lstrip_next = trim_next = 0;

        if (kind == '#') {
            size_t e = tag;
            while (e + 1 < n && !(s[e] == '#' && s[e + 1] == '}')) e++;
            if (e + 1 >= n) {
                if (err) snprintf(err, errlen, "line %d: unterminated comment", line);
                goto fail;
            }
            if (e > tag && s[e - 1] == '-') lstrip_next = 1;
            else if ((flags & LLM_JINJA_TRIM_BLOCKS) && !(e > tag && s[e - 1] == '+')) trim_next = 1;
            line += count_lines(s, k, e + 2);
            pos = e + 2;
            continue;
        }

        /* raw block: {% raw %} ... {% endraw %} */
        if (kind == '%') {
            size_t q = tag;
            while (q < n && is_ws(s[q])) q++;
            if (q + 3 <= n && memcmp(s + q, "raw", 3) == 0 && (q + 3 == n || !(s[q + 3] == '_' || (s[q + 3] >= 'a' && s[q + 3] <= 'z')))) {
                const char *end = NULL;
                size_t      body, e, scan;
                q += 3;
                while (q < n && is_ws(s[q])) q++;
                if (q < n && (s[q] == '-' || s[q] == '+')) q++;
                if (q + 1 >= n || s[q] != '%' || s[q + 1] != '}') LEXERR("line %d: malformed raw tag", line);
                body = q + 2;
                for (scan = body; scan + 1 < n; scan++) {
                    if (s[scan] == '{' && s[scan + 1] == '%') {
                        size_t r = scan + 2;
                        if (r < n && (s[r] == '-' || s[r] == '+')) r++;
                        while (r < n && is_ws(s[r])) r++;
                        if (r + 6 <= n && memcmp(s + r, "endraw", 6) == 0) { end = s + scan; break; }
                    }
                }
                if (end == NULL) LEXERR("line %d: raw block without endraw", line);
                e = (size_t) (end - s);
                if (e > body && push(&tv, JT_TEXT, line, s + body, e - body)) goto oom;
                line += count_lines(s, k, e);
                while (e + 1 < n && !(s[e] == '%' && s[e + 1] == '}')) e++;
                if ((flags & LLM_JINJA_TRIM_BLOCKS) && s[e - 1] != '-') trim_next = 1;
                if (s[e - 1] == '-') lstrip_next = 1;
                pos = e + 2;
                continue;
            }
        }

        if (push(&tv, kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, line, NULL, 0)) goto oom;
        {
            size_t i = tag;
            int    depth = 0;
            for (;;) {
                const char **op;
                char         c;
                while (i < n && is_ws(s[i])) {
                    if (s[i] == '\n') line++;
                    i++;
                }
                if (i >= n) LEXERR("line %d: unterminated %s", line, kind == '{' ? "'{{'" : "'{%'");
                c = s[i];
                /* end of tag */
                if (depth == 0 && (c == '-' || c == '+') && i + 2 < n && s[i + 2] == '}'
                    && s[i + 1] == (kind == '{' ? '}' : '%'))
                {
                    /* '-' strips what follows; '+' keeps the newline trim_blocks would drop */
                    if (c == '-') lstrip_next = 1;
                    if (push(&tv, kind == '{' ? JT_VAR_END : JT_BLOCK_END, line, NULL, 0)) goto oom;
                    pos = i + 3;
                    break;
                }
                if (depth == 0 && i + 1 < n && s[i + 1] == '}' && c == (kind == '{' ? '}' : '%')) {
                    if (kind == '%' && (flags & LLM_JINJA_TRIM_BLOCKS)) trim_next = 1;
                    if (push(&tv, kind == '{' ? JT_VAR_END : JT_BLOCK_END, line, NULL, 0)) goto oom;
                    pos = i + 2;
                    break;
                }
                if (c == '\'' || c == '"') {
                    char  *str;
                    size_t sl, e = lex_string(s, n, i, &str, &sl);
                    if (e == 0) LEXERR("line %d: unterminated string", line);
                    if (push(&tv, JT_STRING, line, NULL, 0)) { free(str); goto oom; }
                    tv.v[tv.n - 1].s = str;
                    tv.v[tv.n - 1].len = sl;
                    line += count_lines(s, i, e);
                    i = e;
                    continue;
                }
                if ((c >= '0' && c <= '9')) {
                    size_t e = i;
                    int    isf = 0;
                    char  *num;
                    while (e < n && ((s[e] >= '0' && s[e] <= '9') || s[e] == '_')) e++;
                    if (e + 1 < n && s[e] == '.' && s[e + 1] >= '0' && s[e + 1] <= '9') {
                        isf = 1;
                        e++;
                        while (e < n && s[e] >= '0' && s[e] <= '9') e++;
                    }
                    if (e < n && (s[e] == 'e' || s[e] == 'E')) {
                        size_t f = e + 1;
                        if (f < n && (s[f] == '+' || s[f] == '-')) f++;
                        if (f < n && s[f] >= '0' && s[f] <= '9') {
                            isf = 1;
                            e = f;
                            while (e < n && s[e] >= '0' && s[e] <= '9') e++;
                        }
                    }
                    if (push(&tv, isf ? JT_FLOAT : JT_INT, line, s + i, e - i)) goto oom;
                    num = tv.v[tv.n - 1].s;
                    {   /* drop '_' separators */
                        char *r = num, *w = num;
                        for (; *r; r++) if (*r != '_') *w++ = *r;
                        *w = '\0';
                    }
                    if (isf) tv.v[tv.n - 1].fval = strtod(num, NULL);
                    else tv.v[tv.n - 1].ival = strtoll(num, NULL, 10);
                    i = e;
                    continue;
                }
                if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                    size_t e = i;
                    while (e < n && (s[e] == '_' || (s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') || (s[e] >= '0' && s[e] <= '9'))) e++;
                    if (push(&tv, JT_NAME, line, s + i, e - i)) goto oom;
                    i = e;
                    continue;
                }
                for (op = OPS; *op; op++) {
                    size_t ol = strlen(*op);
                    if (i + ol <= n && memcmp(s + i, *op, ol) == 0) break;
                }
                if (*op == NULL) LEXERR("line %d: unexpected character '%c'", line, c);
                if (strcmp(*op, "(") == 0 || strcmp(*op, "[") == 0 || strcmp(*op, "{") == 0) depth++;
                if (strcmp(*op, ")") == 0 || strcmp(*op, "]") == 0 || strcmp(*op, "}") == 0) depth--;
                if (push(&tv, JT_OP, line, *op, strlen(*op))) goto oom;
                i += strlen(*op);
            }
        }
    }
    if (push(&tv, JT_EOF, line, NULL, 0)) goto oom;
    *toks = tv.v;
    *ntoks = tv.n;
    return 0;
oom:
    if (err) snprintf(err, errlen, "out of memory");
fail:
    llm_jinja_free_tokens(tv.v, tv.n);
    return -1;
}

void
llm_jinja_free_tokens(llm_jtok *t, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) free(t[i].s);
    free(t);
}
