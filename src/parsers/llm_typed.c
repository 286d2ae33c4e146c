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

void
llm_typed_value(llm_pbuf *out, const char *s, size_t n, const char *type,
                int try_json)
{
    const char *t = s;
    size_t      tn = n;
    char        tmp[64];

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
        char   *end;
        double  d;

        if (tn == 0 || tn >= sizeof(tmp)) {
            typed_string(out, s, n);
            return;
        }
        memcpy(tmp, t, tn);
        tmp[tn] = '\0';
        errno = 0;
        d = strtod(tmp, &end);
        if (*end != '\0' || errno || !isfinite(d) || tmp[0] == '+'
            || (tmp[0] == '0' && tmp[1] == 'x'))
        {
            typed_string(out, s, n);
            return;
        }
        if (d == floor(d) && fabs(d) < 9.007199254740992e15
            && (strcmp(type, "integer") == 0 || !strpbrk(tmp, ".eE")))
        {
            snprintf(tmp, sizeof(tmp), "%lld", (long long) d);
        } else {
            snprintf(tmp, sizeof(tmp), "%.17g", d);
            /* prefer the shortest text that reads back the same */
            {
                int prec;

                for (prec = 1; prec <= 17; prec++) {
                    char try_[40];

                    snprintf(try_, sizeof(try_), "%.*g", prec, d);
                    if (strtod(try_, NULL) == d) {
                        memcpy(tmp, try_, strlen(try_) + 1);
                        break;
                    }
                }
            }
        }
        llm_pbuf_adds(out, tmp);
        return;
    }
    /* object, array and anything else: JSON if it parses */
    if (!typed_json(out, t, tn)) {
        typed_string(out, s, n);
    }
}
