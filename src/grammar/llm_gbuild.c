/*
 * Grammar builder: rules are collected as element sequences, byte classes
 * are interned, helper rules (code point classes, repetitions, literals) are
 * memoized by content so that front ends may ask for the same one freely.
 * llm_gbuild_finish flattens the rules into an llm_grammar after checking
 * that every rule is defined and none is left-recursive (the recognizer
 * expands rules eagerly, which left recursion would never finish).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_grammar_int.h"

struct llm_gseq {
    llm_gelem *el;
    size_t     n, cap;
};

typedef struct {
    char     *name;
    llm_gelem *body;          /* NULL until defined */
    size_t    n_body;
    int       rep_item;       /* opt_k of a counted repetition: the item, else -1 */
    long      rep_count;      /* its k */
} gb_rule;

typedef struct {
    char *key;
    int   rule;
} gb_memo;

struct llm_gbuild {
    gb_rule   *rules;
    size_t     n_rules, cap_rules;
    uint8_t  (*cls)[32];
    size_t     n_cls, cap_cls;
    gb_memo   *memo;          /* helper rules by content; open addressing, key NULL = empty */
    size_t     memo_cap, memo_n;
    gb_memo   *names;         /* rule ids by name */
    size_t     names_cap, names_n;
    int        oom;
};

void
llm_gerr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- sequences ---- */

llm_gseq *
llm_gseq_new(void)
{
    return calloc(1, sizeof(llm_gseq));
}

void
llm_gseq_free(llm_gseq *s)
{
    if (s == NULL) return;
    free(s->el);
    free(s);
}

void
llm_gseq_clear(llm_gseq *s)
{
    s->n = 0;
}

static int
seq_push(llm_gseq *s, int type, int val)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        llm_gelem *e = realloc(s->el, cap * sizeof(*e));
        if (e == NULL) return -1;
        s->el = e;
        s->cap = cap;
    }
    s->el[s->n].type = type;
    s->el[s->n].val = val;
    s->n++;
    return 0;
}

static int
intern_class(llm_gbuild *b, const uint8_t set[32])
{
    size_t i;
    for (i = 0; i < b->n_cls; i++) {
        if (memcmp(b->cls[i], set, 32) == 0) return (int) i;
    }
    if (b->n_cls == b->cap_cls) {
        size_t cap = b->cap_cls ? b->cap_cls * 2 : 64;
        uint8_t (*c)[32] = realloc(b->cls, cap * 32);
        if (c == NULL) { b->oom = 1; return -1; }
        b->cls = c;
        b->cap_cls = cap;
    }
    memcpy(b->cls[b->n_cls], set, 32);
    return (int) b->n_cls++;
}

int
llm_gseq_class(llm_gbuild *b, llm_gseq *s, const uint8_t set[32])
{
    int c = intern_class(b, set);
    return c < 0 ? -1 : seq_push(s, LLM_GE_CLASS, c);
}

int
llm_gseq_bytes(llm_gbuild *b, llm_gseq *s, const char *lit, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint8_t set[32] = {0};
        llm_gset_add(set, (unsigned char) lit[i]);
        if (llm_gseq_class(b, s, set) < 0) return -1;
    }
    return 0;
}

int
llm_gseq_ref(llm_gseq *s, int rule)
{
    return rule < 0 ? -1 : seq_push(s, LLM_GE_RULE, rule);
}

int
llm_gseq_alt(llm_gseq *s)
{
    return seq_push(s, LLM_GE_ALT, 0);
}

/* ---- rules ---- */

llm_gbuild *
llm_gbuild_new(void)
{
    return calloc(1, sizeof(llm_gbuild));
}

void
llm_gbuild_free(llm_gbuild *b)
{
    size_t i;
    if (b == NULL) return;
    for (i = 0; i < b->n_rules; i++) {
        free(b->rules[i].name);
        free(b->rules[i].body);
    }
    for (i = 0; i < b->memo_cap; i++) free(b->memo[i].key);
    for (i = 0; i < b->names_cap; i++) free(b->names[i].key);
    free(b->memo);
    free(b->names);
    free(b->rules);
    free(b->cls);
    free(b);
}

static int tab_get(const gb_memo *t, size_t cap, const char *key);
static int tab_put(gb_memo **tp, size_t *capp, size_t *np, const char *key, int rule);

int
llm_gbuild_find(const llm_gbuild *b, const char *name)
{
    return tab_get(b->names, b->names_cap, name);
}

int
llm_gbuild_rule(llm_gbuild *b, const char *name)
{
    char buf[128];
    const char *nm = name;
    size_t k = b->n_rules;

    while (llm_gbuild_find(b, nm) >= 0) {
        snprintf(buf, sizeof(buf), "%.100s-%zu", name, k++);
        nm = buf;
    }
    if (b->n_rules == b->cap_rules) {
        size_t cap = b->cap_rules ? b->cap_rules * 2 : 64;
        gb_rule *r = realloc(b->rules, cap * sizeof(*r));
        if (r == NULL) { b->oom = 1; return -1; }
        b->rules = r;
        b->cap_rules = cap;
    }
    b->rules[b->n_rules].name = strdup(nm);
    b->rules[b->n_rules].body = NULL;
    b->rules[b->n_rules].n_body = 0;
    b->rules[b->n_rules].rep_item = -1;
    b->rules[b->n_rules].rep_count = 0;
    if (b->rules[b->n_rules].name == NULL
        || tab_put(&b->names, &b->names_cap, &b->names_n, nm, (int) b->n_rules) < 0) {
        b->oom = 1;
        return -1;
    }
    return (int) b->n_rules++;
}

int
llm_gbuild_define(llm_gbuild *b, int rule, const llm_gseq *s)
{
    gb_rule *r;
    if (rule < 0 || (size_t) rule >= b->n_rules) return -1;
    r = &b->rules[rule];
    if (r->body != NULL) return -1;
    r->body = malloc((s->n + 1) * sizeof(llm_gelem));
    if (r->body == NULL) { b->oom = 1; return -1; }
    if (s->n) memcpy(r->body, s->el, s->n * sizeof(llm_gelem));
    r->n_body = s->n;
    return 0;
}

/* ---- memo of helper rules by a content key ---- */

static uint64_t
hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s) { h ^= (unsigned char) *s++; h *= 1099511628211ull; }
    return h;
}

static int
tab_get(const gb_memo *t, size_t cap, const char *key)
{
    size_t i;
    if (cap == 0) return -1;
    for (i = hash_str(key) & (cap - 1); t[i].key; i = (i + 1) & (cap - 1)) {
        if (strcmp(t[i].key, key) == 0) return t[i].rule;
    }
    return -1;
}

static int
tab_put(gb_memo **tp, size_t *capp, size_t *np, const char *key, int rule)
{
    size_t i;
    if ((*np + 1) * 2 > *capp) {
        size_t cap = *capp ? *capp * 2 : 64, j;
        gb_memo *m = calloc(cap, sizeof(*m));
        if (m == NULL) return -1;
        for (j = 0; j < *capp; j++) {
            if ((*tp)[j].key == NULL) continue;
            for (i = hash_str((*tp)[j].key) & (cap - 1); m[i].key; i = (i + 1) & (cap - 1)) {}
            m[i] = (*tp)[j];
        }
        free(*tp);
        *tp = m;
        *capp = cap;
    }
    for (i = hash_str(key) & (*capp - 1); (*tp)[i].key; i = (i + 1) & (*capp - 1)) {}
    (*tp)[i].key = strdup(key);
    if ((*tp)[i].key == NULL) return -1;
    (*tp)[i].rule = rule;
    (*np)++;
    return 0;
}

static int
memo_get(llm_gbuild *b, const char *key)
{
    return tab_get(b->memo, b->memo_cap, key);
}

static void
memo_put(llm_gbuild *b, const char *key, int rule)
{
    if (tab_put(&b->memo, &b->memo_cap, &b->memo_n, key, rule) < 0) b->oom = 1;
}

int
llm_gbuild_literal(llm_gbuild *b, const char *lit, size_t n)
{
    char *key = malloc(n * 2 + 8), *p;
    llm_gseq *s;
    size_t i;
    int r;

    if (key == NULL) return -1;
    p = key + sprintf(key, "lit:");
    for (i = 0; i < n; i++) p += sprintf(p, "%02x", (unsigned char) lit[i]);
    r = memo_get(b, key);
    if (r >= 0) { free(key); return r; }
    s = llm_gseq_new();
    r = s ? llm_gbuild_rule(b, "lit") : -1;
    if (r < 0 || llm_gseq_bytes(b, s, lit, n) < 0 || llm_gbuild_define(b, r, s) < 0) r = -1;
    else memo_put(b, key, r);
    llm_gseq_free(s);
    free(key);
    return r;
}

/* ---- code points as UTF-8 byte sequences ---- */

static int
utf8_encode(uint32_t c, uint8_t out[4])
{
    if (c < 0x80) { out[0] = (uint8_t) c; return 1; }
    if (c < 0x800) { out[0] = (uint8_t) (0xC0 | (c >> 6)); out[1] = (uint8_t) (0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (uint8_t) (0xE0 | (c >> 12)); out[1] = (uint8_t) (0x80 | ((c >> 6) & 0x3F));
        out[2] = (uint8_t) (0x80 | (c & 0x3F)); return 3;
    }
    out[0] = (uint8_t) (0xF0 | (c >> 18)); out[1] = (uint8_t) (0x80 | ((c >> 12) & 0x3F));
    out[2] = (uint8_t) (0x80 | ((c >> 6) & 0x3F)); out[3] = (uint8_t) (0x80 | (c & 0x3F));
    return 4;
}

/*
 * Emit [lo,hi] as alternatives of byte-range sequences: split at encoding
 * length boundaries, then until every continuation byte spans its full
 * range or a single value, so each piece is a product of byte ranges.
 */
static int
utf8_ranges(llm_gbuild *b, llm_gseq *s, uint32_t lo, uint32_t hi, int *first)
{
    static const uint32_t bounds[] = { 0x7F, 0x7FF, 0xFFFF };
    uint8_t a[4], z[4];
    int i, n;

    if (lo > hi) return 0;
    for (i = 0; i < 3; i++) {
        if (lo <= bounds[i] && hi > bounds[i]) {
            return utf8_ranges(b, s, lo, bounds[i], first) < 0 ? -1
                 : utf8_ranges(b, s, bounds[i] + 1, hi, first);
        }
    }
    n = utf8_encode(lo, a);
    for (i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                return utf8_ranges(b, s, lo, lo | m, first) < 0 ? -1
                     : utf8_ranges(b, s, (lo | m) + 1, hi, first);
            }
            if ((hi & m) != m) {
                return utf8_ranges(b, s, lo, (hi & ~m) - 1, first) < 0 ? -1
                     : utf8_ranges(b, s, hi & ~m, hi, first);
            }
        }
    }
    utf8_encode(hi, z);
    if (!*first && llm_gseq_alt(s) < 0) return -1;
    *first = 0;
    for (i = 0; i < n; i++) {
        uint8_t set[32] = {0};
        unsigned c;
        for (c = a[i]; c <= z[i]; c++) llm_gset_add(set, c);
        if (llm_gseq_class(b, s, set) < 0) return -1;
    }
    return 0;
}

static int
cmp_range(const void *x, const void *y)
{
    const uint32_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

int
llm_gbuild_codepoints(llm_gbuild *b, const uint32_t *ranges, size_t n_ranges, int negate)
{
    uint32_t *r, *m;
    size_t i, nm = 0, klen;
    char *key, *p;
    llm_gseq *s;
    int rule, first = 1;
    uint32_t next;

    r = malloc((n_ranges + 1) * 2 * sizeof(uint32_t));
    m = malloc((n_ranges + 3) * 2 * sizeof(uint32_t));
    klen = n_ranges * 20 + 16;
    key = malloc(klen);
    s = llm_gseq_new();
    if (!r || !m || !key || !s) { free(r); free(m); free(key); llm_gseq_free(s); return -1; }
    if (n_ranges) memcpy(r, ranges, n_ranges * 2 * sizeof(uint32_t));
    qsort(r, n_ranges, 2 * sizeof(uint32_t), cmp_range);
    /* merge, clamp to Unicode */
    for (i = 0; i < n_ranges; i++) {
        uint32_t lo = r[2 * i], hi = r[2 * i + 1] > 0x10FFFF ? 0x10FFFF : r[2 * i + 1];
        if (lo > hi) continue;
        if (nm && lo <= m[2 * nm - 1] + 1) {
            if (hi > m[2 * nm - 1]) m[2 * nm - 1] = hi;
        } else {
            m[2 * nm] = lo; m[2 * nm + 1] = hi; nm++;
        }
    }
    if (negate) {
        size_t k = 0;
        next = 0;
        for (i = 0; i < nm; i++) {
            if (m[2 * i] > next) { r[2 * k] = next; r[2 * k + 1] = m[2 * i] - 1; k++; }
            next = m[2 * i + 1] + 1;
        }
        if (next <= 0x10FFFF) { r[2 * k] = next; r[2 * k + 1] = 0x10FFFF; k++; }
        memcpy(m, r, k * 2 * sizeof(uint32_t));
        nm = k;
    }
    p = key + sprintf(key, "cp:");
    for (i = 0; i < nm; i++) p += sprintf(p, "%x-%x,", m[2 * i], m[2 * i + 1]);
    rule = memo_get(b, key);
    if (rule < 0) {
        rule = llm_gbuild_rule(b, "char");
        for (i = 0; rule >= 0 && i < nm; i++) {
            uint32_t lo = m[2 * i], hi = m[2 * i + 1];
            /* never surrogates: they are not characters and not valid UTF-8 */
            if (lo < 0xD800 && hi >= 0xD800) {
                if (utf8_ranges(b, s, lo, 0xD7FF, &first) < 0) rule = -1;
                lo = 0xE000;
            }
            if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
            if (rule >= 0 && utf8_ranges(b, s, lo, hi, &first) < 0) rule = -1;
        }
        if (rule >= 0 && first) rule = -2;    /* empty set */
        if (rule >= 0 && llm_gbuild_define(b, rule, s) < 0) rule = -1;
        if (rule >= 0) memo_put(b, key, rule);
    }
    free(r); free(m); free(key);
    llm_gseq_free(s);
    return rule;
}

/* ---- repetition ---- */

int
llm_gbuild_repeat(llm_gbuild *b, int rule, long min, long max)
{
    char key[96];
    llm_gseq *s;
    int r = -1, tail = -1;
    long i;

    if (rule < 0 || min < 0 || (max >= 0 && max < min)) return -1;
    snprintf(key, sizeof(key), "rep:%d:%ld:%ld", rule, min, max);
    r = memo_get(b, key);
    if (r >= 0) return r;
    s = llm_gseq_new();
    if (s == NULL) return -1;

    /* tail: the part after the mandatory copies */
    if (max < 0) {
        /* star ::= rule star | (empty) -- the self reference is a tail call */
        tail = llm_gbuild_rule(b, "star");
        if (tail < 0 || llm_gseq_ref(s, rule) < 0 || llm_gseq_ref(s, tail) < 0
            || llm_gseq_alt(s) < 0 || llm_gbuild_define(b, tail, s) < 0) goto fail;
    } else if (max > min) {
        /* opt_k ::= rule opt_{k-1} | (empty), opt_1 ::= rule | (empty) */
        int prev = -1;
        for (i = 0; i < max - min; i++) {
            int o = llm_gbuild_rule(b, "opt");
            llm_gseq_clear(s);
            if (o < 0 || llm_gseq_ref(s, rule) < 0
                || (prev >= 0 && llm_gseq_ref(s, prev) < 0)
                || llm_gseq_alt(s) < 0 || llm_gbuild_define(b, o, s) < 0) goto fail;
            if (prev >= 0) {   /* opt_1 has another layout: no twin */
                b->rules[o].rep_item = rule;
                b->rules[o].rep_count = i + 1;
            }
            prev = o;
        }
        tail = prev;
    }
    llm_gseq_clear(s);
    r = llm_gbuild_rule(b, "rep");
    if (r < 0) goto fail;
    for (i = 0; i < min; i++) if (llm_gseq_ref(s, rule) < 0) goto fail;
    if (tail >= 0 && llm_gseq_ref(s, tail) < 0) goto fail;
    if (llm_gbuild_define(b, r, s) < 0) goto fail;
    memo_put(b, key, r);
    llm_gseq_free(s);
    return r;
fail:
    llm_gseq_free(s);
    return -1;
}

/* ---- finish ---- */

static int
left_cycle(const llm_gbuild *b, const uint8_t *nullable, int r, uint8_t *mark, int *via)
{
    const gb_rule *R = &b->rules[r];
    size_t i;
    int at_start = 1;

    mark[r] = 1;   /* on the path */
    for (i = 0; i < R->n_body; i++) {
        const llm_gelem *e = &R->body[i];
        if (e->type == LLM_GE_ALT) { at_start = 1; continue; }
        if (!at_start) continue;
        if (e->type == LLM_GE_CLASS) { at_start = 0; continue; }
        if (mark[e->val] == 1) { *via = e->val; return 1; }
        if (mark[e->val] == 0 && left_cycle(b, nullable, e->val, mark, via)) return 1;
        if (!nullable[e->val]) at_start = 0;
    }
    mark[r] = 2;   /* done */
    return 0;
}

llm_grammar *
llm_gbuild_finish(llm_gbuild *b, int root, char *err, size_t errlen)
{
    llm_grammar *g = NULL;
    uint8_t *nullable = NULL, *mark = NULL;
    int32_t *twin_of = NULL;
    size_t i, j, n_el = 0, n_twins = 0, n_all;
    int changed, via = -1;

    if (b->oom) { llm_gerr(err, errlen, "out of memory"); return NULL; }
    if (root < 0 || (size_t) root >= b->n_rules) {
        llm_gerr(err, errlen, "grammar has no root rule");
        return NULL;
    }
    for (i = 0; i < b->n_rules; i++) {
        if (b->rules[i].body == NULL) {
            llm_gerr(err, errlen, "rule '%s' is used but not defined", b->rules[i].name);
            return NULL;
        }
        n_el += b->rules[i].n_body + 1;
    }
    nullable = calloc(b->n_rules, 1);
    mark = calloc(b->n_rules, 1);
    if (!nullable || !mark) goto oom;
    do {
        changed = 0;
        for (i = 0; i < b->n_rules; i++) {
            const gb_rule *R = &b->rules[i];
            int ok = 1;
            if (nullable[i]) continue;
            for (j = 0; j <= R->n_body; j++) {
                if (j == R->n_body || R->body[j].type == LLM_GE_ALT) {
                    if (ok) { nullable[i] = 1; changed = 1; break; }
                    ok = 1;
                } else if (R->body[j].type == LLM_GE_CLASS
                           || (R->body[j].type == LLM_GE_RULE && !nullable[R->body[j].val])) {
                    ok = 0;
                }
            }
        }
    } while (changed);
    for (i = 0; i < b->n_rules; i++) {
        if (mark[i] == 0 && left_cycle(b, nullable, (int) i, mark, &via)) {
            llm_gerr(err, errlen, "rule '%s' is left-recursive", b->rules[via].name);
            free(nullable); free(mark);
            return NULL;
        }
    }
    /* one twin (item*) per item of a counted repetition, after the rules */
    twin_of = malloc(b->n_rules * sizeof(int32_t));
    if (twin_of == NULL) goto oom;
    for (i = 0; i < b->n_rules; i++) twin_of[i] = -1;
    for (i = 0; i < b->n_rules; i++) {
        int item = b->rules[i].rep_item;
        if (item >= 0 && !nullable[item] && twin_of[item] < 0) twin_of[item] = (int32_t) (b->n_rules + n_twins++);
    }
    n_all = b->n_rules + n_twins;
    n_el += 4 * n_twins;
    g = calloc(1, sizeof(*g));
    if (g == NULL) goto oom;
    g->el = malloc(n_el * sizeof(llm_gelem));
    g->rule_start = malloc(n_all * sizeof(uint32_t));
    g->rep_count = calloc(n_all, sizeof(int32_t));
    g->rep_twin = malloc(n_all * sizeof(int32_t));
    g->names = calloc(b->n_rules, sizeof(char *));
    g->cls = malloc((b->n_cls ? b->n_cls : 1) * 32);
    if (!g->el || !g->rule_start || !g->rep_count || !g->rep_twin || !g->names || !g->cls) goto oom;
    n_el = 0;
    for (i = 0; i < b->n_rules; i++) {
        const gb_rule *R = &b->rules[i];
        g->rule_start[i] = (uint32_t) n_el;
        memcpy(g->el + n_el, R->body, R->n_body * sizeof(llm_gelem));
        n_el += R->n_body;
        g->el[n_el].type = LLM_GE_END;
        g->el[n_el].val = 0;
        n_el++;
        g->names[i] = strdup(R->name);
        if (g->names[i] == NULL) goto oom;
        g->rep_twin[i] = R->rep_item >= 0 ? twin_of[R->rep_item] : -1;
        g->rep_count[i] = g->rep_twin[i] >= 0 ? (int32_t) (R->rep_count > INT32_MAX ? INT32_MAX : R->rep_count) : 0;
    }
    for (i = 0; i < b->n_rules; i++) {
        int32_t t = twin_of[i];
        if (t < 0) continue;
        /* twin ::= item twin | (empty) */
        g->rule_start[t] = (uint32_t) n_el;
        g->rep_twin[t] = -1;
        g->el[n_el].type = LLM_GE_RULE;  g->el[n_el++].val = (int32_t) i;
        g->el[n_el].type = LLM_GE_RULE;  g->el[n_el++].val = t;
        g->el[n_el].type = LLM_GE_ALT;   g->el[n_el++].val = 0;
        g->el[n_el].type = LLM_GE_END;   g->el[n_el++].val = 0;
    }
    free(twin_of);
    twin_of = NULL;
    g->n_el = n_el;
    g->n_rules = b->n_rules;
    memcpy(g->cls, b->cls, b->n_cls * 32);
    g->n_cls = b->n_cls;
    g->root = root;
    free(nullable); free(mark);
    return g;
oom:
    free(nullable); free(mark); free(twin_of);
    llm_grammar_free(g);
    llm_gerr(err, errlen, "out of memory");
    return NULL;
}

void
llm_grammar_free(llm_grammar *g)
{
    size_t i;
    if (g == NULL) return;
    if (g->names) for (i = 0; i < g->n_rules; i++) free(g->names[i]);
    free(g->names);
    free(g->el);
    free(g->rule_start);
    free(g->rep_count);
    free(g->rep_twin);
    free(g->cls);
    free(g);
}

size_t
llm_grammar_n_rules(const llm_grammar *g)
{
    return g->n_rules;
}

/* ---- GBNF rendering ---- */

typedef struct { char *p; size_t n, cap; } gb_str;

static void
str_add(gb_str *s, const char *t, size_t n)
{
    if (s->p == NULL && s->cap == (size_t) -1) return;
    if (s->n + n + 1 > s->cap) {
        size_t cap = (s->n + n + 1) * 2;
        char *p = realloc(s->p, cap);
        if (p == NULL) { free(s->p); s->p = NULL; s->cap = (size_t) -1; return; }
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->n, t, n);
    s->n += n;
    s->p[s->n] = 0;
}

static void
str_byte(gb_str *s, unsigned c)
{
    char t[8];
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != ']' && c != '^' && c != '-' && c != '"')
        snprintf(t, sizeof(t), "%c", c);
    else
        snprintf(t, sizeof(t), "\\x%02X", c);
    str_add(s, t, strlen(t));
}

char *
llm_grammar_to_gbnf(const llm_grammar *g)
{
    gb_str s = {0};
    size_t r;

    for (r = 0; r < g->n_rules; r++) {
        size_t i = g->rule_start[r];
        str_add(&s, g->names[r], strlen(g->names[r]));
        str_add(&s, " ::=", 4);
        for (; g->el[i].type != LLM_GE_END; i++) {
            const llm_gelem *e = &g->el[i];
            if (e->type == LLM_GE_ALT) { str_add(&s, " |", 2); continue; }
            str_add(&s, " ", 1);
            if (e->type == LLM_GE_RULE) {
                str_add(&s, g->names[e->val], strlen(g->names[e->val]));
            } else {
                unsigned c = 0, lo;
                str_add(&s, "[", 1);
                while (c < 256) {
                    if (!llm_gset_has(g->cls[e->val], c)) { c++; continue; }
                    lo = c;
                    while (c + 1 < 256 && llm_gset_has(g->cls[e->val], c + 1)) c++;
                    str_byte(&s, lo);
                    if (c > lo) { str_add(&s, "-", 1); str_byte(&s, c); }
                    c++;
                }
                str_add(&s, "]", 1);
            }
        }
        str_add(&s, "\n", 1);
    }
    return s.p;
}

size_t
llm_gseq_len(const llm_gseq *s)
{
    return s->n;
}

int
llm_gseq_take_rule(llm_gbuild *b, llm_gseq *s, size_t from, const char *name)
{
    llm_gseq tmp;
    int r;

    if (from >= s->n) return -1;
    if (s->n - from == 1 && s->el[from].type == LLM_GE_RULE) {
        r = s->el[from].val;
        s->n = from;
        return r;
    }
    r = llm_gbuild_rule(b, name);
    if (r < 0) return -1;
    tmp.el = s->el + from;
    tmp.n = tmp.cap = s->n - from;
    if (llm_gbuild_define(b, r, &tmp) < 0) return -1;
    s->n = from;
    return r;
}

/* ---- text up to a marker ---- */

/*
 * Any UTF-8 text (printable, tab, newline) that does not contain `stop`:
 * one rule per state of a Knuth-Morris-Pratt matcher of stop (how much of
 * stop the text ends with), each byte moving to the next state and no byte
 * completing stop.  Followed by stop itself, the first occurrence of stop is
 * where the text ends when stop has no border (no proper prefix that is also
 * a suffix), which holds for the markers this is used with; for a stop with
 * a border the text must end in state 0.
 */
int
llm_gbuild_text_until(llm_gbuild *b, const char *stop, size_t m)
{
    char key[300];
    int *st = NULL, *fail = NULL, mb, rule = -1, border = 0;
    llm_gseq *s = NULL;
    size_t q, k;
    unsigned c;
    static const uint32_t high[2] = { 0x80, 0x10FFFF };

    if (m == 0 || m > 200) return -1;
    for (k = 0; k < m; k++) if ((unsigned char) stop[k] >= 0x80) return -1;   /* ASCII markers */
    snprintf(key, sizeof(key), "until:%.*s", (int) m, stop);
    rule = memo_get(b, key);
    if (rule >= 0) return rule;
    st = malloc(m * sizeof(int));
    fail = malloc((m + 1) * sizeof(int));
    s = llm_gseq_new();
    mb = llm_gbuild_codepoints(b, high, 1, 0);
    if (!st || !fail || !s || mb < 0) goto out;
    /* failure function */
    fail[0] = -1;
    for (q = 1, k = 0; q <= m; q++) {
        int f = fail[q - 1];
        while (f >= 0 && stop[f] != stop[q - 1]) f = fail[f];
        fail[q] = q == 1 ? 0 : f + 1;
    }
    border = fail[m] > 0;
    for (q = 0; q < m; q++) {
        st[q] = llm_gbuild_rule(b, "text");
        if (st[q] < 0) goto out;
    }
    for (q = 0; q < m; q++) {
        uint8_t sets[256][32];
        int used[256] = {0};
        size_t r;
        memset(sets, 0, sizeof(sets));
        for (c = 0; c < 0x80; c++) {
            int nq;
            if (c < 0x20 && c != '\t' && c != '\n') continue;
            /* delta(q, c) */
            nq = (int) q;
            while (nq >= 0 && (unsigned char) stop[nq] != c) nq = fail[nq];
            nq++;
            if ((size_t) nq == m) continue;          /* would complete stop */
            llm_gset_add(sets[nq], c);
            used[nq] = 1;
        }
        llm_gseq_clear(s);
        {
            /* a leading empty alternative where the text may end */
            int first = !(q == 0 || !border);
            for (r = 0; r < m; r++) {
                if (!used[r]) continue;
                if (!first && llm_gseq_alt(s) < 0) goto out;
                first = 0;
                if (llm_gseq_class(b, s, sets[r]) < 0 || llm_gseq_ref(s, st[r]) < 0) goto out;
            }
            if (llm_gseq_alt(s) < 0 || llm_gseq_ref(s, mb) < 0 || llm_gseq_ref(s, st[0]) < 0) goto out;
        }
        if (llm_gbuild_define(b, st[q], s) < 0) goto out;
    }
    rule = st[0];
    memo_put(b, key, rule);
out:
    if (rule < 0) b->oom = 1;
    free(st);
    free(fail);
    llm_gseq_free(s);
    return rule;
}
