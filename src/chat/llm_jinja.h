/*
 * A Jinja subset interpreter for chat templates.  A template is compiled
 * once (model load) into an immutable tree, then rendered by any number of
 * threads at once with a jansson context, so request JSON flows in as is.
 *
 * Covered: {{ }}, {% if/elif/else %}, {% for %} with loop.* and else,
 * {% set %} (also namespace attributes and block set), {% macro %} and
 * {% call %}, {% filter %}, {% break/continue %}, {# #}, whitespace control
 * (-, +, trim_blocks / lstrip_blocks), the common filters, tests, slicing,
 * string/dict/list methods, raise_exception() and strftime_now().
 */
#ifndef LLM_JINJA_H
#define LLM_JINJA_H

#include <stddef.h>
#include <jansson.h>

typedef struct llm_jinja llm_jinja;

enum {
    LLM_JINJA_TRIM_BLOCKS  = 1,   /* drop the first newline after a block tag */
    LLM_JINJA_LSTRIP_BLOCKS = 2,  /* strip spaces/tabs before a block tag on its line */
    LLM_JINJA_HF = 3              /* what transformers uses for chat templates */
};

/* Render results. */
enum {
    LLM_JINJA_OK     = 0,
    LLM_JINJA_ERROR  = -1,   /* runtime error of ours (type error, out of memory, ...) */
    LLM_JINJA_RAISED = -2    /* the template called raise_exception(msg): err holds msg */
};

/*
 * Parse src.  On failure returns NULL and err names the line and the
 * construct that could not be handled, e.g. "line 12: unknown tag 'include'".
 */
llm_jinja *llm_jinja_compile(const char *src, size_t len, int flags,
                             char *err, size_t errlen);
void llm_jinja_free(llm_jinja *t);

/*
 * Render with ctx (a JSON object: its keys are the template's globals;
 * borrowed, not modified).  raise_exception, strftime_now and namespace
 * are built in.  *out is malloc'd and NUL-terminated.
 * Returns LLM_JINJA_OK, LLM_JINJA_ERROR or LLM_JINJA_RAISED.
 */
int llm_jinja_render(const llm_jinja *t, json_t *ctx, char **out, size_t *outlen,
                     char *err, size_t errlen);

/* 1 if the template source refers to the global variable name (e.g. "tools"). */
int llm_jinja_uses_var(const llm_jinja *t, const char *name);

/*
 * 1 if an expression of the template names s as an attribute or a string
 * literal: x.s, x['s'], x.get('s'), 's' in x, role == 's' (template text
 * outside {{ }} and {% %} does not count).  What the template reads of a
 * message, e.g. "tools" of a system message or the role "observation".
 */
int llm_jinja_mentions(const llm_jinja *t, const char *s);

/*
 * v as JSON text the way the templates' tojson filter writes it (Python's
 * json.dumps(v, ensure_ascii=False): ", " and ": " separators).  malloc'd,
 * NUL-terminated; NULL when out of memory or too long to render.
 */
char *llm_jinja_dumps(json_t *v);

#endif
