/*
 * Reader for JSON tool-call objects, one byte at a time:
 *   {"name": "f", "arguments": {...}}          (hermes, mistral, llama3)
 *   {"name": "f", "parameters": {...}}
 *   {"type": "function", "function": {"name": "f", "arguments": "{...}"}}
 *   [ {...}, {...} ]                           (a list of those)
 * The arguments stream through llm_jv as they are read, so the client sees
 * them while they are generated; a string-encoded arguments value is
 * decoded and streamed the same way.  Arguments read before the name are
 * held until the name is known.
 */
#include "parsers/llm_parser_impl.h"

#include <string.h>

enum {
    JC_START = 0, JC_LIST, JC_LIST_AFTER, JC_KEY, JC_KEYSTR, JC_COLON,
    JC_VALUE, JC_NAME, JC_ARGS, JC_ARGSTR, JC_SKIP, JC_AFTER, JC_FINISHED
};

enum { W_OTHER = 0, W_NAME, W_ARGS, W_FUNC };

/* have_args: where the arguments value stands */
enum { A_NONE = 0, A_READ, A_STR_DONE, A_STR };

void
llm_jcall_init(llm_jcall *j, llm_pbase *pb, int strict)
{
    llm_pbuf key = j->key, name = j->name, args = j->args;
    llm_jv   v = j->v;

    /* keep allocated buffers when reused */
    memset(j, 0, sizeof(*j));
    j->key = key;
    j->name = name;
    j->args = args;
    j->v = v;
    llm_pbuf_reset(&j->key);
    llm_pbuf_reset(&j->name);
    llm_pbuf_reset(&j->args);
    llm_jv_reset(&j->v);
    j->pb = pb;
    j->strict = strict;
    j->st = JC_START;
}

void
llm_jcall_free(llm_jcall *j)
{
    llm_pbuf_free(&j->key);
    llm_pbuf_free(&j->name);
    llm_pbuf_free(&j->args);
    llm_jv_free(&j->v);
}

static void
jc_raw(llm_jcall *j, char c)
{
    llm_pb_raw(j->pb, &c, 1);
}

/* hand normalized argument bytes to the call, or hold them until named */
static void
jc_take_args(llm_jcall *j)
{
    if (j->v.out.len == 0) {
        return;
    }
    if (j->named) {
        llm_pb_call_args(j->pb, j->v.out.p, j->v.out.len);
    } else {
        llm_pbuf_add(&j->args, j->v.out.p, j->v.out.len);
    }
    llm_pbuf_reset(&j->v.out);
}

static void
jc_open_call(llm_jcall *j)
{
    j->in_call = 1;
    j->named = 0;
    j->have_args = A_NONE;
    j->odepth = 1;
    llm_pbuf_reset(&j->args);
    j->st = JC_KEY;
}

/* the list ended or was cut: separators are markup of accepted calls */
static void
jc_group_end(llm_jcall *j)
{
    if (j->any_ok) {
        llm_pb_discard(j->pb);
    } else {
        llm_pb_release(j->pb);
    }
    llm_pb_call_end(j->pb);
}

static int
jc_call_end(llm_jcall *j)
{
    if (!j->named && j->pb->mode == LLM_PB_IDLE) {
        llm_pb_release(j->pb);
    }
    llm_pb_call_end(j->pb);
    j->in_call = 0;
    if (j->list) {
        j->st = JC_LIST_AFTER;
        return LLM_JC_MORE;
    }
    j->st = JC_FINISHED;
    return LLM_JC_DONE;
}

static void
jc_named(llm_jcall *j)
{
    llm_pb_mode m;

    j->named = 1;
    m = llm_pb_call_name(j->pb, j->name.p ? j->name.p : "", j->name.len,
                         j->strict);
    if (m == LLM_PB_ACTIVE || m == LLM_PB_DROPPED) {
        j->any_ok = 1;
    }
    if (m == LLM_PB_ACTIVE && j->args.len) {
        llm_pb_call_args(j->pb, j->args.p, j->args.len);
    }
    llm_pbuf_reset(&j->args);
}

static int
jc_key_kind(const char *k)
{
    if (!strcmp(k, "name")) {
        return W_NAME;
    }
    if (!strcmp(k, "arguments") || !strcmp(k, "parameters")) {
        return W_ARGS;
    }
    if (!strcmp(k, "function")) {
        return W_FUNC;
    }
    return W_OTHER;
}

static int
jc_hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* feed decoded bytes of a string-encoded arguments value to the normalizer */
static void
jc_argstr_bytes(llm_jcall *j, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        int r;

        if (j->have_args == A_STR_DONE) {       /* value done or broken: ignore rest */
            break;
        }
        if (!j->v.started && s[i] != '{' && !llm_is_space(s[i])) {
            j->have_args = A_STR_DONE;          /* not an object: no arguments */
            break;
        }
        r = llm_jv_put(&j->v, s[i]);
        if (r == LLM_JV_DONE || r == LLM_JV_END) {
            j->have_args = A_STR_DONE;
        } else if (r == LLM_JV_ERR) {
            llm_jv_close(&j->v);
            j->have_args = A_STR_DONE;
        }
    }
    jc_take_args(j);
}

static void
jc_utf8(llm_jcall *j, unsigned cp)
{
    char b[4];
    int  n;

    if (cp < 0x80) {
        b[0] = (char) cp; n = 1;
    } else if (cp < 0x800) {
        b[0] = (char) (0xc0 | (cp >> 6));
        b[1] = (char) (0x80 | (cp & 0x3f)); n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char) (0xe0 | (cp >> 12));
        b[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char) (0x80 | (cp & 0x3f)); n = 3;
    } else {
        b[0] = (char) (0xf0 | (cp >> 18));
        b[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char) (0x80 | (cp & 0x3f)); n = 4;
    }
    jc_argstr_bytes(j, b, (size_t) n);
}

static void
jc_argstr_end(llm_jcall *j)
{
    if (j->have_args != A_STR_DONE) {
        llm_jv_close(&j->v);
        jc_take_args(j);
    }
    j->have_args = A_READ;
}

/* one byte of a string-encoded arguments value (JSON escapes decoded) */
static int
jc_argstr(llm_jcall *j, char c)
{
    if (j->ulen) {                       /* collecting \uXXXX */
        int h = jc_hexval(c);

        if (h < 0) {                     /* broken escape: drop it */
            j->ulen = 0;
            return jc_argstr(j, c);
        }
        j->ubuf[j->ulen++] = c;
        if (j->ulen == 4) {
            unsigned cp = 0;
            int      k;

            for (k = 0; k < 4; k++) {
                cp = cp * 16 + (unsigned) jc_hexval(j->ubuf[k]);
            }
            j->ulen = 0;
            if (cp >= 0xd800 && cp < 0xdc00) {
                j->hi_sur = cp;          /* wait for the low half */
                return LLM_JC_MORE;
            }
            if (cp >= 0xdc00 && cp < 0xe000 && j->hi_sur) {
                cp = 0x10000 + ((j->hi_sur - 0xd800) << 10) + (cp - 0xdc00);
            }
            j->hi_sur = 0;
            jc_utf8(j, cp);
        }
        return LLM_JC_MORE;
    }
    if (j->esc) {
        char d = c;

        j->esc = 0;
        switch (c) {
        case 'n': d = '\n'; break;
        case 't': d = '\t'; break;
        case 'r': d = '\r'; break;
        case 'b': d = '\b'; break;
        case 'f': d = '\f'; break;
        case 'u':
            j->ulen = 0;
            j->esc = 2;                  /* hex digits follow */
            return LLM_JC_MORE;
        default: break;                  /* \" \\ \/ \' and the rest */
        }
        jc_argstr_bytes(j, &d, 1);
        return LLM_JC_MORE;
    }
    if (c == '\\') {
        j->esc = 1;
        return LLM_JC_MORE;
    }
    if (c == j->quote) {
        jc_argstr_end(j);
        j->st = JC_AFTER;
        return LLM_JC_MORE;
    }
    jc_argstr_bytes(j, &c, 1);
    return LLM_JC_MORE;
}

static int
jc_step(llm_jcall *j, char c)
{
    int r;

    switch (j->st) {
    case JC_START:
        if (llm_is_space(c)) {
            jc_raw(j, c);
            return LLM_JC_MORE;
        }
        if (c == '[') {
            jc_raw(j, c);
            j->list = 1;
            j->st = JC_LIST;
            return LLM_JC_MORE;
        }
        if (c == '{') {
            jc_raw(j, c);
            jc_open_call(j);
            return LLM_JC_MORE;
        }
        return LLM_JC_ERR;

    case JC_LIST:
        if (llm_is_space(c) || c == ',') {
            jc_raw(j, c);
            return LLM_JC_MORE;
        }
        if (c == '{') {
            jc_raw(j, c);
            jc_open_call(j);
            return LLM_JC_MORE;
        }
        if (c == ']') {
            jc_raw(j, c);
            jc_group_end(j);
            j->st = JC_FINISHED;
            return LLM_JC_DONE;
        }
        return LLM_JC_ERR;

    case JC_LIST_AFTER:
        if (llm_is_space(c) || c == ',') {
            jc_raw(j, c);
            j->st = (c == ',') ? JC_LIST : JC_LIST_AFTER;
            return LLM_JC_MORE;
        }
        if (c == ']') {
            jc_raw(j, c);
            jc_group_end(j);
            j->st = JC_FINISHED;
            return LLM_JC_DONE;
        }
        return LLM_JC_ERR;

    case JC_KEY:
        if (llm_is_space(c) || c == ',') {
            jc_raw(j, c);
            return LLM_JC_MORE;
        }
        if (c == '"' || c == '\'') {
            jc_raw(j, c);
            j->quote = c;
            j->esc = 0;
            llm_pbuf_reset(&j->key);
            j->st = JC_KEYSTR;
            return LLM_JC_MORE;
        }
        if (c == '}') {
            goto close_obj;
        }
        return LLM_JC_ERR;

    case JC_KEYSTR:
        if (c == j->quote && !j->esc && j->strict && !j->named
            && jc_key_kind(llm_pbuf_str(&j->key)) == W_OTHER
            && strcmp(llm_pbuf_str(&j->key), "type")
            && strcmp(llm_pbuf_str(&j->key), "id"))
        {
            /* plain JSON content, not a call: give up early */
            return LLM_JC_ERR;
        }
        jc_raw(j, c);
        if (j->esc) {
            j->esc = 0;
            llm_pbuf_addc(&j->key, c);
        } else if (c == '\\') {
            j->esc = 1;
        } else if (c == j->quote) {
            j->what = jc_key_kind(llm_pbuf_str(&j->key));
            j->st = JC_COLON;
        } else if (j->key.len < 64) {
            llm_pbuf_addc(&j->key, c);
        }
        return LLM_JC_MORE;

    case JC_COLON:
        if (llm_is_space(c) || c == ':') {
            jc_raw(j, c);
            if (c == ':') {
                j->st = JC_VALUE;
            }
            return LLM_JC_MORE;
        }
        return LLM_JC_ERR;

    case JC_VALUE:
        if (llm_is_space(c)) {
            jc_raw(j, c);
            return LLM_JC_MORE;
        }
        if ((j->what == W_NAME || j->what == W_FUNC)
            && (c == '"' || c == '\''))
        {
            jc_raw(j, c);
            j->quote = c;
            j->esc = 0;
            llm_pbuf_reset(&j->name);
            j->st = JC_NAME;
            return LLM_JC_MORE;
        }
        if (j->what == W_FUNC && c == '{' && j->odepth == 1) {
            jc_raw(j, c);
            j->odepth = 2;
            j->st = JC_KEY;
            return LLM_JC_MORE;
        }
        if (j->what == W_ARGS && j->have_args == A_NONE && c == '{') {
            llm_jv_reset(&j->v);
            j->have_args = A_READ;
            j->st = JC_ARGS;
            return jc_step(j, c);
        }
        if (j->what == W_ARGS && j->have_args == A_NONE && (c == '"' || c == '\'')) {
            jc_raw(j, c);
            llm_jv_reset(&j->v);
            j->have_args = A_STR;
            j->quote = c;
            j->esc = 0;
            j->ulen = 0;
            j->hi_sur = 0;
            j->st = JC_ARGSTR;
            return LLM_JC_MORE;
        }
        llm_jv_reset(&j->v);
        j->st = JC_SKIP;
        return jc_step(j, c);

    case JC_NAME:
        if (j->esc) {
            j->esc = 0;
            jc_raw(j, c);
            llm_pbuf_addc(&j->name, c);
            return LLM_JC_MORE;
        }
        if (c == '\\') {
            jc_raw(j, c);
            j->esc = 1;
            return LLM_JC_MORE;
        }
        jc_raw(j, c);
        if (c == j->quote) {
            if (!j->named) {
                jc_named(j);
            }
            j->st = JC_AFTER;
        } else if (j->name.len < 300) {
            llm_pbuf_addc(&j->name, c);
        }
        return LLM_JC_MORE;

    case JC_ARGS:
    case JC_SKIP:
        r = llm_jv_put(&j->v, c);
        if (r == LLM_JV_ERR) {
            return LLM_JC_ERR;
        }
        if (r == LLM_JV_END) {
            if (j->st == JC_ARGS) {
                jc_take_args(j);
            }
            j->st = JC_AFTER;
            return jc_step(j, c);
        }
        jc_raw(j, c);
        if (j->st == JC_ARGS) {
            jc_take_args(j);
        } else {
            llm_pbuf_reset(&j->v.out);
        }
        if (r == LLM_JV_DONE) {
            j->st = JC_AFTER;
        }
        return LLM_JC_MORE;

    case JC_ARGSTR:
        jc_raw(j, c);
        if (j->esc == 2) {               /* the 'u' of \u was just seen */
            j->esc = 0;
            j->ulen = 0;
            if (jc_hexval(c) < 0) {
                return jc_argstr(j, c);
            }
            j->ubuf[j->ulen++] = c;
            return LLM_JC_MORE;
        }
        return jc_argstr(j, c);

    case JC_AFTER:
        if (llm_is_space(c) || c == ',') {
            jc_raw(j, c);
            if (c == ',') {
                j->st = JC_KEY;
            }
            return LLM_JC_MORE;
        }
        if (c == '}') {
            goto close_obj;
        }
        return LLM_JC_ERR;

    default:
        return LLM_JC_ERR;
    }

close_obj:
    jc_raw(j, c);
    if (j->odepth == 2) {
        j->odepth = 1;
        j->st = JC_AFTER;
        return LLM_JC_MORE;
    }
    return jc_call_end(j);
}

int
llm_jcall_put(llm_jcall *j, char c)
{
    return jc_step(j, c);
}

void
llm_jcall_finish(llm_jcall *j)
{
    if (j->st == JC_FINISHED) {
        return;
    }
    if (j->in_call) {
        if (j->st == JC_ARGS) {
            llm_jv_close(&j->v);
            jc_take_args(j);
        } else if (j->st == JC_ARGSTR) {
            jc_argstr_end(j);
        }
        if (!j->named && j->pb->mode == LLM_PB_IDLE) {
            llm_pb_release(j->pb);
        }
        llm_pb_call_end(j->pb);
        j->in_call = 0;
    } else if (j->list) {
        jc_group_end(j);
    } else if (j->pb->mode == LLM_PB_IDLE) {
        llm_pb_release(j->pb);
        llm_pb_call_end(j->pb);
    }
    j->st = JC_FINISHED;
}
