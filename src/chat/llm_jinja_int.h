/* Internal types of the Jinja interpreter: tokens, syntax tree, render state. */
#ifndef LLM_JINJA_INT_H
#define LLM_JINJA_INT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "chat/llm_jinja.h"

/* ---- tokens ---- */
typedef enum {
    JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP, JT_EOF
} llm_jtok_kind;

typedef struct {
    llm_jtok_kind kind;
    int           line;
    char         *s;       /* text, name, string value (decoded), operator */
    size_t        len;
    long long     ival;
    double        fval;
} llm_jtok;

int  llm_jinja_lex(const char *src, size_t n, int flags, llm_jtok **toks, size_t *ntoks,
                   char *err, size_t errlen);
void llm_jinja_free_tokens(llm_jtok *t, size_t n);

/* ---- syntax tree ---- */
typedef enum {
    /* expressions */
    JN_LIT, JN_NAME, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_BIN, JN_CMP, JN_COND, JN_LIST, JN_DICT, JN_TUPLE,
    /* statements */
    JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SET_ATTR, JN_SET_BLOCK, JN_MACRO, JN_CALLBLOCK,
    JN_FILTERBLOCK, JN_BREAK, JN_CONTINUE, JN_BODY
} llm_jnode_kind;

typedef struct llm_jnode llm_jnode;
typedef struct llm_jfilter_def llm_jfilter_def;   /* builtins: see below */
typedef struct llm_jtest_def   llm_jtest_def;
typedef struct llm_jmethod_def llm_jmethod_def;
typedef struct llm_jglobal_def llm_jglobal_def;

typedef struct {
    llm_jnode **v;
    size_t      n, cap;
} llm_jnodes;

struct llm_jnode {
    llm_jnode_kind kind;
    int            line;
    int            op;        /* operator for JN_BIN / JN_CMP, negate for JN_TEST */
    char          *name;      /* NAME, ATTR, FILTER, TEST, SET target, MACRO, SET_ATTR attribute */
    json_t        *lit;       /* JN_LIT; JN_TEXT text */
    llm_jnode     *a, *b, *c; /* children: operands, if cond, for iterable/filter, slice parts */
    llm_jnodes     args;      /* call/filter/test args, list items, dict keys, for targets(NAME nodes), macro params */
    llm_jnodes     kwvals;    /* dict values, keyword-argument values, macro defaults (NULL = none) */
    char         **kwnames;   /* keyword names (n = kwvals.n) */
    llm_jnodes     body;      /* statement bodies */
    llm_jnodes     orelse;    /* else / elif chain */
    union {                   /* the builtin a FILTER, TEST or CALL names, resolved when parsed */
        const llm_jfilter_def *filter;
        const llm_jtest_def   *test;
        const llm_jmethod_def *method;   /* a CALL of an attribute */
        const llm_jglobal_def *global;   /* a CALL of a name: NULL when it is not a builtin */
    } builtin;
};

/* binary / compare operators */
enum {
    JOP_ADD = 1, JOP_SUB, JOP_MUL, JOP_DIV, JOP_FDIV, JOP_MOD, JOP_POW, JOP_CONCAT,
    JOP_EQ, JOP_NE, JOP_LT, JOP_LE, JOP_GT, JOP_GE, JOP_IN, JOP_NOTIN
};

struct llm_jinja {
    llm_jnode *root;          /* JN_BODY */
    char     **names;         /* global names the template reads */
    size_t     n_names;
};

llm_jnode *llm_jinja_parse(llm_jtok *toks, size_t n, char ***names, size_t *n_names,
                           char *err, size_t errlen);
void       llm_jnode_free(llm_jnode *n);

/* ---- render state ---- */

/*
 * Bounds of one render, so neither request data nor a template can make a
 * render run, grow or allocate without end: a render past any of them
 * fails with a request error.
 *  - steps: expressions evaluated and loop rounds;
 *  - output: bytes of the rendered text, and of any one string a builtin
 *    or operator builds (center, format and %, replace, *, ~, +, join,
 *    indent, tojson, ...): an llm_jbuf refuses to grow past it, and
 *    builtins whose size is known up front check before building;
 *  - items: elements of any one list a builtin or operator builds;
 *  - work: bytes of all strings and list slots built in the render
 *    together, so that a loop cannot rebuild a large value a million times.
 */
#ifndef LLM_JINJA_MAX_STEPS
#define LLM_JINJA_MAX_STEPS   1000000UL           /* expressions and loop rounds */
#endif
#ifndef LLM_JINJA_MAX_OUTPUT
#define LLM_JINJA_MAX_OUTPUT  (16UL << 20)        /* bytes of output or of one built string */
#endif
#ifndef LLM_JINJA_MAX_ITEMS
#define LLM_JINJA_MAX_ITEMS   1000000UL           /* elements of one built list */
#endif
#ifndef LLM_JINJA_MAX_WORK
#define LLM_JINJA_MAX_WORK    (8 * LLM_JINJA_MAX_OUTPUT)   /* bytes built by one render */
#endif
typedef struct {
    char  *p;
    size_t n, cap;
    int    fail;          /* 0, or why adds stopped: LLM_JBUF_LONG, LLM_JBUF_NOMEM */
} llm_jbuf;

enum { LLM_JBUF_LONG = 1, LLM_JBUF_NOMEM = 2 };

/* Appends; -1 (and no change) past LLM_JINJA_MAX_OUTPUT or out of memory:
 * b->fail says which, and every later add fails too. */
int llm_jbuf_add(llm_jbuf *b, const char *s, size_t n);

typedef struct {
    json_t   **frames;        /* scopes, innermost last; frames[0] = template globals */
    size_t     n_frames, cap_frames;
    json_t    *ctx;           /* caller's context (read-only) */
    json_t   **objs;          /* namespaces and macros we created: may be mutated/called */
    llm_jnode **obj_node;     /* macro node or NULL for a namespace */
    size_t     n_objs, cap_objs;
    llm_jnodes *caller_body;  /* body of the enclosing {% call %} */
    int        failed;        /* LLM_JINJA_ERROR / LLM_JINJA_RAISED when set */
    int        brk, cont;     /* loop control */
    int        depth;
    unsigned long steps;      /* expressions evaluated: bounded by LLM_JINJA_MAX_STEPS */
    size_t     work;          /* bytes built: bounded by LLM_JINJA_MAX_WORK */
    json_t    *tuples;        /* arrays that are Python tuples (printed "(a, b)"); holds references */
    char      *err;
    size_t     errlen;
} llm_jstate;

int  llm_jfail(llm_jstate *st, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * The string a builder put in b (b's memory is released): NULL after
 * failing st when b went past LLM_JINJA_MAX_OUTPUT or ran out of memory.
 */
json_t *llm_jbuf_take(llm_jstate *st, int line, llm_jbuf *b);
/* Fails st when a string of n bytes, or a list of n items, may not be built. */
int  llm_jcheck_len(llm_jstate *st, int line, unsigned long long n);
int  llm_jcheck_items(llm_jstate *st, int line, unsigned long long n);
/*
 * Counts a value a builtin or operator returned against the render's work
 * budget (nothing when it is one of its inputs, returned as is).
 */
int  llm_jcharge(llm_jstate *st, int line, json_t *v, json_t *in1, json_t *in2);

/* values (llm_jinja_value.c); NULL is Jinja's undefined */
int     llm_jv_truthy(json_t *v);
int     llm_jv_str(json_t *v, llm_jbuf *out);           /* Python str() */
int     llm_jv_repr(json_t *v, llm_jbuf *out);          /* Python repr() */
int     llm_jv_str_ex(json_t *v, llm_jbuf *out, json_t *tuples);   /* same, knowing which arrays are tuples */
int     llm_jv_repr_ex(json_t *v, llm_jbuf *out, json_t *tuples);
void    llm_jtuple(llm_jstate *st, json_t *arr);       /* mark an array as a tuple */
enum { LLM_JV_SORT_KEYS = 1, LLM_JV_ASCII = 2 };   /* tojson flags: sort_keys, ensure_ascii */
int     llm_jv_tojson(json_t *v, int indent, const char *item_sep, const char *key_sep,
                      int flags, int level, llm_jbuf *out);
int     llm_jv_equal(json_t *a, json_t *b);
int     llm_jv_compare(json_t *a, json_t *b, int *res);   /* -1/0/1; fails on mixed types */
long    llm_jv_strlen(json_t *s);                          /* characters */
const char *llm_jv_type(json_t *v);                        /* Python type name for messages */
int     llm_jv_is_number(json_t *v);
double  llm_jv_num(json_t *v);

/* evaluation (llm_jinja_eval.c) */
json_t *llm_jeval(llm_jstate *st, llm_jnode *e);
int     llm_jexec(llm_jstate *st, llm_jnodes *body, llm_jbuf *out);
json_t *llm_jcall_macro(llm_jstate *st, llm_jnode *macro, llm_jnode *call, json_t **args, size_t nargs,
                        char **kwn, json_t **kwv, size_t nkw, llm_jnodes *caller);

/*
 * Builtins (llm_jinja_builtins.c): filters, tests, methods of str / dict /
 * list and global functions, each a {name, function} entry. The parser
 * resolves every name once (an unknown one is a parse error) and keeps the
 * entry in the node; rendering calls through it. op picks the variant of a
 * function that serves several names (e.g. which comparison a test makes).
 */
typedef struct {
    llm_jstate *st;
    int         line;
    const char *name;     /* as the template wrote it, for messages */
    int         op;
    json_t    **args;     /* positional arguments */
    size_t      nargs;
    char      **kwn;      /* keyword arguments: names and values */
    json_t    **kwv;
    size_t      nkw;
} llm_jcall;

enum { LLM_JFILTER_TEXT = 1 };   /* the filter reads its input as a string (str() of it) */

struct llm_jfilter_def {
    const char *name;
    json_t   *(*fn)(llm_jcall *c, json_t *v);
    int         op;
    int         flags;
};

struct llm_jtest_def {
    const char *name;
    int       (*fn)(llm_jcall *c, json_t *v);   /* 1, 0, or < 0 after failing st */
    int         op;
};

struct llm_jmethod_def {
    const char *name;
    json_t   *(*on_str)(llm_jcall *c, json_t *obj);   /* NULL: no such method on that type */
    json_t   *(*on_dict)(llm_jcall *c, json_t *obj);
    json_t   *(*on_list)(llm_jcall *c, json_t *obj);
    int         op;
};

struct llm_jglobal_def {
    const char *name;
    json_t   *(*fn)(llm_jcall *c);
    int         op;
};

const llm_jfilter_def *llm_jfilter_find(const char *name);   /* NULL: unknown */
const llm_jtest_def   *llm_jtest_find(const char *name);
const llm_jmethod_def *llm_jmethod_find(const char *name);
const llm_jglobal_def *llm_jglobal_find(const char *name);
json_t *llm_jfilter_apply(const llm_jfilter_def *f, llm_jstate *st, int line, json_t *v, json_t **args, size_t nargs,
                          char **kwn, json_t **kwv, size_t nkw);
int     llm_jtest_apply(const llm_jtest_def *t, llm_jstate *st, int line, json_t *v, json_t **args, size_t nargs);
json_t *llm_jmethod_apply(const llm_jmethod_def *m, llm_jstate *st, int line, json_t *obj, json_t **args, size_t nargs,
                          char **kwn, json_t **kwv, size_t nkw);
json_t *llm_jglobal_apply(const llm_jglobal_def *g, llm_jstate *st, int line, json_t **args, size_t nargs,
                          char **kwn, json_t **kwv, size_t nkw);
json_t *llm_jpyformat(llm_jstate *st, int line, json_t *fmt, json_t **args, size_t nargs);
json_t *llm_jgetattr(llm_jstate *st, int line, json_t *obj, const char *name);
int     llm_jis_ours(llm_jstate *st, json_t *o);
/* render state (llm_jinja_state.c): an object the renderer made, kept with
 * its node (a macro's, else NULL); its index, or -1 */
int     llm_jstate_keep(llm_jstate *st, json_t *o, llm_jnode *n);
long    llm_jstate_find(llm_jstate *st, json_t *o);
json_t *llm_jnamespace_new(llm_jstate *st);       /* namespace(...): a mutable object */
json_t *llm_jgetitem(llm_jstate *st, int line, json_t *obj, json_t *key);

#endif
