/*
 * JSON Schema -> grammar of the JSON texts valid against it.
 *
 * The grammar generates a subset of the valid texts, chosen so that every
 * text it allows is valid (the guarantee) and generation ends in reasonable
 * length: compact JSON with at most one space after ':' and ',', no
 * exponents, at most 15 integer and 15 fraction digits, object properties in
 * the order the schema lists them, no properties beyond `properties` when
 * the schema lists any.  Keywords outside the supported subset are errors
 * naming the keyword, never ignored; docs/api.md lists the subset.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_grammar_int.h"

#define MAX_DEPTH      64
#define MAX_DIGITS     15
#define MAX_LEN_GEN    1024    /* longest string / most array items spelled out by count */

typedef struct {
    char *ref;
    int   rule;
} js_ref;

typedef struct {
    llm_gbuild   *b;
    const json_t *root;
    char         *err;
    size_t        errlen;
    int           failed;
    int           depth;
    js_ref       *refs;
    size_t        n_refs, cap_refs;
    json_t       *owned;      /* merged allOf schemas, freed at the end */
    int           flags;      /* LLM_GJSON_* */
} js;

static int schema_rule(js *j, const json_t *s);

static int
jfail(js *j, const char *fmt, const char *arg)
{
    if (!j->failed) llm_gerr(j->err, j->errlen, fmt, arg);
    j->failed = 1;
    return -1;
}

/* ---- named shared rules ---- */

static int
named(js *j, const char *name, const char *gbnf_body_regex)
{
    int r = llm_gbuild_find(j->b, name);
    if (r >= 0) return r;
    r = llm_gregex_rule(j->b, gbnf_body_regex, strlen(gbnf_body_regex), 0, j->err, j->errlen);
    if (r < 0) { j->failed = 1; return -1; }
    /* alias under the wanted name so later lookups find it */
    {
        llm_gseq *s = llm_gseq_new();
        int a = llm_gbuild_rule(j->b, name);
        if (s == NULL || a < 0 || llm_gseq_ref(s, r) < 0 || llm_gbuild_define(j->b, a, s) < 0) {
            llm_gseq_free(s);
            return jfail(j, "%s", "out of memory");
        }
        llm_gseq_free(s);
        return a;
    }
}

static int
r_sp(js *j)
{
    return named(j, "jsp", " ?");
}

/* one character inside a JSON string literal */
static int
r_char(js *j)
{
    /* unescaped: U+0020.. except '"' and '\\' (and '<' when markers start with it) */
    static const uint32_t plain[6] = { 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x10FFFF };
    static const uint32_t plain_nolt[8] = { 0x20, 0x21, 0x23, 0x3B, 0x3D, 0x5B, 0x5D, 0x10FFFF };
    int nolt = (j->flags & LLM_GJSON_NO_LT) != 0;
    const char *name = nolt ? "jchar-nolt" : "jchar";
    int r = llm_gbuild_find(j->b, name);
    llm_gseq *s;
    int cp, esc;

    if (r >= 0) return r;
    cp = nolt ? llm_gbuild_codepoints(j->b, plain_nolt, 4, 0) : llm_gbuild_codepoints(j->b, plain, 3, 0);
    esc = nolt ? named(j, "jescape-nolt", "\\\\([\"\\\\/bfnrt]|u00(0[1-9a-fA-F]|1[0-9a-fA-F]|3[cC]))")
               : named(j, "jescape", "\\\\([\"\\\\/bfnrt]|u00(0[1-9a-fA-F]|1[0-9a-fA-F]))");
    s = llm_gseq_new();
    r = llm_gbuild_rule(j->b, name);
    if (s == NULL || cp < 0 || esc < 0 || r < 0) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
    llm_gseq_ref(s, cp);
    llm_gseq_alt(s);
    llm_gseq_ref(s, esc);
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

static int
r_string_len(js *j, long min, long max)
{
    char name[64];
    int r, c, rep;
    llm_gseq *s;

    snprintf(name, sizeof(name), "jstring-%ld-%ld%s", min, max, (j->flags & LLM_GJSON_NO_LT) ? "-nolt" : "");
    r = llm_gbuild_find(j->b, name);
    if (r >= 0) return r;
    c = r_char(j);
    rep = c < 0 ? -1 : llm_gbuild_repeat(j->b, c, min, max);
    s = llm_gseq_new();
    r = llm_gbuild_rule(j->b, name);
    if (rep < 0 || s == NULL || r < 0) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
    llm_gseq_bytes(j->b, s, "\"", 1);
    llm_gseq_ref(s, rep);
    llm_gseq_bytes(j->b, s, "\"", 1);
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

static int
r_string(js *j)
{
    return r_string_len(j, 0, -1);
}

static int
r_int_plain(js *j)
{
    return named(j, "jinteger", "-?(0|[1-9][0-9]{0,14})");
}

static int
r_number_plain(js *j)
{
    return named(j, "jnumber", "-?(0|[1-9][0-9]{0,14})(\\.[0-9]{1,15})?");
}

static int
literal_rule(js *j, const char *text)
{
    int r = llm_gbuild_literal(j->b, text, strlen(text));
    return r < 0 ? jfail(j, "%s", "out of memory") : r;
}

static int r_value(js *j);

/* object / array / value for schemas that allow anything */
static int
r_value(js *j)
{
    int v = llm_gbuild_find(j->b, "jvalue"), obj, arr, str, sp, num, rest, restr, member;
    llm_gseq *s;

    if (v >= 0) return v;
    v = llm_gbuild_rule(j->b, "jvalue");
    obj = llm_gbuild_rule(j->b, "jobject");
    arr = llm_gbuild_rule(j->b, "jarray");
    member = llm_gbuild_rule(j->b, "member");
    str = r_string(j);
    sp = r_sp(j);
    num = r_number_plain(j);
    s = llm_gseq_new();
    if (v < 0 || obj < 0 || arr < 0 || member < 0 || str < 0 || sp < 0 || num < 0 || s == NULL) {
        llm_gseq_free(s);
        return jfail(j, "%s", "out of memory");
    }
    /* value ::= object | array | string | number | true | false | null */
    llm_gseq_ref(s, obj); llm_gseq_alt(s);
    llm_gseq_ref(s, arr); llm_gseq_alt(s);
    llm_gseq_ref(s, str); llm_gseq_alt(s);
    llm_gseq_ref(s, num); llm_gseq_alt(s);
    llm_gseq_bytes(j->b, s, "true", 4); llm_gseq_alt(s);
    llm_gseq_bytes(j->b, s, "false", 5); llm_gseq_alt(s);
    llm_gseq_bytes(j->b, s, "null", 4);
    llm_gbuild_define(j->b, v, s);
    /* member ::= string ":" sp value */
    llm_gseq_clear(s);
    llm_gseq_ref(s, str); llm_gseq_bytes(j->b, s, ":", 1); llm_gseq_ref(s, sp); llm_gseq_ref(s, v);
    llm_gbuild_define(j->b, member, s);
    /* object ::= "{" ( member ( "," sp member )* )? "}" */
    llm_gseq_clear(s);
    llm_gseq_bytes(j->b, s, ",", 1); llm_gseq_ref(s, sp); llm_gseq_ref(s, member);
    rest = llm_gbuild_rule(j->b, "member-next");
    llm_gbuild_define(j->b, rest, s);
    rest = llm_gbuild_repeat(j->b, rest, 0, -1);
    llm_gseq_clear(s);
    llm_gseq_bytes(j->b, s, "{", 1); llm_gseq_bytes(j->b, s, "}", 1); llm_gseq_alt(s);
    llm_gseq_bytes(j->b, s, "{", 1); llm_gseq_ref(s, member); llm_gseq_ref(s, rest);
    llm_gseq_bytes(j->b, s, "}", 1);
    llm_gbuild_define(j->b, obj, s);
    /* array ::= "[" ( value ( "," sp value )* )? "]" */
    llm_gseq_clear(s);
    llm_gseq_bytes(j->b, s, ",", 1); llm_gseq_ref(s, sp); llm_gseq_ref(s, v);
    restr = llm_gbuild_rule(j->b, "value-next");
    llm_gbuild_define(j->b, restr, s);
    restr = llm_gbuild_repeat(j->b, restr, 0, -1);
    llm_gseq_clear(s);
    llm_gseq_bytes(j->b, s, "[", 1); llm_gseq_bytes(j->b, s, "]", 1); llm_gseq_alt(s);
    llm_gseq_bytes(j->b, s, "[", 1); llm_gseq_ref(s, v); llm_gseq_ref(s, restr);
    llm_gseq_bytes(j->b, s, "]", 1);
    llm_gbuild_define(j->b, arr, s);
    llm_gseq_free(s);
    if (rest < 0 || restr < 0) return jfail(j, "%s", "out of memory");
    return v;
}

static int
r_any_object(js *j)
{
    if (r_value(j) < 0) return -1;
    return llm_gbuild_find(j->b, "jobject");
}

/* ---- integer ranges as digit patterns ---- */

/* rule for equal-length digit strings lo..hi (lo <= hi) */
static int
digits_range(js *j, const char *lo, const char *hi, size_t n)
{
    llm_gseq *s;
    int r;
    size_t i;
    int lo_zeros = 1, hi_nines = 1;

    s = llm_gseq_new();
    r = llm_gbuild_rule(j->b, "digits");
    if (s == NULL || r < 0) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
    if (n == 0) {
        llm_gbuild_define(j->b, r, s);
        llm_gseq_free(s);
        return r;
    }
    for (i = 1; i < n; i++) {
        if (lo[i] != '0') lo_zeros = 0;
        if (hi[i] != '9') hi_nines = 0;
    }
    if (lo[0] == hi[0]) {
        int sub = digits_range(j, lo + 1, hi + 1, n - 1);
        llm_gseq_bytes(j->b, s, lo, 1);
        llm_gseq_ref(s, sub);
    } else if (lo_zeros && hi_nines) {
        uint8_t set[32] = {0}, dig[32] = {0};
        char c;
        for (c = lo[0]; c <= hi[0]; c++) llm_gset_add(set, (unsigned char) c);
        for (c = '0'; c <= '9'; c++) llm_gset_add(dig, (unsigned char) c);
        llm_gseq_class(j->b, s, set);
        for (i = 1; i < n; i++) llm_gseq_class(j->b, s, dig);
    } else {
        char z[MAX_DIGITS + 2], nines[MAX_DIGITS + 2];
        memset(z, '0', n); memset(nines, '9', n);
        /* lo[0] followed by lo[1..]..99, middle digits, hi[0] followed by 00..hi[1..] */
        llm_gseq_bytes(j->b, s, lo, 1);
        llm_gseq_ref(s, digits_range(j, lo + 1, nines, n - 1));
        if (hi[0] - lo[0] > 1) {
            uint8_t set[32] = {0}, dig[32] = {0};
            char c;
            for (c = (char) (lo[0] + 1); c < hi[0]; c++) llm_gset_add(set, (unsigned char) c);
            for (c = '0'; c <= '9'; c++) llm_gset_add(dig, (unsigned char) c);
            llm_gseq_alt(s);
            llm_gseq_class(j->b, s, set);
            for (i = 1; i < n; i++) llm_gseq_class(j->b, s, dig);
        }
        llm_gseq_alt(s);
        llm_gseq_bytes(j->b, s, hi, 1);
        llm_gseq_ref(s, digits_range(j, z, hi + 1, n - 1));
    }
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

#define INT_CAP 999999999999999LL   /* 15 digits */

/* alternatives for the non-negative integers a..b (0 <= a <= b <= INT_CAP) */
static int
nonneg_range(js *j, llm_gseq *s, long long a, long long b, int *first)
{
    long long p = 1;
    int d;
    for (d = 1; d <= MAX_DIGITS && a <= b; d++, p *= 10) {
        long long lo = d == 1 ? 0 : p, hi = p * 10 - 1;
        char ls[32], hs[32];
        if (hi < a) continue;
        if (lo < a) lo = a;
        if (hi > b) hi = b;
        if (lo > hi) continue;
        snprintf(ls, sizeof(ls), "%0*lld", d, lo);
        snprintf(hs, sizeof(hs), "%0*lld", d, hi);
        if (!*first) llm_gseq_alt(s);
        *first = 0;
        if (llm_gseq_ref(s, digits_range(j, ls, hs, (size_t) d)) < 0) return -1;
    }
    return 0;
}

/* rule for integers lo..hi (clamped to 15 digits), each followed by the rule
 * `suffix` when >= 0; -2 if the range is empty */
static int
int_range(js *j, long long lo, long long hi, int suffix)
{
    llm_gseq *s, *part;
    int r, first = 1, pf;

    if (lo < -INT_CAP) lo = -INT_CAP;
    if (hi > INT_CAP) hi = INT_CAP;
    if (lo > hi) return -2;
    s = llm_gseq_new();
    part = llm_gseq_new();
    r = llm_gbuild_rule(j->b, "int-range");
    if (s == NULL || part == NULL || r < 0) goto fail;
    if (hi >= 0) {
        int pr = llm_gbuild_rule(j->b, "nonneg");
        pf = 1;
        if (pr < 0 || nonneg_range(j, part, lo > 0 ? lo : 0, hi, &pf) < 0
            || llm_gbuild_define(j->b, pr, part) < 0) goto fail;
        llm_gseq_ref(s, pr);
        if (suffix >= 0) llm_gseq_ref(s, suffix);
        first = 0;
    }
    if (lo < 0) {
        /* "-" k for k in max(1,-hi) .. -lo */
        int nr = llm_gbuild_rule(j->b, "neg");
        llm_gseq_clear(part);
        pf = 1;
        if (nr < 0 || nonneg_range(j, part, hi < 0 ? -hi : 1, -lo, &pf) < 0
            || llm_gbuild_define(j->b, nr, part) < 0) goto fail;
        if (!first) llm_gseq_alt(s);
        llm_gseq_bytes(j->b, s, "-", 1);
        llm_gseq_ref(s, nr);
        if (suffix >= 0) llm_gseq_ref(s, suffix);
    }
    if (llm_gbuild_define(j->b, r, s) < 0) goto fail;
    llm_gseq_free(s);
    llm_gseq_free(part);
    return r;
fail:
    llm_gseq_free(s);
    llm_gseq_free(part);
    return jfail(j, "%s", "out of memory");
}

/* bounds from minimum/maximum/exclusive* (draft 4 booleans or draft 6+ numbers) */
typedef struct {
    int    has_lo, has_hi, ex_lo, ex_hi;
    double lo, hi;
} js_bounds;

static int
get_bounds(js *j, const json_t *s, js_bounds *bd)
{
    const json_t *v;
    memset(bd, 0, sizeof(*bd));
    if ((v = json_object_get(s, "minimum")) != NULL) {
        if (!json_is_number(v)) return jfail(j, "JSON Schema: '%s' must be a number", "minimum");
        bd->has_lo = 1; bd->lo = json_number_value(v);
    }
    if ((v = json_object_get(s, "maximum")) != NULL) {
        if (!json_is_number(v)) return jfail(j, "JSON Schema: '%s' must be a number", "maximum");
        bd->has_hi = 1; bd->hi = json_number_value(v);
    }
    if ((v = json_object_get(s, "exclusiveMinimum")) != NULL) {
        if (json_is_boolean(v)) bd->ex_lo = json_is_true(v);
        else if (json_is_number(v)) {
            double x = json_number_value(v);
            if (!bd->has_lo || x >= bd->lo) { bd->has_lo = 1; bd->lo = x; bd->ex_lo = 1; }
        } else return jfail(j, "JSON Schema: '%s' must be a number", "exclusiveMinimum");
    }
    if ((v = json_object_get(s, "exclusiveMaximum")) != NULL) {
        if (json_is_boolean(v)) bd->ex_hi = json_is_true(v);
        else if (json_is_number(v)) {
            double x = json_number_value(v);
            if (!bd->has_hi || x <= bd->hi) { bd->has_hi = 1; bd->hi = x; bd->ex_hi = 1; }
        } else return jfail(j, "JSON Schema: '%s' must be a number", "exclusiveMaximum");
    }
    return 0;
}

static long long
clamp_ll(double x)
{
    if (x > (double) INT_CAP) return INT_CAP + 1;
    if (x < (double) -INT_CAP) return -INT_CAP - 1;
    return (long long) x;
}

static int
r_integer(js *j, const json_t *s)
{
    js_bounds bd;
    long long lo, hi;
    int r;

    if (get_bounds(j, s, &bd) < 0) return -1;
    if (!bd.has_lo && !bd.has_hi) return r_int_plain(j);
    lo = bd.has_lo ? clamp_ll(ceil(bd.lo)) : -INT_CAP;
    if (bd.has_lo && bd.ex_lo && ceil(bd.lo) == bd.lo) lo++;
    hi = bd.has_hi ? clamp_ll(floor(bd.hi)) : INT_CAP;
    if (bd.has_hi && bd.ex_hi && floor(bd.hi) == bd.hi) hi--;
    r = int_range(j, lo, hi, -1);
    if (r == -2) return jfail(j, "JSON Schema: no %s satisfies minimum/maximum", "integer");
    return r;
}

static int
r_number(js *j, const json_t *s)
{
    js_bounds bd;
    long long ilo, ihi, flo, fhi;
    llm_gseq *q;
    int r, frac, a, first = 1;

    if (get_bounds(j, s, &bd) < 0) return -1;
    if (!bd.has_lo && !bd.has_hi) return r_number_plain(j);
    frac = named(j, "jfraction", "\\.[0-9]{1,15}");
    ilo = bd.has_lo ? clamp_ll(ceil(bd.lo)) : -INT_CAP;
    if (bd.has_lo && bd.ex_lo && ceil(bd.lo) == bd.lo) ilo++;
    ihi = bd.has_hi ? clamp_ll(floor(bd.hi)) : INT_CAP;
    if (bd.has_hi && bd.ex_hi && floor(bd.hi) == bd.hi) ihi--;
    q = llm_gseq_new();
    r = llm_gbuild_rule(j->b, "number-range");
    if (q == NULL || r < 0 || frac < 0) { llm_gseq_free(q); return jfail(j, "%s", "out of memory"); }
    /* integers in range */
    a = int_range(j, ilo, ihi, -1);
    if (a >= 0) { llm_gseq_ref(q, a); first = 0; }
    /* i.f with i >= 0: needs i >= ilo and i + 1 <= hi */
    flo = ilo > 0 ? ilo : 0;
    fhi = bd.has_hi ? clamp_ll(floor(bd.hi)) - 1 : INT_CAP;
    if (fhi > ihi) fhi = ihi;
    if (flo <= fhi) {
        a = int_range(j, flo, fhi, frac);
        if (a >= 0) { if (!first) llm_gseq_alt(q); llm_gseq_ref(q, a); first = 0; }
    }
    /* -k.f with k >= 1: value in (-(k+1), -k]; needs -(k+1) >= lo and -k <= ihi */
    flo = ihi < 0 ? -ihi : 1;
    fhi = bd.has_lo ? clamp_ll(floor(-bd.lo)) - 1 : INT_CAP;
    if (fhi > -ilo) fhi = -ilo;
    if (flo <= fhi) {
        a = int_range(j, -fhi, -flo, frac);
        if (a >= 0) { if (!first) llm_gseq_alt(q); llm_gseq_ref(q, a); first = 0; }
    }
    if (first) { llm_gseq_free(q); return jfail(j, "JSON Schema: no %s satisfies minimum/maximum", "number"); }
    if (llm_gbuild_define(j->b, r, q) < 0) r = -1;
    llm_gseq_free(q);
    return j->failed ? -1 : r;
}

/* ---- strings ---- */

static const struct { const char *name, *re; } formats[] = {
    { "date", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])" },
    { "time", "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])" },
    { "date-time", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                   "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])" },
    { "uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" },
    { "email", "[a-zA-Z0-9_+-]{1,20}(\\.[a-zA-Z0-9_+-]{1,20}){0,2}@[a-zA-Z0-9]([a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?"
               "(\\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?){0,2}\\.[a-zA-Z]{2,8}" },
};

/* A `pattern` as a rule over the whole string (patterns match anywhere
 * unless anchored); json: as written inside a JSON string literal. */
static int
pattern_rule(js *j, const char *p, size_t n, int json)
{
    char *full = malloc(n + 16);
    size_t k = 0;
    int a0 = n > 0 && p[0] == '^';
    int a1 = n > 0 && p[n - 1] == '$' && !(n > 1 && p[n - 2] == '\\');
    int r;

    if (full == NULL) return jfail(j, "%s", "out of memory");
    if (!a0) { memcpy(full + k, ".*(", 3); k += 3; } else { memcpy(full + k, "(", 1); k++; p++; n--; }
    if (a1) n--;
    memcpy(full + k, p, n); k += n;
    if (!a1) { memcpy(full + k, ").*", 3); k += 3; } else { full[k++] = ')'; }
    r = llm_gregex_rule(j->b, full, k, json, j->err, j->errlen);
    free(full);
    if (r < 0) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s", j->err ? j->err : "");
        j->failed = 0;
        return jfail(j, "JSON Schema: 'pattern': %s", tmp);
    }
    return r;
}

static int
quoted(js *j, int inner)
{
    llm_gseq *s = llm_gseq_new();
    int r = llm_gbuild_rule(j->b, "quoted");
    if (s == NULL || r < 0 || inner < 0) { llm_gseq_free(s); return -1; }
    llm_gseq_bytes(j->b, s, "\"", 1);
    llm_gseq_ref(s, inner);
    llm_gseq_bytes(j->b, s, "\"", 1);
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

static int
r_str(js *j, const json_t *s)
{
    const json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    const json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
    long min = 0, max = -1;

    if (mn && (!json_is_integer(mn) || json_integer_value(mn) < 0))
        return jfail(j, "JSON Schema: '%s' must be a non-negative integer", "minLength");
    if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0))
        return jfail(j, "JSON Schema: '%s' must be a non-negative integer", "maxLength");
    if (mn) min = (long) (json_integer_value(mn) > MAX_LEN_GEN ? -1 : json_integer_value(mn));
    if (min < 0) return jfail(j, "JSON Schema: '%s' above 1024 is not supported", "minLength");
    if (mx) {
        json_int_t m = json_integer_value(mx);
        if (m < min) return jfail(j, "JSON Schema: no string satisfies '%s'", "maxLength");
        max = m > MAX_LEN_GEN ? (min > MAX_LEN_GEN ? min : MAX_LEN_GEN) : (long) m;
    }
    if (fmt) {
        size_t i;
        if (!json_is_string(fmt)) return jfail(j, "JSON Schema: '%s' must be a string", "format");
        if (pat) return jfail(j, "JSON Schema: '%s' together with 'format' is not supported", "pattern");
        if (mn || mx) return jfail(j, "JSON Schema: '%s' together with 'format' is not supported",
                                   mn ? "minLength" : "maxLength");
        for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
            if (strcmp(json_string_value(fmt), formats[i].name) == 0) {
                int r = llm_gregex_rule(j->b, formats[i].re, strlen(formats[i].re), 1, j->err, j->errlen);
                if (r < 0) { j->failed = 1; return -1; }
                return quoted(j, r);
            }
        }
        return jfail(j, "JSON Schema: format '%s' is not supported (date-time, date, time, uuid, email are)",
                     json_string_value(fmt));
    }
    if (pat) {
        const char *p;
        size_t n;
        int r;
        if (!json_is_string(pat)) return jfail(j, "JSON Schema: '%s' must be a string", "pattern");
        if (mn || mx) return jfail(j, "JSON Schema: '%s' together with 'pattern' is not supported",
                                   mn ? "minLength" : "maxLength");
        p = json_string_value(pat);
        n = json_string_length(pat);
        r = pattern_rule(j, p, n, 1);
        return r < 0 ? -1 : quoted(j, r);
    }
    return r_string_len(j, min, max);
}

/* ---- arrays ---- */

/* items separated by "," sp: count in [min, max] (max < 0 unbounded) */
static int
r_list(js *j, llm_gseq *s, int item, long min, long max)
{
    int sp = r_sp(j), next, rep;
    llm_gseq *t = llm_gseq_new();
    if (t == NULL || sp < 0) { llm_gseq_free(t); return jfail(j, "%s", "out of memory"); }
    llm_gseq_bytes(j->b, t, ",", 1);
    llm_gseq_ref(t, sp);
    llm_gseq_ref(t, item);
    next = llm_gbuild_rule(j->b, "item-next");
    if (next < 0 || llm_gbuild_define(j->b, next, t) < 0) { llm_gseq_free(t); return -1; }
    llm_gseq_free(t);
    if (max == 0) return 0;
    if (min == 0) {
        /* ( item next{0,max-1} )? */
        int body = llm_gbuild_rule(j->b, "items"), opt;
        llm_gseq *u = llm_gseq_new();
        rep = llm_gbuild_repeat(j->b, next, 0, max < 0 ? -1 : max - 1);
        if (u == NULL || body < 0 || rep < 0) { llm_gseq_free(u); return -1; }
        llm_gseq_ref(u, item);
        llm_gseq_ref(u, rep);
        llm_gbuild_define(j->b, body, u);
        llm_gseq_free(u);
        opt = llm_gbuild_repeat(j->b, body, 0, 1);
        return llm_gseq_ref(s, opt);
    }
    rep = llm_gbuild_repeat(j->b, next, min - 1, max < 0 ? -1 : max - 1);
    if (rep < 0) return -1;
    llm_gseq_ref(s, item);
    return llm_gseq_ref(s, rep);
}

static int
r_array(js *j, const json_t *s)
{
    const json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    const json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
    const json_t *addl = json_object_get(s, "additionalItems");
    long min = 0, max = -1, k = 0, i;
    llm_gseq *q;
    int r, item = -1, sp;

    if (mn && (!json_is_integer(mn) || json_integer_value(mn) < 0))
        return jfail(j, "JSON Schema: '%s' must be a non-negative integer", "minItems");
    if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0))
        return jfail(j, "JSON Schema: '%s' must be a non-negative integer", "maxItems");
    if (mn) {
        if (json_integer_value(mn) > MAX_LEN_GEN) return jfail(j, "JSON Schema: '%s' above 1024 is not supported", "minItems");
        min = (long) json_integer_value(mn);
    }
    if (mx) {
        json_int_t m = json_integer_value(mx);
        if (m < min) return jfail(j, "JSON Schema: no array satisfies '%s'", "maxItems");
        max = m > MAX_LEN_GEN ? (min > MAX_LEN_GEN ? min : MAX_LEN_GEN) : (long) m;
    }
    if (json_is_array(items)) {          /* draft 4 tuples */
        if (prefix) return jfail(j, "JSON Schema: '%s' as an array together with 'prefixItems'", "items");
        prefix = items;
        items = addl;
    } else if (addl) {
        return jfail(j, "JSON Schema: '%s' without an 'items' array is not supported", "additionalItems");
    }
    if (prefix && !json_is_array(prefix)) return jfail(j, "JSON Schema: '%s' must be an array", "prefixItems");
    sp = r_sp(j);
    q = llm_gseq_new();
    r = llm_gbuild_rule(j->b, "array");
    if (q == NULL || r < 0 || sp < 0) { llm_gseq_free(q); return jfail(j, "%s", "out of memory"); }
    llm_gseq_bytes(j->b, q, "[", 1);
    if (prefix) {
        /* every prefix item (as many as maxItems allows), then the rest */
        k = (long) json_array_size(prefix);
        if (max >= 0 && k > max) k = max;
        for (i = 0; i < k; i++) {
            int it = schema_rule(j, json_array_get(prefix, (size_t) i));
            if (it < 0) { llm_gseq_free(q); return -1; }
            if (i > 0) { llm_gseq_bytes(j->b, q, ",", 1); llm_gseq_ref(q, sp); }
            llm_gseq_ref(q, it);
        }
        if (items == NULL || json_is_false(items)) {
            if (min > k) { llm_gseq_free(q); return jfail(j, "JSON Schema: '%s' exceeds the items allowed", "minItems"); }
            item = -1;
        }
    }
    if (items != NULL && !json_is_false(items) && (max < 0 || max > k)) {
        item = schema_rule(j, items);
        if (item < 0) { llm_gseq_free(q); return -1; }
    } else if (items == NULL && !prefix) {
        item = r_value(j);
    }
    if (item >= 0) {
        long rmin = min > k ? min - k : 0, rmax = max < 0 ? -1 : max - k;
        if (k > 0) {
            /* "," sp item, repeated */
            llm_gseq *t = llm_gseq_new();
            int next = llm_gbuild_rule(j->b, "item-next"), rep;
            if (t == NULL || next < 0) { llm_gseq_free(t); llm_gseq_free(q); return -1; }
            llm_gseq_bytes(j->b, t, ",", 1); llm_gseq_ref(t, sp); llm_gseq_ref(t, item);
            llm_gbuild_define(j->b, next, t);
            llm_gseq_free(t);
            rep = llm_gbuild_repeat(j->b, next, rmin, rmax);
            llm_gseq_ref(q, rep);
        } else if (r_list(j, q, item, rmin, rmax) < 0) {
            llm_gseq_free(q);
            return -1;
        }
    }
    llm_gseq_bytes(j->b, q, "]", 1);
    if (llm_gbuild_define(j->b, r, q) < 0) r = -1;
    llm_gseq_free(q);
    return j->failed ? -1 : r;
}

/* ---- keywords ---- */

static const char *const annotations[] = {
    "title", "description", "default", "examples", "example", "$schema", "$id", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "contentMediaType",
    "contentEncoding", "markdownDescription", "$anchor", NULL
};

static const char *const supported[] = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "anyOf", "oneOf", "allOf", "$ref", "nullable", "uniqueItems", NULL
};

static int
in_list(const char *const *l, const char *k)
{
    for ( ; *l; l++) if (strcmp(*l, k) == 0) return 1;
    return 0;
}

/* ---- objects ---- */

/*
 * Members kv[0..n) in order, the required ones present, sep between two;
 * returns the rule of the whole sequence (possibly empty).
 *   with_i ::= sep kv_i with_{i+1} [| with_{i+1} if optional]  (one written)
 *   none_i ::= kv_i with_{i+1}     [| none_{i+1} if optional]  (none yet)
 */
static int
member_chain(js *j, const int *kv, const int *required, size_t n, int sep)
{
    int *with = calloc(n + 2, sizeof(int)), *none = calloc(n + 2, sizeof(int)), r = -1;
    llm_gseq *q = llm_gseq_new();
    size_t i;

    if (!with || !none || !q || sep < 0) goto out;
    for (i = n + 1; i-- > 0; ) {
        with[i] = llm_gbuild_rule(j->b, "props");
        none[i] = llm_gbuild_rule(j->b, "props0");
        if (with[i] < 0 || none[i] < 0) goto out;
        llm_gseq_clear(q);
        if (i < n) {
            llm_gseq_ref(q, sep); llm_gseq_ref(q, kv[i]); llm_gseq_ref(q, with[i + 1]);
            if (!required[i]) { llm_gseq_alt(q); llm_gseq_ref(q, with[i + 1]); }
        }
        if (llm_gbuild_define(j->b, with[i], q) < 0) goto out;
        llm_gseq_clear(q);
        if (i < n) {
            llm_gseq_ref(q, kv[i]); llm_gseq_ref(q, with[i + 1]);
            if (!required[i]) { llm_gseq_alt(q); llm_gseq_ref(q, none[i + 1]); }
        }
        if (llm_gbuild_define(j->b, none[i], q) < 0) goto out;
    }
    r = none[0];
out:
    free(with); free(none);
    llm_gseq_free(q);
    return r < 0 ? jfail(j, "%s", "out of memory") : r;
}

static int kv_args(js *j, const char *name, const json_t *schema, const llm_gargs_style *st);

/*
 * An object with `properties` / `required`: JSON's {"k": v, ...} (st NULL),
 * or a tool-call format's argument list (st: its member syntax, no braces).
 */
static int
r_object_as(js *j, const json_t *s, const llm_gargs_style *st)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *addl = json_object_get(s, "additionalProperties");
    const char **names = NULL;
    const json_t **schemas = NULL;
    int *required = NULL, *kv = NULL;
    size_t n = 0, i, k;
    llm_gseq *q = NULL;
    int r = -1, sp = r_sp(j);
    const char *key;
    json_t *val;

    if (props && !json_is_object(props)) return jfail(j, "JSON Schema: '%s' must be an object", "properties");
    if (req && !json_is_array(req)) return jfail(j, "JSON Schema: '%s' must be an array", "required");
    if (addl && !json_is_boolean(addl) && !json_is_object(addl))
        return jfail(j, "JSON Schema: '%s' must be a boolean or a schema", "additionalProperties");
    if (st == NULL && (props == NULL || json_object_size(props) == 0) && (req == NULL || json_array_size(req) == 0)) {
        /* a map: keys are free, values follow additionalProperties */
        int item, member, str = r_string(j);
        llm_gseq *t;
        if (json_is_false(addl)) return literal_rule(j, "{}");
        if (addl == NULL || json_is_true(addl)) return r_any_object(j);
        item = schema_rule(j, addl);
        if (item < 0 || str < 0) return -1;
        t = llm_gseq_new();
        member = llm_gbuild_rule(j->b, "map-member");
        if (t == NULL || member < 0) { llm_gseq_free(t); return jfail(j, "%s", "out of memory"); }
        llm_gseq_ref(t, str); llm_gseq_bytes(j->b, t, ":", 1); llm_gseq_ref(t, sp); llm_gseq_ref(t, item);
        llm_gbuild_define(j->b, member, t);
        llm_gseq_clear(t);
        r = llm_gbuild_rule(j->b, "map");
        llm_gseq_bytes(j->b, t, "{", 1);
        if (r_list(j, t, member, 0, -1) < 0) { llm_gseq_free(t); return -1; }
        llm_gseq_bytes(j->b, t, "}", 1);
        if (r < 0 || llm_gbuild_define(j->b, r, t) < 0) r = -1;
        llm_gseq_free(t);
        return r;
    }
    /* (an argument list without properties has no members: {} is valid) */
    n = (props ? json_object_size(props) : 0) + (req ? json_array_size(req) : 0);
    names = calloc(n + 1, sizeof(char *));
    schemas = calloc(n + 1, sizeof(json_t *));
    required = calloc(n + 1, sizeof(int));
    kv = calloc(n + 1, sizeof(int));
    q = llm_gseq_new();
    if (!names || !schemas || !required || !kv || !q || sp < 0) {
        jfail(j, "%s", "out of memory");
        goto out;
    }
    n = 0;
    if (props) {
        json_object_foreach((json_t *) props, key, val) {
            names[n] = key;
            schemas[n] = val;
            n++;
        }
    }
    for (i = 0; req && i < json_array_size(req); i++) {
        const json_t *rn = json_array_get(req, i);
        if (!json_is_string(rn)) { jfail(j, "JSON Schema: '%s' must list strings", "required"); goto out; }
        for (k = 0; k < n; k++) if (strcmp(names[k], json_string_value(rn)) == 0) break;
        if (k == n) {
            /* required but not described: any value, unless extras are forbidden */
            if (json_is_false(addl)) {
                jfail(j, "JSON Schema: required property '%s' is not allowed by additionalProperties",
                      json_string_value(rn));
                goto out;
            }
            names[n] = json_string_value(rn);
            schemas[n] = json_is_object(addl) ? addl : NULL;
            n++;
        }
        required[k] = 1;
    }
    for (i = 0; i < n; i++) {
        if (st) {
            kv[i] = kv_args(j, names[i], schemas[i], st);
            if (kv[i] < 0) goto out;
            continue;
        }
        /* kv_i ::= "name" ":" sp value_i */
        {
            json_t *ks = json_string(names[i]);
            char *lit = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
            int v = schemas[i] ? schema_rule(j, schemas[i]) : r_value(j);
            json_decref(ks);
            if (lit == NULL) { jfail(j, "%s", "out of memory"); goto out; }
            kv[i] = llm_gbuild_rule(j->b, "kv");
            llm_gseq_clear(q);
            llm_gseq_bytes(j->b, q, lit, strlen(lit));
            free(lit);
            llm_gseq_bytes(j->b, q, ":", 1);
            llm_gseq_ref(q, sp);
            if (v < 0 || kv[i] < 0 || llm_gseq_ref(q, v) < 0 || llm_gbuild_define(j->b, kv[i], q) < 0) {
                jfail(j, "%s", "out of memory");
                goto out;
            }
        }
    }
    {
        int sep = st ? llm_gbuild_literal(j->b, st->sep, strlen(st->sep)) : named(j, "jcomma", ", ?");
        int members = member_chain(j, kv, required, n, sep);
        if (members < 0) goto out;
        if (st) { r = members; goto out; }
        llm_gseq_clear(q);
        r = llm_gbuild_rule(j->b, "obj");
        llm_gseq_bytes(j->b, q, "{", 1);
        llm_gseq_ref(q, members);
        llm_gseq_bytes(j->b, q, "}", 1);
        if (r < 0 || llm_gbuild_define(j->b, r, q) < 0) r = jfail(j, "%s", "out of memory");
    }
out:
    free(names); free(schemas); free(required); free(kv);
    llm_gseq_free(q);
    return j->failed ? -1 : r;
}

static int
r_object(js *j, const json_t *s)
{
    return r_object_as(j, s, NULL);
}

/* ---- tool-call arguments written as text (llm_gbuild_json_args) ---- */

/* one code point of text: printable, tab, newline; not '<' */
static int
r_text_char(js *j)
{
    static const uint32_t ranges[6] = { 9, 10, 0x20, 0x3B, 0x3D, 0x10FFFF };
    int r = llm_gbuild_find(j->b, "text-char");
    if (r >= 0) return r;
    r = llm_gbuild_codepoints(j->b, ranges, 3, 0);
    return r < 0 ? jfail(j, "%s", "out of memory") : r;
}

/* text of any length where '<' is only followed by a character that cannot
 * continue a marker ('/', a letter, '<' cannot): text ::= (c | "<" after)* */
static int
r_text(js *j)
{
    static const uint32_t after[12] = { 9, 10, 0x20, 0x2E, 0x30, 0x3B, 0x3D, 0x40, 0x5B, 0x60, 0x7B, 0x10FFFF };
    int r = llm_gbuild_find(j->b, "text"), c, a, unit;
    llm_gseq *q;

    if (r >= 0) return r;
    c = r_text_char(j);
    a = llm_gbuild_codepoints(j->b, after, 6, 0);
    q = llm_gseq_new();
    unit = llm_gbuild_rule(j->b, "text-unit");
    if (c < 0 || a < 0 || q == NULL || unit < 0) { llm_gseq_free(q); return jfail(j, "%s", "out of memory"); }
    llm_gseq_ref(q, c);
    llm_gseq_alt(q);
    llm_gseq_bytes(j->b, q, "<", 1);
    llm_gseq_ref(q, a);
    if (llm_gbuild_define(j->b, unit, q) < 0) unit = -1;
    llm_gseq_free(q);
    r = unit < 0 ? -1 : llm_gbuild_repeat(j->b, unit, 0, -1);
    if (r < 0) return jfail(j, "%s", "out of memory");
    /* alias under the name for later lookups */
    q = llm_gseq_new();
    unit = llm_gbuild_rule(j->b, "text");
    if (q == NULL || unit < 0 || llm_gseq_ref(q, r) < 0 || llm_gbuild_define(j->b, unit, q) < 0) unit = -1;
    llm_gseq_free(q);
    return unit < 0 ? jfail(j, "%s", "out of memory") : unit;
}

/* '<' followed by what could start a marker */
static int
text_has_marker(const char *p, size_t n)
{
    size_t i;
    for (i = 0; i + 1 < n; i++) {
        char c = p[i + 1];
        if (p[i] == '<' && (c == '/' || c == '<' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return 1;
    }
    return 0;
}

/* 1 unless the pattern surely never matches a '<' (conservative: '.',
 * negated classes, \W \S \D, numeric escapes and ranges over '<' count). */
static int
pattern_may_write_lt(const char *p)
{
    int in_class = 0;
    for ( ; *p; p++) {
        if (*p == '\\') {
            p++;
            if (*p == 0) return 1;
            if (strchr("WSDxuU", *p)) return 1;
            continue;
        }
        if (*p == '<') return 1;
        if (!in_class) {
            if (*p == '.') return 1;
            if (*p == '[') {
                in_class = 1;
                if (p[1] == '^') return 1;
            }
            continue;
        }
        if (*p == ']') { in_class = 0; continue; }
        if (p[1] == '-' && p[2] && p[2] != ']' && p[2] != '\\'
            && (unsigned char) *p <= '<' && (unsigned char) p[2] >= '<') return 1;
    }
    return 0;
}

/* A string schema as the string itself (no quotes, no escapes): what a
 * format's parser reads as a string value. */
static int
r_text_string(js *j, const char *name, const json_t *s)
{
    static const char *const ok_keys[] = {
        "type", "enum", "const", "pattern", "format", "minLength", "maxLength", "nullable", NULL };
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    const json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    const json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
    const char *key;
    json_t *val;
    char msg[320];

    json_object_foreach((json_t *) s, key, val) {
        if (!in_list(ok_keys, key) && !in_list(annotations, key)) {
            snprintf(msg, sizeof(msg), "parameter '%s': '%%s' cannot be enforced on a text value in this tool-call format", name);
            return jfail(j, msg, key);
        }
    }
    if (en || cn) {
        /* the string members, as alternatives */
        const json_t *list = en ? en : cn;
        json_t *one = NULL;
        llm_gseq *q = llm_gseq_new();
        size_t i, n = 0;
        int r = llm_gbuild_rule(j->b, "text-enum");
        if (cn) { one = json_array(); json_array_append((json_t *) one, (json_t *) cn); list = one; }
        if (!json_is_array(list) || q == NULL || r < 0) {
            json_decref(one); llm_gseq_free(q);
            return jfail(j, "JSON Schema: '%s' must be a non-empty array", "enum");
        }
        for (i = 0; i < json_array_size(list); i++) {
            const json_t *e = json_array_get(list, i);
            if (!json_is_string(e) || text_has_marker(json_string_value(e), json_string_length(e))) continue;
            if (n++ > 0) llm_gseq_alt(q);
            llm_gseq_bytes(j->b, q, json_string_value(e), json_string_length(e));
        }
        json_decref(one);
        if (n == 0) {
            llm_gseq_free(q);
            snprintf(msg, sizeof(msg), "parameter '%s': no member of '%%s' can be written as text in this tool-call format", name);
            return jfail(j, msg, en ? "enum" : "const");
        }
        if (llm_gbuild_define(j->b, r, q) < 0) r = -1;
        llm_gseq_free(q);
        return r < 0 ? jfail(j, "%s", "out of memory") : r;
    }
    if ((fmt || pat) && (mn || mx)) {
        snprintf(msg, sizeof(msg), "JSON Schema: '%%s' together with '%s' is not supported", fmt ? "format" : "pattern");
        return jfail(j, msg, mn ? "minLength" : "maxLength");
    }
    if (fmt) {
        size_t i;
        if (!json_is_string(fmt)) return jfail(j, "JSON Schema: '%s' must be a string", "format");
        if (pat) return jfail(j, "JSON Schema: '%s' together with 'format' is not supported", "pattern");
        for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
            if (strcmp(json_string_value(fmt), formats[i].name) == 0) {
                int r = llm_gregex_rule(j->b, formats[i].re, strlen(formats[i].re), 0, j->err, j->errlen);
                if (r < 0) j->failed = 1;
                return r;
            }
        }
        return jfail(j, "JSON Schema: format '%s' is not supported (date-time, date, time, uuid, email are)",
                     json_string_value(fmt));
    }
    if (pat) {
        const char *p;
        if (!json_is_string(pat)) return jfail(j, "JSON Schema: '%s' must be a string", "pattern");
        p = json_string_value(pat);
        /* the text must not run into a marker: patterns that can write '<' are refused */
        if (pattern_may_write_lt(p)) {
            snprintf(msg, sizeof(msg), "parameter '%s': a '%%s' that allows '<' cannot be enforced on a text value in this tool-call format", name);
            return jfail(j, msg, "pattern");
        }
        return pattern_rule(j, p, json_string_length(pat), 0);
    }
    if (mn || mx) {
        long min = 0, max = -1;
        int c = r_text_char(j), r;
        if (mn && (!json_is_integer(mn) || json_integer_value(mn) < 0 || json_integer_value(mn) > MAX_LEN_GEN))
            return jfail(j, "JSON Schema: '%s' must be an integer from 0 to 1024", "minLength");
        if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0))
            return jfail(j, "JSON Schema: '%s' must be a non-negative integer", "maxLength");
        if (mn) min = (long) json_integer_value(mn);
        if (mx) {
            json_int_t m = json_integer_value(mx);
            if (m < min) return jfail(j, "JSON Schema: no string satisfies '%s'", "maxLength");
            max = m > MAX_LEN_GEN ? (min > MAX_LEN_GEN ? min : MAX_LEN_GEN) : (long) m;
        }
        r = c < 0 ? -1 : llm_gbuild_repeat(j->b, c, min, max);
        return r < 0 ? jfail(j, "%s", "out of memory") : r;
    }
    return r_text(j);
}

/* a schema restricted to one of its listed types (and null when listed) */
static const json_t *
only_type(js *j, const json_t *s, const char *type)
{
    const json_t *t = json_object_get(s, "type");
    json_t *copy, *list;
    size_t i;
    int with_null = 0;

    if (type == NULL || !json_is_array(t)) return s;
    for (i = 0; i < json_array_size(t); i++) {
        const char *v = json_string_value(json_array_get(t, i));
        if (v && strcmp(v, "null") == 0) with_null = 1;
    }
    copy = json_copy((json_t *) s);
    list = json_array();
    if (copy == NULL || list == NULL) { json_decref(copy); json_decref(list); return NULL; }
    json_array_append_new(list, json_string(type));
    if (with_null) json_array_append_new(list, json_string("null"));
    json_object_set_new(copy, "type", list);
    json_array_append_new(j->owned, copy);
    return copy;
}

/* kv ::= key_pre NAME key_post value val_post */
static int
kv_args(js *j, const char *name, const json_t *schema, const llm_gargs_style *st)
{
    const char *type = NULL;
    const char *p;
    char msg[320];
    int v, r;
    llm_gseq *q;

    for (p = name; *p; p++) {
        int bad = st->ident_keys
            ? !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (p > name && *p >= '0' && *p <= '9'))
            : (strchr("<>\n", *p) != NULL);
        if (bad || !*name) {
            snprintf(msg, sizeof(msg), "parameter name '%s' cannot be written in the %%s tool-call format", name);
            return jfail(j, msg, st->format);
        }
    }
    if (*name == 0) return jfail(j, "an empty parameter name cannot be written in the %s tool-call format", st->format);
    if (schema != NULL && st->reads && st->reads(schema, &type) == 1) {
        if (!json_is_object(schema)) return jfail(j, "JSON Schema: %s must be an object", "a schema");
        v = r_text_string(j, name, schema);
    } else if (schema != NULL) {
        const json_t *s = only_type(j, schema, type);
        v = s ? schema_rule(j, s) : jfail(j, "%s", "out of memory");
    } else {
        v = r_value(j);
    }
    if (v < 0) return -1;
    q = llm_gseq_new();
    r = llm_gbuild_rule(j->b, "arg");
    if (q == NULL || r < 0) { llm_gseq_free(q); return jfail(j, "%s", "out of memory"); }
    llm_gseq_bytes(j->b, q, st->key_pre, strlen(st->key_pre));
    llm_gseq_bytes(j->b, q, name, strlen(name));
    llm_gseq_bytes(j->b, q, st->key_post, strlen(st->key_post));
    llm_gseq_ref(q, v);
    llm_gseq_bytes(j->b, q, st->val_post, strlen(st->val_post));
    if (llm_gbuild_define(j->b, r, q) < 0) r = -1;
    llm_gseq_free(q);
    return r < 0 ? jfail(j, "%s", "out of memory") : r;
}

/* ---- dispatch ---- */

static const json_t *
resolve_ref(js *j, const char *ref)
{
    return llm_jschema_ref(j->root, ref);
}

static int
r_ref(js *j, const char *ref)
{
    size_t i;
    const json_t *target;
    int r, body;
    llm_gseq *s;

    for (i = 0; i < j->n_refs; i++) if (strcmp(j->refs[i].ref, ref) == 0) return j->refs[i].rule;
    target = resolve_ref(j, ref);
    if (target == NULL) return jfail(j, "JSON Schema: '$ref' '%s' cannot be resolved (only local '#/...' refs are)", ref);
    if (j->n_refs == j->cap_refs) {
        size_t cap = j->cap_refs ? j->cap_refs * 2 : 8;
        js_ref *nr = realloc(j->refs, cap * sizeof(*nr));
        if (nr == NULL) return jfail(j, "%s", "out of memory");
        j->refs = nr;
        j->cap_refs = cap;
    }
    /* the rule exists before its body is compiled, so recursion refers to it */
    r = llm_gbuild_rule(j->b, "ref");
    if (r < 0) return jfail(j, "%s", "out of memory");
    j->refs[j->n_refs].ref = strdup(ref);
    j->refs[j->n_refs].rule = r;
    if (j->refs[j->n_refs].ref == NULL) return jfail(j, "%s", "out of memory");
    j->n_refs++;
    body = schema_rule(j, target);
    if (body < 0) return -1;
    s = llm_gseq_new();
    if (s == NULL || llm_gseq_ref(s, body) < 0 || llm_gbuild_define(j->b, r, s) < 0) {
        llm_gseq_free(s);
        return jfail(j, "%s", "out of memory");
    }
    llm_gseq_free(s);
    return r;
}

static int
type_matches(const char *type, const json_t *v)
{
    if (strcmp(type, "string") == 0) return json_is_string(v);
    if (strcmp(type, "integer") == 0) return json_is_integer(v) || (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
    if (strcmp(type, "number") == 0) return json_is_number(v);
    if (strcmp(type, "boolean") == 0) return json_is_boolean(v);
    if (strcmp(type, "null") == 0) return json_is_null(v);
    if (strcmp(type, "object") == 0) return json_is_object(v);
    if (strcmp(type, "array") == 0) return json_is_array(v);
    return 0;
}

static int
types_match(const json_t *type, const json_t *v)
{
    size_t i;
    if (type == NULL) return 1;
    if (json_is_string(type)) return type_matches(json_string_value(type), v);
    for (i = 0; i < json_array_size(type); i++) {
        const json_t *t = json_array_get(type, i);
        if (json_is_string(t) && type_matches(json_string_value(t), v)) return 1;
    }
    return 0;
}

static int
r_literals(js *j, const json_t *vals, const json_t *type)
{
    llm_gseq *s = llm_gseq_new();
    int r = llm_gbuild_rule(j->b, "enum"), first = 1;
    size_t i;

    if (s == NULL || r < 0) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
    for (i = 0; i < json_array_size(vals); i++) {
        const json_t *v = json_array_get(vals, i);
        char *t;
        if (!types_match(type, v)) continue;
        t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (t == NULL) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
        if (!first) llm_gseq_alt(s);
        first = 0;
        llm_gseq_bytes(j->b, s, t, strlen(t));
        free(t);
    }
    if (first) { llm_gseq_free(s); return jfail(j, "JSON Schema: no value of '%s' fits the schema's type", "enum"); }
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

static int
r_alternatives(js *j, const json_t *list, const char *kw)
{
    llm_gseq *s;
    int r;
    size_t i;

    if (!json_is_array(list) || json_array_size(list) == 0)
        return jfail(j, "JSON Schema: '%s' must be a non-empty array", kw);
    s = llm_gseq_new();
    r = llm_gbuild_rule(j->b, kw);
    if (s == NULL || r < 0) { llm_gseq_free(s); return jfail(j, "%s", "out of memory"); }
    for (i = 0; i < json_array_size(list); i++) {
        int a = schema_rule(j, json_array_get(list, i));
        if (a < 0) { llm_gseq_free(s); return -1; }
        if (i > 0) llm_gseq_alt(s);
        llm_gseq_ref(s, a);
    }
    if (strcmp(kw, "oneOf") == 0) {
        /* exactly one branch: the union is exact only when no branch's text
         * can match another (llm_jexclusive.c); never enforced weaker */
        size_t a, c;
        for (a = 0; a < json_array_size(list); a++) {
            for (c = a + 1; c < json_array_size(list); c++) {
                if (!llm_jschema_exclusive(j->root, json_array_get(list, a), json_array_get(list, c))) {
                    char which[64];
                    snprintf(which, sizeof(which), "%zu and %zu", a, c);
                    llm_gseq_free(s);
                    return jfail(j, "JSON Schema: 'oneOf' branches %s may match the same value, so "
                                 "exactly-one cannot be enforced (branches that differ by type, "
                                 "const/enum or a required property can be; anyOf allows overlap)", which);
                }
            }
        }
    }
    if (llm_gbuild_define(j->b, r, s) < 0) r = -1;
    llm_gseq_free(s);
    return r;
}

/* allOf: one schema with the members' keywords merged (objects: properties
 * and required united); a keyword two members set differently is an error. */
static int
r_allof(js *j, const json_t *s)
{
    const json_t *list = json_object_get(s, "allOf");
    json_t *m = json_object(), *props = json_object(), *req = json_array();
    const char *key;
    json_t *val;
    size_t i;

    if (!m || !props || !req) goto oom;
    if (!json_is_array(list) || json_array_size(list) == 0) {
        json_decref(m); json_decref(props); json_decref(req);
        return jfail(j, "JSON Schema: '%s' must be a non-empty array", "allOf");
    }
    for (i = 0; i <= json_array_size(list); i++) {
        const json_t *part = i < json_array_size(list) ? json_array_get(list, i) : s;
        const json_t *ref = json_object_get(part, "$ref");
        int hops = 0;
        while (json_is_string(ref) && hops++ < 16) {
            part = resolve_ref(j, json_string_value(ref));
            if (part == NULL) {
                json_decref(m); json_decref(props); json_decref(req);
                return jfail(j, "JSON Schema: '$ref' '%s' cannot be resolved", json_string_value(ref));
            }
            ref = json_object_get(part, "$ref");
        }
        if (!json_is_object(part)) {
            json_decref(m); json_decref(props); json_decref(req);
            return jfail(j, "JSON Schema: '%s' members must be schemas", "allOf");
        }
        json_object_foreach((json_t *) part, key, val) {
            if (strcmp(key, "allOf") == 0 || strcmp(key, "$ref") == 0 || in_list(annotations, key)) continue;
            if (strcmp(key, "properties") == 0 && json_is_object(val)) {
                if (json_object_update(props, val) < 0) goto oom;
            } else if (strcmp(key, "required") == 0 && json_is_array(val)) {
                if (json_array_extend(req, val) < 0) goto oom;
            } else {
                const json_t *had = json_object_get(m, key);
                if (had && !json_equal(had, val)) {
                    json_decref(m); json_decref(props); json_decref(req);
                    return jfail(j, "JSON Schema: 'allOf' members set '%s' differently", key);
                }
                if (json_object_set(m, key, val) < 0) goto oom;
            }
        }
    }
    if (json_object_size(props) && json_object_set(m, "properties", props) < 0) goto oom;
    if (json_array_size(req) && json_object_set(m, "required", req) < 0) goto oom;
    json_decref(props);
    json_decref(req);
    /* keep it alive for the compile (rules refer to nothing in it afterwards) */
    if (json_array_append_new(j->owned, m) < 0) { json_decref(m); return jfail(j, "%s", "out of memory"); }
    return schema_rule(j, m);
oom:
    json_decref(m); json_decref(props); json_decref(req);
    return jfail(j, "%s", "out of memory");
}

static int
r_type(js *j, const json_t *s, const char *t)
{
    if (strcmp(t, "string") == 0) return r_str(j, s);
    if (strcmp(t, "integer") == 0) return r_integer(j, s);
    if (strcmp(t, "number") == 0) return r_number(j, s);
    if (strcmp(t, "boolean") == 0) return named(j, "jboolean", "true|false");
    if (strcmp(t, "null") == 0) return literal_rule(j, "null");
    if (strcmp(t, "object") == 0) return r_object(j, s);
    if (strcmp(t, "array") == 0) return r_array(j, s);
    return jfail(j, "JSON Schema: unknown type '%s'", t);
}

static int
schema_rule(js *j, const json_t *s)
{
    const char *key;
    json_t *val;
    const json_t *type, *v;
    int r;

    if (j->failed) return -1;
    if (json_is_true(s)) return r_value(j);
    if (json_is_false(s)) return jfail(j, "JSON Schema: %s schema matches nothing", "a 'false'");
    if (!json_is_object(s)) return jfail(j, "JSON Schema: %s must be an object", "a schema");
    if (++j->depth > MAX_DEPTH) return jfail(j, "JSON Schema: nested deeper than %s levels", "64");

    json_object_foreach((json_t *) s, key, val) {
        if (!in_list(annotations, key) && !in_list(supported, key)) {
            j->depth--;
            return jfail(j, "JSON Schema keyword '%s' is not supported", key);
        }
    }
    if ((v = json_object_get(s, "uniqueItems")) && json_is_true(v)) {
        j->depth--;
        return jfail(j, "JSON Schema keyword '%s' is not supported", "uniqueItems");
    }
    type = json_object_get(s, "type");
    if (type && !json_is_string(type) && !json_is_array(type)) {
        j->depth--;
        return jfail(j, "JSON Schema: '%s' must be a string or an array", "type");
    }

    if ((v = json_object_get(s, "nullable")) && json_is_true(v)) {
        /* nullable: this schema without the flag, or null */
        json_t *copy = json_copy((json_t *) s);
        llm_gseq *q = llm_gseq_new();
        int inner;
        if (copy == NULL || q == NULL) { json_decref(copy); llm_gseq_free(q); return jfail(j, "%s", "out of memory"); }
        json_object_del(copy, "nullable");
        json_array_append_new(j->owned, copy);
        inner = schema_rule(j, copy);
        r = llm_gbuild_rule(j->b, "nullable");
        if (inner < 0 || r < 0) { llm_gseq_free(q); j->depth--; return -1; }
        llm_gseq_ref(q, inner);
        llm_gseq_alt(q);
        llm_gseq_bytes(j->b, q, "null", 4);
        llm_gbuild_define(j->b, r, q);
        llm_gseq_free(q);
        j->depth--;
        return r;
    }
    if (json_object_get(s, "allOf")) {
        r = r_allof(j, s);
    } else if ((v = json_object_get(s, "$ref")) != NULL) {
        json_object_foreach((json_t *) s, key, val) {
            if (strcmp(key, "$ref") != 0 && !in_list(annotations, key)) {
                j->depth--;
                return jfail(j, "JSON Schema: '$ref' together with '%s' is not supported", key);
            }
        }
        r = json_is_string(v) ? r_ref(j, json_string_value(v))
                              : jfail(j, "JSON Schema: '%s' must be a string", "$ref");
    } else if ((v = json_object_get(s, "const")) != NULL) {
        json_t *one = json_array();
        json_array_append((json_t *) one, (json_t *) v);
        r = one ? r_literals(j, one, type) : jfail(j, "%s", "out of memory");
        json_decref(one);
    } else if ((v = json_object_get(s, "enum")) != NULL) {
        r = json_is_array(v) && json_array_size(v) ? r_literals(j, v, type)
            : jfail(j, "JSON Schema: '%s' must be a non-empty array", "enum");
    } else if ((v = json_object_get(s, "anyOf")) != NULL || (v = json_object_get(s, "oneOf")) != NULL) {
        const char *kw = json_object_get(s, "anyOf") ? "anyOf" : "oneOf";
        if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf")) {
            j->depth--;
            return jfail(j, "JSON Schema: '%s' together with 'anyOf' is not supported", "oneOf");
        }
        json_object_foreach((json_t *) s, key, val) {
            if (strcmp(key, kw) != 0 && !in_list(annotations, key)) {
                j->depth--;
                return jfail(j, "JSON Schema: keyword '%s' beside 'anyOf'/'oneOf' is not supported", key);
            }
        }
        r = r_alternatives(j, v, kw);
    } else if (json_is_string(type)) {
        r = r_type(j, s, json_string_value(type));
    } else if (json_is_array(type)) {
        llm_gseq *q = llm_gseq_new();
        size_t i;
        r = llm_gbuild_rule(j->b, "types");
        if (q == NULL || r < 0 || json_array_size(type) == 0) {
            llm_gseq_free(q);
            j->depth--;
            return jfail(j, "JSON Schema: '%s' must be a non-empty array", "type");
        }
        for (i = 0; i < json_array_size(type) && r >= 0; i++) {
            const json_t *t = json_array_get(type, i);
            int a = json_is_string(t) ? r_type(j, s, json_string_value(t))
                                      : jfail(j, "JSON Schema: '%s' must list strings", "type");
            if (a < 0) { r = -1; break; }
            if (i > 0) llm_gseq_alt(q);
            llm_gseq_ref(q, a);
        }
        if (r >= 0 && llm_gbuild_define(j->b, r, q) < 0) r = -1;
        llm_gseq_free(q);
    } else if (json_object_get(s, "properties") || json_object_get(s, "required")
               || json_object_get(s, "additionalProperties")) {
        r = r_object(j, s);
    } else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")
               || json_object_get(s, "minItems") || json_object_get(s, "maxItems")) {
        r = r_array(j, s);
    } else if (json_object_get(s, "pattern") || json_object_get(s, "format")
               || json_object_get(s, "minLength") || json_object_get(s, "maxLength")) {
        r = r_str(j, s);
    } else if (json_object_get(s, "minimum") || json_object_get(s, "maximum")
               || json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum")) {
        r = r_number(j, s);
    } else {
        r = r_value(j);
    }
    j->depth--;
    return j->failed ? -1 : r;
}

int
llm_gbuild_json_schema(llm_gbuild *b, const json_t *schema, char *err, size_t errlen)
{
    return llm_gbuild_json_schema_flags(b, schema, 0, err, errlen);
}

int
llm_gbuild_json_schema_flags(llm_gbuild *b, const json_t *schema, int flags, char *err, size_t errlen)
{
    js j = {0};
    int r;
    size_t i;

    j.b = b;
    j.root = schema;
    j.err = err;
    j.errlen = errlen;
    j.owned = json_array();
    j.flags = flags;
    if (j.owned == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    r = schema ? schema_rule(&j, schema) : r_any_object(&j);
    for (i = 0; i < j.n_refs; i++) free(j.refs[i].ref);
    free(j.refs);
    json_decref(j.owned);
    return j.failed ? -1 : r;
}

int
llm_gbuild_json_args(llm_gbuild *b, const json_t *schema, const llm_gargs_style *st, int flags,
                     char *err, size_t errlen)
{
    static const char *const ok_top[] = {
        "type", "properties", "required", "additionalProperties", NULL };
    js j = {0};
    int r = -1;
    size_t i;
    const char *key;
    json_t *val;

    j.b = b;
    j.root = schema;
    j.err = err;
    j.errlen = errlen;
    j.owned = json_array();
    j.flags = flags;
    if (j.owned == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    if (schema != NULL && !json_is_object(schema)) {
        jfail(&j, "JSON Schema: %s must be an object", "the parameters schema");
    } else if (schema != NULL) {
        const json_t *t = json_object_get(schema, "type");
        json_object_foreach((json_t *) schema, key, val) {
            if (!in_list(ok_top, key) && !in_list(annotations, key)) {
                char msg[200];
                snprintf(msg, sizeof(msg), "JSON Schema: '%%s' at the top of the parameters cannot be enforced in the %s tool-call format", st->format);
                jfail(&j, msg, key);
                break;
            }
        }
        if (!j.failed && t && !(json_is_string(t) && strcmp(json_string_value(t), "object") == 0))
            jfail(&j, "JSON Schema: the parameters must be of type '%s'", "object");
    }
    if (!j.failed) {
        json_t *empty = schema ? NULL : json_object();
        r = r_object_as(&j, schema ? schema : empty, st);
        json_decref(empty);
    }
    for (i = 0; i < j.n_refs; i++) free(j.refs[i].ref);
    free(j.refs);
    json_decref(j.owned);
    return j.failed ? -1 : r;
}

llm_grammar *
llm_grammar_from_json_schema(const json_t *schema, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    llm_grammar *g = NULL;
    int r;

    if (b == NULL) { llm_gerr(err, errlen, "out of memory"); return NULL; }
    r = llm_gbuild_json_schema(b, schema, err, errlen);
    if (r >= 0) g = llm_gbuild_finish(b, r, err, errlen);
    llm_gbuild_free(b);
    return g;
}
