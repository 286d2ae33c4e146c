/*
 * Token sampler.  Order of operations on a copy of the logits:
 *   logit_bias -> repetition penalty (prompt + generated, HF) ->
 *   presence / frequency penalties (generated, OpenAI) -> [logprobs here] ->
 *   greedy, or temperature -> top_k -> top_p -> min_p -> draw.
 * llm_sampler_dist gives the same distribution as probabilities, for
 * speculative rejection sampling.
 * The random stream is xoshiro256** seeded from the request seed, or from
 * /dev/urandom when none is given.
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/llm_engine.h"
#include "kernels/cpu/llm_kernels.h"

typedef struct {
    float   v;
    int32_t id;
} llm_cand;

struct llm_sampler {
    llm_sampler_params p;
    llm_logit_bias    *bias;
    int                n_vocab;
    float             *work;        /* processed logits */
    llm_cand          *cand;
    int               *count;       /* generated occurrences per id */
    unsigned char     *seen;        /* in prompt or generated */
    int32_t           *seen_ids;    /* distinct ids with seen[] set */
    int                n_seen;
    int32_t           *gen_ids;     /* distinct ids with count > 0 */
    int                n_gen;
    uint64_t           s[4];
    const llm_kernels *k;           /* argmax */
};

static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t
next_u64(llm_sampler *s)
{
    uint64_t r = rotl(s->s[1] * 5, 7) * 9, t = s->s[1] << 17;
    s->s[2] ^= s->s[0];
    s->s[3] ^= s->s[1];
    s->s[1] ^= s->s[2];
    s->s[0] ^= s->s[3];
    s->s[2] ^= t;
    s->s[3] = rotl(s->s[3], 45);
    return r;
}

static double
next_unit(llm_sampler *s)
{
    return (double) (next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

void
llm_sampler_params_default(llm_sampler_params *p)
{
    memset(p, 0, sizeof(*p));
    p->temperature = 1.0f;
    p->top_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

llm_sampler *
llm_sampler_create(const llm_sampler_params *p, int n_vocab)
{
    llm_sampler *s;
    uint64_t seed;
    int i;

    if (n_vocab <= 0) return NULL;
    s = calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->k = llm_kernels_best();
    s->work = malloc((size_t) n_vocab * sizeof(float));
    s->cand = malloc((size_t) n_vocab * sizeof(llm_cand));
    s->count = calloc((size_t) n_vocab, sizeof(int));
    s->seen = calloc((size_t) n_vocab, 1);
    s->seen_ids = malloc((size_t) n_vocab * sizeof(int32_t));
    s->gen_ids = malloc((size_t) n_vocab * sizeof(int32_t));
    if (p->n_logit_bias > 0) {
        s->bias = malloc((size_t) p->n_logit_bias * sizeof(*s->bias));
        if (s->bias) memcpy(s->bias, p->logit_bias, (size_t) p->n_logit_bias * sizeof(*s->bias));
    }
    if (!s->work || !s->cand || !s->count || !s->seen || !s->seen_ids || !s->gen_ids
        || (p->n_logit_bias > 0 && !s->bias))
    {
        llm_sampler_free(s);
        return NULL;
    }
    s->p.logit_bias = s->bias;
    if (p->has_seed) {
        seed = p->seed;
    } else {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        struct timespec ts;
        seed = 0;
        if (fd < 0 || read(fd, &seed, sizeof(seed)) != (ssize_t) sizeof(seed)) {
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 32) ^ (uint64_t) (uintptr_t) s;
        }
        if (fd >= 0) close(fd);
    }
    for (i = 0; i < 4; i++) s->s[i] = splitmix64(&seed);
    return s;
}

void
llm_sampler_free(llm_sampler *s)
{
    if (s == NULL) return;
    free(s->work); free(s->cand); free(s->count); free(s->seen);
    free(s->seen_ids); free(s->gen_ids); free(s->bias);
    free(s);
}

static void
mark_seen(llm_sampler *s, int32_t id)
{
    if (id < 0 || id >= s->n_vocab || s->seen[id]) return;
    s->seen[id] = 1;
    s->seen_ids[s->n_seen++] = id;
}

void
llm_sampler_accept_prompt(llm_sampler *s, const int32_t *ids, int n)
{
    int i;
    for (i = 0; i < n; i++) mark_seen(s, ids[i]);
}

void
llm_sampler_accept(llm_sampler *s, int32_t tok)
{
    if (tok < 0 || tok >= s->n_vocab) return;
    mark_seen(s, tok);
    if (s->count[tok]++ == 0) s->gen_ids[s->n_gen++] = tok;
}

static int
cand_desc(const void *a, const void *b)
{
    const llm_cand *x = a, *y = b;
    if (x->v > y->v) return -1;
    if (x->v < y->v) return 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Move the k largest candidates to the front (unordered), quickselect. */
static void
select_top(llm_cand *c, int n, int k)
{
    int lo = 0, hi = n - 1;

    if (k >= n) return;
    while (lo < hi) {
        float pivot = c[(lo + hi) / 2].v;
        int i = lo, j = hi;
        while (i <= j) {
            while (c[i].v > pivot) i++;
            while (c[j].v < pivot) j--;
            if (i <= j) {
                llm_cand t = c[i]; c[i] = c[j]; c[j] = t;
                i++; j--;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
}

static void
fill_logprobs(llm_sampler *s, const float *v, llm_token_logprobs *lp, int n_top, int32_t chosen)
{
    int V = s->n_vocab, i, j, n = 0;
    float mx = -INFINITY;
    double sum = 0, lse;

    for (i = 0; i < V; i++) if (v[i] > mx) mx = v[i];
    for (i = 0; i < V; i++) sum += expf(v[i] - mx);
    lse = mx + log(sum);
    lp->chosen.id = chosen;
    lp->chosen.logprob = (float) (v[chosen] - lse);
    if (n_top > LLM_MAX_TOP_LOGPROBS) n_top = LLM_MAX_TOP_LOGPROBS;
    if (n_top < 0) n_top = 0;
    /* insertion into a small sorted list */
    for (i = 0; i < V; i++) {
        if (v[i] == -INFINITY) continue;    /* masked out by a grammar */
        if (n == n_top && (n == 0 || v[i] <= lp->top[n - 1].logprob)) continue;
        j = n < n_top ? n++ : n - 1;
        while (j > 0 && lp->top[j - 1].logprob < v[i]) {
            lp->top[j] = lp->top[j - 1];
            j--;
        }
        lp->top[j].id = i;
        lp->top[j].logprob = v[i];
    }
    for (i = 0; i < n; i++) lp->top[i].logprob = (float) (lp->top[i].logprob - lse);
    lp->n_top = n;
}

/*
 * The processed logits in s->work: the request's logit_bias and penalties,
 * and -inf where `allowed` (may be NULL) refuses.  Returns the most likely
 * token, -1 when none is allowed.
 */
static int32_t
process(llm_sampler *s, const float *logits, const uint64_t *allowed)
{
    const llm_sampler_params *p = &s->p;
    float *v = s->work;
    int V = s->n_vocab, i, best = 0;

    memcpy(v, logits, (size_t) V * sizeof(float));
    for (i = 0; i < p->n_logit_bias; i++) {
        int32_t id = p->logit_bias[i].id;
        if (id >= 0 && id < V) v[id] += p->logit_bias[i].bias;
    }
    if (p->repetition_penalty > 0 && p->repetition_penalty != 1.0f) {
        for (i = 0; i < s->n_seen; i++) {
            int32_t id = s->seen_ids[i];
            v[id] = v[id] > 0 ? v[id] / p->repetition_penalty : v[id] * p->repetition_penalty;
        }
    }
    if (p->presence_penalty != 0 || p->frequency_penalty != 0) {
        for (i = 0; i < s->n_gen; i++) {
            int32_t id = s->gen_ids[i];
            v[id] -= p->presence_penalty + p->frequency_penalty * (float) s->count[id];
        }
    }
    if (allowed != NULL) {
        /* a grammar's mask: refused tokens get no probability at all */
        for (i = 0; i < V; i += 64) {
            uint64_t w = allowed[i >> 6];
            int j, e = V - i < 64 ? V - i : 64;
            if (w == ~0ull) continue;
            for (j = 0; j < e; j++) if (!((w >> j) & 1)) v[i + j] = -INFINITY;
        }
    }
    best = s->k->argmax(v, V);
    return allowed != NULL && !(v[best] > -INFINITY) ? -1 : best;
}

int
llm_sampler_greedy(const llm_sampler *s)
{
    return s->p.temperature <= 1e-6f || s->p.top_k == 1;
}

/*
 * The candidates sampling draws from, after process() (not greedy):
 * temperature, top_k, top_p, min_p.  s->cand[0..n) hold their weights,
 * relative to the most likely token's 1; returns n.
 */
static int
truncate_cands(llm_sampler *s, int32_t best)
{
    const llm_sampler_params *p = &s->p;
    float *v = s->work;
    int V = s->n_vocab, i, n;
    float inv_t = 1.0f / p->temperature, mx = v[best] * inv_t;
    double total = 0, mass = 0;

    n = V;
    for (i = 0; i < V; i++) {
        s->cand[i].v = v[i] * inv_t;
        s->cand[i].id = i;
    }
    if (p->top_k > 0 && p->top_k < n) {
        select_top(s->cand, n, p->top_k);
        n = p->top_k;
    }
    /* weights relative to the most likely token, which weighs 1 */
    for (i = 0; i < n; i++) {
        s->cand[i].v = expf(s->cand[i].v - mx);
        total += s->cand[i].v;
    }
    if (p->top_p > 0 && p->top_p < 1.0f) {
        /* sort just enough of the head, growing it until it holds top_p of the mass */
        int sorted = 0, h, j;
        for ( ;; ) {
            h = sorted * 4 > 256 ? sorted * 4 : 256;
            if (h > n) h = n;
            select_top(s->cand + sorted, n - sorted, h - sorted);
            qsort(s->cand + sorted, (size_t) (h - sorted), sizeof(llm_cand), cand_desc);
            for (j = sorted; j < h; j++) {
                mass += s->cand[j].v;
                if (mass >= p->top_p * total) break;
            }
            if (j < h) {
                n = j + 1;
                break;
            }
            if (h == n) break;
            sorted = h;
        }
    }
    if (p->min_p > 0 && p->min_p <= 1.0f) {
        int m = 0;
        for (i = 0; i < n; i++) {
            if (s->cand[i].v >= p->min_p) s->cand[m++] = s->cand[i];
        }
        n = m;
    }
    return n;
}

/* Greedy sampling that process() would not change: no bias, penalty or mask. */
static int
plain_greedy(const llm_sampler *s, const uint64_t *allowed)
{
    const llm_sampler_params *p = &s->p;

    return llm_sampler_greedy(s) && allowed == NULL && p->n_logit_bias == 0
           && (p->repetition_penalty <= 0 || p->repetition_penalty == 1.0f)
           && p->presence_penalty == 0 && p->frequency_penalty == 0;
}

static int32_t
sample(llm_sampler *s, const float *logits, const uint64_t *allowed,
    llm_token_logprobs *lp, int n_top)
{
    int32_t best, chosen;
    int i, n;
    double total, r, acc;

    if (lp == NULL && plain_greedy(s, allowed)) {
        /* nothing to process or report: the argmax of the logits as they are, no copy */
        return s->k->argmax(logits, s->n_vocab);
    }
    best = process(s, logits, allowed);
    if (best < 0) return -1;
    if (llm_sampler_greedy(s)) {
        chosen = best;
    } else {
        n = truncate_cands(s, best);
        total = 0;
        for (i = 0; i < n; i++) total += s->cand[i].v;
        r = next_unit(s) * total;
        acc = 0;
        chosen = s->cand[n - 1].id;
        for (i = 0; i < n; i++) {
            acc += s->cand[i].v;
            if (r < acc) { chosen = s->cand[i].id; break; }
        }
    }
    if (lp) fill_logprobs(s, s->work, lp, n_top, chosen);
    return chosen;
}

int32_t
llm_sampler_sample(llm_sampler *s, const float *logits, llm_token_logprobs *lp, int n_top)
{
    return sample(s, logits, NULL, lp, n_top);
}

int32_t
llm_sampler_sample_allowed(llm_sampler *s, const float *logits, const uint64_t *allowed,
    llm_token_logprobs *lp, int n_top)
{
    return sample(s, logits, allowed, lp, n_top);
}

int
llm_sampler_n_vocab(const llm_sampler *s)
{
    return s->n_vocab;
}

int32_t
llm_sampler_dist(llm_sampler *s, const float *logits, const uint64_t *allowed, float *probs)
{
    int32_t best = process(s, logits, allowed);
    int i, n;
    double total = 0;

    memset(probs, 0, (size_t) s->n_vocab * sizeof(float));
    if (best < 0) return -1;
    if (llm_sampler_greedy(s)) {
        probs[best] = 1.0f;
        return best;
    }
    n = truncate_cands(s, best);
    for (i = 0; i < n; i++) total += s->cand[i].v;
    for (i = 0; i < n; i++) probs[s->cand[i].id] = (float) (s->cand[i].v / total);
    return best;
}

double
llm_sampler_uniform(llm_sampler *s)
{
    return next_unit(s);
}

int32_t
llm_sampler_draw(llm_sampler *s, const float *probs)
{
    int i, last = -1;
    double total = 0, r, acc = 0;

    for (i = 0; i < s->n_vocab; i++) total += probs[i];
    if (!(total > 0)) return -1;
    r = next_unit(s) * total;
    for (i = 0; i < s->n_vocab; i++) {
        if (probs[i] <= 0) continue;
        last = i;
        acc += probs[i];
        if (r < acc) return i;
    }
    return last;    /* rounding: the last token with any probability */
}

void
llm_sampler_logprobs(llm_sampler *s, llm_token_logprobs *lp, int n_top, int32_t chosen)
{
    if (chosen >= 0 && chosen < s->n_vocab) fill_logprobs(s, s->work, lp, n_top, chosen);
}

llm_sampler_mark
llm_sampler_get_mark(const llm_sampler *s)
{
    llm_sampler_mark m;
    m.n_seen = s->n_seen;
    m.n_gen = s->n_gen;
    return m;
}

void
llm_sampler_rewind(llm_sampler *s, llm_sampler_mark m, const int32_t *toks, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (toks[i] >= 0 && toks[i] < s->n_vocab && s->count[toks[i]] > 0) s->count[toks[i]]--;
    }
    /* the ids that first appeared after the mark */
    while (s->n_seen > m.n_seen) s->seen[s->seen_ids[--s->n_seen]] = 0;
    s->n_gen = m.n_gen;
}
