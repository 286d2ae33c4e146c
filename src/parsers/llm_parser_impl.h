/*
 * Shared pieces of the parser implementations (not for use outside
 * src/parsers): a byte buffer, a marker scanner, the call bookkeeping every
 * family shares (llm_pbase), an incremental JSON normalizer (llm_jv) and a
 * reader for {"name": ..., "arguments": ...} call objects (llm_jcall).
 */
#ifndef LLM_PARSER_IMPL_H
#define LLM_PARSER_IMPL_H

#include <stddef.h>
#include <jansson.h>

#include "parsers/llm_parser.h"

/* ---- growable byte buffer (always NUL-terminated once used) ---- */

typedef struct {
    char   *p;
    size_t  len, cap;
} llm_pbuf;

int  llm_pbuf_add(llm_pbuf *b, const char *s, size_t n);   /* -1: no memory */
int  llm_pbuf_addc(llm_pbuf *b, char c);
int  llm_pbuf_adds(llm_pbuf *b, const char *s);
void llm_pbuf_reset(llm_pbuf *b);
void llm_pbuf_free(llm_pbuf *b);
const char *llm_pbuf_str(const llm_pbuf *b);              /* "" when empty */

/*
 * Append the valid UTF-8 of p[0..n) to out, each invalid sequence replaced
 * by U+FFFD.  Unless final, an incomplete character at the end is left:
 * returns the number of bytes consumed.
 */
size_t llm_utf8_clean(const char *p, size_t n, int final, llm_pbuf *out);

/* Append s as the inside of a JSON string (escaped, no quotes). */
void llm_pbuf_json_escape(llm_pbuf *b, const char *s, size_t n);

/* ---- marker scanner ---- */

#define LLM_MSCAN_HOLD 64

typedef struct {
    char   hold[LLM_MSCAN_HOLD];
    size_t hlen;
} llm_mscan;

/*
 * Push one byte.  Bytes that can no longer begin one of `marks` (a
 * NULL-terminated list) are appended to `rel`, in order; returns the index of
 * the marker this byte completes, or -1.  Held bytes are a marker prefix.
 */
int  llm_mscan_push(llm_mscan *m, const char *const *marks, char c,
                    llm_pbuf *rel);
/* Release everything held (end of text) into rel. */
void llm_mscan_drain(llm_mscan *m, llm_pbuf *rel);

/* ---- call bookkeeping ---- */

typedef enum {
    LLM_PB_IDLE = 0,     /* no decision yet: call markup is held */
    LLM_PB_ACTIVE,       /* TOOL_BEGIN emitted; args stream */
    LLM_PB_REJECTED,     /* not a valid call: its text is content */
    LLM_PB_DROPPED       /* valid but parallel calls are off: swallowed */
} llm_pb_mode;

typedef struct {
    llm_event_fn   emit;
    void          *ctx;
    const json_t  *tools;
    int            parallel;
    int            n_calls;      /* TOOL_BEGINs emitted */
    int            n_valid;      /* calls accepted, dropped ones included */
    llm_pb_mode    mode;
    llm_pbuf       held;         /* call markup awaiting a decision */
    int            args_sent;
    llm_pb_mode    last;         /* mode the previous call ended in */
    const json_t  *tool;         /* definition of the active call, or NULL */
    char           id[40];
} llm_pbase;

struct llm_parser {
    const llm_parser_def *def;
    llm_pbase             pb;
};

void llm_pb_init(llm_pbase *b, const llm_parser_env *env);
void llm_pb_free(llm_pbase *b);
void llm_pb_content(llm_pbase *b, const char *s, size_t n);
void llm_pb_reasoning(llm_pbase *b, const char *s, size_t n);
/* Markup of a call: held while undecided, content when rejected. */
void llm_pb_raw(llm_pbase *b, const char *s, size_t n);
/* Undecided markup is not a call: emit it as content; the rest of this
 * call's markup follows as content until llm_pb_call_end. */
void llm_pb_release(llm_pbase *b);
void llm_pb_discard(llm_pbase *b);
/* The call's name is known: validate, emit TOOL_BEGIN.  strict: the name
 * must be in the request's tools (untagged calls).  Returns the new mode. */
llm_pb_mode llm_pb_call_name(llm_pbase *b, const char *name, size_t n,
                             int strict);
void llm_pb_call_args(llm_pbase *b, const char *s, size_t n);
/* Markup after a call's body (closing tags): as llm_pb_raw while a call is
 * open, else content when the call that just ended was rejected. */
void llm_pb_tail(llm_pbase *b, const char *s, size_t n);
/* End the current call (TOOL_END; "{}" first when no args were sent). */
void llm_pb_call_end(llm_pbase *b);
/* JSON-schema "type" of a parameter of the active call's tool, or NULL.
 * ["string", "null"] gives LLM_TYPE_STRING_OR_NULL. */
#define LLM_TYPE_STRING_OR_NULL "string|null"
const char *llm_pb_param_type(llm_pbase *b, const char *param);
/* The same for a property's schema (NULL: untyped). */
const char *llm_param_type(const json_t *prop);
/* 1 if the name is one of the request's tools. */
int  llm_pb_known_tool(const llm_pbase *b, const char *name);

/*
 * Convert a textual parameter value to compact JSON by its schema type
 * (qwen3_coder, glm4): "string" keeps text; integer/number/boolean/null/
 * object/array are parsed (Python literals and sloppy JSON accepted) and
 * kept as a string when they do not parse.  type NULL: try JSON when
 * try_json, else string.
 */
void llm_typed_value(llm_pbuf *out, const char *s, size_t n, const char *type,
                     int try_json);

/* ---- incremental JSON normalizer ---- */

#define LLM_JV_DEPTH 64

enum { LLM_JV_MORE = 0, LLM_JV_DONE, LLM_JV_END, LLM_JV_ERR };

/*
 * Reads one JSON value a byte at a time and appends compact, valid JSON to
 * `out` as soon as it is certain: whitespace dropped, single-quoted strings,
 * True/False/None, trailing commas, raw control characters in strings and
 * unquoted keys repaired.  Held back only: a pending comma and object key
 * until the value after it starts, scalars until they end, escapes until
 * complete.  So `out` can always be completed by llm_jv_close.
 */
typedef struct {
    llm_pbuf out;       /* caller takes bytes from here */
    llm_pbuf pend;      /* held: "," and "\"key\":" */
    llm_pbuf scal;      /* held scalar text */
    char     esc[8];    /* held escape sequence */
    int      elen;
    char     hi[8];     /* held \uD800-\uDBFF awaiting its low half */
    int      has_hi;
    char     stack[LLM_JV_DEPTH];
    int      depth;
    int      st;
    char     quote;
    int      in_key;
    int      started;   /* bytes were appended to out */
} llm_jv;

void llm_jv_init(llm_jv *v);
void llm_jv_reset(llm_jv *v);
void llm_jv_free(llm_jv *v);
/* DONE: consumed, value complete.  END: not consumed, value complete
 * (c ends a scalar or follows the value).  ERR: not consumed, invalid. */
int  llm_jv_put(llm_jv *v, char c);
/* Complete a cut-off value in out.  -1 if nothing usable was read. */
int  llm_jv_close(llm_jv *v);
int  llm_jv_depth(const llm_jv *v);

/* ---- {"name": ..., "arguments": ...} call reader ---- */

enum { LLM_JC_MORE = 0, LLM_JC_DONE, LLM_JC_ERR };

typedef struct {
    llm_pbase *pb;
    int        strict;      /* untagged: name must be a known tool */
    int        st;
    int        list;        /* reading a [ ... ] of calls */
    int        odepth;      /* call object nesting ("function": {...}) */
    int        what;        /* which key's value is being read */
    llm_pbuf   key, name;
    char       quote;
    int        esc;
    char       ubuf[8];     /* hex digits of a \uXXXX being decoded */
    int        ulen;
    unsigned   hi_sur;      /* decoded high surrogate awaiting its pair */
    llm_jv     v;
    llm_pbuf   args;        /* args read before the name was known */
    int        have_args, named, in_call, any_ok;
} llm_jcall;

void llm_jcall_init(llm_jcall *j, llm_pbase *pb, int strict);
void llm_jcall_free(llm_jcall *j);
/* ERR: c not consumed; call llm_jcall_finish then go on with c. */
int  llm_jcall_put(llm_jcall *j, char c);
/* Cut off or broken: complete the active call, or release its text as
 * content when it never became a call. */
void llm_jcall_finish(llm_jcall *j);

/* ---- arguments given as key/value text (qwen3_coder, glm4) ---- */

typedef struct {
    llm_pbase  *pb;
    int         nkeys;       /* keys written so far */
    int         strip_nl;    /* drop one leading and one trailing newline */
    int         try_json;    /* values of unknown type: JSON if they parse */
    int         in_val, is_str, first, nl_held;
    int         undecided;   /* untyped value: string or JSON not known yet */
    const char *type;
    llm_pbuf    key, val, tmp;
} llm_xargs;

void llm_xargs_init(llm_xargs *x, llm_pbase *pb, int strip_nl, int try_json);
void llm_xargs_free(llm_xargs *x);
/* A value for `key` starts: strings stream, typed values are buffered. */
void llm_xargs_begin(llm_xargs *x, const char *key, size_t n);
void llm_xargs_bytes(llm_xargs *x, const char *s, size_t n);
void llm_xargs_end(llm_xargs *x);
/* End of the call's arguments: an open value ends, "}" is written. */
void llm_xargs_close(llm_xargs *x);

/* ---- the families (registry in llm_parser_registry.c) ---- */

extern const llm_parser_def llm_parser_hermes;
extern const llm_parser_def llm_parser_llama3_json;
extern const llm_parser_def llm_parser_mistral;
extern const llm_parser_def llm_parser_qwen3_coder;
extern const llm_parser_def llm_parser_glm4;
extern const llm_parser_def llm_parser_glm4_0414;
extern const llm_parser_def llm_parser_deepseek_v3;
extern const llm_parser_def llm_parser_harmony;
extern const llm_parser_def llm_parser_pythonic;
extern const llm_parser_def llm_parser_tool_call_list;
extern const llm_parser_def llm_parser_think;
extern const llm_parser_def llm_parser_think_mistral;

/* helpers */
int  llm_is_space(char c);
#define LLM_FEED_LOOP(p, text, len, put) do { size_t i_; \
    for (i_ = 0; i_ < (len); i_++) put((p), (text)[i_]); } while (0)

#endif
