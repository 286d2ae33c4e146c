/*
 * Jinja parser: tokens -> syntax tree, with Jinja's operator precedence.
 * Everything the interpreter cannot run (unknown tag, filter, test, method
 * or function) is rejected here, so a template fails at model load.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_jinja_int.h"

typedef struct {
    llm_jtok *t;
    size_t    n, i;
    char     *err;
    size_t    errlen;
    int       failed;
    char    **names;      /* global names read */
    size_t    n_names;
    char    **macros;     /* macro names defined */
    size_t    n_macros;
    char    **called;     /* plain function names called, checked at the end */
    int      *called_line;
    size_t    n_called;
    int       depth;      /* nesting of expressions and blocks */
} parser;

#define MAX_NESTING 200

static llm_jnode *parse_expr(parser *p);
static llm_jnode *parse_expr_nocond(parser *p);
static llm_jnode *parse_or(parser *p);
static llm_jnode *parse_unary(parser *p);

static void
perr(parser *p, int line, const char *fmt, ...)
{
    va_list ap;
    int     k;

    if (p->failed) return;
    p->failed = 1;
    if (p->err == NULL || p->errlen == 0) return;
    k = snprintf(p->err, p->errlen, "line %d: ", line);
    if (k < 0 || (size_t) k >= p->errlen) return;
    va_start(ap, fmt);
    vsnprintf(p->err + k, p->errlen - (size_t) k, fmt, ap);
    va_end(ap);
}

static llm_jtok *cur(parser *p) { return &p->t[p->i < p->n ? p->i : p->n - 1]; }
static llm_jtok *peek(parser *p, size_t k) { return &p->t[p->i + k < p->n ? p->i + k : p->n - 1]; }
static void advance(parser *p) { if (p->i < p->n - 1) p->i++; }

static int
is_op(llm_jtok *t, const char *op)
{
    return t->kind == JT_OP && strcmp(t->s, op) == 0;
}

static int
is_name(llm_jtok *t, const char *name)
{
    return t->kind == JT_NAME && strcmp(t->s, name) == 0;
}

static const char *
tokdesc(llm_jtok *t)
{
    switch (t->kind) {
    case JT_NAME: case JT_OP: return t->s;
    case JT_STRING: return "string";
    case JT_INT: case JT_FLOAT: return "number";
    case JT_VAR_END: return "}}";
    case JT_BLOCK_END: return "%}";
    case JT_EOF: return "end of template";
    default: return "text";
    }
}

static int
expect_op(parser *p, const char *op)
{
    if (!is_op(cur(p), op)) {
        perr(p, cur(p)->line, "expected '%s', found '%s'", op, tokdesc(cur(p)));
        return -1;
    }
    advance(p);
    return 0;
}

static llm_jnode *
node(parser *p, llm_jnode_kind kind, int line)
{
    llm_jnode *n = calloc(1, sizeof(*n));

    if (n == NULL) {
        perr(p, line, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->line = line;
    return n;
}

static int
nodes_push(parser *p, llm_jnodes *v, llm_jnode *n)
{
    if (v->n == v->cap) {
        size_t      nc = v->cap ? v->cap * 2 : 4;
        llm_jnode **a = realloc(v->v, nc * sizeof(*a));
        if (a == NULL) {
            perr(p, 0, "out of memory");
            llm_jnode_free(n);
            return -1;
        }
        v->v = a;
        v->cap = nc;
    }
    v->v[v->n++] = n;
    return 0;
}

static char *
sdup(const char *s)
{
    size_t n = strlen(s);
    char  *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void
strlist_add(char ***list, size_t *n, const char *s)
{
    size_t i;
    char **l;

    for (i = 0; i < *n; i++) if (strcmp((*list)[i], s) == 0) return;
    l = realloc(*list, (*n + 1) * sizeof(char *));
    if (l == NULL) return;
    *list = l;
    l[*n] = sdup(s);
    if (l[*n]) (*n)++;
}

void
llm_jnode_free(llm_jnode *n)
{
    size_t i;

    if (n == NULL) return;
    free(n->name);
    if (n->lit) json_decref(n->lit);
    llm_jnode_free(n->a);
    llm_jnode_free(n->b);
    llm_jnode_free(n->c);
    for (i = 0; i < n->args.n; i++) llm_jnode_free(n->args.v[i]);
    for (i = 0; i < n->kwvals.n; i++) llm_jnode_free(n->kwvals.v[i]);
    for (i = 0; n->kwnames && i < n->kwvals.n; i++) free(n->kwnames[i]);
    for (i = 0; i < n->body.n; i++) llm_jnode_free(n->body.v[i]);
    for (i = 0; i < n->orelse.n; i++) llm_jnode_free(n->orelse.v[i]);
    free(n->args.v);
    free(n->kwvals.v);
    free(n->kwnames);
    free(n->body.v);
    free(n->orelse.v);
    free(n);
}

/* ( args ) with keyword arguments; the '(' is current */
static int
parse_call_args(parser *p, llm_jnode *n)
{
    advance(p);
    while (!is_op(cur(p), ")")) {
        llm_jnode *v;
        if (cur(p)->kind == JT_EOF || p->failed) {
            perr(p, cur(p)->line, "unterminated argument list");
            return -1;
        }
        if (cur(p)->kind == JT_NAME && is_op(peek(p, 1), "=")) {
            char **kn = realloc(n->kwnames, (n->kwvals.n + 1) * sizeof(char *));
            if (kn == NULL) return -1;
            n->kwnames = kn;
            kn[n->kwvals.n] = sdup(cur(p)->s);
            advance(p);
            advance(p);
            v = parse_expr(p);
            if (v == NULL || nodes_push(p, &n->kwvals, v)) return -1;
        } else {
            if (n->kwvals.n) {
                perr(p, cur(p)->line, "positional argument after keyword argument");
                return -1;
            }
            v = parse_expr(p);
            if (v == NULL || nodes_push(p, &n->args, v)) return -1;
        }
        if (is_op(cur(p), ",")) advance(p);
        else if (!is_op(cur(p), ")")) {
            perr(p, cur(p)->line, "expected ',' or ')' in argument list, found '%s'", tokdesc(cur(p)));
            return -1;
        }
    }
    advance(p);
    return 0;
}

static llm_jnode *
lit(parser *p, int line, json_t *v)
{
    llm_jnode *n = node(p, JN_LIT, line);
    if (n == NULL || v == NULL) {
        json_decref(v);
        llm_jnode_free(n);
        return NULL;
    }
    n->lit = v;
    return n;
}

static llm_jnode *
parse_primary(parser *p)
{
    llm_jtok  *t = cur(p);
    llm_jnode *n;

    if (p->failed) return NULL;
    switch (t->kind) {
    case JT_NAME:
        advance(p);
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True")) return lit(p, t->line, json_true());
        if (!strcmp(t->s, "false") || !strcmp(t->s, "False")) return lit(p, t->line, json_false());
        if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) return lit(p, t->line, json_null());
        n = node(p, JN_NAME, t->line);
        if (n) {
            n->name = sdup(t->s);
            strlist_add(&p->names, &p->n_names, t->s);
        }
        return n;
    case JT_STRING: {
        /* adjacent literals concatenate */
        size_t len = 0, k = p->i;
        char  *buf;
        while (p->t[k].kind == JT_STRING) len += p->t[k++].len;
        buf = malloc(len + 1);
        if (buf == NULL) return NULL;
        len = 0;
        while (cur(p)->kind == JT_STRING) {
            memcpy(buf + len, cur(p)->s, cur(p)->len);
            len += cur(p)->len;
            advance(p);
        }
        n = lit(p, t->line, json_stringn_nocheck(buf, len));
        free(buf);
        return n;
    }
    case JT_INT:
        advance(p);
        return lit(p, t->line, json_integer(t->ival));
    case JT_FLOAT:
        advance(p);
        return lit(p, t->line, json_real(t->fval));
    case JT_OP:
        if (is_op(t, "(")) {
            advance(p);
            if (is_op(cur(p), ")")) {
                advance(p);
                return node(p, JN_TUPLE, t->line);
            }
            n = parse_expr(p);
            if (n && is_op(cur(p), ",")) {
                llm_jnode *tu = node(p, JN_TUPLE, t->line);
                if (tu == NULL || nodes_push(p, &tu->args, n)) return NULL;
                while (is_op(cur(p), ",")) {
                    advance(p);
                    if (is_op(cur(p), ")")) break;
                    n = parse_expr(p);
                    if (n == NULL || nodes_push(p, &tu->args, n)) { llm_jnode_free(tu); return NULL; }
                }
                n = tu;
            }
            if (expect_op(p, ")")) { llm_jnode_free(n); return NULL; }
            return n;
        }
        if (is_op(t, "[")) {
            n = node(p, JN_LIST, t->line);
            advance(p);
            while (n && !is_op(cur(p), "]")) {
                llm_jnode *item = parse_expr(p);
                if (item == NULL || nodes_push(p, &n->args, item)) { llm_jnode_free(n); return NULL; }
                if (is_op(cur(p), ",")) advance(p);
                else if (!is_op(cur(p), "]")) { perr(p, cur(p)->line, "expected ',' or ']' in list, found '%s'", tokdesc(cur(p))); llm_jnode_free(n); return NULL; }
            }
            advance(p);
            return n;
        }
        if (is_op(t, "{")) {
            n = node(p, JN_DICT, t->line);
            advance(p);
            while (n && !is_op(cur(p), "}")) {
                llm_jnode *k = parse_expr(p), *v;
                if (k == NULL || nodes_push(p, &n->args, k) || expect_op(p, ":")) { llm_jnode_free(n); return NULL; }
                v = parse_expr(p);
                if (v == NULL || nodes_push(p, &n->kwvals, v)) { llm_jnode_free(n); return NULL; }
                if (is_op(cur(p), ",")) advance(p);
                else if (!is_op(cur(p), "}")) { perr(p, cur(p)->line, "expected ',' or '}' in dict, found '%s'", tokdesc(cur(p))); llm_jnode_free(n); return NULL; }
            }
            advance(p);
            return n;
        }
        break;
    default:
        break;
    }
    perr(p, t->line, "unexpected '%s' in expression", tokdesc(t));
    return NULL;
}

static llm_jnode *
parse_postfix(parser *p, llm_jnode *n)
{
    while (n && !p->failed) {
        llm_jtok *t = cur(p);
        if (is_op(t, ".")) {
            llm_jnode *a;
            advance(p);
            if (cur(p)->kind != JT_NAME && cur(p)->kind != JT_INT) {
                perr(p, t->line, "expected attribute name after '.'");
                llm_jnode_free(n);
                return NULL;
            }
            if (cur(p)->kind == JT_INT) {
                a = node(p, JN_ITEM, t->line);
                if (a) { a->a = n; a->b = lit(p, t->line, json_integer(cur(p)->ival)); }
            } else {
                a = node(p, JN_ATTR, t->line);
                if (a) { a->a = n; a->name = sdup(cur(p)->s); }
            }
            advance(p);
            n = a;
        } else if (is_op(t, "[")) {
            llm_jnode *parts[3] = { NULL, NULL, NULL }, *a;
            int        k = 0, slice = 0;
            advance(p);
            for (;;) {
                if (!is_op(cur(p), ":") && !is_op(cur(p), "]")) {
                    parts[k] = parse_expr(p);
                    if (parts[k] == NULL) break;
                }
                if (is_op(cur(p), ":") && k < 2) {
                    slice = 1;
                    k++;
                    advance(p);
                    continue;
                }
                break;
            }
            if (p->failed || expect_op(p, "]")) {
                llm_jnode_free(parts[0]); llm_jnode_free(parts[1]); llm_jnode_free(parts[2]);
                llm_jnode_free(n);
                return NULL;
            }
            a = node(p, slice ? JN_SLICE : JN_ITEM, t->line);
            if (a == NULL) return NULL;
            a->a = n;
            if (slice) {
                a->b = parts[0];
                a->c = parts[1];
                if (parts[2]) nodes_push(p, &a->args, parts[2]);
            } else {
                a->b = parts[0];
                if (a->b == NULL) { perr(p, t->line, "empty subscript"); llm_jnode_free(a); return NULL; }
            }
            n = a;
        } else if (is_op(t, "(")) {
            llm_jnode *c = node(p, JN_CALL, t->line);
            if (c == NULL) return NULL;
            c->a = n;
            n = c;
            if (parse_call_args(p, c)) { llm_jnode_free(c); return NULL; }
            if (c->a->kind == JN_ATTR) {
                c->builtin.method = llm_jmethod_find(c->a->name);
                if (c->builtin.method == NULL) {
                    perr(p, t->line, "unsupported method '%s()'", c->a->name);
                    llm_jnode_free(c);
                    return NULL;
                }
            } else if (c->a->kind == JN_NAME && (c->builtin.global = llm_jglobal_find(c->a->name)) == NULL) {
                /* a macro, or a name render() reports when it is not one */
                char **l = realloc(p->called, (p->n_called + 1) * sizeof(char *));
                int   *ln = realloc(p->called_line, (p->n_called + 1) * sizeof(int));
                if (l) p->called = l;
                if (ln) p->called_line = ln;
                if (l && ln) {
                    l[p->n_called] = sdup(c->a->name);
                    ln[p->n_called] = t->line;
                    p->n_called++;
                }
            }
        } else {
            break;
        }
    }
    return n;
}

static int
starts_test_arg(llm_jtok *t)
{
    static const char *stop[] = { "and", "or", "else", "if", "not", "in", "is", NULL };
    const char       **s;

    if (t->kind == JT_STRING || t->kind == JT_INT || t->kind == JT_FLOAT) return 1;
    if (t->kind != JT_NAME) return 0;
    for (s = stop; *s; s++) if (strcmp(t->s, *s) == 0) return 0;
    return 1;
}

static llm_jnode *
parse_filter_expr(parser *p, llm_jnode *n)
{
    while (n && !p->failed) {
        llm_jtok *t = cur(p);
        if (is_op(t, "|")) {
            const llm_jfilter_def *fd;
            llm_jnode             *f;
            advance(p);
            if (cur(p)->kind != JT_NAME) { perr(p, t->line, "expected filter name after '|'"); llm_jnode_free(n); return NULL; }
            fd = llm_jfilter_find(cur(p)->s);
            if (fd == NULL) { perr(p, t->line, "unknown filter '%s'", cur(p)->s); llm_jnode_free(n); return NULL; }
            f = node(p, JN_FILTER, t->line);
            if (f == NULL) return NULL;
            f->name = sdup(cur(p)->s);
            f->builtin.filter = fd;
            f->a = n;
            n = f;
            advance(p);
            if (is_op(cur(p), "(") && parse_call_args(p, f)) { llm_jnode_free(f); return NULL; }
        } else if (is_name(t, "is")) {
            llm_jnode *te = node(p, JN_TEST, t->line);
            if (te == NULL) return NULL;
            te->a = n;
            n = te;
            advance(p);
            if (is_name(cur(p), "not")) { te->op = 1; advance(p); }
            if (cur(p)->kind != JT_NAME) { perr(p, t->line, "expected test name after 'is'"); llm_jnode_free(n); return NULL; }
            te->builtin.test = llm_jtest_find(cur(p)->s);
            if (te->builtin.test == NULL) { perr(p, t->line, "unknown test '%s'", cur(p)->s); llm_jnode_free(n); return NULL; }
            te->name = sdup(cur(p)->s);
            advance(p);
            if (is_op(cur(p), "(")) {
                if (parse_call_args(p, te)) { llm_jnode_free(n); return NULL; }
            } else if (starts_test_arg(cur(p))) {
                llm_jnode *arg = parse_postfix(p, parse_primary(p));
                if (arg == NULL || nodes_push(p, &te->args, arg)) { llm_jnode_free(n); return NULL; }
            }
        } else {
            break;
        }
    }
    return n;
}

/* unary minus binds tighter than filters: -x|abs is abs(-x) */
static llm_jnode *
parse_unary_f(parser *p, int with_filter)
{
    llm_jtok  *t = cur(p);
    llm_jnode *n;

    if (is_op(t, "-") || is_op(t, "+")) {
        advance(p);
        if (p->depth > MAX_NESTING) {
            perr(p, t->line, "expression nested too deeply");
            return NULL;
        }
        n = node(p, is_op(t, "-") ? JN_NEG : JN_POS, t->line);
        if (n == NULL) return NULL;
        p->depth++;
        n->a = parse_unary_f(p, 0);
        p->depth--;
        if (n->a == NULL) { llm_jnode_free(n); return NULL; }
    } else {
        n = parse_postfix(p, parse_primary(p));
    }
    return with_filter ? parse_filter_expr(p, n) : n;
}

static llm_jnode *
parse_unary(parser *p)
{
    return parse_unary_f(p, 1);
}

static llm_jnode *
binary(parser *p, llm_jnode_kind kind, int op, int line, llm_jnode *l, llm_jnode *r)
{
    llm_jnode *n;

    if (l == NULL || r == NULL) {
        llm_jnode_free(l);
        llm_jnode_free(r);
        return NULL;
    }
    n = node(p, kind, line);
    if (n == NULL) { llm_jnode_free(l); llm_jnode_free(r); return NULL; }
    n->op = op;
    n->a = l;
    n->b = r;
    return n;
}

static llm_jnode *
parse_pow(parser *p)
{
    llm_jnode *n = parse_unary(p);
    while (n && is_op(cur(p), "**")) {
        int line = cur(p)->line;
        advance(p);
        n = binary(p, JN_BIN, JOP_POW, line, n, parse_unary(p));
    }
    return n;
}

static llm_jnode *
parse_math2(parser *p)
{
    llm_jnode *n = parse_pow(p);
    for (;;) {
        llm_jtok *t = cur(p);
        int       op = is_op(t, "*") ? JOP_MUL : is_op(t, "/") ? JOP_DIV : is_op(t, "//") ? JOP_FDIV : is_op(t, "%") ? JOP_MOD : 0;
        if (!n || !op) return n;
        advance(p);
        n = binary(p, JN_BIN, op, t->line, n, parse_pow(p));
    }
}

static llm_jnode *
parse_concat(parser *p)
{
    llm_jnode *n = parse_math2(p);
    while (n && is_op(cur(p), "~")) {
        int line = cur(p)->line;
        advance(p);
        n = binary(p, JN_BIN, JOP_CONCAT, line, n, parse_math2(p));
    }
    return n;
}

static llm_jnode *
parse_math1(parser *p)
{
    llm_jnode *n = parse_concat(p);
    for (;;) {
        llm_jtok *t = cur(p);
        int       op = is_op(t, "+") ? JOP_ADD : is_op(t, "-") ? JOP_SUB : 0;
        if (!n || !op) return n;
        advance(p);
        n = binary(p, JN_BIN, op, t->line, n, parse_concat(p));
    }
}

static llm_jnode *
parse_compare(parser *p)
{
    llm_jnode *n = parse_math1(p);
    for (;;) {
        llm_jtok *t = cur(p);
        int       op = 0;
        if (!n) return NULL;
        if (is_op(t, "==")) op = JOP_EQ;
        else if (is_op(t, "!=")) op = JOP_NE;
        else if (is_op(t, "<")) op = JOP_LT;
        else if (is_op(t, "<=")) op = JOP_LE;
        else if (is_op(t, ">")) op = JOP_GT;
        else if (is_op(t, ">=")) op = JOP_GE;
        else if (is_name(t, "in")) op = JOP_IN;
        else if (is_name(t, "not") && is_name(peek(p, 1), "in")) { op = JOP_NOTIN; advance(p); }
        if (!op) return n;
        advance(p);
        n = binary(p, JN_CMP, op, t->line, n, parse_math1(p));
    }
}

static llm_jnode *
parse_not(parser *p)
{
    if (is_name(cur(p), "not")) {
        llm_jnode *n;
        if (p->depth > MAX_NESTING) {
            perr(p, cur(p)->line, "expression nested too deeply");
            return NULL;
        }
        n = node(p, JN_NOT, cur(p)->line);
        advance(p);
        if (n == NULL) return NULL;
        p->depth++;
        n->a = parse_not(p);
        p->depth--;
        if (n->a == NULL) { llm_jnode_free(n); return NULL; }
        return n;
    }
    return parse_compare(p);
}

static llm_jnode *
parse_and(parser *p)
{
    llm_jnode *n = parse_not(p);
    while (n && is_name(cur(p), "and")) {
        int line = cur(p)->line;
        advance(p);
        n = binary(p, JN_AND, 0, line, n, parse_not(p));
    }
    return n;
}

static llm_jnode *
parse_or(parser *p)
{
    llm_jnode *n = parse_and(p);
    while (n && is_name(cur(p), "or")) {
        int line = cur(p)->line;
        advance(p);
        n = binary(p, JN_OR, 0, line, n, parse_and(p));
    }
    return n;
}

static llm_jnode *parse_expr_inner(parser *p);

/* every nested construct passes through here: bound the recursion */
static llm_jnode *
parse_expr(parser *p)
{
    llm_jnode *n;

    if (++p->depth > MAX_NESTING) {
        perr(p, cur(p)->line, "expression nested too deeply");
        p->depth--;
        return NULL;
    }
    n = parse_expr_inner(p);
    p->depth--;
    return n;
}

static llm_jnode *
parse_expr_inner(parser *p)
{
    llm_jnode *n = parse_or(p);

    while (n && is_name(cur(p), "if")) {
        llm_jnode *c = node(p, JN_COND, cur(p)->line);
        if (c == NULL) { llm_jnode_free(n); return NULL; }
        advance(p);
        c->a = n;
        c->b = parse_or(p);
        if (c->b == NULL) { llm_jnode_free(c); return NULL; }
        if (is_name(cur(p), "else")) {
            advance(p);
            c->c = parse_expr(p);
            if (c->c == NULL) { llm_jnode_free(c); return NULL; }
        }
        n = c;
    }
    return n;
}

static llm_jnode *
parse_expr_nocond(parser *p)
{
    return parse_or(p);
}

/* ---- statements ---- */

static int parse_body(parser *p, const char *const *ends, llm_jnodes *out, const char *opener, int open_line);

static int
expect_block_end(parser *p, const char *tag)
{
    if (cur(p)->kind != JT_BLOCK_END) {
        perr(p, cur(p)->line, "unexpected '%s' in '%s' tag", tokdesc(cur(p)), tag);
        return -1;
    }
    advance(p);
    return 0;
}

static llm_jnode *
parse_if(parser *p, int line)
{
    static const char *const ends[] = { "elif", "else", "endif", NULL };
    llm_jnode *n = node(p, JN_IF, line);
    int        which;

    if (n == NULL) return NULL;
    n->a = parse_expr(p);
    if (n->a == NULL || expect_block_end(p, "if")) { llm_jnode_free(n); return NULL; }
    which = parse_body(p, ends, &n->body, "if", line);
    if (which < 0) { llm_jnode_free(n); return NULL; }
    if (which == 0) {
        llm_jnode *e = parse_if(p, cur(p)->line);
        if (e == NULL || nodes_push(p, &n->orelse, e)) { llm_jnode_free(n); return NULL; }
        return n;
    }
    if (which == 1) {
        static const char *const ends2[] = { "endif", NULL };
        if (expect_block_end(p, "else") || parse_body(p, ends2, &n->orelse, "if", line) < 0) { llm_jnode_free(n); return NULL; }
    }
    if (expect_block_end(p, "endif")) { llm_jnode_free(n); return NULL; }
    return n;
}

static llm_jnode *
parse_for(parser *p, int line)
{
    static const char *const ends[] = { "else", "endfor", NULL };
    llm_jnode *n = node(p, JN_FOR, line);
    int        which;

    if (n == NULL) return NULL;
    do {
        llm_jnode *t;
        if (is_op(cur(p), ",")) advance(p);
        if (is_op(cur(p), "(")) advance(p);
        if (cur(p)->kind != JT_NAME) { perr(p, cur(p)->line, "expected loop variable in 'for'"); llm_jnode_free(n); return NULL; }
        t = node(p, JN_NAME, cur(p)->line);
        if (t == NULL) { llm_jnode_free(n); return NULL; }
        t->name = sdup(cur(p)->s);
        if (nodes_push(p, &n->args, t)) { llm_jnode_free(n); return NULL; }
        advance(p);
        if (is_op(cur(p), ")")) advance(p);
    } while (is_op(cur(p), ","));
    if (!is_name(cur(p), "in")) { perr(p, cur(p)->line, "expected 'in' in 'for'"); llm_jnode_free(n); return NULL; }
    advance(p);
    n->a = parse_expr_nocond(p);
    if (n->a == NULL) { llm_jnode_free(n); return NULL; }
    if (is_name(cur(p), "if")) {
        advance(p);
        n->b = parse_expr_nocond(p);
        if (n->b == NULL) { llm_jnode_free(n); return NULL; }
    }
    if (is_name(cur(p), "recursive")) { perr(p, cur(p)->line, "recursive loops are not supported"); llm_jnode_free(n); return NULL; }
    if (expect_block_end(p, "for")) { llm_jnode_free(n); return NULL; }
    which = parse_body(p, ends, &n->body, "for", line);
    if (which < 0) { llm_jnode_free(n); return NULL; }
    if (which == 0) {
        static const char *const ends2[] = { "endfor", NULL };
        if (expect_block_end(p, "else") || parse_body(p, ends2, &n->orelse, "for", line) < 0) { llm_jnode_free(n); return NULL; }
    }
    if (expect_block_end(p, "endfor")) { llm_jnode_free(n); return NULL; }
    return n;
}

static llm_jnode *
parse_set(parser *p, int line)
{
    llm_jnode *n;

    if (cur(p)->kind != JT_NAME) { perr(p, line, "expected a name after 'set'"); return NULL; }
    if (is_op(peek(p, 1), ".")) {   /* set ns.attr = value */
        n = node(p, JN_SET_ATTR, line);
        if (n == NULL) return NULL;
        n->a = node(p, JN_NAME, line);
        if (n->a == NULL) { llm_jnode_free(n); return NULL; }
        n->a->name = sdup(cur(p)->s);
        strlist_add(&p->names, &p->n_names, cur(p)->s);
        advance(p);
        advance(p);
        if (cur(p)->kind != JT_NAME) { perr(p, line, "expected attribute name in 'set'"); llm_jnode_free(n); return NULL; }
        n->name = sdup(cur(p)->s);
        advance(p);
        if (expect_op(p, "=")) { llm_jnode_free(n); return NULL; }
        n->b = parse_expr(p);
        if (n->b == NULL || expect_block_end(p, "set")) { llm_jnode_free(n); return NULL; }
        return n;
    }
    n = node(p, JN_SET, line);
    if (n == NULL) return NULL;
    while (cur(p)->kind == JT_NAME) {
        llm_jnode *t = node(p, JN_NAME, line);
        if (t == NULL) { llm_jnode_free(n); return NULL; }
        t->name = sdup(cur(p)->s);
        if (nodes_push(p, &n->args, t)) { llm_jnode_free(n); return NULL; }
        advance(p);
        if (!is_op(cur(p), ",")) break;
        advance(p);
    }
    if (cur(p)->kind == JT_BLOCK_END && n->args.n == 1) {   /* block set */
        static const char *const ends[] = { "endset", NULL };
        n->kind = JN_SET_BLOCK;
        advance(p);
        if (parse_body(p, ends, &n->body, "set", line) < 0 || expect_block_end(p, "endset")) { llm_jnode_free(n); return NULL; }
        return n;
    }
    if (expect_op(p, "=")) { llm_jnode_free(n); return NULL; }
    n->b = parse_expr(p);
    if (n->b && is_op(cur(p), ",")) {   /* set a, b = x, y */
        llm_jnode *tu = node(p, JN_TUPLE, line);
        if (tu == NULL || nodes_push(p, &tu->args, n->b)) { llm_jnode_free(n); return NULL; }
        n->b = tu;
        while (is_op(cur(p), ",")) {
            llm_jnode *e;
            advance(p);
            e = parse_expr(p);
            if (e == NULL || nodes_push(p, &tu->args, e)) { llm_jnode_free(n); return NULL; }
        }
    }
    if (n->b == NULL || expect_block_end(p, "set")) { llm_jnode_free(n); return NULL; }
    return n;
}

/* macro parameters: (a, b=default, ...) into n->args (names) and n->kwvals (defaults or NULL) */
static int
parse_params(parser *p, llm_jnode *n)
{
    if (expect_op(p, "(")) return -1;
    while (!is_op(cur(p), ")")) {
        llm_jnode *t, *d = NULL;
        if (cur(p)->kind != JT_NAME) { perr(p, cur(p)->line, "expected parameter name"); return -1; }
        t = node(p, JN_NAME, cur(p)->line);
        if (t == NULL) return -1;
        t->name = sdup(cur(p)->s);
        if (nodes_push(p, &n->args, t)) return -1;
        advance(p);
        if (is_op(cur(p), "=")) {
            advance(p);
            d = parse_expr(p);
            if (d == NULL) return -1;
        }
        if (n->kwvals.n == n->kwvals.cap) {
            size_t      nc = n->kwvals.cap ? n->kwvals.cap * 2 : 4;
            llm_jnode **a = realloc(n->kwvals.v, nc * sizeof(*a));
            if (a == NULL) { llm_jnode_free(d); return -1; }
            n->kwvals.v = a;
            n->kwvals.cap = nc;
        }
        n->kwvals.v[n->kwvals.n++] = d;
        if (is_op(cur(p), ",")) advance(p);
        else if (!is_op(cur(p), ")")) { perr(p, cur(p)->line, "expected ',' or ')' in parameters"); return -1; }
    }
    advance(p);
    return 0;
}

static llm_jnode *
parse_macro(parser *p, int line)
{
    static const char *const ends[] = { "endmacro", NULL };
    llm_jnode *n = node(p, JN_MACRO, line);

    if (n == NULL) return NULL;
    if (cur(p)->kind != JT_NAME) { perr(p, line, "expected macro name"); llm_jnode_free(n); return NULL; }
    n->name = sdup(cur(p)->s);
    strlist_add(&p->macros, &p->n_macros, cur(p)->s);
    advance(p);
    if (parse_params(p, n) || expect_block_end(p, "macro")
        || parse_body(p, ends, &n->body, "macro", line) < 0 || expect_block_end(p, "endmacro"))
    {
        llm_jnode_free(n);
        return NULL;
    }
    return n;
}

static llm_jnode *
parse_callblock(parser *p, int line)
{
    static const char *const ends[] = { "endcall", NULL };
    llm_jnode *n = node(p, JN_CALLBLOCK, line);

    if (n == NULL) return NULL;
    if (is_op(cur(p), "(") && parse_params(p, n)) { llm_jnode_free(n); return NULL; }
    n->a = parse_expr(p);
    if (n->a == NULL || n->a->kind != JN_CALL) {
        if (n->a) perr(p, line, "'call' needs a macro call");
        llm_jnode_free(n);
        return NULL;
    }
    if (expect_block_end(p, "call") || parse_body(p, ends, &n->body, "call", line) < 0 || expect_block_end(p, "endcall")) {
        llm_jnode_free(n);
        return NULL;
    }
    return n;
}

static llm_jnode *
parse_filterblock(parser *p, int line)
{
    static const char *const ends[] = { "endfilter", NULL };
    llm_jnode *n = node(p, JN_FILTERBLOCK, line), *chain = NULL;

    if (n == NULL) return NULL;
    for (;;) {
        llm_jnode *f;
        if (cur(p)->kind != JT_NAME || llm_jfilter_find(cur(p)->s) == NULL) {
            perr(p, line, "unknown filter '%s'", tokdesc(cur(p)));
            llm_jnode_free(chain);
            llm_jnode_free(n);
            return NULL;
        }
        f = node(p, JN_FILTER, line);
        if (f == NULL) { llm_jnode_free(chain); llm_jnode_free(n); return NULL; }
        f->name = sdup(cur(p)->s);
        f->builtin.filter = llm_jfilter_find(cur(p)->s);
        f->a = chain;   /* NULL innermost: the block's text */
        chain = f;
        advance(p);
        if (is_op(cur(p), "(") && parse_call_args(p, f)) { llm_jnode_free(chain); llm_jnode_free(n); return NULL; }
        if (!is_op(cur(p), "|")) break;
        advance(p);
    }
    n->a = chain;
    if (expect_block_end(p, "filter") || parse_body(p, ends, &n->body, "filter", line) < 0 || expect_block_end(p, "endfilter")) {
        llm_jnode_free(n);
        return NULL;
    }
    return n;
}

/*
 * Statements until one of the end tags; returns its index with the tag name
 * consumed (the caller reads the rest of that tag), -1 on error.
 */
static int parse_body_inner(parser *p, const char *const *ends, llm_jnodes *out, const char *opener, int open_line);

static int
parse_body(parser *p, const char *const *ends, llm_jnodes *out, const char *opener, int open_line)
{
    int rc;

    if (++p->depth > MAX_NESTING) {
        perr(p, open_line, "blocks nested too deeply");
        p->depth--;
        return -1;
    }
    rc = parse_body_inner(p, ends, out, opener, open_line);
    p->depth--;
    return rc;
}

static int
parse_body_inner(parser *p, const char *const *ends, llm_jnodes *out, const char *opener, int open_line)
{
    while (!p->failed) {
        llm_jtok  *t = cur(p);
        llm_jnode *n = NULL;

        if (t->kind == JT_EOF) {
            if (ends && ends[0]) {
                size_t last = 0;
                while (ends[last + 1]) last++;
                perr(p, open_line, "'%s' block is never closed (expected '%s')", opener, ends[last]);
                return -1;
            }
            return 0;
        }
        if (t->kind == JT_TEXT) {
            n = node(p, JN_TEXT, t->line);
            if (n) n->lit = json_stringn_nocheck(t->s, t->len);
            advance(p);
        } else if (t->kind == JT_VAR_BEGIN) {
            advance(p);
            n = node(p, JN_OUT, t->line);
            if (n) n->a = parse_expr(p);
            if (n && n->a && cur(p)->kind != JT_VAR_END) {
                perr(p, cur(p)->line, "unexpected '%s' in '{{ }}'", tokdesc(cur(p)));
            }
            advance(p);
        } else if (t->kind == JT_BLOCK_BEGIN) {
            llm_jtok   *name;
            const char *tag;
            size_t      k;
            advance(p);
            name = cur(p);
            if (name->kind != JT_NAME) { perr(p, name->line, "expected a tag name after '{%%'"); return -1; }
            tag = name->s;
            for (k = 0; ends && ends[k]; k++) {
                if (strcmp(tag, ends[k]) == 0) {
                    advance(p);
                    return (int) k;
                }
            }
            advance(p);
            if (!strcmp(tag, "if")) n = parse_if(p, name->line);
            else if (!strcmp(tag, "for")) n = parse_for(p, name->line);
            else if (!strcmp(tag, "set")) n = parse_set(p, name->line);
            else if (!strcmp(tag, "macro")) n = parse_macro(p, name->line);
            else if (!strcmp(tag, "call")) n = parse_callblock(p, name->line);
            else if (!strcmp(tag, "filter")) n = parse_filterblock(p, name->line);
            else if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
                n = node(p, tag[0] == 'b' ? JN_BREAK : JN_CONTINUE, name->line);
                if (n && expect_block_end(p, tag)) { llm_jnode_free(n); n = NULL; }
            } else if (!strcmp(tag, "generation")) {
                static const char *const gends[] = { "endgeneration", NULL };
                n = node(p, JN_BODY, name->line);
                if (n && (expect_block_end(p, tag) || parse_body(p, gends, &n->body, "generation", name->line) < 0
                          || expect_block_end(p, "endgeneration")))
                {
                    llm_jnode_free(n);
                    n = NULL;
                }
            } else {
                perr(p, name->line, "unknown tag '%s'%s", tag,
                     ends && ends[0] ? "" : " (or an end tag without its opening tag)");
                return -1;
            }
        } else {
            perr(p, t->line, "unexpected '%s'", tokdesc(t));
            return -1;
        }
        if (n == NULL) {
            if (!p->failed) perr(p, t->line, "out of memory");
            return -1;
        }
        if (nodes_push(p, out, n)) return -1;
    }
    return -1;
}

llm_jnode *
llm_jinja_parse(llm_jtok *toks, size_t n, char ***names, size_t *n_names, char *err, size_t errlen)
{
    parser     p;
    llm_jnode *root;
    size_t     i, k;

    memset(&p, 0, sizeof(p));
    p.t = toks;
    p.n = n;
    p.err = err;
    p.errlen = errlen;
    root = node(&p, JN_BODY, 1);
    if (root != NULL && parse_body(&p, NULL, &root->body, "template", 1) < 0) {
        llm_jnode_free(root);
        root = NULL;
    }
    if (root != NULL) {
        for (i = 0; i < p.n_called; i++) {
            int found = 0;
            for (k = 0; k < p.n_macros; k++) if (strcmp(p.called[i], p.macros[k]) == 0) found = 1;
            if (!found && strcmp(p.called[i], "caller") != 0) {
                perr(&p, p.called_line[i], "unknown function '%s()'", p.called[i]);
                llm_jnode_free(root);
                root = NULL;
                break;
            }
        }
    }
    for (i = 0; i < p.n_called; i++) free(p.called[i]);
    free(p.called);
    free(p.called_line);
    for (i = 0; i < p.n_macros; i++) free(p.macros[i]);
    free(p.macros);
    if (root == NULL) {
        for (i = 0; i < p.n_names; i++) free(p.names[i]);
        free(p.names);
        return NULL;
    }
    *names = p.names;
    *n_names = p.n_names;
    return root;
}
