/*
 * Parameter values given as text (qwen3_coder <parameter=k>v</parameter>,
 * glm4 <arg_value>v</arg_value>) become JSON by the tool's schema type.
 */
#include "parsers/llm_parser_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whole text (whitespace aside) is one JSON value, per the normalizer. */
static int
typed_json(llm_pbuf *out, const char *s, size_t n)
{
    llm_jv v;
    size_t i;
    int    r = LLM_JV_MORE, ok = 1;

    llm_jv_init(&v);
    llm_jv_reset(&v);
    for (i = 0; i < n; i++) {
        r = llm_jv_put(&v, s[i]);
        if (r == LLM_JV_ERR) {
            ok = 0;
            break;
        }
        if (r == LLM_JV_END || r == LLM_JV_DONE) {
            i += (r == LLM_JV_DONE);
            for (; i < n; i++) {
                if (!llm_is_space(s[i])) {
                    ok = 0;
                }
            }
            break;
        }
    }
    if (ok && r == LLM_JV_MORE) {
        /* only a top-level scalar may end with the text */
        ok = (llm_jv_depth(&v) == 0) && llm_jv_close(&v) == 0;
    }
    if (ok && v.out.len) {
        llm_pbuf_add(out, v.out.p, v.out.len);
    } else {
        ok = 0;
    }
    llm_jv_free(&v);
    return ok;
}

static void
typed_string(llm_pbuf *out, const char *s, size_t n)
{
    llm_pbuf_addc(out, '"');
    llm_pbuf_json_escape(out, s, n);
    llm_pbuf_addc(out, '"');
}

/* 1 if p is a JSON number; *frac: it has a fraction or exponent */
static int
json_number_syntax(const char *p, int *frac)
{
    *frac = 0;
    if (*p == '-') p++;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (*p >= '0' && *p <= '9') p++;
    } else {
        return 0;
    }
    if (*p == '.') {
        *frac = 1;
        if (!(*++p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        *frac = 1;
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == '\0';
}

/* the model's own number text when it is JSON, else a converted value */
static void
typed_number(llm_pbuf *out, const char *s, size_t n, const char *t,
             size_t tn, int integer)
{
    char    tmp[64], *end;
    double  d;
    int     frac, prec;

    if (tn == 0 || tn >= 40) {
        typed_string(out, s, n);
        return;
    }
    memcpy(tmp, t, tn);
    tmp[tn] = '\0';
    errno = 0;
    d = strtod(tmp, &end);
    if (*end != '\0' || errno || !isfinite(d) || strpbrk(tmp, "xXnN")) {
        typed_string(out, s, n);
        return;
    }
    if (json_number_syntax(tmp, &frac) && !(integer && frac)) {
        llm_pbuf_adds(out, tmp);
        return;
    }
    if (d == floor(d) && fabs(d) < 9.007199254740992e15) {
        snprintf(tmp, sizeof(tmp), "%lld", (long long) d);
    } else {
        for (prec = 1; prec <= 17; prec++) {   /* shortest that reads back */
            snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
            if (strtod(tmp, NULL) == d) {
                break;
            }
        }
    }
    llm_pbuf_adds(out, tmp);
}

void
llm_typed_value(llm_pbuf *out, const char *s, size_t n, const char *type,
                int try_json)
{
    const char *t = s;
    size_t      tn = n;

    if (type && strcmp(type, "string") == 0) {
        typed_string(out, s, n);
        return;
    }
    while (tn && llm_is_space(*t)) {
        t++;
        tn--;
    }
    while (tn && llm_is_space(t[tn - 1])) {
        tn--;
    }
    if (type == NULL) {
        if (!try_json || !typed_json(out, t, tn)) {
            typed_string(out, s, n);
        }
        return;
    }
    if ((tn == 4 && strncasecmp(t, "null", 4) == 0)
        || (tn == 4 && strncmp(t, "None", 4) == 0))
    {
        llm_pbuf_adds(out, "null");
        return;
    }
    if (strcmp(type, LLM_TYPE_STRING_OR_NULL) == 0) {
        typed_string(out, s, n);
        return;
    }
    if (strcmp(type, "boolean") == 0) {
        if (tn == 4 && strncasecmp(t, "true", 4) == 0) {
            llm_pbuf_adds(out, "true");
        } else if (tn == 5 && strncasecmp(t, "false", 5) == 0) {
            llm_pbuf_adds(out, "false");
        } else {
            typed_string(out, s, n);
        }
        return;
    }
    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        typed_number(out, s, n, t, tn, strcmp(type, "integer") == 0);
        return;
    }
    /* object, array and anything else: JSON if it parses */
    if (!typed_json(out, t, tn)) {
        typed_string(out, s, n);
    }
}
