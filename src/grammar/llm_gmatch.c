/*
 * The recognizer and token masks.
 *
 * A parse stack is a chain of nodes (pos, parent): pos is the next grammar
 * element to match, parent the node to continue at when the rule ends (node
 * 0 = nothing left: the input is complete).  Nodes are hash-consed, so a
 * stack is one integer and a parse state (all stacks alive after the input
 * so far; the grammar may be ambiguous) is a sorted set of integers, also
 * interned.  Every stack in a state has a byte class on top, or is node 0.
 *
 * Advancing a state by a byte pops the matching stacks and expands what
 * follows: a rule reference pushes the continuation (unless the reference
 * ends its alternative: a tail call, so right recursion does not grow the
 * stack) and expands each alternative; the end of a rule returns to the
 * parent.  Results are memoized per (state, byte), which turns the pushdown
 * automaton into a lazily built DFA over the configurations actually met.
 *
 * Masks.  A state is a set of stacks and a token is allowed from the state
 * exactly when it is allowed from one of its stacks, so a mask is the union
 * of per-stack verdicts.  Which tokens a stack accepts depends mostly on its
 * top few nodes (XGrammar's context-independent tokens), so every stack is
 * cut: its top CUT_DEPTH nodes over a BOUNDARY node (interned like any
 * node).  A cut stack gets one preorder walk of the vocabulary trie carrying
 * one state per depth: a dead byte skips the node's subtree, a live node
 * accepts the tokens ending there -- unless the walk met the boundary (the
 * cut rules ended) on the way, after which the verdict on a token depends on
 * the stack below the cut: such tokens are listed instead (in trie order).
 * The walk is cached per cut stack, so every stack, state, request and
 * property that shares the same top of stack (the characters of a string
 * value under any key, at any nesting) reuses it, and a state's mask is the
 * union of its cut stacks' accepted sets plus their listed tokens checked
 * from the state itself (few, their common prefixes walked once).
 *
 * Counted repetitions (maxLength, maxItems, {m,n}) put a different rule on
 * the stack per remaining count k (opt_k, see llm_grammar_int.h).  A cut
 * maps a node in opt_k with k >= LLM_GVOCAB_LONG to the same node in the
 * repetition's twin item*, which behaves the same for tokens of at most k
 * bytes; the walk of the twin is shared by all those counts, and its
 * accepted tokens longer than k (a few hundred of the vocabulary's longest)
 * are checked from the state instead.  Smaller counts map to the twin too
 * when they are the cut's only count: the twin's walk counts the items each
 * accepted token starts (exact for unambiguous items, see count_setup) and
 * keeps one bitset per count below LLM_GVOCAB_LONG, so a maxLength 20
 * string or an email's {1,20} parts cost one walk, not one per count.
 * Ambiguous items keep a walk per count.
 *
 * A walk that crossed the cut lists only tokens whose next byte may follow
 * the cut's bottom rule in some context (its LL(1) FOLLOW set): without it
 * a rule that may end early (a digit, an email's local part) listed most of
 * the vocabulary, which every state then rechecked.
 *
 * A walk depends only on the grammar text above the cut (what its nodes
 * have left, the rules reachable from there, the FOLLOW set), not on the
 * grammar it came from, so walks are kept in the vocabulary under that
 * canonical text (cut_key): string characters, formats and counts seen in
 * one schema serve every other schema and every fresh index on the model.
 *
 * The FOLLOW set is kept beside the text, not in it: a walk filtered with
 * more bytes lists a superset for the stack below, so it serves the same
 * text with a smaller set, and the walks of the JSON building blocks made
 * at model load (llm_gprewarm.c) serve every schema.  A walk that still
 * lists more than DEEP_DEP tokens (a rule that may end early inside a
 * larger structure: an email's dotted parts) gives way to a deeper cut's,
 * whose rules decide those tokens themselves.  Stacks no deeper than the
 * cut (the grammar's own top level, whose text is most of the grammar) are
 * walked per index, without a key.
 *
 * A state's live bytes (the union of its stacks' top classes) answer dead
 * transitions without an advance, which is most of a cold walk's work.
 *
 * State masks are cached too; both caches have memory budgets.  The plain
 * walk from the state itself is kept as the reference the tests compare
 * against (llm_gmatcher_mask_reference).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/llm_gvocab_int.h"

#define TR_UNKNOWN  (-2)
#define TR_DEAD     (-1)
#define MAX_EXPAND_DEPTH 4096
#define MASK_BUDGET ((size_t) 64 << 20)
#define CUT_BUDGET  ((size_t) 64 << 20)
#define BOUNDARY    1        /* node: the stack below a cut */
#define CUT_DEPTH   3        /* stack nodes kept above the cut */
#define CUT_DEPTH_MAX 6      /* ... when the walk hands too many tokens below */
#define DEEP_DEP    1024     /* tokens handed below the cut that make it deeper */

typedef struct {
    int32_t pos, parent;
} gnode;

typedef struct {
    uint32_t  off, n;        /* node ids in pool[] */
    int32_t  *trans;         /* [256] or NULL */
    uint64_t *mask;
    int16_t   forced;        /* -2 unknown, -1 none, else the only next byte */
    uint8_t   accepting;     /* holds node 0: the input may end here */
    uint8_t   boundary;      /* holds BOUNDARY: a cut stack's rules ended */
    uint8_t   live[32];      /* bytes some stack's top class holds: the others are dead */
} gstate;

typedef llm_gcut gcut;

struct llm_gindex {
    int       refs;              /* llm_gindex_retain / llm_gindex_free */
    llm_grammar *owned;          /* freed with the index (llm_gindex_adopt) */
    const llm_grammar *g;
    const llm_gvocab  *v;
    int32_t  *stop, *extra;
    size_t    n_stop, n_extra;
    size_t    words;

    gnode    *nodes;
    size_t    n_nodes, cap_nodes;
    int32_t  *node_ht;
    size_t    node_cap;          /* power of two */

    gstate   *st;
    size_t    n_st, cap_st;
    int32_t  *st_ht;
    size_t    st_cap;
    int32_t  *pool;
    size_t    n_pool, cap_pool;

    /* scratch of one advance */
    int32_t  *buf;
    size_t    n_buf, cap_buf;
    uint64_t *vis_key;
    uint32_t *vis_gen;
    size_t    vis_cap, vis_n;
    uint32_t  gen;
    int       fail;              /* out of memory or too deep */

    int32_t  *walk;              /* trie walk: state per depth */
    uint8_t  *past;              /* trie walk: the cut was crossed at or above */
    int32_t   init;
    size_t    mask_bytes;
    long      n_computed;        /* masks computed (cache misses) */

    gcut    **cut;               /* by cut stack (node id) */
    size_t    cap_cut;
    int32_t  *twin_pos;          /* by element: the node position a cut maps it to, -1 none */
    int32_t  *twin_lim;          /* by element: tokens longer than this are rechecked */
    int32_t  *chk;               /* tokens of one mask to check from the state */
    size_t    n_chk, cap_chk;
    size_t    cut_bytes;
    long      n_cut_walks;
    long      n_cut_new;         /* cut stacks given a walk (found or made) */
    long      n_top_walks;       /* walks of stacks that end within the cut */
    long      n_walk_nodes;      /* trie nodes the walks visited */
    int32_t  *tmp;               /* scratch lists of one cut walk */
    size_t    n_tmp_acc, n_tmp_dep, cap_tmp_acc, cap_tmp_dep;
    int32_t  *tmp_dep;
    uint8_t (*follow)[32];       /* by rule: bytes that may come after it (any context) */
    int32_t  *key;               /* canonical text of one cut (cut_key) */
    size_t    n_key, cap_key;
    int32_t  *renum, *queue;     /* by rule: number in the key; rules in key order */
    size_t    n_all;             /* rules with the twins */
    int32_t  *cnt;               /* trie walk: items started per depth (twin walks) */
    uint8_t  *items;             /* by token: items a twin walk's token starts */
    uint32_t *seen;              /* by state: walk that checked it for ambiguity */
    size_t    cap_seen;
    long      n_count_walks;     /* stamps of seen[] */
    pthread_mutex_t mu;
};

struct llm_gmatcher {
    llm_gindex *x;
    int32_t     state;
    int         done;
};

static uint64_t
mix64(uint64_t h)
{
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* ---- nodes ---- */

static int
grow_ht(int32_t **ht, size_t *cap, size_t need)
{
    int32_t *n;
    size_t c = *cap ? *cap : 1024, i;
    while (c < need * 2) c *= 2;
    if (c == *cap) return 0;
    n = malloc(c * sizeof(int32_t));
    if (n == NULL) return -1;
    for (i = 0; i < c; i++) n[i] = -1;
    free(*ht);
    *ht = n;
    *cap = c;
    return 1;   /* caller rehashes */
}

static int32_t
node_intern(llm_gindex *x, int32_t pos, int32_t parent)
{
    uint64_t h = mix64(((uint64_t) (uint32_t) pos << 32) | (uint32_t) parent);
    size_t i;
    int r;

    for (i = h & (x->node_cap - 1); x->node_ht[i] >= 0; i = (i + 1) & (x->node_cap - 1)) {
        const gnode *n = &x->nodes[x->node_ht[i]];
        if (n->pos == pos && n->parent == parent) return x->node_ht[i];
    }
    if (x->n_nodes == x->cap_nodes) {
        size_t cap = x->cap_nodes * 2;
        gnode *nn = realloc(x->nodes, cap * sizeof(gnode));
        if (nn == NULL) { x->fail = 1; return -1; }
        x->nodes = nn;
        x->cap_nodes = cap;
    }
    x->nodes[x->n_nodes].pos = pos;
    x->nodes[x->n_nodes].parent = parent;
    x->n_nodes++;
    r = grow_ht(&x->node_ht, &x->node_cap, x->n_nodes);
    if (r < 0) { x->fail = 1; return -1; }
    if (r > 0) {
        size_t k;
        for (k = 0; k < x->n_nodes; k++) {
            h = mix64(((uint64_t) (uint32_t) x->nodes[k].pos << 32) | (uint32_t) x->nodes[k].parent);
            for (i = h & (x->node_cap - 1); x->node_ht[i] >= 0; i = (i + 1) & (x->node_cap - 1)) {}
            x->node_ht[i] = (int32_t) k;
        }
    } else {
        x->node_ht[i] = (int32_t) (x->n_nodes - 1);
    }
    return (int32_t) (x->n_nodes - 1);
}

/* ---- one expansion pass ---- */

static int
visit_first(llm_gindex *x, int32_t pos, int32_t parent)
{
    uint64_t key = ((uint64_t) (uint32_t) pos << 32) | (uint32_t) parent;
    size_t i;

    if ((x->vis_n + 1) * 2 > x->vis_cap) {
        /* grow and keep this generation's keys */
        size_t cap = x->vis_cap ? x->vis_cap * 2 : 1024, k;
        uint64_t *nk = malloc(cap * sizeof(uint64_t));
        uint32_t *ng = calloc(cap, sizeof(uint32_t));
        if (!nk || !ng) { free(nk); free(ng); x->fail = 1; return 0; }
        for (k = 0; k < x->vis_cap; k++) {
            if (x->vis_gen[k] != x->gen) continue;
            for (i = mix64(x->vis_key[k]) & (cap - 1); ng[i] == x->gen; i = (i + 1) & (cap - 1)) {}
            nk[i] = x->vis_key[k];
            ng[i] = x->gen;
        }
        free(x->vis_key); free(x->vis_gen);
        x->vis_key = nk; x->vis_gen = ng; x->vis_cap = cap;
    }
    for (i = mix64(key) & (x->vis_cap - 1); x->vis_gen[i] == x->gen; i = (i + 1) & (x->vis_cap - 1)) {
        if (x->vis_key[i] == key) return 0;
    }
    x->vis_gen[i] = x->gen;
    x->vis_key[i] = key;
    x->vis_n++;
    return 1;
}

static void
new_pass(llm_gindex *x)
{
    x->n_buf = 0;
    x->vis_n = 0;
    if (++x->gen == 0) {   /* wrapped: clear */
        if (x->vis_gen) memset(x->vis_gen, 0, x->vis_cap * sizeof(uint32_t));
        x->gen = 1;
    }
}

static void
buf_push(llm_gindex *x, int32_t id)
{
    if (x->n_buf == x->cap_buf) {
        size_t cap = x->cap_buf ? x->cap_buf * 2 : 64;
        int32_t *b = realloc(x->buf, cap * sizeof(int32_t));
        if (b == NULL) { x->fail = 1; return; }
        x->buf = b;
        x->cap_buf = cap;
    }
    x->buf[x->n_buf++] = id;
}

static void
expand(llm_gindex *x, int32_t pos, int32_t parent, int depth)
{
    const llm_grammar *g = x->g;
    const llm_gelem *e;

    if (x->fail) return;
    if (depth > MAX_EXPAND_DEPTH) { x->fail = 1; return; }
    if (!visit_first(x, pos, parent)) return;
    e = &g->el[pos];
    if (llm_gelem_ends(e)) {
        if (parent == 0 || parent == BOUNDARY) buf_push(x, parent);
        else expand(x, x->nodes[parent].pos, x->nodes[parent].parent, depth + 1);
        return;
    }
    if (e->type == LLM_GE_CLASS) {
        int32_t id = node_intern(x, pos, parent);
        if (id >= 0) buf_push(x, id);
        return;
    }
    {
        int32_t ret = llm_gelem_ends(e + 1) ? parent : node_intern(x, pos + 1, parent);
        uint32_t a = g->rule_start[e->val];
        if (ret < 0) return;
        for ( ;; ) {
            expand(x, (int32_t) a, ret, depth + 1);
            while (!llm_gelem_ends(&g->el[a])) a++;
            if (g->el[a].type == LLM_GE_END) break;
            a++;
        }
    }
}

static int
cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    return x < y ? -1 : x > y;
}

/* Intern the set in buf[] as a state; -1 when empty or on failure. */
static int32_t
state_intern(llm_gindex *x)
{
    size_t n = 0, i, k;
    uint64_t h = 0x9e3779b97f4a7c15ull;
    gstate *s;
    int r;

    if (x->fail || x->n_buf == 0) return TR_DEAD;
    qsort(x->buf, x->n_buf, sizeof(int32_t), cmp_i32);
    for (i = 0; i < x->n_buf; i++) {
        if (n == 0 || x->buf[n - 1] != x->buf[i]) x->buf[n++] = x->buf[i];
    }
    for (i = 0; i < n; i++) h = mix64(h ^ (uint64_t) (uint32_t) x->buf[i]);
    for (i = h & (x->st_cap - 1); x->st_ht[i] >= 0; i = (i + 1) & (x->st_cap - 1)) {
        s = &x->st[x->st_ht[i]];
        if (s->n == n && memcmp(x->pool + s->off, x->buf, n * sizeof(int32_t)) == 0)
            return x->st_ht[i];
    }
    if (x->n_pool + n > x->cap_pool) {
        size_t cap = (x->n_pool + n) * 2;
        int32_t *p = realloc(x->pool, cap * sizeof(int32_t));
        if (p == NULL) { x->fail = 1; return TR_DEAD; }
        x->pool = p;
        x->cap_pool = cap;
    }
    if (x->n_st == x->cap_st) {
        size_t cap = x->cap_st * 2;
        gstate *ns = realloc(x->st, cap * sizeof(gstate));
        if (ns == NULL) { x->fail = 1; return TR_DEAD; }
        x->st = ns;
        x->cap_st = cap;
    }
    s = &x->st[x->n_st];
    memset(s, 0, sizeof(*s));
    s->off = (uint32_t) x->n_pool;
    s->n = (uint32_t) n;
    s->forced = -2;
    s->accepting = x->buf[0] == 0;
    s->boundary = x->buf[0] == BOUNDARY || (n > 1 && x->buf[1] == BOUNDARY);
    for (k = 0; k < n; k++) {
        const uint8_t *cls;
        int c;
        if (x->buf[k] <= BOUNDARY) continue;
        cls = x->g->cls[x->g->el[x->nodes[x->buf[k]].pos].val];
        for (c = 0; c < 32; c++) s->live[c] |= cls[c];
    }
    memcpy(x->pool + x->n_pool, x->buf, n * sizeof(int32_t));
    x->n_pool += n;
    x->n_st++;
    r = grow_ht(&x->st_ht, &x->st_cap, x->n_st);
    if (r < 0) { x->fail = 1; return TR_DEAD; }
    if (r > 0) {
        for (k = 0; k < x->n_st; k++) {
            const gstate *t = &x->st[k];
            h = 0x9e3779b97f4a7c15ull;
            for (i = 0; i < t->n; i++) h = mix64(h ^ (uint64_t) (uint32_t) x->pool[t->off + i]);
            for (i = h & (x->st_cap - 1); x->st_ht[i] >= 0; i = (i + 1) & (x->st_cap - 1)) {}
            x->st_ht[i] = (int32_t) k;
        }
    } else {
        x->st_ht[i] = (int32_t) (x->n_st - 1);
    }
    return (int32_t) (x->n_st - 1);
}

static int32_t
advance(llm_gindex *x, int32_t s, unsigned b)
{
    const llm_grammar *g = x->g;
    uint32_t i, n = x->st[s].n, off = x->st[s].off;
    int32_t r;

    new_pass(x);
    for (i = 0; i < n; i++) {
        int32_t id = x->pool[off + i];
        const gnode *nd;
        if (id == 0 || id == BOUNDARY) continue;
        nd = &x->nodes[id];
        if (llm_gset_has(g->cls[g->el[nd->pos].val], b)) {
            int32_t parent = nd->parent;
            expand(x, nd->pos + 1, parent, 0);
        }
    }
    r = state_intern(x);
    if (x->fail) { x->fail = 0; return -3; }   /* resource failure, not "dead" */
    return r;
}

/* Transition of s by b, computed on first use.  -1 dead, -3 failure. */
static inline int32_t
trans(llm_gindex *x, int32_t s, unsigned b)
{
    int32_t *tr = x->st[s].trans, t;
    if (tr != NULL && tr[b] != TR_UNKNOWN) return tr[b];
    if (!llm_gset_has(x->st[s].live, b)) return TR_DEAD;
    if (tr == NULL) {
        int i;
        tr = malloc(256 * sizeof(int32_t));
        if (tr == NULL) return -3;
        for (i = 0; i < 256; i++) tr[i] = TR_UNKNOWN;
        x->st[s].trans = tr;
    }
    t = advance(x, s, b);
    if (t == -3) return -3;
    x->st[s].trans[b] = t;     /* st[] may have moved */
    return t;
}

/* ---- what may follow a rule ---- */

static int
set_or(uint8_t *dst, const uint8_t *src)
{
    int k, changed = 0;
    for (k = 0; k < 32; k++) {
        uint8_t o = dst[k] | src[k];
        changed |= o != dst[k];
        dst[k] = o;
    }
    return changed;
}

/* "FOLLOW(to) includes FOLLOW(from)" edges, gathered before propagation. */
typedef struct {
    int32_t  *from, *to;
    size_t    n, cap;
} follow_edges;

static int
follow_edge_add(follow_edges *ed, int32_t from, int32_t to)
{
    if (ed->n == ed->cap) {
        size_t   c = ed->cap ? ed->cap * 2 : 256;
        int32_t *f = realloc(ed->from, c * sizeof(int32_t)), *t;

        if (f == NULL) return -1;
        ed->from = f;
        t = realloc(ed->to, c * sizeof(int32_t));
        if (t == NULL) return -1;
        ed->to = t;
        ed->cap = c;
    }
    ed->from[ed->n] = from;
    ed->to[ed->n++] = to;
    return 0;
}

/*
 * FOLLOW sets (LL(1)): the bytes that may come right after a rule ends, in
 * any context.  A cut walk that crossed the cut (the rules above it ended)
 * hands a token to the stack below only when its next byte may follow the
 * cut's bottom rule; the others are dead everywhere.  A twin follows what
 * its repetitions follow.  -1 when out of memory.
 */
static int
compute_follow(llm_gindex *x)
{
    const llm_grammar *g = x->g;
    size_t n_all = 0, r, it, k;
    uint8_t (*first)[32] = NULL, *nullable = NULL, suf[32];
    follow_edges ed = { NULL, NULL, 0, 0 };
    int32_t *work = NULL;
    uint8_t *queued = NULL;
    size_t n_work = 0;
    int changed = 1, rc = -1;

    for (r = 0; r < g->n_rules; r++) if (g->rep_twin[r] >= 0 && (size_t) g->rep_twin[r] + 1 > n_all) n_all = (size_t) g->rep_twin[r] + 1;
    if (n_all < g->n_rules) n_all = g->n_rules;
    x->follow = calloc(n_all + 1, 32);
    first = calloc(n_all + 1, 32);
    nullable = calloc(n_all + 1, 1);
    queued = calloc(n_all + 1, 1);
    work = malloc((n_all + 1) * sizeof(int32_t));
    if (!x->follow || !first || !nullable || !queued || !work) goto out;
    /* nullable and FIRST: passes until nothing changes (rules are mostly
     * built after the rules they use, so a pass or two) */
    for (it = 0; changed && it <= n_all; it++) {
        changed = 0;
        for (r = 0; r < n_all; r++) {
            uint32_t a = g->rule_start[r];
            for ( ;; ) {
                int alt_null = 1;
                for ( ; !llm_gelem_ends(&g->el[a]); a++) {
                    const llm_gelem *e = &g->el[a];
                    if (!alt_null) continue;
                    if (e->type == LLM_GE_CLASS) { changed |= set_or(first[r], g->cls[e->val]); alt_null = 0; }
                    else { changed |= set_or(first[r], first[e->val]); alt_null = nullable[e->val]; }
                }
                if (alt_null && !nullable[r]) { nullable[r] = 1; changed = 1; }
                if (g->el[a].type == LLM_GE_END) break;
                a++;
            }
        }
    }
    /* direct FOLLOW bytes, and "FOLLOW(t) includes FOLLOW(r)" edges */
    for (r = 0; r < n_all; r++) {
        uint32_t a = g->rule_start[r], end;
        for ( ;; ) {
            int suf_null = 1;
            for (end = a; !llm_gelem_ends(&g->el[end]); end++) {}
            memset(suf, 0, sizeof(suf));
            for (k = end; k > a; k--) {
                const llm_gelem *e = &g->el[k - 1];
                if (e->type == LLM_GE_CLASS) {
                    memcpy(suf, g->cls[e->val], 32);
                    suf_null = 0;
                    continue;
                }
                set_or(x->follow[e->val], suf);
                if (suf_null) {
                    if (follow_edge_add(&ed, (int32_t) r, e->val) != 0) goto out;
                }
                if (nullable[e->val]) set_or(suf, first[e->val]);
                else { memcpy(suf, first[e->val], 32); suf_null = 0; }
            }
            if (g->el[end].type == LLM_GE_END) break;
            a = end + 1;
        }
        if (r < g->n_rules && g->rep_twin[r] >= 0) {
            if (follow_edge_add(&ed, (int32_t) r, g->rep_twin[r]) != 0) goto out;
        }
    }
    /* propagate along the edges until stable (a worklist; the edges are
     * scanned per popped rule, so sort-free but quadratic only in the
     * worst case of long chains, which counted repetitions make: those
     * are visited once each in rule order) */
    {
        size_t *start = calloc(n_all + 2, sizeof(size_t));
        int32_t *adj = malloc((ed.n + 1) * sizeof(int32_t));
        if (start == NULL || adj == NULL) { free(start); free(adj); goto out; }
        for (k = 0; k < ed.n; k++) start[ed.from[k] + 1]++;
        for (r = 0; r < n_all; r++) start[r + 1] += start[r];
        {
            size_t *fill = malloc((n_all + 1) * sizeof(size_t));
            if (fill == NULL) { free(start); free(adj); goto out; }
            memcpy(fill, start, (n_all + 1) * sizeof(size_t));
            for (k = 0; k < ed.n; k++) adj[fill[ed.from[k]]++] = ed.to[k];
            free(fill);
        }
        for (r = 0; r < n_all; r++) { work[n_work++] = (int32_t) r; queued[r] = 1; }
        while (n_work > 0) {
            int32_t f = work[--n_work];
            queued[f] = 0;
            for (k = start[f]; k < start[f + 1]; k++) {
                int32_t t = adj[k];
                if (set_or(x->follow[t], x->follow[f]) && !queued[t]) { queued[t] = 1; work[n_work++] = t; }
            }
        }
        free(start);
        free(adj);
    }
    rc = 0;
out:
    free(first); free(nullable); free(queued); free(work); free(ed.from); free(ed.to);
    return rc;
}

/* The rule holding element pos (rules are laid out in id order). */
static int32_t
rule_of(const llm_grammar *g, int32_t pos, size_t n_all)
{
    /* n_all > 0 */
    size_t lo = 0, hi = n_all;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (g->rule_start[mid] <= (uint32_t) pos) lo = mid; else hi = mid;
    }
    return (int32_t) lo;
}

/* ---- index ---- */

llm_gindex *
llm_gindex_create(const llm_grammar *g, const llm_gvocab *v,
                  const int32_t *stop_ids, size_t n_stop,
                  const int32_t *extra_ids, size_t n_extra, char *err, size_t errlen)
{
    llm_gindex *x = calloc(1, sizeof(*x));
    uint32_t a;
    size_t r;

    if (x == NULL) goto oom;
    x->refs = 1;
    x->g = g;
    x->v = v;
    x->words = (v->n_vocab + 63) / 64;
    x->stop = malloc((n_stop + 1) * sizeof(int32_t));
    x->extra = malloc((n_extra + 1) * sizeof(int32_t));
    x->cap_nodes = 256;
    x->nodes = malloc(x->cap_nodes * sizeof(gnode));
    x->cap_st = 64;
    x->st = malloc(x->cap_st * sizeof(gstate));
    x->walk = malloc((v->max_depth + 2) * sizeof(int32_t));
    x->past = malloc(v->max_depth + 2);
    x->twin_pos = malloc((g->n_el + 1) * sizeof(int32_t));
    x->twin_lim = malloc((g->n_el + 1) * sizeof(int32_t));
    x->n_all = g->n_rules;
    for (r = 0; r < g->n_rules; r++)
        if (g->rep_twin[r] >= 0 && (size_t) g->rep_twin[r] + 1 > x->n_all) x->n_all = (size_t) g->rep_twin[r] + 1;
    x->renum = malloc((x->n_all + 1) * sizeof(int32_t));
    x->queue = malloc((x->n_all + 1) * sizeof(int32_t));
    if (!x->stop || !x->extra || !x->nodes || !x->st || !x->walk || !x->past || !x->twin_pos || !x->twin_lim
        || !x->renum || !x->queue
        || grow_ht(&x->node_ht, &x->node_cap, 1) < 0 || grow_ht(&x->st_ht, &x->st_cap, 1) < 0
        || compute_follow(x) < 0)
        goto oom;
    for (r = 0; r < x->n_all; r++) x->renum[r] = -1;
    if (n_stop) memcpy(x->stop, stop_ids, n_stop * sizeof(int32_t));
    if (n_extra) memcpy(x->extra, extra_ids, n_extra * sizeof(int32_t));
    x->n_stop = n_stop;
    x->n_extra = n_extra;
    x->nodes[0].pos = -1;          /* nothing left */
    x->nodes[0].parent = -1;
    x->nodes[BOUNDARY].pos = -1;   /* below a cut */
    x->nodes[BOUNDARY].parent = -1;
    x->n_nodes = 2;
    pthread_mutex_init(&x->mu, NULL);
    for (a = 0; a < g->n_el; a++) x->twin_pos[a] = -1;
    for (r = 0; r < g->n_rules; r++) {
        /* the stack node in opt_k: after the item, before opt_(k-1) */
        if (g->rep_twin[r] < 0 || g->rep_count[r] < 2) continue;
        x->twin_pos[g->rule_start[r] + 1] = (int32_t) g->rule_start[g->rep_twin[r]] + 1;
        x->twin_lim[g->rule_start[r] + 1] = g->rep_count[r];
    }

    /* the initial state: every alternative of the root, nothing after it */
    new_pass(x);
    a = g->rule_start[g->root];
    for ( ;; ) {
        expand(x, (int32_t) a, 0, 0);
        while (!llm_gelem_ends(&g->el[a])) a++;
        if (g->el[a].type == LLM_GE_END) break;
        a++;
    }
    x->init = state_intern(x);
    if (x->init < 0) {
        llm_gerr(err, errlen, x->fail ? "grammar nests too deeply" : "grammar matches nothing");
        llm_gindex_free(x);
        return NULL;
    }
    return x;
oom:
    llm_gerr(err, errlen, "out of memory");
    llm_gindex_free(x);
    return NULL;
}

static void
cut_free(gcut *c)
{
    if (c != NULL && !c->shared) llm_gcut_free(c);
}

static void
drop_cuts(llm_gindex *x)
{
    size_t i;
    for (i = 0; i < x->cap_cut; i++) { cut_free(x->cut[i]); x->cut[i] = NULL; }
    x->cut_bytes = 0;
}

void
llm_gindex_drop_masks(llm_gindex *x)
{
    size_t i;
    pthread_mutex_lock(&x->mu);
    for (i = 0; i < x->n_st; i++) {
        free(x->st[i].mask);
        x->st[i].mask = NULL;
    }
    x->mask_bytes = 0;
    drop_cuts(x);
    pthread_mutex_unlock(&x->mu);
}

void
llm_gindex_retain(llm_gindex *x)
{
    __atomic_add_fetch(&x->refs, 1, __ATOMIC_RELAXED);
}

void
llm_gindex_adopt(llm_gindex *x, llm_grammar *g)
{
    x->owned = g;
}

void
llm_gindex_free(llm_gindex *x)
{
    size_t i;
    if (x == NULL) return;
    if (__atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    llm_grammar_free(x->owned);
    if (x->st) {
        for (i = 0; i < x->n_st; i++) { free(x->st[i].trans); free(x->st[i].mask); }
    }
    if (x->cut) drop_cuts(x);
    free(x->cut); free(x->tmp); free(x->tmp_dep); free(x->past);
    free(x->twin_pos); free(x->twin_lim); free(x->chk);
    free(x->follow); free(x->key); free(x->renum); free(x->queue);
    free(x->cnt); free(x->items); free(x->seen);
    if (x->n_nodes) pthread_mutex_destroy(&x->mu);
    free(x->stop); free(x->extra); free(x->nodes); free(x->node_ht);
    free(x->st); free(x->st_ht); free(x->pool); free(x->buf);
    free(x->vis_key); free(x->vis_gen); free(x->walk);
    free(x);
}

size_t
llm_gindex_n_states(const llm_gindex *x)
{
    return x->n_st;
}

long
llm_gindex_n_masks_computed(const llm_gindex *x)
{
    return x->n_computed;
}

long
llm_gindex_n_cut_walks(const llm_gindex *x)
{
    return x->n_cut_walks;
}

long
llm_gindex_n_top_walks(const llm_gindex *x)
{
    return x->n_top_walks;
}

long
llm_gindex_n_walk_nodes(const llm_gindex *x)
{
    return x->n_walk_nodes;
}

/* Walk bytes from s; -1 when a byte is not allowed, -3 on failure. */
static int32_t
walk_bytes(llm_gindex *x, int32_t s, const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n && s >= 0; i++) s = trans(x, s, (unsigned char) p[i]);
    return s;
}

/* Stop ids (when s is complete) and the extra ids whose bytes fit, into m. */
static int
mask_outside_trie(llm_gindex *x, int32_t s, uint64_t *m, int *any)
{
    const llm_gvocab *v = x->v;
    size_t k;

    for (k = 0; k < x->n_extra; k++) {
        int32_t id = x->extra[k], len, t;
        if (id < 0 || (size_t) id >= v->n_vocab) continue;
        len = v->len[id] < -1 ? -2 - v->len[id] : v->len[id];
        if (len <= 0) continue;
        t = walk_bytes(x, s, v->arena + v->off[id], (size_t) len);
        if (t == -3) return -3;
        if (t >= 0) { m[id >> 6] |= 1ull << (id & 63); *any = 1; }
    }
    if (x->st[s].accepting) {
        for (k = 0; k < x->n_stop; k++) {
            int32_t id = x->stop[k];
            if (id < 0 || (size_t) id >= v->n_vocab) continue;
            m[id >> 6] |= 1ull << (id & 63);
            *any = 1;
        }
    }
    return 0;
}

/* The reference mask: the whole trie walked from the state itself. */
static int
compute_mask_walk(llm_gindex *x, int32_t s, uint64_t *m)
{
    const llm_gvocab *v = x->v;
    const uint8_t *byte = v->byte;
    const uint16_t *depth = v->depth;
    const uint32_t *skip = v->skip;
    const int32_t *first = v->first_tok, *next = v->next_tok;
    int32_t *walk = x->walk;
    size_t i, n = v->n_nodes;
    int any = 0;

    memset(m, 0, x->words * sizeof(uint64_t));
    walk[0] = s;
    for (i = 1; i < n; ) {
        int32_t cur = walk[depth[i] - 1], t;
        const int32_t *tr = x->st[cur].trans;
        t = (tr != NULL && tr[byte[i]] != TR_UNKNOWN) ? tr[byte[i]] : trans(x, cur, byte[i]);
        if (t == -3) return -3;
        if (t < 0) { i = skip[i]; continue; }
        walk[depth[i]] = t;
        {
            int32_t id;
            for (id = first[i]; id >= 0; id = next[id]) {
                m[id >> 6] |= 1ull << (id & 63);
                any = 1;
            }
        }
        i++;
    }
    if (mask_outside_trie(x, s, m, &any) < 0) return -3;
    return any ? 0 : -1;
}

/* The cut stack of stack node id: its top `depth` nodes over BOUNDARY
 * (nodes of a long count mapped to the twin: tokens longer than *lim bytes
 * are then to be rechecked; *lim 0: none), or id itself when the stack is
 * no deeper.  With map_small, the topmost small count of a cut without
 * long ones maps to the twin too (*small: its count; the verdict is then
 * the twin walk's by_count).  -3 on failure. */
static int32_t
cut_of(llm_gindex *x, int32_t id, int32_t *lim, int32_t *small, int map_small, int depth)
{
    int32_t pos[CUT_DEPTH_MAX], p = id;
    int d = 0, k, n_map = 0, n_small = 0, top_small = -1;

    *lim = 0;
    *small = 0;
    while (d < depth && p > BOUNDARY) {
        pos[d++] = x->nodes[p].pos;
        p = x->nodes[p].parent;
    }
    if (p == 0) return id;
    for (k = 0; k < d; k++) {
        if (x->twin_pos[pos[k]] < 0) continue;
        n_map++;
        if (x->twin_lim[pos[k]] < LLM_GVOCAB_LONG) {
            n_small++;
            if (top_small < 0) top_small = k;
        }
    }
    /* the twin walk counts the items of one twin: a small count maps when
     * no other count of the cut does (the others stay exact) */
    map_small = map_small && n_map == n_small && top_small >= 0;
    p = BOUNDARY;
    while (d > 0) {
        int32_t q = pos[--d];
        if (x->twin_pos[q] >= 0 && (x->twin_lim[q] >= LLM_GVOCAB_LONG || (map_small && d == top_small))) {
            if (x->twin_lim[q] < LLM_GVOCAB_LONG) *small = x->twin_lim[q];
            else if (*lim == 0 || x->twin_lim[q] < *lim) *lim = x->twin_lim[q];
            q = x->twin_pos[q];
        }
        p = node_intern(x, q, p);
        if (p < 0) { x->fail = 0; return -3; }
    }
    return p;
}

static int
list_push(int32_t **a, size_t *n, size_t *cap, int32_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        int32_t *na = realloc(*a, c * sizeof(int32_t));
        if (na == NULL) return -1;
        *a = na;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

/*
 * Counting items on a walk through a twin (twin ::= item twin | ()).  The
 * stack is in an item; when an item ends, the parse is at the twin node T
 * and expands to the loop state L (the next item's first bytes, or what
 * follows the repetition).  A byte from L that starts an item starts one
 * more.  This is exact when the items are unambiguous: every parse at an
 * item's end is in L, so a state other than L holding one of L's stacks,
 * or a byte that may both start an item and leave, makes the walk
 * uncountable.  Returns 0 with *loop and item_first set, -1 when the cut
 * has no single twin node or the items are ambiguous.
 */
static int
count_setup(llm_gindex *x, int32_t node, int32_t *loop, uint8_t item_first[32])
{
    const llm_grammar *g = x->g;
    uint8_t cont[32];
    int32_t p, tn = -1, L;
    int n_twin = 0, k;
    uint32_t i;

    for (p = node; p > BOUNDARY; p = x->nodes[p].parent)
        if ((size_t) rule_of(g, x->nodes[p].pos, x->n_all) >= g->n_rules) { tn = p; n_twin++; }
    if (n_twin != 1) return -1;
    if (x->cnt == NULL && (x->cnt = malloc((x->v->max_depth + 2) * sizeof(int32_t))) == NULL) return -1;
    if (x->items == NULL && (x->items = malloc(x->v->n_vocab)) == NULL) return -1;
    new_pass(x);
    expand(x, x->nodes[tn].pos, x->nodes[tn].parent, 0);
    L = state_intern(x);
    if (x->fail || L < 0) { x->fail = 0; return -1; }
    memset(item_first, 0, 32);
    memset(cont, 0, sizeof(cont));
    for (i = 0; i < x->st[L].n; i++) {
        int32_t sk = x->pool[x->st[L].off + i], q;
        const uint8_t *cls;
        int in_item = 0;
        if (sk <= BOUNDARY) continue;
        for (q = sk; q > BOUNDARY; q = x->nodes[q].parent) if (q == tn) { in_item = 1; break; }
        cls = g->cls[g->el[x->nodes[sk].pos].val];
        for (k = 0; k < 32; k++) {
            if (in_item) item_first[k] |= cls[k]; else cont[k] |= cls[k];
        }
    }
    for (k = 0; k < 32; k++) if (item_first[k] & cont[k]) return -1;
    *loop = L;
    x->n_count_walks++;
    return 0;
}

/* 1 when state t (not the loop state) holds one of the loop state's
 * stacks: a parse may be at an item's end there too.  Checked once per
 * state per walk. */
static int
count_ambiguous(llm_gindex *x, int32_t t, int32_t loop)
{
    const gstate *a = &x->st[t], *b = &x->st[loop];
    uint32_t i = 0, j = 0;

    if ((size_t) t >= x->cap_seen) {
        size_t cap = x->cap_seen ? x->cap_seen : 1024;
        uint32_t *ns;
        while (cap <= (size_t) t) cap *= 2;
        ns = realloc(x->seen, cap * sizeof(uint32_t));
        if (ns == NULL) return 1;
        memset(ns + x->cap_seen, 0, (cap - x->cap_seen) * sizeof(uint32_t));
        x->seen = ns;
        x->cap_seen = cap;
    }
    if (x->seen[t] == (uint32_t) x->n_count_walks) return 0;
    x->seen[t] = (uint32_t) x->n_count_walks;
    while (i < a->n && j < b->n) {
        int32_t u = x->pool[a->off + i], w = x->pool[b->off + j];
        if (u == w) return 1;
        if (u < w) i++; else j++;
    }
    return 0;
}

/* The trie walked from cut state c (see the top of the file). */
static gcut *
cut_walk(llm_gindex *x, int32_t c, int32_t node, const uint8_t *follow)
{
    const llm_gvocab *v = x->v;
    const uint8_t *byte = v->byte;
    const uint16_t *depth = v->depth;
    const uint32_t *skip = v->skip;
    const int32_t *first = v->first_tok, *next = v->next_tok;
    int32_t *walk = x->walk, id, loop = -1, *cnt = NULL;
    uint8_t *past = x->past, item_first[32];
    size_t i, j, n = v->n_nodes;
    gcut *g;

    /* a twin node (the repetition's item* after the current item) in the
     * cut: count the items each token starts, so that every small count
     * shares this walk (by_count) */
    if (count_setup(x, node, &loop, item_first) == 0) {
        cnt = x->cnt;
        cnt[0] = 1;     /* the item the stack is in */
    }
    walk[0] = c;
    x->n_cut_walks++;
    x->n_tmp_acc = x->n_tmp_dep = 0;
    past[0] = 0;
    for (i = 1; i < n; ) {
        int32_t cur = walk[depth[i] - 1], t;
        const int32_t *tr = x->st[cur].trans;
        const gstate *ts;
        t = (tr != NULL && tr[byte[i]] != TR_UNKNOWN) ? tr[byte[i]] : trans(x, cur, byte[i]);
        if (t == -3) return NULL;
        /* a parse below the cut may go on from here: one that started
         * earlier, or one that starts now (the cut's rules just ended and
         * the byte may follow them somewhere) */
        past[depth[i]] = past[depth[i] - 1]
            | (x->st[cur].boundary && llm_gset_has(follow, byte[i]));
        if (t < 0) {
            /* dead above the cut; past it the stack below decides */
            if (past[depth[i]]) {
                for (j = i; j < skip[i]; j++)
                    for (id = first[j]; id >= 0; id = next[id])
                        if (list_push(&x->tmp_dep, &x->n_tmp_dep, &x->cap_tmp_dep, id) < 0) return NULL;
            }
            i = skip[i];
            continue;
        }
        ts = &x->st[t];
        walk[depth[i]] = t;
        if (cnt) {
            cnt[depth[i]] = cnt[depth[i] - 1] + (cur == loop && llm_gset_has(item_first, byte[i]));
            if (t != loop && count_ambiguous(x, t, loop)) cnt = NULL;
        }
        for (id = first[i]; id >= 0; id = next[id]) {
            int r = ts->n > ts->boundary
                ? list_push(&x->tmp, &x->n_tmp_acc, &x->cap_tmp_acc, id)
                : list_push(&x->tmp_dep, &x->n_tmp_dep, &x->cap_tmp_dep, id);
            if (r < 0) return NULL;
            if (cnt && ts->n > ts->boundary) x->items[id] = (uint8_t) (cnt[depth[i]] < 255 ? cnt[depth[i]] : 255);
        }
        i++;
        x->n_walk_nodes++;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL) return NULL;
    g->n_acc = (uint32_t) x->n_tmp_acc;
    g->n_dep = (uint32_t) x->n_tmp_dep;
    if (x->n_tmp_acc < x->words) {
        g->acc = malloc((x->n_tmp_acc + 1) * sizeof(int32_t));
        if (g->acc && x->n_tmp_acc > 0) memcpy(g->acc, x->tmp, x->n_tmp_acc * sizeof(int32_t));
        x->cut_bytes += x->n_tmp_acc * sizeof(int32_t);
    } else {
        g->acc_bits = calloc(x->words, sizeof(uint64_t));
        if (g->acc_bits)
            for (j = 0; j < x->n_tmp_acc; j++) g->acc_bits[x->tmp[j] >> 6] |= 1ull << (x->tmp[j] & 63);
        x->cut_bytes += x->words * sizeof(uint64_t);
    }
    g->dep = malloc((x->n_tmp_dep + 1) * sizeof(int32_t));
    if (g->dep && x->n_tmp_dep > 0) memcpy(g->dep, x->tmp_dep, x->n_tmp_dep * sizeof(int32_t));
    x->cut_bytes += x->n_tmp_dep * sizeof(int32_t) + sizeof(*g);
    g->bytes = (g->acc_bits ? x->words * sizeof(uint64_t) : x->n_tmp_acc * sizeof(int32_t))
             + x->n_tmp_dep * sizeof(int32_t) + sizeof(*g);
    if ((g->acc == NULL && g->acc_bits == NULL) || g->dep == NULL) { cut_free(g); return NULL; }
    if (cnt) {
        /* exactly k items, then at most k (prefix unions) */
        size_t k, w = x->words;
        g->by_count = calloc((LLM_GVOCAB_LONG - 1) * w, sizeof(uint64_t));
        if (g->by_count == NULL) { cut_free(g); return NULL; }
        for (j = 0; j < x->n_tmp_acc; j++) {
            int32_t t = x->tmp[j];
            if (x->items[t] >= 1 && x->items[t] < LLM_GVOCAB_LONG)
                g->by_count[(x->items[t] - 1) * w + ((size_t) t >> 6)] |= 1ull << (t & 63);
        }
        for (k = 1; k < LLM_GVOCAB_LONG - 1; k++)
            for (j = 0; j < w; j++) g->by_count[k * w + j] |= g->by_count[(k - 1) * w + j];
        g->bytes += (LLM_GVOCAB_LONG - 1) * w * sizeof(uint64_t);
        x->cut_bytes += (LLM_GVOCAB_LONG - 1) * w * sizeof(uint64_t);
    }
    return g;
}

static int
key_push(llm_gindex *x, int32_t v)
{
    return list_push(&x->key, &x->n_key, &x->cap_key, v);
}

/* An element in the key: a class by its bytes, a rule by its number in
 * order of first mention (queued for its body). */
static int
key_elem(llm_gindex *x, const llm_gelem *e, size_t *n_queue)
{
    const llm_grammar *g = x->g;
    int k;
    if (e->type == LLM_GE_CLASS) {
        if (key_push(x, -3) < 0) return -1;
        for (k = 0; k < 32; k += 4) {
            const uint8_t *c = g->cls[e->val] + k;
            if (key_push(x, (int32_t) ((uint32_t) c[0] | (uint32_t) c[1] << 8 | (uint32_t) c[2] << 16
                                       | (uint32_t) c[3] << 24)) < 0) return -1;
        }
        return 0;
    }
    if (x->renum[e->val] < 0) {
        x->renum[e->val] = (int32_t) *n_queue;
        x->queue[(*n_queue)++] = e->val;
    }
    return key_push(x, x->renum[e->val]);
}

/*
 * The canonical text of cut stack c: what its nodes have left of their
 * alternatives, the bodies of every rule reachable from them (renumbered
 * by first mention) and how the stack ends (nothing left, or the cut).
 * Two stacks with the same text have the same walk on a vocabulary,
 * whatever grammar they come from, up to the FOLLOW set the walk filters
 * the tokens it hands below the cut with (kept beside the text in the
 * vocabulary's table: a walk with a larger set serves a smaller one).
 * Returns the hash; the text is in x->key.
 */
static uint64_t
cut_key(llm_gindex *x, int32_t c, int *fail)
{
    const llm_grammar *g = x->g;
    size_t n_queue = 0, q, k;
    uint64_t h = 0x6a09e667f3bcc909ull;
    int32_t p = c;

    x->n_key = 0;
    for ( ; p > BOUNDARY; p = x->nodes[p].parent) {
        int32_t pos = x->nodes[p].pos;
        if (key_push(x, -1) < 0) goto oom;
        for ( ; !llm_gelem_ends(&g->el[pos]); pos++)
            if (key_elem(x, &g->el[pos], &n_queue) < 0) goto oom;
    }
    if (key_push(x, p == BOUNDARY ? -4 : -5) < 0) goto oom;
    for (q = 0; q < n_queue; q++) {
        uint32_t a = g->rule_start[x->queue[q]];
        if (key_push(x, -6) < 0) goto oom;
        for ( ; ; a++) {
            if (g->el[a].type == LLM_GE_END) break;
            if (g->el[a].type == LLM_GE_ALT) { if (key_push(x, -2) < 0) goto oom; continue; }
            if (key_elem(x, &g->el[a], &n_queue) < 0) goto oom;
        }
    }
    for (q = 0; q < n_queue; q++) x->renum[x->queue[q]] = -1;
    for (k = 0; k < x->n_key; k++) h = mix64(h ^ (uint64_t) (uint32_t) x->key[k]);
    return h;
oom:
    for (q = 0; q < n_queue; q++) x->renum[x->queue[q]] = -1;
    *fail = 1;
    return 0;
}

/* 1 when cut stack c ends over the cut (not with the input's end): its
 * walk depends only on the grammar text above the cut */
static int
cut_is_deep(const llm_gindex *x, int32_t c)
{
    while (c > BOUNDARY) c = x->nodes[c].parent;
    return c == BOUNDARY;
}

/* The walk of cut stack (node) c: this index's, else the vocabulary's
 * (another grammar's or request's walk of the same text), else made now
 * and shared. */
static gcut *
cut_get(llm_gindex *x, int32_t c)
{
    if ((size_t) c >= x->cap_cut) {
        size_t cap = x->cap_cut ? x->cap_cut : 256, k;
        gcut **nc;
        while (cap <= (size_t) c) cap *= 2;
        nc = realloc(x->cut, cap * sizeof(gcut *));
        if (nc == NULL) return NULL;
        for (k = x->cap_cut; k < cap; k++) nc[k] = NULL;
        x->cut = nc;
        x->cap_cut = cap;
    }
    if (x->cut[c] == NULL) {
        llm_gvocab *v = (llm_gvocab *) x->v;     /* its table of walks is internally locked */
        static const uint8_t none[32];
        const uint8_t *follow = none;
        int32_t one, p;
        int fail = 0, deep = cut_is_deep(x, c);
        uint64_t h = 0;
        gcut *w = NULL;
        /* a stack that ends within the cut is the grammar's own top level
         * (its text reaches most of the grammar: a long key, and a walk
         * that serves little else): kept by the index only */
        if (deep) {
            h = cut_key(x, c, &fail);
            if (fail) return NULL;
            for (p = c; p > BOUNDARY && x->nodes[p].parent > BOUNDARY; p = x->nodes[p].parent) {}
            if (p > BOUNDARY && x->nodes[p].parent == BOUNDARY)
                follow = x->follow[rule_of(x->g, x->nodes[p].pos, x->n_all)];
            w = llm_gvocab_cut_find(v, h, x->key, x->n_key, follow);
        }
        if (w == NULL) {
            new_pass(x);
            buf_push(x, c);
            one = state_intern(x);
            if (x->fail || one < 0) { x->fail = 0; return NULL; }
            w = cut_walk(x, one, c, follow);
            if (w == NULL) return NULL;
            if (deep) w = llm_gvocab_cut_put(v, h, x->key, x->n_key, follow, w);
            else x->n_top_walks++;
        }
        x->cut[c] = w;
        x->n_cut_new++;
    }
    return x->cut[c];
}

/*
 * The walk that decides stack node id: its cut's (CUT_DEPTH nodes; a small
 * count through the twin when the items can be counted, else the count's
 * own walk).  A walk that hands more than DEEP_DEP tokens to the stack
 * below (a rule that may end early inside a larger structure: an email's
 * dotted parts) is replaced by a deeper cut's, up to CUT_DEPTH_MAX nodes,
 * so that the state does not recheck thousands of tokens.  deep_only: *c
 * NULL when the stack ends within the cut (no shared walk; for
 * llm_gindex_walk_cuts).  0, or -1 on failure.
 */
static int
stack_cut(llm_gindex *x, int32_t id, int deep_only, const gcut **out, int32_t *lim, int32_t *small)
{
    const gcut *c = NULL;
    int depth;

    *out = NULL;
    for (depth = CUT_DEPTH; ; depth++) {
        int32_t cs = cut_of(x, id, lim, small, 1, depth);
        if (cs == -3) return -1;
        if (deep_only && depth == CUT_DEPTH && !cut_is_deep(x, cs)) return 0;
        c = cut_get(x, cs);
        if (c != NULL && *small && c->by_count == NULL) {
            /* items not countable on the twin: the count's own walk */
            cs = cut_of(x, id, lim, small, 0, depth);
            if (cs == -3) return -1;
            c = cut_get(x, cs);
        }
        if (c == NULL) return -1;
        if (c->n_dep <= DEEP_DEP || depth == CUT_DEPTH_MAX || !cut_is_deep(x, cs)) break;
    }
    *out = c;
    return 0;
}

/* Listed tokens (trie order) checked from state s; common prefixes of
 * consecutive tokens are walked once. */
static int
mask_listed(llm_gindex *x, int32_t s, const int32_t *ids, size_t n, uint64_t *m, int *any)
{
    const llm_gvocab *v = x->v;
    int32_t *walk = x->walk;
    const char *prev = NULL;
    size_t k, valid = 0;

    walk[0] = s;
    for (k = 0; k < n; k++) {
        int32_t id = ids[k];
        const char *tb = v->arena + v->off[id];
        size_t len = (size_t) v->len[id], d = 0;
        if ((m[id >> 6] >> (id & 63)) & 1) continue;
        if (prev) while (d < valid && d < len && prev[d] == tb[d]) d++;
        /* walk[0..d] hold the states after tb's first d bytes */
        while (d < len && walk[d] >= 0) {
            int32_t t = trans(x, walk[d], (unsigned char) tb[d]);
            if (t == -3) return -3;
            walk[++d] = t;
        }
        prev = tb;
        valid = d;
        if (d == len && walk[d] >= 0) { m[id >> 6] |= 1ull << (id & 63); *any = 1; }
    }
    return 0;
}

/* Token id is to be checked from the state (list of the current mask). */
static int
chk_push(llm_gindex *x, int32_t id)
{
    return list_push(&x->chk, &x->n_chk, &x->cap_chk, id);
}

/* The mask of state s: the union of its cut stacks' walks. */
static int
compute_mask(llm_gindex *x, int32_t s, uint64_t *m)
{
    const llm_gvocab *v = x->v;
    size_t j, k, n = x->st[s].n;
    int any = 0;

    if (x->cut_bytes > CUT_BUDGET) drop_cuts(x);
    memset(m, 0, x->words * sizeof(uint64_t));
    x->n_chk = 0;
    for (k = 0; k < n; k++) {
        int32_t id = x->pool[x->st[s].off + k], lim, small;   /* pool may move */
        const gcut *c;
        if (id == 0) continue;
        if (stack_cut(x, id, 0, &c, &lim, &small) < 0) return -3;
        if (small) {
            const uint64_t *b = c->by_count + (size_t) (small - 1) * x->words;
            for (j = 0; j < x->words; j++) m[j] |= b[j];
        } else if (c->acc_bits) {
            for (j = 0; j < x->words; j++) m[j] |= c->acc_bits[j];
            /* the twin's verdict holds up to lim bytes: recheck longer ones
             * (clearing is safe: whatever another stack allows, the check
             * from the state finds again) */
            for (j = 0; lim && j < v->n_long; j++) {
                int32_t t = v->long_tok[j];
                if (v->len[t] > lim && ((c->acc_bits[t >> 6] >> (t & 63)) & 1)) {
                    m[t >> 6] &= ~(1ull << (t & 63));
                    if (chk_push(x, t) < 0) return -3;
                }
            }
        } else {
            for (j = 0; j < c->n_acc; j++) {
                int32_t t = c->acc[j];
                if (lim && v->len[t] > lim) { if (chk_push(x, t) < 0) return -3; }
                else m[t >> 6] |= 1ull << (t & 63);
            }
        }
        if (c->n_dep && mask_listed(x, s, c->dep, c->n_dep, m, &any) < 0) return -3;
    }
    if (x->n_chk && mask_listed(x, s, x->chk, x->n_chk, m, &any) < 0) return -3;
    if (mask_outside_trie(x, s, m, &any) < 0) return -3;
    for (j = 0; !any && j < x->words; j++) any = m[j] != 0;
    return any ? 0 : -1;
}

long
llm_gindex_walk_cuts(llm_gindex *x, size_t max_states)
{
    size_t s;
    long rc = 0;

    pthread_mutex_lock(&x->mu);
    for (s = 0; s < x->n_st && s < max_states; s++) {
        uint8_t live[32];
        size_t k;
        unsigned b;
        long new0 = x->n_cut_new;
        int deep = 0;
        memcpy(live, x->st[s].live, 32);
        for (k = 0; k < x->st[s].n; k++) {
            int32_t id = x->pool[x->st[s].off + k], lim, small;   /* pool may move */
            const gcut *c;
            if (id <= BOUNDARY) continue;
            if (stack_cut(x, id, 1, &c, &lim, &small) < 0) { rc = -1; goto out; }
            deep |= c != NULL;
        }
        /* the next states, breadth first; not past a state whose cuts
         * were all met before (inside a block met in another context, or
         * at another count of a repetition): what follows them was
         * explored from there */
        if (deep && x->n_cut_new == new0) continue;
        for (b = 0; b < 256 && x->n_st < max_states; b++)
            if (llm_gset_has(live, b) && trans(x, (int32_t) s, b) == -3) { rc = -1; goto out; }
    }
    rc = (long) s;
out:
    pthread_mutex_unlock(&x->mu);
    return rc;
}

/* ---- matcher ---- */

llm_gmatcher *
llm_gmatcher_create(llm_gindex *x)
{
    llm_gmatcher *m = calloc(1, sizeof(*m));
    if (m == NULL) return NULL;
    m->x = x;
    m->state = x->init;
    return m;
}

llm_gmatcher *
llm_gmatcher_clone(const llm_gmatcher *m)
{
    llm_gmatcher *c = malloc(sizeof(*c));
    if (c != NULL) *c = *m;
    return c;
}

void
llm_gmatcher_free(llm_gmatcher *m)
{
    free(m);
}

int
llm_gmatcher_mask(llm_gmatcher *m, uint64_t *bits)
{
    llm_gindex *x = m->x;
    int rc = 0;
    size_t bytes = x->words * sizeof(uint64_t);
    uint64_t *mask;

    if (m->done) {
        memset(bits, 0, bytes);
        return -1;
    }
    pthread_mutex_lock(&x->mu);
    mask = x->st[m->state].mask;
    if (mask == NULL) {
        rc = compute_mask(x, m->state, bits);
        x->n_computed++;
        if (rc == 0) {
            if (x->mask_bytes + bytes > MASK_BUDGET) {
                size_t i;
                for (i = 0; i < x->n_st; i++) { free(x->st[i].mask); x->st[i].mask = NULL; }
                x->mask_bytes = 0;
            }
            mask = malloc(bytes);
            if (mask != NULL) {
                memcpy(mask, bits, bytes);
                x->st[m->state].mask = mask;
                x->mask_bytes += bytes;
            }
        }
    } else {
        memcpy(bits, mask, bytes);
    }
    pthread_mutex_unlock(&x->mu);
    return rc == 0 ? 0 : -1;
}

int
llm_gmatcher_mask_reference(llm_gmatcher *m, uint64_t *bits)
{
    int rc;
    if (m->done) {
        memset(bits, 0, m->x->words * sizeof(uint64_t));
        return -1;
    }
    pthread_mutex_lock(&m->x->mu);
    rc = compute_mask_walk(m->x, m->state, bits);
    pthread_mutex_unlock(&m->x->mu);
    return rc == 0 ? 0 : -1;
}

static int
is_stop(const llm_gindex *x, int32_t id)
{
    size_t i;
    for (i = 0; i < x->n_stop; i++) if (x->stop[i] == id) return 1;
    return 0;
}

static int
is_extra(const llm_gindex *x, int32_t id)
{
    size_t i;
    for (i = 0; i < x->n_extra; i++) if (x->extra[i] == id) return 1;
    return 0;
}

/* State after token id from the matcher's state: -1 not allowed, -4 a stop id
 * allowed (the generation ends). */
static int32_t
token_next(llm_gmatcher *m, int32_t id)
{
    llm_gindex *x = m->x;
    const llm_gvocab *v = x->v;
    int32_t len, t;

    if (m->done || id < 0 || (size_t) id >= v->n_vocab) return -1;
    if (is_stop(x, id)) return x->st[m->state].accepting ? -4 : -1;
    len = v->len[id];
    if (len < -1 && is_extra(x, id)) len = -2 - len;
    if (len <= 0) return -1;
    pthread_mutex_lock(&x->mu);
    t = walk_bytes(x, m->state, v->arena + v->off[id], (size_t) len);
    pthread_mutex_unlock(&x->mu);
    return t < 0 ? -1 : t;
}

int
llm_gmatcher_allows(llm_gmatcher *m, int32_t id)
{
    return token_next(m, id) != -1;
}

int
llm_gmatcher_accept(llm_gmatcher *m, int32_t id)
{
    int32_t t = token_next(m, id);
    if (t == -1) return -1;
    if (t == -4) m->done = 1;
    else m->state = t;
    return 0;
}

int
llm_gmatcher_accept_bytes(llm_gmatcher *m, const char *s, size_t n)
{
    int32_t t;
    if (m->done) return n ? -1 : 0;
    pthread_mutex_lock(&m->x->mu);
    t = walk_bytes(m->x, m->state, s, n);
    pthread_mutex_unlock(&m->x->mu);
    if (t < 0) return -1;
    m->state = t;
    return 0;
}

int
llm_gmatcher_done(const llm_gmatcher *m)
{
    return m->done;
}

int
llm_gmatcher_complete(const llm_gmatcher *m)
{
    return m->x->st[m->state].accepting;
}

size_t
llm_gmatcher_forced(llm_gmatcher *m, char *out, size_t cap)
{
    llm_gindex *x = m->x;
    int32_t s = m->state;
    size_t n = 0;

    if (m->done) return 0;
    pthread_mutex_lock(&x->mu);
    while (n < cap && !x->st[s].accepting) {
        int f = x->st[s].forced;
        if (f == -2) {
            unsigned b;
            int live = 0, only = -1;
            for (b = 0; b < 256 && live < 2; b++) {
                int32_t t = trans(x, s, b);
                if (t == -3) { live = 2; break; }
                if (t >= 0) { live++; only = (int) b; }
            }
            f = live == 1 ? only : -1;
            x->st[s].forced = (int16_t) f;
        }
        if (f < 0) break;
        out[n++] = (char) f;
        s = trans(x, s, (unsigned) f);
        if (s < 0) break;
    }
    pthread_mutex_unlock(&x->mu);
    return n;
}

int
llm_grammar_accepts(llm_gindex *x, const char *s, size_t n)
{
    int32_t t;
    pthread_mutex_lock(&x->mu);
    t = walk_bytes(x, x->init, s, n);
    pthread_mutex_unlock(&x->mu);
    return t >= 0 && x->st[t].accepting;
}
