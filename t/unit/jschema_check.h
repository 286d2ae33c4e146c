/*
 * An independent JSON Schema checker for the tests of the grammar engine:
 * written from the specification, sharing no code with src/grammar (patterns
 * are run by PCRE2, formats by their own field checks).  Covers the subset
 * src/grammar/llm_jschema.c accepts.  Returns 1 when v is valid, else 0
 * with the reason in why[].
 */
#ifndef JSCHEMA_CHECK_H
#define JSCHEMA_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

static char jsc_why[256];

static int
jsc_fail(const char *what)
{
    snprintf(jsc_why, sizeof(jsc_why), "%s", what);
    return 0;
}

static long
jsc_codepoints(const char *s, size_t n)
{
    long c = 0;
    size_t i;
    for (i = 0; i < n; i++) if (((unsigned char) s[i] & 0xC0) != 0x80) c++;
    return c;
}

static int
jsc_regex(const char *pat, const char *s, size_t n)
{
    int ec, rc;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR) pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &eo, NULL);
    pcre2_match_data *md;
    if (re == NULL) return -1;
    md = pcre2_match_data_create_from_pattern(re, NULL);
    rc = pcre2_match(re, (PCRE2_SPTR) s, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0;
}

static int
jsc_date(const char *s)
{
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int y, m, d, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10) return 0;
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1]) return 0;
    if (m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 0;
    return 1;
}

static int
jsc_time(const char *s)
{
    int h, mi, se, n = 0, th, tm;
    if (sscanf(s, "%2d:%2d:%2d%n", &h, &mi, &se, &n) != 3 || n != 8) return 0;
    if (h > 23 || mi > 59 || se > 59) return 0;
    s += 8;
    if (*s == '.') { s++; if (*s < '0' || *s > '9') return 0; while (*s >= '0' && *s <= '9') s++; }
    if (*s == 'Z' || *s == 'z') return s[1] == 0;
    if (*s != '+' && *s != '-') return 0;
    if (sscanf(s + 1, "%2d:%2d%n", &th, &tm, &n) != 2 || n != 5 || th > 23 || tm > 59) return 0;
    return s[6] == 0;
}

static int
jsc_format(const char *f, const char *s)
{
    if (strcmp(f, "date") == 0) return strlen(s) == 10 && jsc_date(s);
    if (strcmp(f, "time") == 0) return jsc_time(s);
    if (strcmp(f, "date-time") == 0) return strlen(s) > 11 && (s[10] == 'T' || s[10] == 't')
                                           && jsc_date(s) && jsc_time(s + 11);
    if (strcmp(f, "uuid") == 0)
        return jsc_regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", s, strlen(s)) == 1;
    if (strcmp(f, "email") == 0) {
        const char *at = strchr(s, '@');
        return at && at > s && strchr(at + 1, '@') == NULL && strchr(at + 1, '.') != NULL
            && s[strlen(s) - 1] != '.' && at[1] != '.' && s[0] != '.' && at[-1] != '.'
            && strstr(s, "..") == NULL;
    }
    return 0;
}

static const json_t *
jsc_ref(const json_t *root, const char *ref)
{
    const json_t *cur = root;
    char seg[256];
    const char *p;
    if (strcmp(ref, "#") == 0) return root;
    if (strncmp(ref, "#/", 2) != 0) return NULL;
    p = ref + 2;
    while (*p && cur) {
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof(seg)) {
            char c = *p++;
            if (c == '~' && *p == '0') { c = '~'; p++; }
            else if (c == '~' && *p == '1') { c = '/'; p++; }
            seg[n++] = c;
        }
        seg[n] = 0;
        if (*p == '/') p++;
        cur = json_object_get(cur, seg);
    }
    return cur;
}

static int jsc_valid(const json_t *v, const json_t *s, const json_t *root);

static int
jsc_type_is(const json_t *v, const char *t)
{
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "integer")) return json_is_integer(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "object")) return json_is_object(v);
    if (!strcmp(t, "array")) return json_is_array(v);
    return 0;
}

static int
jsc_valid(const json_t *v, const json_t *s, const json_t *root)
{
    const json_t *k;
    size_t i;

    if (json_is_true(s)) return 1;
    if (!json_is_object(s)) return jsc_fail("schema not an object");
    if (json_is_true(json_object_get(s, "nullable")) && json_is_null(v)) return 1;
    if ((k = json_object_get(s, "$ref"))) {
        const json_t *t = jsc_ref(root, json_string_value(k));
        if (!t || !jsc_valid(v, t, root)) return 0;
    }
    if ((k = json_object_get(s, "type"))) {
        int okt = 0;
        if (json_is_string(k)) okt = jsc_type_is(v, json_string_value(k));
        else for (i = 0; i < json_array_size(k); i++) okt |= jsc_type_is(v, json_string_value(json_array_get(k, i)));
        if (!okt) return jsc_fail("type");
    }
    if ((k = json_object_get(s, "const")) && !json_equal((json_t *) k, (json_t *) v)) return jsc_fail("const");
    if ((k = json_object_get(s, "enum"))) {
        int found = 0;
        for (i = 0; i < json_array_size(k); i++) found |= json_equal(json_array_get(k, i), (json_t *) v);
        if (!found) return jsc_fail("enum");
    }
    if ((k = json_object_get(s, "anyOf"))) {
        int any = 0;
        for (i = 0; i < json_array_size(k); i++) any |= jsc_valid(v, json_array_get(k, i), root);
        if (!any) return jsc_fail("anyOf");
    }
    if ((k = json_object_get(s, "oneOf"))) {
        int n = 0;
        for (i = 0; i < json_array_size(k); i++) n += jsc_valid(v, json_array_get(k, i), root);
        if (n != 1) return jsc_fail("oneOf");
    }
    if ((k = json_object_get(s, "allOf"))) {
        for (i = 0; i < json_array_size(k); i++) if (!jsc_valid(v, json_array_get(k, i), root)) return 0;
    }
    if (json_is_string(v)) {
        const char *str = json_string_value(v);
        size_t n = json_string_length(v);
        if ((k = json_object_get(s, "minLength")) && jsc_codepoints(str, n) < json_integer_value(k)) return jsc_fail("minLength");
        if ((k = json_object_get(s, "maxLength")) && jsc_codepoints(str, n) > json_integer_value(k)) return jsc_fail("maxLength");
        if ((k = json_object_get(s, "pattern")) && jsc_regex(json_string_value(k), str, n) != 1) return jsc_fail("pattern");
        if ((k = json_object_get(s, "format")) && !jsc_format(json_string_value(k), str)) return jsc_fail("format");
    }
    if (json_is_number(v)) {
        double x = json_number_value(v);
        const json_t *emin = json_object_get(s, "exclusiveMinimum"), *emax = json_object_get(s, "exclusiveMaximum");
        if ((k = json_object_get(s, "minimum"))) {
            if (x < json_number_value(k) || (json_is_true(emin) && x == json_number_value(k))) return jsc_fail("minimum");
        }
        if ((k = json_object_get(s, "maximum"))) {
            if (x > json_number_value(k) || (json_is_true(emax) && x == json_number_value(k))) return jsc_fail("maximum");
        }
        if (json_is_number(emin) && x <= json_number_value(emin)) return jsc_fail("exclusiveMinimum");
        if (json_is_number(emax) && x >= json_number_value(emax)) return jsc_fail("exclusiveMaximum");
    }
    if (json_is_object(v)) {
        const json_t *props = json_object_get(s, "properties"), *addl = json_object_get(s, "additionalProperties");
        const char *key;
        json_t *val;
        if ((k = json_object_get(s, "required"))) {
            for (i = 0; i < json_array_size(k); i++)
                if (!json_object_get(v, json_string_value(json_array_get(k, i)))) return jsc_fail("required");
        }
        json_object_foreach((json_t *) v, key, val) {
            const json_t *ps = props ? json_object_get(props, key) : NULL;
            if (ps) { if (!jsc_valid(val, ps, root)) return 0; }
            else if (json_is_false(addl)) return jsc_fail("additionalProperties");
            else if (json_is_object(addl) && !jsc_valid(val, addl, root)) return 0;
        }
    }
    if (json_is_array(v)) {
        const json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
        size_t start = 0;
        if ((k = json_object_get(s, "minItems")) && (json_int_t) json_array_size(v) < json_integer_value(k)) return jsc_fail("minItems");
        if ((k = json_object_get(s, "maxItems")) && (json_int_t) json_array_size(v) > json_integer_value(k)) return jsc_fail("maxItems");
        if (json_is_array(items)) { prefix = items; items = json_object_get(s, "additionalItems"); }
        if (prefix) {
            for (i = 0; i < json_array_size(prefix) && i < json_array_size(v); i++)
                if (!jsc_valid(json_array_get(v, i), json_array_get(prefix, i), root)) return 0;
            start = json_array_size(prefix);
        }
        for (i = start; i < json_array_size(v); i++) {
            if (json_is_false(items)) return jsc_fail("items false");
            if (items && !jsc_valid(json_array_get(v, i), items, root)) return 0;
        }
    }
    return 1;
}

#endif
