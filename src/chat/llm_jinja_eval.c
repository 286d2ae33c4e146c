/*
 * Jinja evaluator: walks the syntax tree with a stack of scopes.  Every
 * expression returns a new reference (NULL = undefined); errors set
 * st->failed and the message, and unwind.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_jinja_int.h"

#define MAX_DEPTH 64

/* ---- scopes ---- */

static int
push_frame(llm_jstate *st)
{
    json_t *f;

    if (st->n_frames == st->cap_frames) {
        size_t   nc = st->cap_frames ? st->cap_frames * 2 : 8;
        json_t **p = realloc(st->frames, nc * sizeof(json_t *));
        if (p == NULL) return llm_jfail(st, 0, "out of memory");
        st->frames = p;
        st->cap_frames = nc;
    }
    f = json_object();
    if (f == NULL) return llm_jfail(st, 0, "out of memory");
    st->frames[st->n_frames++] = f;
    return 0;
}

static void
pop_frame(llm_jstate *st)
{
    json_decref(st->frames[--st->n_frames]);
}

static json_t *
lookup(llm_jstate *st, const char *name)
{
    size_t  i = st->n_frames;
    json_t *v;

    while (i-- > 0) {
        if ((v = json_object_get(st->frames[i], name)) != NULL) return v;
    }
    return st->ctx ? json_object_get(st->ctx, name) : NULL;
}

static int
set_var(llm_jstate *st, const char *name, json_t *v)
{
    /* json_object_set takes its own reference */
    if (json_object_set(st->frames[st->n_frames - 1], name, v ? v : json_null())) {
        return llm_jfail(st, 0, "out of memory");
    }
    if (v == NULL) {   /* undefined assigned: forget the name */
        json_object_del(st->frames[st->n_frames - 1], name);
    }
    return 0;
}

/* ---- expressions ---- */

static json_t *
str_of(llm_jstate *st, json_t *v)
{
    llm_jbuf b = { 0 };

    llm_jv_str_ex(v, &b, st->tuples);
    return llm_jbuf_take(st, 0, &b);
}

static json_t *
arith(llm_jstate *st, int line, int op, json_t *a, json_t *b)
{
    if (op == JOP_CONCAT) {
        llm_jbuf buf = { 0 };
        if (llm_jv_str_ex(a, &buf, st->tuples) == 0) llm_jv_str_ex(b, &buf, st->tuples);
        return llm_jbuf_take(st, line, &buf);
    }
    if (a == NULL || b == NULL) {
        llm_jfail(st, line, "undefined value in arithmetic");
        return NULL;
    }
    if (op == JOP_MOD && json_is_string(a)) {   /* 'fmt' % value or % (tuple) */
        if (json_is_array(b)) {
            size_t   k, nb = json_array_size(b);
            json_t **items = malloc((nb + 1) * sizeof(json_t *)), *r;
            if (items == NULL) { llm_jfail(st, line, "out of memory"); return NULL; }
            for (k = 0; k < nb; k++) items[k] = json_array_get(b, k);
            r = llm_jpyformat(st, line, a, items, nb);
            free(items);
            return r;
        }
        return llm_jpyformat(st, line, a, &b, 1);
    }
    if (op == JOP_ADD && json_is_string(a) && json_is_string(b)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        char  *s;
        json_t *r;
        if (llm_jcheck_len(st, line, (unsigned long long) la + lb)) return NULL;
        s = malloc(la + lb + 1);
        if (s == NULL) { llm_jfail(st, line, "out of memory"); return NULL; }
        memcpy(s, json_string_value(a), la);
        memcpy(s + la, json_string_value(b), lb);
        r = json_stringn_nocheck(s, la + lb);
        free(s);
        return r;
    }
    if (op == JOP_ADD && json_is_array(a) && json_is_array(b)) {
        json_t *r;
        if (llm_jcheck_items(st, line, (unsigned long long) json_array_size(a) + json_array_size(b))) return NULL;
        r = json_copy(a);
        if (r == NULL || json_array_extend(r, b) != 0) { json_decref(r); llm_jfail(st, line, "out of memory"); return NULL; }
        return r;
    }
    if (op == JOP_MUL && ((json_is_string(a) && json_is_integer(b)) || (json_is_integer(a) && json_is_string(b)))) {
        json_t    *s = json_is_string(a) ? a : b;
        long long  k = json_integer_value(json_is_string(a) ? b : a);
        llm_jbuf   buf = { 0 };
        json_t    *r;
        if (k > 0 && json_string_length(s) > 0 && (unsigned long long) k > LLM_JINJA_MAX_OUTPUT / json_string_length(s)) {
            llm_jfail(st, line, "string repetition exceeds %lu bytes", LLM_JINJA_MAX_OUTPUT);
            return NULL;
        }
        /* one allocation, filled by doubling copies (the size was checked above) */
        if (k > 0 && json_string_length(s) > 0) {
            size_t total = json_string_length(s) * (size_t) k, done = json_string_length(s), more;
            char  *p = malloc(total + 1);
            if (p == NULL) { llm_jfail(st, line, "out of memory"); return NULL; }
            memcpy(p, json_string_value(s), done);
            while (done < total) {
                more = done < total - done ? done : total - done;
                memcpy(p + done, p, more);
                done += more;
            }
            r = json_stringn_nocheck(p, total);
            free(p);
            if (r == NULL) llm_jfail(st, line, "out of memory");
            return r;
        }
        r = llm_jbuf_take(st, line, &buf);
        return r;
    }
    if (!llm_jv_is_number(a) || !llm_jv_is_number(b)) {
        if (op == JOP_ADD && json_is_string(a)) {
            llm_jfail(st, line, "can only concatenate str (not \"%s\") to str", llm_jv_type(b));
        } else if (op == JOP_ADD && json_is_array(a)) {
            llm_jfail(st, line, "can only concatenate list (not \"%s\") to list", llm_jv_type(b));
        } else {
            llm_jfail(st, line, "unsupported operand types for arithmetic: '%s' and '%s'", llm_jv_type(a), llm_jv_type(b));
        }
        return NULL;
    }
    if (!json_is_real(a) && !json_is_real(b) && op != JOP_DIV) {
        /* integers as they are: a trip through double loses bits past 2^53 */
        long long x = json_is_integer(a) ? json_integer_value(a) : (long long) llm_jv_num(a);
        long long y = json_is_integer(b) ? json_integer_value(b) : (long long) llm_jv_num(b), r;
        switch (op) {
        /* Python ints do not overflow; past 64 bits fall back to a float */
        case JOP_ADD: return __builtin_add_overflow(x, y, &r) ? json_real((double) x + (double) y) : json_integer(r);
        case JOP_SUB: return __builtin_sub_overflow(x, y, &r) ? json_real((double) x - (double) y) : json_integer(r);
        case JOP_MUL: return __builtin_mul_overflow(x, y, &r) ? json_real((double) x * (double) y) : json_integer(r);
        case JOP_FDIV:
        case JOP_MOD:
            if (y == 0) { llm_jfail(st, line, "integer division or modulo by zero"); return NULL; }
            if (y == -1) {   /* LLONG_MIN % -1 and LLONG_MIN / -1 trap */
                if (op == JOP_MOD) return json_integer(0);
                return x == LLONG_MIN ? json_real(-(double) x) : json_integer(-x);
            }
            r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            return json_integer(op == JOP_MOD ? r : (x - r) / y);
        case JOP_POW: {
            long long acc = 1, k;
            if (y < 0) return json_real(pow((double) x, (double) y));
            if (x == 0 || x == 1) return json_integer(y == 0 ? 1 : x);
            if (x == -1) return json_integer(y % 2 ? -1 : 1);
            for (k = 0; k < y; k++) {   /* |x| >= 2: overflows within 63 rounds */
                if (__builtin_mul_overflow(acc, x, &acc)) return json_real(pow((double) x, (double) y));
            }
            return json_integer(acc);
        }
        }
    } else {
        double x = llm_jv_num(a), y = llm_jv_num(b);
        switch (op) {
        case JOP_ADD: return json_real(x + y);
        case JOP_SUB: return json_real(x - y);
        case JOP_MUL: return json_real(x * y);
        case JOP_DIV:
            if (y == 0) { llm_jfail(st, line, "division by zero"); return NULL; }
            return json_real(x / y);
        case JOP_FDIV:
            if (y == 0) { llm_jfail(st, line, "float floor division by zero"); return NULL; }
            return json_real(floor(x / y));
        case JOP_MOD:
            if (y == 0) { llm_jfail(st, line, "float modulo"); return NULL; }
            return json_real(x - floor(x / y) * y);
        case JOP_POW: return json_real(pow(x, y));
        }
    }
    llm_jfail(st, line, "bad operator");
    return NULL;
}

static int
contains(llm_jstate *st, int line, json_t *item, json_t *container)
{
    size_t  i;
    json_t *x;

    if (container == NULL) return 0;
    if (json_is_string(container)) {
        size_t      n = json_string_length(container), m;
        const char *h = json_string_value(container), *nd;
        if (!json_is_string(item)) {
            llm_jfail(st, line, "'in <string>' requires string as left operand, not %s", llm_jv_type(item));
            return -1;
        }
        m = json_string_length(item);
        nd = json_string_value(item);
        if (m == 0) return 1;
        for (i = 0; i + m <= n; i++) if (memcmp(h + i, nd, m) == 0) return 1;
        return 0;
    }
    if (json_is_array(container)) {
        json_array_foreach(container, i, x) if (llm_jv_equal(item, x)) return 1;
        return 0;
    }
    if (json_is_object(container)) {
        return json_is_string(item) && json_object_get(container, json_string_value(item)) != NULL;
    }
    llm_jfail(st, line, "argument of type '%s' is not iterable", llm_jv_type(container));
    return -1;
}

static json_t *
compare(llm_jstate *st, llm_jnode *e, json_t *a, json_t *b)
{
    int r, c;

    switch (e->op) {
    case JOP_EQ: return json_boolean(llm_jv_equal(a, b));
    case JOP_NE: return json_boolean(!llm_jv_equal(a, b));
    case JOP_IN:
    case JOP_NOTIN:
        c = contains(st, e->line, a, b);
        if (c < 0) return NULL;
        return json_boolean(e->op == JOP_IN ? c : !c);
    default:
        if (llm_jv_compare(a, b, &r)) {
            llm_jfail(st, e->line, "'%s' not supported between instances of '%s' and '%s'",
                      e->op == JOP_LT ? "<" : e->op == JOP_LE ? "<=" : e->op == JOP_GT ? ">" : ">=",
                      llm_jv_type(a), llm_jv_type(b));
            return NULL;
        }
        return json_boolean(e->op == JOP_LT ? r < 0 : e->op == JOP_LE ? r <= 0 : e->op == JOP_GT ? r > 0 : r >= 0);
    }
}

/* Python slice of a list or string */
static json_t *
slice(llm_jstate *st, llm_jnode *e, json_t *obj)
{
    long    len, start, stop, step = 1, i;
    json_t *s = NULL, *t = NULL, *p = NULL, *r;
    int     isstr = json_is_string(obj);
    long   *offs = NULL;

    if (!isstr && !json_is_array(obj)) {
        llm_jfail(st, e->line, "'%s' object is not subscriptable", llm_jv_type(obj));
        return NULL;
    }
    if (e->b) s = llm_jeval(st, e->b);
    if (e->c) t = llm_jeval(st, e->c);
    if (e->args.n) p = llm_jeval(st, e->args.v[0]);
    if (st->failed) goto out;
    if (p && json_is_integer(p)) step = (long) json_integer_value(p);
    if (step == 0) { llm_jfail(st, e->line, "slice step cannot be zero"); goto out; }
    if (isstr) {   /* character offsets */
        const unsigned char *c = (const unsigned char *) json_string_value(obj);
        size_t               n = json_string_length(obj), k;
        offs = malloc((n + 1) * sizeof(long));
        if (offs == NULL) goto out;
        len = 0;
        for (k = 0; k < n; k++) if ((c[k] & 0xC0) != 0x80) offs[len++] = (long) k;
        offs[len] = (long) n;
    } else {
        len = (long) json_array_size(obj);
    }
    if (step > 0) {
        start = s && json_is_integer(s) ? (long) json_integer_value(s) : 0;
        stop = t && json_is_integer(t) ? (long) json_integer_value(t) : len;
        if (start < 0) start += len;
        if (stop < 0) stop += len;
        if (start < 0) start = 0;
        if (stop > len) stop = len;
    } else {
        start = s && json_is_integer(s) ? (long) json_integer_value(s) : len - 1;
        stop = t && json_is_integer(t) ? (long) json_integer_value(t) : -len - 1;
        if (start < 0) start += len;
        if (stop < -1 || (t && json_is_integer(t) && json_integer_value(t) < 0)) stop += len;
        if (start >= len) start = len - 1;
        if (stop < -1) stop = -1;
    }
    if (isstr) {
        llm_jbuf b = { 0 };
        const char *c = json_string_value(obj);
        for (i = start; step > 0 ? i < stop : i > stop; i += step) {
            llm_jbuf_add(&b, c + offs[i], (size_t) (offs[i + 1] - offs[i]));
        }
        r = llm_jbuf_take(st, e->line, &b);
    } else {
        r = json_array();
        for (i = start; step > 0 ? i < stop : i > stop; i += step) {
            json_array_append(r, json_array_get(obj, (size_t) i));
        }
    }
    free(offs);
    json_decref(s); json_decref(t); json_decref(p);
    return r;
out:
    free(offs);
    json_decref(s); json_decref(t); json_decref(p);
    return NULL;
}

/* evaluate call arguments */
typedef struct {
    json_t **args;
    size_t   nargs;
    json_t **kwv;
    size_t   nkw;
} argv_t;

static int
eval_args(llm_jstate *st, llm_jnode *e, argv_t *a)
{
    size_t i;

    memset(a, 0, sizeof(*a));
    a->args = calloc(e->args.n + 1, sizeof(json_t *));
    a->kwv = calloc(e->kwvals.n + 1, sizeof(json_t *));
    if (a->args == NULL || a->kwv == NULL) return llm_jfail(st, e->line, "out of memory");
    for (i = 0; i < e->args.n && !st->failed; i++) a->args[a->nargs++] = llm_jeval(st, e->args.v[i]);
    for (i = 0; i < e->kwvals.n && !st->failed; i++) a->kwv[a->nkw++] = llm_jeval(st, e->kwvals.v[i]);
    return st->failed ? -1 : 0;
}

static void
free_args(argv_t *a)
{
    size_t i;

    for (i = 0; i < a->nargs; i++) json_decref(a->args[i]);
    for (i = 0; i < a->nkw; i++) json_decref(a->kwv[i]);
    free(a->args);
    free(a->kwv);
}

static json_t *
render_to_string(llm_jstate *st, llm_jnodes *body)
{
    llm_jbuf b = { 0 };
    json_t  *r = NULL;

    if (llm_jexec(st, body, &b) == 0) {
        r = llm_jbuf_take(st, 0, &b);
        if (llm_jcharge(st, 0, r, NULL, NULL)) {
            json_decref(r);
            r = NULL;
        }
    }
    free(b.p);
    return r;
}

json_t *
llm_jcall_macro(llm_jstate *st, llm_jnode *m, llm_jnode *call, json_t **args, size_t nargs,
                char **kwn, json_t **kwv, size_t nkw, llm_jnodes *caller)
{
    size_t      i, k;
    json_t     *r;
    llm_jnodes *saved = st->caller_body;

    if (st->depth >= MAX_DEPTH) {
        llm_jfail(st, call->line, "macro recursion too deep");
        return NULL;
    }
    if (push_frame(st)) return NULL;
    for (i = 0; i < m->args.n; i++) {
        const char *pname = m->args.v[i]->name;
        json_t     *v = NULL;
        int         have = 0;
        if (i < nargs) { v = args[i]; have = 1; }
        for (k = 0; k < nkw; k++) if (strcmp(kwn[k], pname) == 0) { v = kwv[k]; have = 1; }
        if (!have && m->kwvals.v[i] != NULL) {
            json_t *d = llm_jeval(st, m->kwvals.v[i]);
            set_var(st, pname, d);
            json_decref(d);
            continue;
        }
        set_var(st, pname, v);
    }
    if (caller) {   /* caller() inside the macro renders the call block's body */
        json_object_set_new(st->frames[st->n_frames - 1], "caller", json_true());
        st->caller_body = caller;
    }
    st->depth++;
    r = render_to_string(st, &m->body);
    st->depth--;
    st->caller_body = saved;
    pop_frame(st);
    return r;
}

static json_t *
eval_call(llm_jstate *st, llm_jnode *e)
{
    argv_t  a;
    json_t *r = NULL;

    if (e->a->kind == JN_ATTR) {
        json_t *obj = llm_jeval(st, e->a->a);
        if (st->failed) return NULL;
        if (obj == NULL) {
            llm_jfail(st, e->line, "'%s' is undefined", e->a->a->kind == JN_NAME ? e->a->a->name : "value");
            return NULL;
        }
        if (eval_args(st, e, &a) == 0) {
            r = llm_jmethod_apply(e->builtin.method, st, e->line, obj, a.args, a.nargs, e->kwnames, a.kwv, a.nkw);
            if (llm_jcharge(st, e->line, r, obj, NULL)) {
                json_decref(r);
                r = NULL;
            }
        }
        free_args(&a);
        json_decref(obj);
        return r;
    }
    if (e->a->kind == JN_NAME) {
        json_t *f = lookup(st, e->a->name);
        long    idx = llm_jstate_find(st, f);

        if (strcmp(e->a->name, "caller") == 0 && st->caller_body) {
            llm_jnodes *body = st->caller_body;
            /* the caller's body runs in the scope of the call site: the macro frame is on top */
            st->caller_body = NULL;
            r = render_to_string(st, body);
            st->caller_body = body;
            return r;
        }
        if (idx >= 0 && st->obj_node[idx] != NULL && st->obj_node[idx]->kind == JN_MACRO) {
            if (eval_args(st, e, &a) == 0) {
                r = llm_jcall_macro(st, st->obj_node[idx], e, a.args, a.nargs, e->kwnames, a.kwv, a.nkw, NULL);
            }
            free_args(&a);
            return r;
        }
        if (e->builtin.global) {
            if (eval_args(st, e, &a) == 0) {
                r = llm_jglobal_apply(e->builtin.global, st, e->line, a.args, a.nargs, e->kwnames, a.kwv, a.nkw);
                if (llm_jcharge(st, e->line, r, NULL, NULL)) {
                    json_decref(r);
                    r = NULL;
                }
            }
            free_args(&a);
            return r;
        }
        llm_jfail(st, e->line, "'%s' is undefined or not callable", e->a->name);
        return NULL;
    }
    llm_jfail(st, e->line, "expression is not callable");
    return NULL;
}

json_t *
llm_jeval(llm_jstate *st, llm_jnode *e)
{
    json_t *a, *b, *r;

    if (st->failed) return NULL;
    if (++st->steps > LLM_JINJA_MAX_STEPS) {
        llm_jfail(st, e->line, "template render exceeds %lu steps", LLM_JINJA_MAX_STEPS);
        return NULL;
    }
    switch (e->kind) {
    case JN_LIT:
        return json_incref(e->lit);
    case JN_NAME:
        return json_incref(lookup(st, e->name));
    case JN_ATTR:
        a = llm_jeval(st, e->a);
        if (st->failed) return NULL;
        if (a == NULL) {
            llm_jfail(st, e->line, "'%s' is undefined", e->a->kind == JN_NAME ? e->a->name : "value");
            return NULL;
        }
        r = llm_jgetattr(st, e->line, a, e->name);
        json_decref(a);
        return r;
    case JN_ITEM:
        a = llm_jeval(st, e->a);
        b = llm_jeval(st, e->b);
        if (!st->failed && a == NULL) {
            llm_jfail(st, e->line, "'%s' is undefined", e->a->kind == JN_NAME ? e->a->name : "value");
        }
        r = st->failed ? NULL : llm_jgetitem(st, e->line, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case JN_SLICE:
        a = llm_jeval(st, e->a);
        if (st->failed) return NULL;
        if (a == NULL) {
            llm_jfail(st, e->line, "slice of an undefined value");
            return NULL;
        }
        r = slice(st, e, a);
        if (llm_jcharge(st, e->line, r, a, NULL)) {
            json_decref(r);
            r = NULL;
        }
        json_decref(a);
        return r;
    case JN_CALL:
        return eval_call(st, e);
    case JN_FILTER: {
        argv_t fa;
        memset(&fa, 0, sizeof(fa));
        a = e->a ? llm_jeval(st, e->a) : NULL;
        r = NULL;
        if (!st->failed && eval_args(st, e, &fa) == 0) {
            r = llm_jfilter_apply(e->builtin.filter, st, e->line, a, fa.args, fa.nargs, e->kwnames, fa.kwv, fa.nkw);
            if (llm_jcharge(st, e->line, r, a, NULL)) {
                json_decref(r);
                r = NULL;
            }
        }
        free_args(&fa);
        json_decref(a);
        return r;
    }
    case JN_TEST: {
        argv_t ta;
        int    t = -1;
        memset(&ta, 0, sizeof(ta));
        a = llm_jeval(st, e->a);
        if (!st->failed && eval_args(st, e, &ta) == 0) {
            t = llm_jtest_apply(e->builtin.test, st, e->line, a, ta.args, ta.nargs);
        }
        free_args(&ta);
        json_decref(a);
        if (t < 0) return NULL;
        return json_boolean(e->op ? !t : t);
    }
    case JN_NEG:
    case JN_POS:
        a = llm_jeval(st, e->a);
        if (st->failed) return NULL;
        if (!llm_jv_is_number(a)) {
            llm_jfail(st, e->line, "bad operand type for unary %c: '%s'", e->kind == JN_NEG ? '-' : '+', llm_jv_type(a));
            json_decref(a);
            return NULL;
        }
        if (e->kind == JN_POS) return a;
        r = json_is_real(a) ? json_real(-json_real_value(a)) : json_integer(-(json_int_t) llm_jv_num(a));
        json_decref(a);
        return r;
    case JN_NOT:
        a = llm_jeval(st, e->a);
        if (st->failed) return NULL;
        r = json_boolean(!llm_jv_truthy(a));
        json_decref(a);
        return r;
    case JN_AND:
    case JN_OR:
        a = llm_jeval(st, e->a);
        if (st->failed) return NULL;
        if ((e->kind == JN_AND) != llm_jv_truthy(a)) return a;
        json_decref(a);
        return llm_jeval(st, e->b);
    case JN_BIN:
        a = llm_jeval(st, e->a);
        b = llm_jeval(st, e->b);
        r = st->failed ? NULL : arith(st, e->line, e->op, a, b);
        if (llm_jcharge(st, e->line, r, a, b)) {
            json_decref(r);
            r = NULL;
        }
        json_decref(a);
        json_decref(b);
        return r;
    case JN_CMP:
        a = llm_jeval(st, e->a);
        b = llm_jeval(st, e->b);
        r = st->failed ? NULL : compare(st, e, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case JN_COND:
        a = llm_jeval(st, e->b);
        if (st->failed) return NULL;
        r = llm_jv_truthy(a) ? llm_jeval(st, e->a) : (e->c ? llm_jeval(st, e->c) : NULL);
        json_decref(a);
        return r;
    case JN_LIST:
    case JN_TUPLE: {
        size_t i;
        r = json_array();
        for (i = 0; i < e->args.n && !st->failed; i++) {
            a = llm_jeval(st, e->args.v[i]);
            json_array_append_new(r, a ? a : json_null());
        }
        if (st->failed) { json_decref(r); return NULL; }
        if (e->kind == JN_TUPLE) llm_jtuple(st, r);
        return r;
    }
    case JN_DICT: {
        size_t i;
        r = json_object();
        for (i = 0; i < e->args.n && !st->failed; i++) {
            json_t *k = llm_jeval(st, e->args.v[i]), *ks, *v;
            ks = json_is_string(k) ? json_incref(k) : str_of(st, k);
            v = llm_jeval(st, e->kwvals.v[i]);
            if (ks) json_object_set_new(r, json_string_value(ks), v ? v : json_null());
            else json_decref(v);
            json_decref(k);
            json_decref(ks);
        }
        if (st->failed) { json_decref(r); return NULL; }
        return r;
    }
    default:
        llm_jfail(st, e->line, "statement used as expression");
        return NULL;
    }
}

/* ---- statements ---- */

static json_t *
iter_items(llm_jstate *st, int line, json_t *v)
{
    json_t     *r;
    const char *k;
    json_t     *x;

    if (v == NULL) return json_array();
    if (json_is_array(v)) return json_incref(v);
    if (json_is_object(v)) {
        r = json_array();
        json_object_foreach(v, k, x) json_array_append_new(r, json_string(k));
        return r;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t      n = json_string_length(v), i = 0;
        r = json_array();
        while (i < n) {
            size_t j = i + 1;
            while (j < n && ((unsigned char) s[j] & 0xC0) == 0x80) j++;
            json_array_append_new(r, json_stringn_nocheck(s + i, j - i));
            i = j;
        }
        return r;
    }
    llm_jfail(st, line, "'%s' object is not iterable", llm_jv_type(v));
    return NULL;
}

static int
assign_targets(llm_jstate *st, int line, llm_jnodes *targets, json_t *v)
{
    size_t i;

    if (targets->n == 1) return set_var(st, targets->v[0]->name, v);
    if (!json_is_array(v) || json_array_size(v) != targets->n) {
        return llm_jfail(st, line, "cannot unpack %s into %zu names", llm_jv_type(v), targets->n);
    }
    for (i = 0; i < targets->n; i++) {
        if (set_var(st, targets->v[i]->name, json_array_get(v, i))) return -1;
    }
    return 0;
}

static int
exec_for(llm_jstate *st, llm_jnode *n, llm_jbuf *out)
{
    json_t *it = llm_jeval(st, n->a), *items, *kept;
    size_t  i, len;

    if (st->failed) return -1;
    items = iter_items(st, n->line, it);
    json_decref(it);
    if (items == NULL) return -1;
    kept = items;
    if (n->b) {   /* {% for x in xs if cond %}: filter first, loop.length counts kept items */
        kept = json_array();
        for (i = 0; i < json_array_size(items); i++) {
            json_t *c;
            if (push_frame(st)) break;
            assign_targets(st, n->line, &n->args, json_array_get(items, i));
            c = llm_jeval(st, n->b);
            pop_frame(st);
            if (st->failed) break;
            if (llm_jv_truthy(c)) json_array_append(kept, json_array_get(items, i));
            json_decref(c);
        }
        json_decref(items);
        if (st->failed) { json_decref(kept); return -1; }
    }
    len = json_array_size(kept);
    for (i = 0; i < len && !st->failed; i++) {
        json_t *loop;
        if (++st->steps > LLM_JINJA_MAX_STEPS) {   /* an empty body still costs a step */
            llm_jfail(st, n->line, "template render exceeds %lu steps", LLM_JINJA_MAX_STEPS);
            break;
        }
        loop = json_object();
        if (push_frame(st)) break;
        json_object_set_new(loop, "index", json_integer((json_int_t) i + 1));
        json_object_set_new(loop, "index0", json_integer((json_int_t) i));
        json_object_set_new(loop, "revindex", json_integer((json_int_t) (len - i)));
        json_object_set_new(loop, "revindex0", json_integer((json_int_t) (len - i - 1)));
        json_object_set_new(loop, "first", json_boolean(i == 0));
        json_object_set_new(loop, "last", json_boolean(i == len - 1));
        json_object_set_new(loop, "length", json_integer((json_int_t) len));
        if (i > 0) json_object_set(loop, "previtem", json_array_get(kept, i - 1));
        if (i + 1 < len) json_object_set(loop, "nextitem", json_array_get(kept, i + 1));
        json_object_set_new(st->frames[st->n_frames - 1], "loop", loop);
        if (assign_targets(st, n->line, &n->args, json_array_get(kept, i)) == 0) {
            llm_jexec(st, &n->body, out);
        }
        pop_frame(st);
        if (st->brk) { st->brk = 0; break; }
        st->cont = 0;
    }
    if (len == 0 && !st->failed) llm_jexec(st, &n->orelse, out);
    json_decref(kept);
    return st->failed ? -1 : 0;
}

int
llm_jexec(llm_jstate *st, llm_jnodes *body, llm_jbuf *out)
{
    size_t i;

    for (i = 0; i < body->n && !st->failed && !st->brk && !st->cont; i++) {
        llm_jnode *n = body->v[i];
        json_t    *v;

        switch (n->kind) {
        case JN_TEXT:
            llm_jbuf_add(out, json_string_value(n->lit), json_string_length(n->lit));
            break;
        case JN_OUT:
            v = llm_jeval(st, n->a);
            if (!st->failed) llm_jv_str_ex(v, out, st->tuples);
            json_decref(v);
            break;
        case JN_IF:
            v = llm_jeval(st, n->a);
            if (st->failed) break;
            llm_jexec(st, llm_jv_truthy(v) ? &n->body : &n->orelse, out);
            json_decref(v);
            break;
        case JN_FOR:
            exec_for(st, n, out);
            break;
        case JN_SET:
            v = llm_jeval(st, n->b);
            if (!st->failed) assign_targets(st, n->line, &n->args, v);
            json_decref(v);
            break;
        case JN_SET_BLOCK:
            v = render_to_string(st, &n->body);
            if (!st->failed) set_var(st, n->args.v[0]->name, v);
            json_decref(v);
            break;
        case JN_SET_ATTR: {
            json_t *obj = lookup(st, n->a->name);
            long    idx = llm_jstate_find(st, obj);
            if (idx < 0 || st->obj_node[idx] != NULL) {
                llm_jfail(st, n->line, "cannot assign attribute on '%s': not a namespace", n->a->name);
                break;
            }
            v = llm_jeval(st, n->b);
            if (!st->failed) json_object_set(obj, n->name, v ? v : json_null());
            json_decref(v);
            break;
        }
        case JN_MACRO: {
            json_t *m = json_object();
            if (m == NULL || llm_jstate_keep(st, m, n)) { json_decref(m); break; }
            set_var(st, n->name, m);
            json_decref(m);
            break;
        }
        case JN_CALLBLOCK: {
            llm_jnode *call = n->a;
            json_t    *f = call->a->kind == JN_NAME ? lookup(st, call->a->name) : NULL;
            long       idx = llm_jstate_find(st, f);
            argv_t     a;
            memset(&a, 0, sizeof(a));
            if (idx < 0 || st->obj_node[idx] == NULL || st->obj_node[idx]->kind != JN_MACRO) {
                llm_jfail(st, n->line, "'call' block needs a macro");
                break;
            }
            if (eval_args(st, call, &a) == 0) {
                v = llm_jcall_macro(st, st->obj_node[idx], call, a.args, a.nargs, call->kwnames, a.kwv, a.nkw, &n->body);
                if (!st->failed) llm_jv_str(v, out);
                json_decref(v);
            }
            free_args(&a);
            break;
        }
        case JN_FILTERBLOCK: {
            json_t    *text = render_to_string(st, &n->body);
            llm_jnode *f;
            llm_jnode *chain[16];
            int        k = 0;
            for (f = n->a; f && k < 16; f = f->a) chain[k++] = f;
            while (k-- > 0 && !st->failed) {
                argv_t  fa;
                json_t *r = NULL;
                memset(&fa, 0, sizeof(fa));
                if (eval_args(st, chain[k], &fa) == 0) {
                    r = llm_jfilter_apply(chain[k]->builtin.filter, st, chain[k]->line, text, fa.args, fa.nargs, chain[k]->kwnames, fa.kwv, fa.nkw);
                }
                free_args(&fa);
                json_decref(text);
                text = r;
            }
            if (!st->failed) llm_jv_str(text, out);
            json_decref(text);
            break;
        }
        case JN_BREAK:
            st->brk = 1;
            break;
        case JN_CONTINUE:
            st->cont = 1;
            break;
        case JN_BODY:
            llm_jexec(st, &n->body, out);
            break;
        default:
            llm_jfail(st, n->line, "unexpected node");
            break;
        }
        /* every write to out above: past the cap (or out of memory) ends the render */
        if (out->fail == LLM_JBUF_LONG) return llm_jfail(st, n->line, "template output exceeds %lu bytes", LLM_JINJA_MAX_OUTPUT);
        if (out->fail) return llm_jfail(st, n->line, "out of memory");
    }
    return st->failed ? -1 : 0;
}

/* ---- public API ---- */

llm_jinja *
llm_jinja_compile(const char *src, size_t len, int flags, char *err, size_t errlen)
{
    llm_jtok  *toks;
    size_t     ntoks;
    llm_jinja *t;

    if (err && errlen) err[0] = '\0';
    if (llm_jinja_lex(src, len, flags, &toks, &ntoks, err, errlen)) return NULL;
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        llm_jinja_free_tokens(toks, ntoks);
        if (err) snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->root = llm_jinja_parse(toks, ntoks, &t->names, &t->n_names, err, errlen);
    llm_jinja_free_tokens(toks, ntoks);
    if (t->root == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

void
llm_jinja_free(llm_jinja *t)
{
    size_t i;

    if (t == NULL) return;
    llm_jnode_free(t->root);
    for (i = 0; i < t->n_names; i++) free(t->names[i]);
    free(t->names);
    free(t);
}

int
llm_jinja_uses_var(const llm_jinja *t, const char *name)
{
    size_t i;

    for (i = 0; i < t->n_names; i++) if (strcmp(t->names[i], name) == 0) return 1;
    return 0;
}

static int
mentions(const llm_jnode *n, const char *s)
{
    size_t i;

    if (n == NULL) return 0;
    if (n->kind == JN_ATTR && n->name && strcmp(n->name, s) == 0) return 1;
    if (n->kind == JN_LIT && json_is_string(n->lit) && strcmp(json_string_value(n->lit), s) == 0) return 1;
    if (mentions(n->a, s) || mentions(n->b, s) || mentions(n->c, s)) return 1;
    for (i = 0; i < n->args.n; i++) if (mentions(n->args.v[i], s)) return 1;
    for (i = 0; i < n->kwvals.n; i++) if (mentions(n->kwvals.v[i], s)) return 1;
    for (i = 0; i < n->body.n; i++) if (mentions(n->body.v[i], s)) return 1;
    for (i = 0; i < n->orelse.n; i++) if (mentions(n->orelse.v[i], s)) return 1;
    return 0;
}

int
llm_jinja_mentions(const llm_jinja *t, const char *s)
{
    return mentions(t->root, s);
}

char *
llm_jinja_dumps(json_t *v)
{
    llm_jbuf b = { 0 };

    if (llm_jv_tojson(v, -1, ", ", ": ", 0, 0, &b) || b.fail || llm_jbuf_add(&b, "", 1)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

int
llm_jinja_render(const llm_jinja *t, json_t *ctx, char **out, size_t *outlen, char *err, size_t errlen)
{
    llm_jstate st;
    llm_jbuf   b = { 0 };
    size_t     i;
    int        rc;

    memset(&st, 0, sizeof(st));
    st.ctx = ctx;
    st.err = err;
    st.errlen = errlen;
    if (err && errlen) err[0] = '\0';
    *out = NULL;
    *outlen = 0;
    if (push_frame(&st) == 0) {
        llm_jexec(&st, &t->root->body, &b);
    }
    while (st.n_frames) pop_frame(&st);
    free(st.frames);
    for (i = 0; i < st.n_objs; i++) {
        json_object_clear(st.objs[i]);   /* break cycles through frames */
        json_decref(st.objs[i]);
    }
    free(st.objs);
    free(st.obj_node);
    json_decref(st.tuples);
    rc = st.failed;
    if (rc) {
        free(b.p);
        return rc;
    }
    if (b.p == NULL && llm_jbuf_add(&b, "", 0)) {
        if (err) snprintf(err, errlen, "out of memory");
        return LLM_JINJA_ERROR;
    }
    *out = b.p;
    *outlen = b.n;
    return LLM_JINJA_OK;
}
