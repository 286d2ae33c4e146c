/*
 * Render state shared by the evaluator and the builtins (llm_jinja_int.h):
 * errors, size bounds, and the objects the renderer made (namespaces,
 * macros, callers, tuples).  In its own file so that the builtins need not
 * reach into the evaluator.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/llm_jinja_int.h"

int
llm_jfail(llm_jstate *st, int line, const char *fmt, ...)
{
    va_list ap;
    int     k = 0;

    if (st->failed) return -1;
    st->failed = LLM_JINJA_ERROR;
    if (st->err && st->errlen) {
        if (line > 0) k = snprintf(st->err, st->errlen, "line %d: ", line);
        if (k >= 0 && (size_t) k < st->errlen) {
            va_start(ap, fmt);
            vsnprintf(st->err + k, st->errlen - (size_t) k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* ---- size bounds (llm_jinja_int.h) ---- */

int
llm_jcheck_len(llm_jstate *st, int line, unsigned long long n)
{
    if (n <= LLM_JINJA_MAX_OUTPUT) return 0;
    return llm_jfail(st, line, "string exceeds %lu bytes", LLM_JINJA_MAX_OUTPUT);
}

int
llm_jcheck_items(llm_jstate *st, int line, unsigned long long n)
{
    if (n <= LLM_JINJA_MAX_ITEMS) return 0;
    return llm_jfail(st, line, "list exceeds %lu items", LLM_JINJA_MAX_ITEMS);
}

json_t *
llm_jbuf_take(llm_jstate *st, int line, llm_jbuf *b)
{
    json_t *r = NULL;

    if (b->fail == LLM_JBUF_LONG) llm_jcheck_len(st, line, (unsigned long long) LLM_JINJA_MAX_OUTPUT + 1);
    else if (b->fail) llm_jfail(st, line, "out of memory");
    else if ((r = json_stringn_nocheck(b->p ? b->p : "", b->n)) == NULL) llm_jfail(st, line, "out of memory");
    free(b->p);
    memset(b, 0, sizeof(*b));
    return r;
}

int
llm_jcharge(llm_jstate *st, int line, json_t *v, json_t *in1, json_t *in2)
{
    size_t n;

    if (v == NULL || v == in1 || v == in2) return 0;
    n = json_is_string(v) ? json_string_length(v)
      : json_is_array(v) ? json_array_size(v) * sizeof(void *)
      : json_is_object(v) ? json_object_size(v) * 4 * sizeof(void *) : 0;
    if (json_is_array(v) && llm_jcheck_items(st, line, json_array_size(v))) return -1;
    st->work += n;
    if (st->work <= LLM_JINJA_MAX_WORK) return 0;
    return llm_jfail(st, line, "template render builds more than %lu bytes of strings and lists",
                     LLM_JINJA_MAX_WORK);
}

/* ---- objects the renderer made ---- */

int
llm_jstate_keep(llm_jstate *st, json_t *o, llm_jnode *n)
{
    if (st->n_objs == st->cap_objs) {
        size_t      nc = st->cap_objs ? st->cap_objs * 2 : 8;
        json_t    **a = realloc(st->objs, nc * sizeof(json_t *));
        llm_jnode **b;
        if (a == NULL) return llm_jfail(st, 0, "out of memory");
        st->objs = a;
        b = realloc(st->obj_node, nc * sizeof(llm_jnode *));
        if (b == NULL) return llm_jfail(st, 0, "out of memory");
        st->obj_node = b;
        st->cap_objs = nc;
    }
    st->objs[st->n_objs] = json_incref(o);
    st->obj_node[st->n_objs] = n;
    st->n_objs++;
    return 0;
}

long
llm_jstate_find(llm_jstate *st, json_t *o)
{
    size_t i;

    if (o == NULL || !json_is_object(o)) return -1;
    for (i = st->n_objs; i-- > 0; ) {
        if (st->objs[i] == o) return (long) i;
    }
    return -1;
}

void
llm_jtuple(llm_jstate *st, json_t *arr)
{
    if (arr == NULL) return;
    if (st->tuples == NULL && (st->tuples = json_array()) == NULL) return;
    json_array_append(st->tuples, arr);
}

/* 1 for namespaces, macros and loop objects made by the renderer (not Python dicts) */
int
llm_jis_ours(llm_jstate *st, json_t *o)
{
    return llm_jstate_find(st, o) >= 0 || (json_is_object(o) && json_object_get(o, "index0") && json_object_get(o, "revindex0"));
}

/* namespace(...) builtin: a mutable object */
json_t *
llm_jnamespace_new(llm_jstate *st)
{
    json_t *o = json_object();
    if (o == NULL || llm_jstate_keep(st, o, NULL)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
