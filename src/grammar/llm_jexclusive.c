/*
 * oneOf exclusivity: whether no JSON text the grammar of one branch writes
 * can be valid against another branch.  The grammar of `oneOf` is the
 * union of its branches'; it is exact (every text it writes matches exactly
 * one branch) when for each pair (a, b) nothing a writes is valid against b
 * and nothing b writes is valid against a.  This file proves that for the
 * shapes real schemas use to tell branches apart, and answers "not proven"
 * otherwise (the caller then refuses the schema, naming `oneOf`):
 *
 *   - the JSON types a branch writes and the types the other accepts do not
 *     meet (string vs number, object vs null, integer vs boolean, ...);
 *   - a branch's `const` / `enum` values are each refused by the other
 *     (different literals, or a type the other does not accept);
 *   - objects: a property the writing branch always writes (`required`) is
 *     refused by the other (its schema there excludes the written values,
 *     or extra keys are not allowed), or the other requires a key the
 *     writing branch never writes (the grammar writes only the keys listed
 *     in `properties` and `required`).
 * The analysis follows the dispatch of llm_jschema.c's schema_rule (which
 * keyword decides what the grammar writes) for the writing side and uses
 * only necessary conditions of validity for the other, so "proven" is never
 * wrong; recursion deeper than EXCL_DEPTH answers "not proven".
 */
#include <string.h>

#include "grammar/llm_grammar_int.h"

#define EXCL_DEPTH 16

enum {
    T_NULL = 1, T_BOOL = 2, T_OBJ = 4, T_ARR = 8, T_STR = 16,
    T_INT = 32,     /* numbers with an integral value */
    T_FRAC = 64,    /* other numbers */
    T_ALL = 127
};

static unsigned
type_bits(const char *t)
{
    if (strcmp(t, "null") == 0) return T_NULL;
    if (strcmp(t, "boolean") == 0) return T_BOOL;
    if (strcmp(t, "object") == 0) return T_OBJ;
    if (strcmp(t, "array") == 0) return T_ARR;
    if (strcmp(t, "string") == 0) return T_STR;
    if (strcmp(t, "integer") == 0) return T_INT;
    if (strcmp(t, "number") == 0) return T_INT | T_FRAC;
    return T_ALL;
}

static unsigned
value_bits(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL: return T_NULL;
    case JSON_TRUE: case JSON_FALSE: return T_BOOL;
    case JSON_OBJECT: return T_OBJ;
    case JSON_ARRAY: return T_ARR;
    case JSON_STRING: return T_STR;
    case JSON_INTEGER: return T_INT;
    case JSON_REAL: {
        double d = json_real_value(v);
        return d == (double) (long long) d ? T_INT : T_FRAC;
    }
    }
    return T_ALL;
}

/* equal as JSON Schema compares values (1 == 1.0) */
static int
lit_eq(const json_t *a, const json_t *b)
{
    size_t i;
    const char *k;
    json_t *va;

    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b)) return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!lit_eq(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return 0;
        json_object_foreach((json_t *) a, k, va) {
            const json_t *vb = json_object_get(b, k);
            if (vb == NULL || !lit_eq(va, vb)) return 0;
        }
        return 1;
    }
    return json_equal((json_t *) a, (json_t *) b);
}

/* s with its lone `$ref` chain followed (NULL: unresolvable) */
static const json_t *
deref(const json_t *root, const json_t *s)
{
    int n;
    for (n = 0; n < EXCL_DEPTH && json_is_object(s); n++) {
        const json_t *r = json_object_get(s, "$ref");
        if (!json_is_string(r)) return s;
        s = llm_jschema_ref(root, json_string_value(r));
    }
    return n < EXCL_DEPTH ? s : NULL;
}

static int
nullable(const json_t *s)
{
    return json_is_true(json_object_get(s, "nullable"));
}

/* The JSON types of the values valid against s: a superset. */
static unsigned
accepts(const json_t *root, const json_t *s, int depth)
{
    const json_t *t, *v;
    unsigned bits = T_ALL, any;
    size_t i;

    if (depth > EXCL_DEPTH || s == NULL || json_is_true(s) || !json_is_object(s))
        return json_is_false(s) ? 0 : T_ALL;
    t = json_object_get(s, "type");
    if (json_is_string(t)) bits &= type_bits(json_string_value(t));
    else if (json_is_array(t)) {
        for (any = 0, i = 0; i < json_array_size(t); i++) {
            const json_t *n = json_array_get(t, i);
            any |= json_is_string(n) ? type_bits(json_string_value(n)) : T_ALL;
        }
        bits &= any;
    }
    if ((v = json_object_get(s, "const")) != NULL) bits &= value_bits(v);
    if (json_is_array(v = json_object_get(s, "enum"))) {
        for (any = 0, i = 0; i < json_array_size(v); i++) any |= value_bits(json_array_get(v, i));
        bits &= any;
    }
    if (json_is_array(v = json_object_get(s, "anyOf")) || json_is_array(v = json_object_get(s, "oneOf"))) {
        for (any = 0, i = 0; i < json_array_size(v); i++) any |= accepts(root, json_array_get(v, i), depth + 1);
        bits &= any;
    }
    if (json_is_array(v = json_object_get(s, "allOf"))) {
        for (i = 0; i < json_array_size(v); i++) bits &= accepts(root, json_array_get(v, i), depth + 1);
    }
    if (json_is_string(v = json_object_get(s, "$ref")))
        bits &= accepts(root, llm_jschema_ref(root, json_string_value(v)), depth + 1);
    if (nullable(s)) bits |= T_NULL;
    return bits;
}

/* 1 when the value is certainly not valid against s */
static int
refuses(const json_t *root, const json_t *s, const json_t *val, int depth)
{
    const json_t *v, *props;
    size_t i;

    s = deref(root, s);
    if (depth > EXCL_DEPTH || s == NULL) return 0;
    if (json_is_false(s)) return 1;
    if (!json_is_object(s)) return 0;
    if ((value_bits(val) & accepts(root, s, depth)) == 0) return 1;
    if (json_is_null(val) && nullable(s)) return 0;
    if ((v = json_object_get(s, "const")) != NULL && !lit_eq(v, val)) return 1;
    if (json_is_array(v = json_object_get(s, "enum"))) {
        for (i = 0; i < json_array_size(v); i++) if (lit_eq(json_array_get(v, i), val)) break;
        if (i == json_array_size(v)) return 1;
    }
    if (json_is_array(v = json_object_get(s, "anyOf")) || json_is_array(v = json_object_get(s, "oneOf"))) {
        for (i = 0; i < json_array_size(v); i++)
            if (!refuses(root, json_array_get(v, i), val, depth + 1)) break;
        if (i == json_array_size(v)) return 1;
    }
    if (json_is_array(v = json_object_get(s, "allOf"))) {
        for (i = 0; i < json_array_size(v); i++)
            if (refuses(root, json_array_get(v, i), val, depth + 1)) return 1;
    }
    if (json_is_object(val)) {
        const char *k;
        json_t *x;
        const json_t *addl = json_object_get(s, "additionalProperties");
        props = json_object_get(s, "properties");
        v = json_object_get(s, "required");
        for (i = 0; i < json_array_size(v); i++) {
            const json_t *r = json_array_get(v, i);
            if (json_is_string(r) && json_object_get(val, json_string_value(r)) == NULL) return 1;
        }
        json_object_foreach((json_t *) val, k, x) {
            const json_t *ps = json_object_get(props, k);
            if (ps ? refuses(root, ps, x, depth + 1)
                   : (json_is_false(addl) || (json_is_object(addl) && refuses(root, addl, x, depth + 1))))
                return 1;
        }
    }
    return 0;
}

static int writes_none_of(const json_t *root, const json_t *g, const json_t *v, int depth);

/* The types the grammar of s writes (schema_rule's dispatch): a superset. */
static unsigned
writes(const json_t *root, const json_t *s, int depth)
{
    const json_t *v;
    unsigned d = T_ALL;
    size_t i;

    s = deref(root, s);
    if (depth > EXCL_DEPTH || s == NULL || !json_is_object(s)) return json_is_false(s) ? 0 : T_ALL;
    if (json_object_get(s, "allOf") || json_object_get(s, "const") || json_object_get(s, "enum")) {
        d = T_ALL;   /* accepts() bounds these */
    } else if (json_is_array(v = json_object_get(s, "anyOf")) || json_is_array(v = json_object_get(s, "oneOf"))) {
        for (d = 0, i = 0; i < json_array_size(v); i++) d |= writes(root, json_array_get(v, i), depth + 1);
    } else if (json_object_get(s, "type")) {
        d = T_ALL;
    } else if (json_object_get(s, "properties") || json_object_get(s, "required")
               || json_object_get(s, "additionalProperties")) {
        d = T_OBJ;
    } else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")
               || json_object_get(s, "minItems") || json_object_get(s, "maxItems")) {
        d = T_ARR;
    } else if (json_object_get(s, "pattern") || json_object_get(s, "format")
               || json_object_get(s, "minLength") || json_object_get(s, "maxLength")) {
        d = T_STR;
    } else if (json_object_get(s, "minimum") || json_object_get(s, "maximum")
               || json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum")) {
        d = T_INT | T_FRAC;
    }
    return accepts(root, s, depth) & (d | (nullable(s) ? T_NULL : 0));
}

/* Objects the grammar of g writes (r_object_as: the keys of `properties`
 * and `required`, the required ones always) are all refused by v. */
static int
objects_refused(const json_t *root, const json_t *g, const json_t *v, int depth)
{
    const json_t *gp = json_object_get(g, "properties"), *gr = json_object_get(g, "required");
    const json_t *ga = json_object_get(g, "additionalProperties");
    const json_t *vp = json_object_get(v, "properties"), *vr = json_object_get(v, "required");
    const json_t *va = json_object_get(v, "additionalProperties");
    size_t i;

    if (json_object_size(gp) == 0 && json_array_size(gr) == 0) {
        /* a map: only {} when extra keys are refused, else any keys */
        json_t *empty;
        int r;
        if (!json_is_false(ga)) return 0;
        empty = json_object();
        r = empty != NULL && refuses(root, v, empty, depth + 1);
        json_decref(empty);
        return r;
    }
    /* v requires a key g never writes */
    for (i = 0; i < json_array_size(vr); i++) {
        const char *k = json_string_value(json_array_get(vr, i));
        size_t n;
        if (k == NULL || json_object_get(gp, k)) continue;
        for (n = 0; n < json_array_size(gr); n++)
            if (json_is_string(json_array_get(gr, n)) && strcmp(json_string_value(json_array_get(gr, n)), k) == 0) break;
        if (n == json_array_size(gr)) return 1;
    }
    /* a key g always writes, with values v refuses there */
    for (i = 0; i < json_array_size(gr); i++) {
        const char *k = json_string_value(json_array_get(gr, i));
        const json_t *gs, *vs;
        if (k == NULL) continue;
        gs = json_object_get(gp, k);
        if (gs == NULL && json_is_object(ga)) gs = ga;
        vs = json_object_get(vp, k);
        if (vs == NULL) {
            if (json_is_false(va)) return 1;
            vs = json_is_object(va) ? va : NULL;
        }
        if (vs == NULL) continue;
        if (json_is_false(vs)) return 1;
        if (gs != NULL && writes_none_of(root, gs, vs, depth + 1)) return 1;
    }
    return 0;
}

/* 1 when no text the grammar of g writes is valid against v */
static int
writes_none_of(const json_t *root, const json_t *g, const json_t *v, int depth)
{
    const json_t *x;
    unsigned meet;
    size_t i;

    g = deref(root, g);
    v = deref(root, v);
    if (depth > EXCL_DEPTH || g == NULL || v == NULL) return 0;
    if (json_is_false(v) || json_is_false(g)) return 1;
    if (!json_is_object(g) || !json_is_object(v)) return 0;
    meet = writes(root, g, depth) & accepts(root, v, depth);
    if (meet == 0) return 1;
    /* v's alternatives: refused by each; v's allOf: by one */
    if (json_is_array(x = json_object_get(v, "anyOf")) || json_is_array(x = json_object_get(v, "oneOf"))) {
        for (i = 0; i < json_array_size(x); i++)
            if (!writes_none_of(root, g, json_array_get(x, i), depth + 1)) break;
        if (i == json_array_size(x)) return 1;
    }
    if (json_is_array(x = json_object_get(v, "allOf"))) {
        for (i = 0; i < json_array_size(x); i++)
            if (writes_none_of(root, g, json_array_get(x, i), depth + 1)) return 1;
    }
    /* null (a type of g's, or `nullable`) is written: v must refuse it */
    if ((meet & T_NULL) && !refuses(root, v, json_null(), depth)) return 0;
    meet &= ~(unsigned) T_NULL;
    if (meet == 0) return 1;
    /* the rest, by schema_rule's dispatch */
    if (json_object_get(g, "allOf")) return 0;
    if ((x = json_object_get(g, "const")) != NULL) return refuses(root, v, x, depth);
    if (json_is_array(x = json_object_get(g, "enum"))) {
        for (i = 0; i < json_array_size(x); i++) {
            const json_t *e = json_array_get(x, i);
            if ((value_bits(e) & accepts(root, g, depth)) && !refuses(root, v, e, depth)) return 0;
        }
        return 1;
    }
    if (json_is_array(x = json_object_get(g, "anyOf")) || json_is_array(x = json_object_get(g, "oneOf"))) {
        for (i = 0; i < json_array_size(x); i++)
            if (!writes_none_of(root, json_array_get(x, i), v, depth + 1)) return 0;
        return 1;
    }
    /* g writes its types' grammars (r_type); objects are r_object's */
    return meet == T_OBJ && objects_refused(root, g, v, depth);
}

int
llm_jschema_exclusive(const json_t *root, const json_t *a, const json_t *b)
{
    return writes_none_of(root, a, b, 0) && writes_none_of(root, b, a, 0);
}
