#define _GNU_SOURCE 1   /* memmem */
/*
 * Grammar-constrained sampling (see llm_constrain.h).  Sampling first from
 * the unconstrained distribution and keeping the pick when the grammar
 * allows it, else drawing from the masked distribution, gives each allowed
 * token p(t) + (1 - P(allowed)) * p(t) / P(allowed) = p(t) / P(allowed):
 * the masked distribution itself, at the cost of a mask only on refusals.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/llm_constrain.h"

#define WINDOW 1024
#define TRIGGER_MAX (WINDOW / 4)   /* longest marker: a pending one always fits the kept tail */

typedef struct {
    char    *text;
    size_t   len;
    unsigned flags;
    size_t   stage;
    int      dead;                 /* anchored, and the text since its stage began is not it */
} trigger;

struct llm_constraint {
    llm_gindex          *x;                /* a reference held */
    llm_gmatcher        *m;
    const llm_tokenizer *tok;
    size_t               n_vocab;
    size_t               n_words;         /* of bits: the tokenizer's ids or the sampler's, the larger */
    uint64_t            *bits;
    long                 n_masks;
    /* lazy start: the grammar applies once a marker of each stage appeared in order */
    trigger             *trig;
    size_t               n_trig, n_stages, stage;
    char                 win[WINDOW];      /* text since the last stage, for the next marker */
    size_t               n_win;
    int                  broken;           /* the text after a marker left the grammar */
    int                  off;              /* no marker of the stage can appear any more */
};

/* A token's text: added tokens are their content, others their bytes. */
static int
tok_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    if (llm_tokenizer_is_added(ctx, id)) {
        const char *p = llm_tokenizer_piece(ctx, id);
        size_t n = p ? strlen(p) : 0;
        if (p == NULL) return -1;
        if (n > cap) n = cap;
        memcpy(out, p, n);
        return (int) n;
    }
    return llm_tokenizer_token_bytes(ctx, id, out, cap);
}

llm_gvocab *
llm_constrain_vocab(const llm_tokenizer *tok, const int32_t *stop_ids, size_t n_stop,
    char *err, size_t errlen)
{
    size_t n = llm_tokenizer_n_vocab(tok), i, k = 0;
    int32_t *ex = malloc((n + n_stop + 1) * sizeof(int32_t));
    llm_gvocab *v;

    if (ex == NULL) return NULL;
    for (i = 0; i < n; i++) {
        if (llm_tokenizer_is_added(tok, (int32_t) i) || llm_tokenizer_is_special(tok, (int32_t) i))
            ex[k++] = (int32_t) i;
    }
    /* a stop id ends the output: never also a piece of text (some models'
     * end-of-sequence id is an ordinary token) */
    for (i = 0; i < n_stop; i++) ex[k++] = stop_ids[i];
    v = llm_gvocab_create(n, tok_bytes, (void *) tok, ex, k, err, errlen);
    free(ex);
    return v;
}

static int
copy_triggers(llm_constraint *c, const llm_trigger *t, const trigger *from, size_t n)
{
    size_t i, stage = 0;

    c->trig = n ? calloc(n, sizeof(trigger)) : NULL;
    if (n && c->trig == NULL) return -1;
    c->n_trig = 0;
    for (i = 0; i < n; i++) {
        const char *text = t ? t[i].text : from[i].text;
        trigger *d = &c->trig[i];
        if (text == NULL || strlen(text) >= TRIGGER_MAX) return -1;
        d->text = strdup(text);
        if (d->text == NULL) return -1;
        c->n_trig++;
        d->len = strlen(text);
        if (t) {
            d->flags = t[i].flags;
            if (i > 0 && !(d->flags & LLM_TRIGGER_OR)) stage++;
            d->stage = stage;
        } else {
            d->flags = from[i].flags;
            d->stage = from[i].stage;
            d->dead = from[i].dead;
        }
    }
    c->n_stages = n ? c->trig[n - 1].stage + 1 : 0;
    return 0;
}

llm_constraint *
llm_constraint_create(llm_gindex *x, const llm_tokenizer *tok,
    const llm_trigger *triggers, size_t n_triggers)
{
    llm_constraint *c = calloc(1, sizeof(*c));
    if (c == NULL) return NULL;
    c->tok = tok;
    c->n_vocab = llm_tokenizer_n_vocab(tok);
    c->x = x;
    llm_gindex_retain(x);
    c->m = llm_gmatcher_create(x);
    c->n_words = (c->n_vocab + 63) / 64;
    c->bits = calloc(c->n_words, sizeof(uint64_t));
    if (c->m == NULL || c->bits == NULL || copy_triggers(c, triggers, NULL, n_triggers) < 0) {
        llm_constraint_free(c);
        return NULL;
    }
    return c;
}

void
llm_constraint_free(llm_constraint *c)
{
    size_t i;
    if (c == NULL) return;
    for (i = 0; i < c->n_trig; i++) free(c->trig[i].text);
    free(c->trig);
    llm_gmatcher_free(c->m);
    if (c->x) llm_gindex_free(c->x);
    free(c->bits);
    free(c);
}

/* the grammar is in force (every stage's marker seen, nothing went astray) */
static int
active(const llm_constraint *c)
{
    return c->stage == c->n_stages && !c->broken && !c->off;
}

int
llm_constraint_active(const llm_constraint *c)
{
    return active(c);
}

int
llm_constraint_broken(const llm_constraint *c)
{
    return c->broken;
}

static int
blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/*
 * Where trigger t starts in the window: its offset, -1 while it may still
 * appear, -2 never (an anchored one the text has gone past).
 */
static long
find(llm_constraint *c, trigger *t)
{
    size_t p = 0, m;
    char *hit;

    if (t->dead) return -2;
    if (!(t->flags & LLM_TRIGGER_ANCHORED)) {
        hit = memmem(c->win, c->n_win, t->text, t->len);
        return hit ? (long) (hit - c->win) : -1;
    }
    while (p < c->n_win && blank(c->win[p])) p++;
    m = c->n_win - p < t->len ? c->n_win - p : t->len;
    if (memcmp(c->win + p, t->text, m) != 0) { t->dead = 1; return -2; }
    return m == t->len ? (long) p : -1;
}

/* Free text before the grammar applies: look for the next stage's marker. */
static void
watch(llm_constraint *c, int32_t id)
{
    char buf[256];
    int n = tok_bytes((void *) c->tok, id, buf, sizeof(buf));

    if (n <= 0 || c->off) return;
    if (c->n_win + (size_t) n > WINDOW) {
        /* keep the tail that may still hold the start of a marker (a pending
         * anchored one has only blanks before it, and is shorter than this) */
        size_t keep = WINDOW / 2 - (size_t) n;
        if (keep > c->n_win) keep = c->n_win;
        memmove(c->win, c->win + c->n_win - keep, keep);
        c->n_win = keep;
    }
    memcpy(c->win + c->n_win, buf, (size_t) n);
    c->n_win += (size_t) n;
    while (c->stage < c->n_stages) {
        trigger *best = NULL;
        long at = -1;
        int alive = 0;
        size_t i, from;
        for (i = 0; i < c->n_trig; i++) {
            long h;
            if (c->trig[i].stage != c->stage) continue;
            h = find(c, &c->trig[i]);
            if (h != -2) alive = 1;
            if (h >= 0 && (best == NULL || h < at)) { best = &c->trig[i]; at = h; }
        }
        if (best == NULL) {
            if (!alive) { c->off = 1; c->n_win = 0; }
            return;
        }
        /* the text from the marker (KEEP) or after it stays for the next stage, or the grammar */
        from = (size_t) at + ((best->flags & LLM_TRIGGER_KEEP) ? 0 : best->len);
        c->n_win -= from;
        memmove(c->win, c->win + from, c->n_win);
        c->stage++;
    }
    if (c->n_win && llm_gmatcher_accept_bytes(c->m, c->win, c->n_win) < 0) c->broken = 1;
    c->n_win = 0;
}

/* The mask covers the sampler's whole vocabulary: a model's logits may pad
 * past the tokenizer's ids (Qwen: 151936 rows, 151669 ids), and those ids,
 * which have no bytes, stay 0 (never allowed). */
static int
grow_bits(llm_constraint *c, int n_vocab)
{
    size_t words = ((size_t) (n_vocab > 0 ? n_vocab : 0) + 63) / 64;
    uint64_t *b;
    if (words <= c->n_words) return 0;
    b = calloc(words, sizeof(uint64_t));
    if (b == NULL) return -1;
    free(c->bits);
    c->bits = b;
    c->n_words = words;
    return 0;
}

int32_t
llm_constraint_sample(llm_constraint *c, llm_sampler *s, const float *logits,
    llm_token_logprobs *lp, int n_top)
{
    if (!active(c)) return llm_sampler_sample(s, logits, lp, n_top);
    if (lp == NULL) {
        int32_t pick = llm_sampler_sample(s, logits, NULL, 0);
        if (pick >= 0 && llm_gmatcher_allows(c->m, pick)) return pick;
    }
    c->n_masks++;
    if (grow_bits(c, llm_sampler_n_vocab(s)) < 0 || llm_gmatcher_mask(c->m, c->bits) < 0) return -1;
    return llm_sampler_sample_allowed(s, logits, c->bits, lp, n_top);
}

int
llm_constraint_mask(llm_constraint *c, int n_vocab, const uint64_t **bits)
{
    *bits = NULL;
    if (!active(c)) return 0;
    c->n_masks++;
    if (grow_bits(c, n_vocab) < 0 || llm_gmatcher_mask(c->m, c->bits) < 0) return -1;
    *bits = c->bits;
    return 0;
}

llm_constraint *
llm_constraint_clone(const llm_constraint *c)
{
    llm_constraint *k = malloc(sizeof(*k));

    if (k == NULL) return NULL;
    *k = *c;
    k->m = llm_gmatcher_clone(c->m);
    k->bits = calloc(c->n_words, sizeof(uint64_t));
    k->trig = NULL;
    k->n_trig = 0;
    llm_gindex_retain(k->x);
    if (k->m == NULL || k->bits == NULL || copy_triggers(k, NULL, c->trig, c->n_trig) < 0) {
        llm_constraint_free(k);
        return NULL;
    }
    return k;
}

int
llm_constraint_accept(llm_constraint *c, int32_t id)
{
    if (c->broken || c->off) return 0;
    if (c->stage < c->n_stages) {
        watch(c, id);
        return 0;
    }
    return llm_gmatcher_accept(c->m, id);
}

/* The forced tokens from matcher m's position, accepted into m. */
static int
forced_tokens(llm_constraint *c, llm_gmatcher *m, int32_t *ids, int max)
{
    char buf[512];
    size_t n = active(c) ? llm_gmatcher_forced(m, buf, sizeof(buf)) : 0;
    int32_t *enc = NULL;
    size_t n_enc = 0, i, keep;
    int out = 0;

    if (!active(c) || n == 0 || max <= 0) return 0;
    if (llm_tokenizer_encode(c->tok, buf, n, 0, &enc, &n_enc) < 0) return 0;
    /* the last piece is held back (the model may merge it with what follows)
     * unless it is the only one */
    keep = n_enc > 1 ? n_enc - 1 : n_enc;
    for (i = 0; i < keep && out < max; i++) {
        if (llm_gmatcher_accept(m, enc[i]) < 0) break;
        ids[out++] = enc[i];
    }
    free(enc);
    return out;
}

int
llm_constraint_forced(llm_constraint *c, int32_t *ids, int max)
{
    return forced_tokens(c, c->m, ids, max);
}

int
llm_constraint_peek_forced(llm_constraint *c, int32_t *ids, int max)
{
    llm_gmatcher *m;
    int n;

    if (!active(c) || max <= 0) return 0;
    m = llm_gmatcher_clone(c->m);
    if (m == NULL) return 0;
    n = forced_tokens(c, m, ids, max);
    llm_gmatcher_free(m);
    return n;
}

int
llm_constraint_done(const llm_constraint *c)
{
    return active(c) && llm_gmatcher_done(c->m);
}

int
llm_constraint_complete(const llm_constraint *c)
{
    return llm_gmatcher_complete(c->m);
}

long
llm_constraint_n_masks(const llm_constraint *c)
{
    return c->n_masks;
}
