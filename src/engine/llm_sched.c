/*
 * The scheduler: slots, admission, prefix reuse (through the runtime's
 * prefix cache), prefill budget, batch building and retirement (llm_sched.h says who calls what, on which thread).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/llm_reasoning_budget.h"
#include "engine/llm_sched.h"
#include "engine/llm_spec.h"

/* Weight of the newest step in the moving averages of step times. */
#define LLM_SCHED_EMA_NEW       0.2

/*
 * Speculation's costs are measured against a decode step without proposals
 * or prompt tokens (decode_ms).  While every step speculates (a draft model
 * proposes whenever lookup has nothing) none would be timed, and the policy
 * would weigh proposals with its priors forever: a step that would have no
 * prompt tokens proposes nothing when decode_ms was never timed, or after
 * this many speculating steps since it last was (at most one step in 64
 * without proposals: under 2% of what speculation gains).
 */
#define LLM_SCHED_RETIME        64

/* Tokens of recent requests the worker's suffix store keeps for proposals. */
#define LLM_SCHED_RECENT_TOKENS 32768

/*
 * Writing blocks to the disk tier: an idle step writes for this long, a
 * step with tokens for this share of a decode step after its forward (at
 * least one block each).
 */
#define LLM_SCHED_DISK_IDLE_MS  50.0
#define LLM_SCHED_DISK_BUSY     0.1

/* Most forced tokens (a grammar's, a spent thinking budget's close marker)
 * after a sampled one, appended in one step. */
#define LLM_SCHED_FORCED_MAX    16

/* A step's output per sequence: kept proposals and the sampled token, then forced ones. */
#define LLM_SEQ_OUT_MAX         (LLM_SPEC_K_MAX + 1 + LLM_SCHED_FORCED_MAX)

struct llm_seq {
    llm_seq               *prev, *next_q;   /* wait queue links */
    llm_sched             *sched;
    const llm_seq_events  *ev;
    void                  *owner;           /* NULL once released */
    size_t                 index;           /* choice or input index */

    int32_t               *prompt;          /* room for n_prompt + max_gen tokens */
    size_t                 n_prompt;
    size_t                 n_input;         /* tokens read before sampling: the prompt,
                                               and the output too after a preemption */
    size_t                 n_done;          /* of those, in the KV cache */
    size_t                 n_cached;        /* prompt tokens reused at first admission */
    size_t                 n_restored;      /* read from the disk tier by the step in flight */
    unsigned char          disk_probe;      /* the next step reads what it can of the prompt
                                               from the disk tier: 1, 2 at first admission */
    unsigned char          restore_counts;  /* n_restored is part of n_cached */
    uint64_t               admitted;        /* admission order; 0: not yet */
    size_t                 retain;          /* prompt tokens to keep cached (breakpoint) */
    double                 retain_s;        /* for so long */
    unsigned char          retained;        /* pinned already */
    size_t                 snap_at;         /* recurrent state snapshotted after so many prompt
                                               tokens (its system prompt), 0: none */

    int32_t               *gen;             /* generated tokens */
    size_t                 n_gen;
    size_t                 max_gen;

    llm_sampler           *sampler;         /* NULL: an embedding sequence */
    llm_constraint        *constraint;      /* the output's grammar, or NULL */
    llm_reasoning_budget  *budget;          /* the thinking budget, or NULL */
    size_t                 n_unfed;         /* generated tokens not yet in the KV cache */
    int                    top_logprobs;    /* < 0: no logprobs */
    float                 *embed_sum;       /* embeddings: token-weighted sum */

    /* plain bytes, not bitfields: the step thread reads some of them */
    unsigned char          cancelled;
    unsigned char          finished;
    unsigned char          running;         /* holds a slot */
    unsigned char          queued;          /* in the wait queue */
    unsigned char          placed;          /* holds an admission place */
    unsigned char          paused;          /* left out of steps, keeps its KV */

    int                    slot;

    /*
     * The step's output, written by step_run: tokens sampled at each
     * position the step verified (the proposals it kept, then the token
     * sampled after them), then forced tokens; -1 ends it with a grammar
     * error.  n_accepted proposals stay in the KV cache.
     */
    int32_t                out[LLM_SEQ_OUT_MAX];
    unsigned char          out_forced[LLM_SEQ_OUT_MAX];
    int                    n_out;
    int                    n_accepted;
    llm_token_logprobs    *lps;             /* [LLM_SPEC_K_MAX + 1] with logprobs */

    llm_spec_state         spec;            /* speculative decoding */
    int                    draft_k;         /* tokens the draft model is to propose this step */
    int                    drafted;         /* and has proposed */
    /*
     * A sampled draft (llm_seq_draft_pick): the first n_draft_q proposals
     * were drawn from the distributions in draft_q (LLM_SPEC_DRAFT_K_MAX rows of
     * n_vocab, allocated on first use), with the sampler's penalties and a
     * copy of the grammar advanced over them tentatively.
     */
    float                 *draft_q;
    int                    n_draft_q;
    llm_sampler_mark       draft_mark;
    llm_constraint        *draft_c;
};

struct llm_sched {
    const llm_model       *model;
    llm_runtime           *rt;
    llm_sched_config       cfg;
    size_t                 n_slots;
    size_t                 n_ctx;
    size_t                 hidden;
    int                    in_flight;

    llm_seq               *wait_head, *wait_tail;
    size_t                 n_waiting;
    llm_admission          admission;       /* places of parallel + queue */

    llm_seq              **slot_seq;        /* running sequence, or NULL */
    int32_t              **slot_tokens;     /* tokens whose KV the slot holds */
    size_t                *slot_len;
    size_t                 rr;              /* round-robin start for prefill */

    /* the step in flight */
    llm_batch_item        *items;
    llm_seq              **item_seq;
    int                    n_items;
    int                    n_decode;        /* items that are decode tokens */
    int                    n_prefill;       /* prompt tokens in the step */
    int                    n_draft;         /* proposed tokens in the step */
    llm_suffix            *recent;          /* recent requests' tokens, for proposals */
    llm_runtime           *draft_rt;        /* the draft model's runtime, or NULL */
    double                 draft_cost;      /* a draft token in target decode steps,
                                               until draft_pass_ms is measured */
    double                 draft_ms;        /* the draft's part of the step (thread) */
    int                    draft_passes;    /* and its forward passes */
    double                 draft_pass_ms;   /* moving average of a draft pass */
    llm_batch_item        *draft_items;     /* a draft forward's items ... */
    int                   *draft_item;      /* ... and the step item of each */
    float                 *dist;            /* the model's distribution at a
                                               sampled draft's proposal */
    int                    rc;
    int                    files_changed;   /* set by the step thread */
    int                    disk_on;         /* the runtime has a disk tier */
    int                    disk_only;       /* the step in flight only writes the disk tier */
    char                   note[512];       /* the disk tier's news for the log, or "" */
    uint64_t               disk_tokens;     /* prompt tokens read from the disk tier */
    char                   err[512];
    double                 step_ms;         /* measured in the thread */

    /* moving averages for sizing prefill chunks */
    double                 decode_ms;       /* a decode-only step */
    int                    since_plain;     /* speculating steps since one was timed */
    double                 prefill_token_ms;
    double                 flop_ms;         /* ms per flop of prompt work */
    llm_token_cost         cost;            /* the model's flops per token */
    double                 prefill_work;    /* flops of the step's prompt and proposed tokens */
    llm_seq              **prefilling;      /* step_prepare's scratch: prompts by tokens left */

    size_t                 live;            /* sequences allocated */
    uint64_t               requests, cancelled, rejected, prompt_tokens;
    uint64_t               cached_tokens, generated_tokens, steps;
    uint64_t               admissions, preempted;
    uint64_t               seq_steps;       /* sequences' sampling steps */
    uint64_t               spec_steps, spec_proposed, spec_accepted;
    uint64_t               draft_proposed, draft_accepted;
};


static void
llm_sched_wake(llm_sched *s)
{
    if (s->cfg.wake) {
        s->cfg.wake(s->cfg.wake_data);
    }
}


/*
 * The slot keeps the first len positions of its KV cache, and the draft
 * model's slot no more: rollback of the tokens of rejected proposals.  The
 * one place that shortens a running slot.
 */
static void
llm_sched_slot_truncate(llm_sched *s, int slot, size_t len)
{
    llm_seq_truncate(s->rt, slot, (int) len);
    if (s->draft_rt) {
        llm_seq_truncate(s->draft_rt, slot, (int) len);
    }
    s->slot_len[slot] = len;
}


/* The model's runtime options for cfg (llm_sched_create's). */
static void
llm_sched_runtime_opts(const llm_sched_config *cfg, llm_runtime_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->n_threads = cfg->threads;
    o->n_ctx = cfg->n_ctx;
    o->n_seq_max = cfg->parallel;
    o->kv = cfg->kv;
    o->kv_memory = cfg->kv_memory;
}


size_t
llm_sched_memory(const llm_model *m, const llm_sched_config *cfg,
    size_t *kv_bytes)
{
    char              err[256];
    size_t            bytes, kv, n_slots, n_ctx;
    size_t            nv = (size_t) llm_model_get_info(m)->n_vocab;
    llm_runtime_opts  o, d;

    llm_sched_runtime_opts(cfg, &o);
    bytes = llm_runtime_memory(m, &o, &kv);
    *kv_bytes = kv;

    /* a draft whose options fail is refused when the scheduler is made */
    if (cfg->draft
        && llm_sched_draft_opts(m, cfg->draft, &o, &d, err, sizeof(err)) == 0)
    {
        bytes += llm_runtime_memory(cfg->draft, &d, &kv);
        *kv_bytes += kv;
    }

    if (cfg->kv_disk && !cfg->draft) {
        bytes += llm_runtime_kv_disk_memory(m, &o);
    }

    n_slots = (size_t) cfg->parallel;
    n_ctx = (size_t) cfg->n_ctx;
    bytes += n_slots * n_ctx * sizeof(int32_t)
             + llm_suffix_memory(LLM_SCHED_RECENT_TOKENS);
    if (cfg->draft) {
        /* llm_sched.dist and each sequence's draft_q */
        bytes += nv * sizeof(float) + n_slots * LLM_SPEC_DRAFT_K_MAX * nv * sizeof(float);
    }
    return bytes;
}


/* The model's slot and the draft's: their blocks go to the prefix caches. */
static void
llm_sched_slot_close(llm_sched *s, int slot)
{
    llm_seq_close(s->rt, slot);
    if (s->draft_rt) {
        llm_seq_close(s->draft_rt, slot);
    }
}


/* ---- creation ---- */

int
llm_sched_draft_opts(const llm_model *m, const llm_model *draft,
    const llm_runtime_opts *target, llm_runtime_opts *out, char *err,
    size_t errlen)
{
    llm_runtime_opts  t = *target;
    size_t            blocks;

    if (llm_runtime_resolve(m, &t, err, errlen) != 0) {
        return -1;
    }

    /*
     * The draft holds at most the positions its slot holds in the model:
     * as many blocks as the model's KV memory has, and one more per slot
     * for the proposal it feeds beyond them.
     */
    blocks = t.kv_memory > 0
             ? t.kv_memory / llm_runtime_kv_block_bytes(m, t.kv)
             : (size_t) t.n_seq_max
               * (((size_t) t.n_ctx + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK);

    *out = t;
    out->kv_memory = (blocks + (size_t) t.n_seq_max)
                     * llm_runtime_kv_block_bytes(draft, t.kv);

    return llm_runtime_resolve(draft, out, err, errlen);
}


llm_sched *
llm_sched_create(const llm_model *m, const llm_sched_config *cfg, char *err,
    size_t errlen)
{
    size_t             i;
    llm_sched         *s;
    llm_runtime_opts   opts, dopts;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    s->model = m;
    s->cfg = *cfg;
    s->n_slots = (size_t) cfg->parallel;
    s->hidden = (size_t) llm_model_get_info(m)->hidden;
    llm_token_cost_of(llm_model_get_info(m), &s->cost);
    if (s->cfg.prefill_chunk == 0) {
        s->cfg.prefill_chunk = LLM_PREFILL_CHUNK;
    }
    llm_admission_init(&s->admission, s->n_slots, (size_t) cfg->queue);

    llm_sched_runtime_opts(cfg, &opts);

    s->rt = llm_runtime_create_opts(m, &opts, err, errlen);
    if (s->rt == NULL) {
        free(s);
        return NULL;
    }
    s->n_ctx = (size_t) llm_runtime_n_ctx(s->rt);

    /*
     * The disk tier: not with a draft model (its runtime would have to read
     * the same prefix).  A directory that cannot be used is news for the
     * log, not a failure: the cache in memory works on.
     */
    if (cfg->kv_disk && !cfg->draft) {
        char  why[sizeof(s->note) - 64];

        s->disk_on = llm_runtime_kv_disk_open(s->rt, cfg->kv_disk,
                                              cfg->kv_disk_max, why,
                                              sizeof(why)) == 0;
        if (!s->disk_on) {
            snprintf(s->note, sizeof(s->note), "the KV disk tier is off: %s",
                     why);
        }
    } else if (cfg->kv_disk) {
        snprintf(s->note, sizeof(s->note), "the KV disk tier is off: the "
                 "draft model's runtime would have to read the same prefix");
    }

    if (cfg->draft) {
        if (llm_sched_draft_opts(m, cfg->draft, &opts, &dopts, err, errlen) != 0) {
            llm_runtime_free(s->rt);
            free(s);
            return NULL;
        }
        /* the draft's passes run on the model's threads, before its forward */
        dopts.threads_of = s->rt;
        s->draft_rt = llm_runtime_create_opts(cfg->draft, &dopts, err, errlen);
        if (s->draft_rt == NULL) {
            llm_runtime_free(s->rt);
            free(s);
            return NULL;
        }
        /* decode reads the weights: a draft token costs their ratio of a step */
        s->draft_cost = (double) llm_model_get_info(cfg->draft)->weight_bytes
                        / (double) llm_model_get_info(m)->weight_bytes;
        s->dist = malloc((size_t) llm_model_get_info(m)->n_vocab * sizeof(float));
    }

    s->recent = llm_suffix_create(LLM_SCHED_RECENT_TOKENS);
    s->draft_items = calloc(s->n_slots, sizeof(*s->draft_items));
    s->draft_item = calloc(s->n_slots, sizeof(*s->draft_item));
    s->slot_seq = calloc(s->n_slots, sizeof(*s->slot_seq));
    s->slot_tokens = calloc(s->n_slots, sizeof(*s->slot_tokens));
    s->slot_len = calloc(s->n_slots, sizeof(*s->slot_len));
    s->items = calloc(s->n_slots, sizeof(*s->items));
    s->item_seq = calloc(s->n_slots, sizeof(*s->item_seq));
    s->prefilling = calloc(s->n_slots, sizeof(*s->prefilling));
    if (s->slot_seq == NULL || s->slot_tokens == NULL || s->slot_len == NULL
        || s->items == NULL || s->item_seq == NULL || s->recent == NULL
        || s->prefilling == NULL || s->draft_items == NULL || s->draft_item == NULL
        || (cfg->draft && s->dist == NULL))
    {
        snprintf(err, errlen, "out of memory for %zu slots", s->n_slots);
        goto failed;
    }

    for (i = 0; i < s->n_slots; i++) {
        /* zeroed: committed now, as the configuration check counted it */
        s->slot_tokens[i] = calloc(s->n_ctx, sizeof(int32_t));
        if (s->slot_tokens[i] == NULL) {
            snprintf(err, errlen, "out of memory for slot %zu", i);
            goto failed;
        }
    }

    return s;

failed:

    llm_sched_free(s);
    return NULL;
}


static void llm_seq_free(llm_seq *seq);

void
llm_sched_free(llm_sched *s)
{
    size_t    i;
    llm_seq  *seq;

    if (s == NULL) {
        return;
    }

    while (s->wait_head) {
        seq = s->wait_head;
        s->wait_head = seq->next_q;
        llm_seq_free(seq);
    }

    for (i = 0; s->slot_seq && i < s->n_slots; i++) {
        if (s->slot_seq[i]) {
            llm_seq_free(s->slot_seq[i]);
        }
    }

    for (i = 0; s->slot_tokens && i < s->n_slots; i++) {
        free(s->slot_tokens[i]);
    }

    llm_runtime_free(s->rt);
    llm_runtime_free(s->draft_rt);
    llm_suffix_free(s->recent);
    free(s->draft_items);
    free(s->draft_item);
    free(s->dist);
    free(s->slot_seq);
    free(s->slot_tokens);
    free(s->slot_len);
    free(s->items);
    free(s->item_seq);
    free(s->prefilling);
    free(s);
}


const llm_model *
llm_sched_model(const llm_sched *s)
{
    return s->model;
}


size_t
llm_sched_n_ctx(const llm_sched *s)
{
    return s->n_ctx;
}


size_t
llm_sched_capacity(const llm_sched *s)
{
    return llm_admission_capacity(&s->admission);
}


int
llm_sched_take_note(llm_sched *s, char *buf, size_t len)
{
    if (s->note[0] == '\0') {
        return 0;
    }

    snprintf(buf, len, "%s", s->note);
    s->note[0] = '\0';

    return 1;
}


void
llm_sched_get_stats(const llm_sched *s, llm_sched_stats *st)
{
    size_t  i;

    memset(st, 0, sizeof(*st));

    for (i = 0; i < s->n_slots; i++) {
        if (s->slot_seq[i]) {
            st->running++;
            st->paused += s->slot_seq[i]->paused;
        }
    }

    st->waiting = s->n_waiting;
    st->live = s->live;
    st->requests = s->requests;
    st->cancelled = s->cancelled;
    st->rejected = s->rejected;
    st->prompt_tokens = s->prompt_tokens;
    st->cached_tokens = s->cached_tokens;
    st->generated_tokens = s->generated_tokens;
    st->steps = s->steps;
    st->preempted = s->preempted;
    st->decode_step_ms = s->decode_ms;
    st->prefill_token_ms = s->prefill_token_ms;
    st->prefill_gflops = s->flop_ms > 0 ? 1e-6 / s->flop_ms : 0;
    st->kv_cache_bytes = llm_runtime_kv_bytes(s->rt);
    st->kv_type = s->cfg.kv;
    llm_runtime_kv_stats(s->rt, &st->kv);
    st->state_bytes = llm_runtime_state_bytes(s->rt);
    llm_runtime_state_stats(s->rt, &st->state);
    st->kv_disk = s->disk_on;
    llm_runtime_kv_disk_stats(s->rt, &st->disk);
    st->disk_tokens = s->disk_tokens;
    st->step_items = (size_t) s->n_items;
    st->step_prefill_tokens = (size_t) s->n_prefill;
    st->seq_steps = s->seq_steps;
    st->spec_steps = s->spec_steps;
    st->spec_proposed = s->spec_proposed;
    st->spec_accepted = s->spec_accepted;
    st->draft_proposed = s->draft_proposed;
    st->draft_accepted = s->draft_accepted;
    st->draft_pass_ms = s->draft_pass_ms;
}


llm_admit
llm_sched_reserve(llm_sched *s, size_t min, size_t want, size_t *granted)
{
    llm_admit  rc;

    rc = llm_admission_reserve(&s->admission, min, want, granted);
    if (rc != LLM_ADMIT_OK) {
        s->rejected++;
    }

    return rc;
}


/* ---- sequences ---- */

llm_seq *
llm_seq_create(llm_sched *s, const int32_t *prompt, size_t n_prompt,
    size_t max_gen, const llm_sampler_params *sp, int top_logprobs,
    const llm_seq_events *ev, void *owner, size_t index)
{
    llm_seq  *seq;

    seq = calloc(1, sizeof(*seq));
    if (seq == NULL) {
        return NULL;
    }

    seq->sched = s;
    seq->ev = ev;
    seq->owner = owner;
    seq->index = index;
    seq->slot = -1;
    seq->max_gen = max_gen;
    seq->top_logprobs = top_logprobs;
    llm_spec_init(&seq->spec, s->cfg.speculation);
    s->live++;

    seq->prompt = malloc((n_prompt + max_gen + 1) * sizeof(int32_t));
    seq->gen = malloc((max_gen ? max_gen : 1) * sizeof(int32_t));
    if (seq->prompt == NULL || seq->gen == NULL) {
        goto failed;
    }

    memcpy(seq->prompt, prompt, n_prompt * sizeof(int32_t));
    seq->n_prompt = n_prompt;
    seq->n_input = n_prompt;

    if (sp == NULL) {
        seq->embed_sum = calloc(s->hidden, sizeof(float));
        if (seq->embed_sum == NULL) {
            goto failed;
        }
        return seq;
    }

    seq->sampler = llm_sampler_create(sp, llm_model_get_info(s->model)->n_vocab);
    if (seq->sampler == NULL) {
        goto failed;
    }
    if (top_logprobs >= 0) {
        seq->lps = malloc((LLM_SPEC_K_MAX + 1) * sizeof(llm_token_logprobs));
        if (seq->lps == NULL) {
            goto failed;
        }
    }
    llm_sampler_accept_prompt(seq->sampler, prompt, (int) n_prompt);

    return seq;

failed:

    llm_seq_free(seq);
    return NULL;
}


/* The sequence has ended: its admission place is free for another. */
static void
llm_seq_end(llm_seq *seq)
{
    seq->finished = 1;

    if (seq->placed) {
        seq->placed = 0;
        llm_admission_release(&seq->sched->admission, 1);
    }
}


static void
llm_seq_free(llm_seq *seq)
{
    llm_seq_end(seq);

    if (seq->sampler) {
        llm_sampler_free(seq->sampler);
    }
    llm_constraint_free(seq->constraint);
    llm_reasoning_budget_free(seq->budget);
    free(seq->prompt);
    free(seq->gen);
    free(seq->embed_sum);
    free(seq->lps);
    free(seq->draft_q);
    seq->sched->live--;
    free(seq);
}


static void
llm_seq_unqueue(llm_seq *seq)
{
    llm_sched  *s = seq->sched;

    if (!seq->queued) {
        return;
    }

    if (seq->prev) {
        seq->prev->next_q = seq->next_q;
    } else {
        s->wait_head = seq->next_q;
    }
    if (seq->next_q) {
        seq->next_q->prev = seq->prev;
    } else {
        s->wait_tail = seq->prev;
    }

    seq->prev = seq->next_q = NULL;
    seq->queued = 0;
    s->n_waiting--;
}


void
llm_sched_submit(llm_sched *s, llm_seq *seq)
{
    seq->placed = 1;

    seq->prev = s->wait_tail;
    seq->next_q = NULL;
    if (s->wait_tail) {
        s->wait_tail->next_q = seq;
    } else {
        s->wait_head = seq;
    }
    s->wait_tail = seq;
    seq->queued = 1;
    s->n_waiting++;
    s->requests++;

    llm_sched_wake(s);
}


/* Never while the forward runs: the slot's blocks go back to the pool's cache. */
static void
llm_slot_release(llm_sched *s, llm_seq *seq)
{
    size_t  from;

    if (seq->running && seq->sampler && seq->n_gen > 0) {
        /* what the request added to the cache, for later proposals */
        from = seq->n_cached < s->slot_len[seq->slot] ? seq->n_cached : 0;
        llm_suffix_add(s->recent, s->slot_tokens[seq->slot] + from,
                       s->slot_len[seq->slot] - from);
    }

    if (seq->running) {
        s->slot_seq[seq->slot] = NULL;
        llm_sched_slot_close(s, seq->slot);
        seq->running = 0;
    }
}


void
llm_seq_release(llm_seq *seq)
{
    llm_sched  *s = seq->sched;

    seq->owner = NULL;

    if (!seq->finished && (seq->queued || seq->running)) {
        seq->cancelled = 1;
        s->cancelled++;
    }

    llm_seq_end(seq);
    llm_seq_unqueue(seq);

    if (seq->running && s->in_flight) {
        return;    /* the step in flight uses it: retired when it completes */
    }

    llm_slot_release(s, seq);
    llm_seq_free(seq);

    llm_sched_wake(s);
}


void
llm_seq_finish(llm_seq *seq)
{
    /* the slot is given back when the scheduler next retires sequences */
    llm_seq_end(seq);
}


void
llm_seq_pause(llm_seq *seq, int paused)
{
    if (seq->paused == (paused != 0)) {
        return;
    }

    seq->paused = paused != 0;

    if (!paused) {
        llm_sched_wake(seq->sched);
    }
}


void
llm_seq_set_retention(llm_seq *seq, size_t n_tokens, double seconds)
{
    seq->retain = n_tokens < seq->n_prompt ? n_tokens : seq->n_prompt;
    seq->retain_s = seconds;
}


void
llm_seq_set_snapshot_at(llm_seq *seq, size_t n_tokens)
{
    seq->snap_at = n_tokens < seq->n_prompt ? n_tokens : 0;
}


/*
 * Where this sequence's prompt chunk must end so that the recurrent state
 * is there to snapshot: its cache breakpoint and its snapshot point, the
 * nearer one ahead; 0 when neither is ahead.
 */
static size_t
llm_seq_next_boundary(const llm_seq *seq)
{
    size_t  b = 0;

    if (seq->retain > seq->n_done) {
        b = seq->retain;
    }
    if (seq->snap_at > seq->n_done && (b == 0 || seq->snap_at < b)) {
        b = seq->snap_at;
    }
    return b;
}


size_t
llm_seq_n_cache_written(const llm_seq *seq)
{
    return seq->retain > seq->n_cached ? seq->retain - seq->n_cached : 0;
}


static double
llm_sched_now(const llm_sched *s)
{
    struct timespec  ts;

    if (s->cfg.now) {
        return s->cfg.now();
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}


size_t
llm_seq_index(const llm_seq *seq)
{
    return seq->index;
}


size_t
llm_seq_n_prompt(const llm_seq *seq)
{
    return seq->n_prompt;
}


size_t
llm_seq_n_cached(const llm_seq *seq)
{
    return seq->n_cached;
}


const int32_t *
llm_seq_generated(const llm_seq *seq, size_t *n)
{
    *n = seq->n_gen;
    return seq->gen;
}


const float *
llm_seq_embedding(const llm_seq *seq)
{
    return seq->sampler == NULL && seq->finished && seq->n_prompt
           && seq->n_done == seq->n_prompt ? seq->embed_sum : NULL;
}


/* ---- the step ---- */

int
llm_sched_in_flight(const llm_sched *s)
{
    return s->in_flight;
}


/* Blocks the rest of a sequence's input and its next token take (a copy of a
 * shared partial block it continues included): what its slot does not hold. */
static size_t
llm_seq_blocks_needed(const llm_sched *s, const llm_seq *seq, int slot)
{
    return (size_t) llm_seq_blocks_to_grow(s->rt, slot,
                        (int) (seq->n_input + 1) - llm_seq_len(s->rt, slot));
}


/*
 * KV blocks the running sequences will still take: the rest of their input
 * for those reading it, the next step's tokens for those decoding; *n_run:
 * the sequences running (one that waits for memory will get it).
 */
static size_t
llm_sched_blocks_promised(const llm_sched *s, size_t *n_run)
{
    size_t    i, n = 0;
    llm_seq  *seq;

    *n_run = 0;
    for (i = 0; i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        if (seq == NULL) {
            continue;
        }
        (*n_run)++;
        if (seq->n_done < seq->n_input) {
            n += llm_seq_blocks_needed(s, seq, (int) i);
        } else if (!seq->paused) {
            n += (size_t) llm_seq_blocks_to_grow(s->rt, (int) i,
                                     seq->n_unfed ? (int) seq->n_unfed : 1);
        }
    }

    return n;
}


/* Free and cached (evictable) blocks beyond those promised; < 0: short. */
static long
llm_sched_blocks_spare(const llm_sched *s, size_t *n_run)
{
    size_t        promised = llm_sched_blocks_promised(s, n_run);
    llm_kv_stats  kv;

    llm_runtime_kv_stats(s->rt, &kv);
    return (long) (kv.free + kv.cached - kv.pinned) - (long) promised;
}


static void
llm_sched_queue_front(llm_sched *s, llm_seq *seq)
{
    seq->prev = NULL;
    seq->next_q = s->wait_head;
    if (s->wait_head) {
        s->wait_head->prev = seq;
    } else {
        s->wait_tail = seq;
    }
    s->wait_head = seq;
    seq->queued = 1;
    s->n_waiting++;
}


/*
 * A running sequence gives its slot and KV blocks back (they stay in the
 * prefix cache while the pool can keep them) and waits at the front of the
 * queue.  Readmitted, it reads its prompt and the output so far again,
 * taking every block of it still cached, and samples on from there: the
 * sampler and grammar kept their state, so the output is the same as if
 * it had never stopped.
 */
static void
llm_sched_preempt(llm_sched *s, llm_seq *seq)
{
    if (seq->sampler) {
        memcpy(seq->prompt + seq->n_prompt, seq->gen,
               seq->n_gen * sizeof(int32_t));
        seq->n_input = seq->n_prompt + seq->n_gen;
    } else {
        /* an embedding is read again from its first token */
        memset(seq->embed_sum, 0, s->hidden * sizeof(float));
    }
    seq->n_unfed = 0;
    seq->n_done = 0;

    s->slot_seq[seq->slot] = NULL;
    llm_sched_slot_close(s, seq->slot);
    seq->running = 0;
    seq->slot = -1;

    llm_sched_queue_front(s, seq);
    s->preempted++;
}


/*
 * Before a step: when the running sequences' next tokens need more blocks
 * than the pool has free or cached, the newest sequences are preempted
 * until they fit, so a growing sequence never fails for memory while
 * another holds some.  A lone sequence is never preempted (its context is
 * within the pool, checked at load).
 */
static void
llm_sched_make_room(llm_sched *s)
{
    size_t    i, n_run;
    llm_seq  *seq, *victim;

    while (llm_sched_blocks_spare(s, &n_run) < 0 && n_run > 1) {
        victim = NULL;
        for (i = 0; i < s->n_slots; i++) {
            seq = s->slot_seq[i];
            if (seq && (victim == NULL || seq->admitted > victim->admitted)) {
                victim = seq;
            }
        }
        llm_sched_preempt(s, victim);
    }
}


/*
 * Waiting sequences into free slots, in order, each reusing every block of
 * its prompt the prefix cache holds.  One whose prompt does not fit the KV
 * memory left waits while others run (they give memory back as they end).
 */
static void
llm_sched_admit(llm_sched *s)
{
    int            slot, d_slot;
    size_t         limit, reused, n_run;
    long           spare;
    llm_seq       *seq;

    while (s->wait_head) {
        seq = s->wait_head;

        slot = llm_seq_open(s->rt);
        if (slot < 0) {
            return;    /* every slot is busy */
        }

        /* at least one input token is computed, for its logits */
        limit = seq->sampler == NULL ? 0 : seq->n_input - 1;

        /* the draft's slot is open exactly when the model's is: the same id */
        if (s->draft_rt && (d_slot = llm_seq_open(s->draft_rt)) != slot) {
            if (d_slot >= 0) {
                llm_seq_close(s->draft_rt, d_slot);
            }
            llm_seq_close(s->rt, slot);
            return;
        }

        reused = (size_t) llm_seq_reuse(s->rt, slot, seq->prompt, (int) limit);

        /* blocks the rest of the input and the next token need, beyond
         * those promised to the sequences already running */
        spare = llm_sched_blocks_spare(s, &n_run);
        if ((long) llm_seq_blocks_needed(s, seq, slot) > spare && n_run > 0) {
            llm_sched_slot_close(s, slot);
            return;
        }

        if (s->draft_rt) {
            /* the draft reads from where its own prefix cache ends */
            llm_seq_reuse(s->draft_rt, slot, seq->prompt, (int) reused);
        }

        llm_seq_unqueue(seq);

        s->slot_seq[slot] = seq;
        memcpy(s->slot_tokens[slot], seq->prompt, reused * sizeof(int32_t));
        s->slot_len[slot] = reused;

        seq->slot = slot;
        seq->running = 1;
        seq->n_done = reused;
        /* blocks past the cached prefix may be on disk: the step reads them */
        seq->disk_probe = 0;
        if (s->disk_on && seq->sampler && reused < limit) {
            seq->disk_probe = seq->admitted == 0 ? 2 : 1;
        }

        if (seq->admitted == 0) {
            seq->n_cached = reused;
            s->prompt_tokens += seq->n_prompt;
            s->cached_tokens += reused;
        }
        seq->admitted = ++s->admissions;
    }
}


void
llm_token_cost_of(const llm_model_info *in, llm_token_cost *c)
{
    double  h = in->hidden, q = (double) in->n_heads * in->head_dim,
            kv = (double) in->n_kv_heads * in->head_dim,
            mlp = 3.0 * h * in->intermediate;

    if (in->n_experts > 0) {
        mlp *= in->n_experts_per_token > 0 ? in->n_experts_per_token : 1;
    }

    /* q, o, k, v projections and the MLP; two flops per multiply-add */
    c->weights = 2.0 * in->n_layers * (2 * h * q + 2 * h * kv + mlp);
    /* a score and a weighted value row per key, per head */
    c->per_key = 4.0 * in->n_layers * q;
}


double
llm_prefill_cost(const llm_token_cost *c, size_t pos, size_t n)
{
    double  dn = (double) n;

    return dn * c->weights + c->per_key * (dn * (double) pos
                                           + dn * (dn + 1) / 2);
}


size_t
llm_prefill_fit(const llm_token_cost *c, size_t pos, size_t want,
    double budget)
{
    size_t  lo = 0, hi = want, mid;

    /* the cost grows with n: the largest n within budget */
    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;
        if (llm_prefill_cost(c, pos, mid) <= budget) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }

    return lo;
}


double
llm_prefill_budget(const llm_token_cost *c, size_t chunk, int decoding,
    double decode_ms, double flop_ms)
{
    double  idle = llm_prefill_cost(c, 0, chunk), room;

    if (!decoding || decode_ms <= 0 || flop_ms <= 0) {
        return idle;
    }

    /* a step with prefill may take about two decode-only steps */
    room = decode_ms / flop_ms;

    return room < idle ? room : idle;
}


static int
llm_sched_decoding(const llm_sched *s)
{
    size_t    i;
    llm_seq  *seq;

    for (i = 0; i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        if (seq && seq->n_done == seq->n_input && !seq->paused) {
            return 1;
        }
    }

    return 0;
}


static double
llm_ema(double avg, double x)
{
    return avg > 0 ? (1 - LLM_SCHED_EMA_NEW) * avg + LLM_SCHED_EMA_NEW * x : x;
}


/* Updates the step-time averages from the step that just completed. */
static void
llm_sched_step_timing(llm_sched *s)
{
    double  per_token;

    if (s->draft_passes > 0) {
        s->draft_pass_ms = llm_ema(s->draft_pass_ms, s->draft_ms / s->draft_passes);
    }

    if (s->n_prefill == 0 && s->n_draft == 0) {
        s->decode_ms = llm_ema(s->decode_ms, s->step_ms);
        s->since_plain = 0;
        return;
    }
    s->since_plain += s->n_draft > 0;

    /*
     * the share of the prompt tokens and proposed tokens (both are tokens
     * beyond one per decoding sequence) in the step
     */
    per_token = (s->step_ms - (s->n_decode ? s->decode_ms : 0))
                / (s->n_prefill + s->n_draft);
    if (per_token > 0) {
        s->prefill_token_ms = llm_ema(s->prefill_token_ms, per_token);
        s->flop_ms = llm_ema(s->flop_ms, per_token * (s->n_prefill + s->n_draft)
                                         / s->prefill_work);
    }
}


/*
 * Proposed tokens for a decoding sequence that feeds n tokens this step,
 * written after its output (seq->gen has room for max_gen tokens); *rows:
 * the logit rows of the step not yet given out.
 */
static int
llm_sched_propose(llm_sched *s, llm_seq *seq, size_t n, int *rows,
    long *spare)
{
    long         k_max, room;
    double       cost, draft_cost;
    llm_tokens2  t;
    int          d;

    /* recurrent state cannot be rolled back past rejected proposals */
    if (seq->spec.mode == LLM_SPEC_OFF || llm_runtime_has_state(s->rt)
        || (s->draft_rt && llm_runtime_has_state(s->draft_rt)))
    {
        return 0;
    }

    /* room for the proposals and one sampled token after them */
    k_max = (long) seq->max_gen - (long) seq->n_gen - 1;
    room = (long) s->n_ctx - (long) s->slot_len[seq->slot] - (long) n - 1;
    if (room < k_max) {
        k_max = room;
    }
    if (*rows < k_max) {
        k_max = *rows;
    }
    /* and within the KV blocks left */
    while (k_max > 0
           && llm_seq_blocks_to_grow(s->rt, seq->slot, (int) (n + k_max))
              - llm_seq_blocks_to_grow(s->rt, seq->slot, (int) n) > *spare)
    {
        k_max--;
    }
    if (k_max <= 0) {
        return 0;
    }

    /* verifying a token costs about what a prompt token does */
    cost = s->decode_ms > 0 && s->prefill_token_ms > 0
           ? s->prefill_token_ms / s->decode_ms : 0;

    /* a draft token: one pass of the draft, measured once it has run */
    draft_cost = s->draft_rt == NULL ? -1
                 : s->draft_pass_ms > 0 && s->decode_ms > 0
                 ? s->draft_pass_ms / s->decode_ms : s->draft_cost;

    t.a = seq->prompt;
    t.na = seq->n_prompt;
    t.b = seq->gen;
    t.nb = seq->n_gen;
    d = llm_spec_propose(&seq->spec, &t, s->recent, cost,
                         draft_cost, (int) k_max,
                         seq->gen + seq->n_gen, &seq->draft_k);
    /* the draft model's proposals are made in the step: their rows now */
    *rows -= d + seq->draft_k;
    *spare -= llm_seq_blocks_to_grow(s->rt, seq->slot, (int) (n + d))
              - llm_seq_blocks_to_grow(s->rt, seq->slot, (int) n);

    return d;
}


int
llm_sched_step_prepare(llm_sched *s)
{
    size_t           i, j, k, n, n_pre, left, n_run;
    long             spare;
    int              rows, d, retime;
    double           budget, work;
    llm_seq         *seq;
    llm_batch_item  *it;

    if (s->in_flight) {
        return 0;
    }

    /* retention that ran out: those blocks may be evicted again */
    llm_runtime_kv_set_now(s->rt, llm_sched_now(s));

    /* retire sequences that ended while no step was in flight */
    for (i = 0; i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        if (seq && (seq->finished || seq->cancelled)) {
            llm_slot_release(s, seq);
            if (seq->owner == NULL) {
                llm_seq_free(seq);
            }
        }
    }

    llm_sched_admit(s);
    llm_sched_make_room(s);

    s->n_items = 0;
    s->n_decode = 0;
    s->n_prefill = 0;
    s->n_draft = 0;
    s->prefill_work = 0;
    rows = llm_runtime_logit_rows(s->rt) - (int) s->n_slots;
    spare = llm_sched_blocks_spare(s, &n_run);

    /*
     * a step to time without proposals (LLM_SCHED_RETIME): only one that
     * has no prompt tokens, so that prefill traffic never stops speculation
     */
    retime = s->decode_ms <= 0 || s->since_plain >= LLM_SCHED_RETIME;
    for (i = 0; retime && i < s->n_slots; i++) {
        seq = s->slot_seq[i];
        retime = seq == NULL || seq->paused || seq->n_done >= seq->n_input;
    }

    /* decoding sequences, one token each (and their proposals) */
    n_pre = 0;
    for (k = 0; k < s->n_slots; k++) {
        i = (s->rr + k) % s->n_slots;
        seq = s->slot_seq[i];
        if (seq == NULL || seq->paused) {
            continue;
        }

        if (seq->n_done < seq->n_input) {
            /* by tokens left, fewest first (insertion; ties keep rr order) */
            for (j = n_pre; j > 0; j--) {
                if (s->prefilling[j - 1]->n_input - s->prefilling[j - 1]->n_done
                    <= seq->n_input - seq->n_done)
                {
                    break;
                }
                s->prefilling[j] = s->prefilling[j - 1];
            }
            s->prefilling[j] = seq;
            n_pre++;
            continue;
        }

        it = &s->items[s->n_items];
        it->slot = (int) i;
        it->want_embedding = 0;
        seq->n_out = 0;
        seq->n_accepted = 0;
        seq->draft_k = 0;
        seq->n_draft_q = 0;

        /*
         * feed the last sampled token and any forced after it, then the
         * tokens proposed to follow, with logits at each to verify them
         */
        n = seq->n_unfed ? seq->n_unfed : 1;
        d = retime ? 0 : llm_sched_propose(s, seq, n, &rows, &spare);
        it->tokens = &seq->gen[seq->n_gen - n];
        it->n_tokens = (int) n + d;
        it->want_logits = 1 + d;
        s->n_decode++;
        s->n_draft += d;
        s->prefill_work += llm_prefill_cost(&s->cost,
                                            s->slot_len[i] + n, (size_t) d);

        s->item_seq[s->n_items++] = seq;
    }

    /*
     * prompt chunks within the step's time budget, the shortest prompt
     * first: a short request arriving during a long prefill is read by the
     * next step, and the first chunk always advances its prompt
     */
    budget = llm_prefill_budget(&s->cost, s->cfg.prefill_chunk,
                                llm_sched_decoding(s), s->decode_ms,
                                s->flop_ms);
    for (j = 0; j < n_pre; j++) {
        seq = s->prefilling[j];
        i = (size_t) seq->slot;
        left = seq->n_input - seq->n_done;

        n = llm_prefill_fit(&s->cost, s->slot_len[i], left, budget);
        if (j == 0 && n < LLM_PREFILL_MIN) {
            n = left < LLM_PREFILL_MIN ? left : LLM_PREFILL_MIN;
        }
        if (n == 0) {
            break;
        }
        if (llm_runtime_has_state(s->rt) && llm_seq_next_boundary(seq) > 0
            && seq->n_done + n > llm_seq_next_boundary(seq))
        {
            /* recurrent state is snapshotted where a chunk ends */
            n = llm_seq_next_boundary(seq) - seq->n_done;
        }
        work = llm_prefill_cost(&s->cost, s->slot_len[i], n);
        budget = work < budget ? budget - work : 0;
        s->prefill_work += work;

        it = &s->items[s->n_items];
        it->slot = (int) i;
        seq->n_out = 0;
        seq->n_accepted = 0;
        it->tokens = seq->prompt + seq->n_done;
        it->n_tokens = (int) n;
        s->n_prefill += (int) n;
        it->want_logits = seq->sampler != NULL
                          && seq->n_done + n == seq->n_input;
        it->want_embedding = seq->sampler == NULL;

        s->item_seq[s->n_items++] = seq;
    }

    s->rr++;

    s->rc = 0;
    s->files_changed = 0;
    s->disk_only = 0;

    if (s->n_items == 0) {
        if (llm_runtime_kv_persist_pending(s->rt) == 0) {
            return 0;
        }
        /* idle: a step that writes the blocks closed slots left to disk */
        s->disk_only = 1;
        s->in_flight = 1;
        return 1;
    }

    s->in_flight = 1;
    s->steps++;

    return s->n_items;
}


/* Every token of the output, sampled or forced, moves its state on. */
static void
llm_seq_accept(llm_seq *seq, int32_t tok)
{
    llm_sampler_accept(seq->sampler, tok);
    if (seq->budget) {
        llm_reasoning_budget_accept(seq->budget, tok);
    }
}


/*
 * Forced tokens after the sequence's output so far are appended without
 * sampling; the next step feeds them all at once, so they cost no decode
 * steps.  Two sources: a spent thinking budget closes its reasoning block
 * (the close marker's tokens, which a grammar then reads as written), else
 * the grammar's jump-forward (not with logprobs, which forced tokens do not
 * have: a budget's close is forced all the same).  Returns their number.
 */
static int
llm_seq_forced(llm_sched *s, llm_seq *seq, const llm_batch_item *it)
{
    long     room, in_cache, unfed;
    int      n = 0, k;
    int32_t  *ids = seq->out + seq->n_out;

    /* the KV cache after this step, and the output that is not in it */
    in_cache = (long) s->slot_len[it->slot] + it->n_tokens
               - (it->want_logits - 1) + seq->n_accepted;
    unfed = seq->n_out - seq->n_accepted;

    room = (long) seq->max_gen - (long) (seq->n_gen + seq->n_out);
    if ((long) s->n_ctx - in_cache - unfed - 1 < room) {
        room = (long) s->n_ctx - in_cache - unfed - 1;
    }
    if (room > LLM_SCHED_FORCED_MAX) {
        room = LLM_SCHED_FORCED_MAX;
    }
    if (room <= 0) {
        return 0;
    }

    if (seq->budget) {
        n = llm_reasoning_budget_forced(seq->budget, ids, (int) room);
        for (k = 0; k < n && seq->constraint; k++) {
            if (llm_constraint_accept(seq->constraint, ids[k]) < 0) {
                ids[k] = -1;    /* reported by step_complete */
                n = k + 1;
            }
        }
    }
    if (n == 0 && seq->constraint && seq->top_logprobs < 0) {
        n = llm_constraint_forced(seq->constraint, ids, (int) room);
    }

    for (k = 0; k < n; k++) {
        seq->out_forced[seq->n_out++] = 1;
        if (ids[k] >= 0) {
            llm_seq_accept(seq, ids[k]);
        }
    }

    return n;
}


/*
 * A sampled draft's proposal j: llm_spec_verify_token against the model's
 * distribution at it, processed as sampling would (the grammar's mask
 * included); lp from the model's logits as llm_sampler_sample gives it.
 */
static int32_t
llm_seq_verify_drafted(llm_sched *s, llm_seq *seq, const float *logits,
    int j, int32_t proposed, llm_token_logprobs *lp)
{
    const uint64_t  *mask = NULL;
    int              nv = llm_sampler_n_vocab(seq->sampler), kept;
    int32_t          tok;

    if (seq->constraint
        && llm_constraint_mask(seq->constraint, nv, &mask) < 0)
    {
        return -1;
    }
    if (llm_sampler_dist(seq->sampler, logits, mask, s->dist) < 0) {
        return -1;
    }
    tok = llm_spec_verify_token(seq->sampler, s->dist,
                                seq->draft_q + (size_t) j * nv, proposed,
                                &kept);
    if (lp && tok >= 0) {
        llm_sampler_logprobs(seq->sampler, lp, seq->top_logprobs > 0
                                               ? seq->top_logprobs : 0, tok);
    }
    return tok;
}


/*
 * Sampling with verification, in the step thread.  The item's logits at
 * position j are the model's distribution after its proposals 0..j-1.
 * A proposal that names one token (draft-free, or a greedy request's
 * draft): a token is sampled from each position in turn exactly as without
 * speculation (same sampler state, same random draws, same grammar), and
 * proposal j is kept only when it is that token -- speculative rejection
 * sampling with a one-hot draft distribution: kept with probability
 * p(proposal), otherwise drawn from p without it, so the output is token
 * for token the output of the same request without speculation.  A draft
 * model's proposals sampled from its distribution q are verified by
 * llm_spec_verify_token (kept with probability min(1, p/q)): the output
 * keeps the model's distribution, but the random draws differ, so a seed
 * gives other tokens than without speculation.  The token after the last
 * kept proposal is sampled from p.
 */
static void
llm_seq_verify(llm_sched *s, int i, llm_seq *seq)
{
    const llm_batch_item  *it = &s->items[i];
    int                    d = it->want_logits - 1, j, match;
    const int32_t         *proposed = it->tokens + it->n_tokens - d;
    const float           *logits;
    llm_token_logprobs    *lp;
    int32_t                tok;

    for (j = 0; j <= d; j++) {
        logits = llm_forward_logits_at(s->rt, i, j);
        lp = seq->lps ? &seq->lps[seq->n_out] : NULL;

        if (j < d && j < seq->n_draft_q) {
            tok = llm_seq_verify_drafted(s, seq, logits, j, proposed[j], lp);
            if (tok >= 0 && seq->constraint
                && llm_constraint_accept(seq->constraint, tok) < 0)
            {
                tok = -1;
            }

        } else if (seq->constraint) {
            tok = llm_constraint_sample(seq->constraint, seq->sampler, logits,
                                        lp, seq->top_logprobs > 0
                                            ? seq->top_logprobs : 0);
            if (tok >= 0 && llm_constraint_accept(seq->constraint, tok) < 0) {
                tok = -1;
            }

        } else {
            tok = llm_sampler_sample(seq->sampler, logits, lp,
                                     seq->top_logprobs > 0
                                     ? seq->top_logprobs : 0);
        }

        seq->out_forced[seq->n_out] = 0;
        seq->out[seq->n_out++] = tok;
        if (tok < 0) {
            return;    /* reported by step_complete */
        }
        llm_seq_accept(seq, tok);

        if (llm_model_is_eos(s->model, tok)) {
            return;
        }

        match = j < d && tok == proposed[j];
        seq->n_accepted += match;

        /* forced tokens take the place of the later proposals */
        if (llm_seq_forced(s, seq, it) > 0) {
            return;
        }

        if (!match) {
            return;
        }
    }
}


static int32_t
llm_argmax(const float *v, int n)
{
    int  i, best = 0;

    for (i = 1; i < n; i++) {
        if (v[i] > v[best]) {
            best = i;
        }
    }
    return best;
}


/*
 * The draft's proposal at position pos from its logits lg; -1: none (it
 * proposes no more this step).  A greedy request takes the argmax: one
 * token named, verified as a draft-free proposal is.  Otherwise the token
 * is drawn from the draft's distribution processed as the request's
 * sampler processes the model's -- penalties counting the proposals before
 * it (accepted tentatively), the grammar's mask on a copy of the
 * constraint advanced over them -- and that distribution is kept in
 * draft_q for llm_spec_verify_token.  llm_seq_draft_end undoes the
 * tentative part.  Should memory run out, the draft proposes its argmax.
 */
static int32_t
llm_seq_draft_pick(llm_seq *seq, const float *lg, int pos)
{
    int              nv = llm_sampler_n_vocab(seq->sampler);
    const uint64_t  *mask = NULL;
    float           *q;
    int32_t          tok;

    if (pos == 0 && !llm_sampler_greedy(seq->sampler)) {
        if (seq->draft_q == NULL) {
            seq->draft_q = malloc((size_t) LLM_SPEC_DRAFT_K_MAX * nv * sizeof(float));
        }
        if (seq->draft_q != NULL && seq->constraint != NULL) {
            seq->draft_c = llm_constraint_clone(seq->constraint);
        }
        if (seq->draft_q != NULL
            && (seq->constraint == NULL || seq->draft_c != NULL))
        {
            seq->draft_mark = llm_sampler_get_mark(seq->sampler);
            seq->n_draft_q = -1;    /* sampling: none drawn yet */
        }
    }
    if (seq->n_draft_q == 0) {
        return llm_argmax(lg, nv);
    }

    q = seq->draft_q + (size_t) pos * nv;
    if (seq->draft_c != NULL
        && llm_constraint_mask(seq->draft_c, nv, &mask) < 0)
    {
        return -1;
    }
    if (llm_sampler_dist(seq->sampler, lg, mask, q) < 0
        || (tok = llm_sampler_draw(seq->sampler, q)) < 0)
    {
        return -1;
    }
    if (seq->draft_c != NULL && llm_constraint_accept(seq->draft_c, tok) < 0) {
        return -1;
    }
    llm_sampler_accept(seq->sampler, tok);
    seq->n_draft_q = pos + 1;
    return tok;
}


/* The sampler and grammar as before the draft's tentative proposals. */
static void
llm_seq_draft_end(llm_seq *seq)
{
    if (seq->n_draft_q < 0) {
        seq->n_draft_q = 0;
    }
    if (seq->n_draft_q > 0) {
        llm_sampler_rewind(seq->sampler, seq->draft_mark,
                           seq->gen + seq->n_gen, seq->n_draft_q);
    }
    llm_constraint_free(seq->draft_c);
    seq->draft_c = NULL;
}


/*
 * The draft model's part of the step (step thread, before the forward
 * pass).  It reads what it has not seen of each speculating sequence — the
 * prompt up to the end of a prefill item's chunk, or a decoding sequence's
 * output through the tokens this step feeds — and then decodes the tokens
 * it was asked for (llm_seq.draft_k), all sequences batched, one draft
 * forward per proposed position, each token picked by llm_seq_draft_pick
 * (greedy, or sampled from the draft's distribution); the proposals are
 * appended to the step's items.  A draft item that fails only leaves its
 * sequence with fewer proposals.  Returns the passes that proposed.
 */
static int
llm_sched_draft(llm_sched *s)
{
    int              i, j, n, pos, k_max = 0, passes = 0;
    size_t           have, end;
    char             err[256];
    llm_seq         *seq;
    llm_batch_item  *it, *dt;
    const float     *lg;
    int32_t          tok;

    n = 0;

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        it = &s->items[i];
        seq->drafted = 0;
        seq->n_draft_q = 0;

        if (seq->sampler == NULL || seq->spec.mode == LLM_SPEC_OFF) {
            continue;
        }

        have = (size_t) llm_seq_len(s->draft_rt, it->slot);
        dt = &s->draft_items[n];
        dt->slot = it->slot;
        dt->want_embedding = 0;

        if (seq->n_done < seq->n_input) {
            /* prefill: the prompt through this chunk, in step with the model */
            end = seq->n_done + (size_t) it->n_tokens;
            if (have >= end) {
                continue;
            }
            dt->tokens = seq->prompt + have;
            dt->n_tokens = (int) (end - have);
            dt->want_logits = 0;

        } else {
            if (seq->draft_k == 0 || have < seq->n_prompt
                || have - seq->n_prompt >= seq->n_gen)
            {
                seq->draft_k = 0;
                continue;
            }
            dt->tokens = seq->gen + (have - seq->n_prompt);
            dt->n_tokens = (int) (seq->n_gen - (have - seq->n_prompt));
            dt->want_logits = 1;
            if (seq->draft_k > k_max) {
                k_max = seq->draft_k;
            }
        }

        s->draft_item[n++] = i;
    }

    /* position 0 from the catch-up pass, then one pass per position */
    for (pos = 0; n > 0; pos++) {
        passes += k_max > 0;
        if (llm_forward(s->draft_rt, s->draft_items, n, err, sizeof(err)) < 0) {
            break;
        }

        for (j = 0; j < n; j++) {
            seq = s->item_seq[s->draft_item[j]];
            lg = s->draft_items[j].want_logits ? llm_forward_logits(s->draft_rt, j)
                                               : NULL;
            if (lg != NULL && seq->drafted == pos
                && (tok = llm_seq_draft_pick(seq, lg, pos)) >= 0)
            {
                seq->gen[seq->n_gen + pos] = tok;
                seq->drafted++;
            }
        }

        if (pos + 1 >= k_max) {
            break;
        }

        /* the next pass: the token just proposed, where more are wanted */
        n = 0;
        for (i = 0; i < s->n_items; i++) {
            seq = s->item_seq[i];
            if (seq->draft_k > pos + 1 && seq->drafted == pos + 1) {
                dt = &s->draft_items[n];
                dt->slot = s->items[i].slot;
                dt->tokens = &seq->gen[seq->n_gen + pos];
                dt->n_tokens = 1;
                dt->want_logits = 1;
                dt->want_embedding = 0;
                s->draft_item[n++] = i;
            }
        }
    }

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        if (seq->sampler != NULL) {
            llm_seq_draft_end(seq);
        }
        if (seq->drafted > 0 && seq->n_done == seq->n_input) {
            s->items[i].n_tokens += seq->drafted;
            s->items[i].want_logits = 1 + seq->drafted;
            s->n_draft += seq->drafted;
        }
    }

    return passes;
}


/* Writes queued blocks to the disk tier for about ms (step thread). */
static void
llm_sched_persist(llm_sched *s, double ms)
{
    char  err[sizeof(s->note) - 64];

    if (llm_runtime_kv_persist(s->rt, ms, err, sizeof(err)) < 0
        && s->note[0] == '\0')
    {
        snprintf(s->note, sizeof(s->note), "the KV disk tier: %s", err);
    }
}


/*
 * Before the forward (step thread): the prompts admitted with a disk probe
 * read every whole block of theirs the disk tier holds, and their chunks
 * move past what was read (as many tokens as prepare gave them, or what is
 * left).  step_complete counts the tokens.
 */
static void
llm_sched_restore(llm_sched *s)
{
    int              i, len;
    size_t           r, left;
    char             why[sizeof(s->note) - 64];
    llm_seq         *seq;
    llm_batch_item  *it;

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        it = &s->items[i];
        seq->n_restored = 0;
        if (!seq->disk_probe) {
            continue;
        }
        seq->restore_counts = seq->disk_probe == 2;
        seq->disk_probe = 0;

        len = llm_seq_restore(s->rt, it->slot, seq->prompt,
                              (int) seq->n_input - 1, why, sizeof(why));
        if (why[0] && s->note[0] == '\0') {
            snprintf(s->note, sizeof(s->note),
                     "the KV disk tier ignored a file: %s", why);
        }
        if (len < 0 || (size_t) len <= seq->n_done) {
            continue;
        }

        r = (size_t) len - seq->n_done;
        left = seq->n_input - seq->n_done - r;
        seq->n_restored = r;
        s->prefill_work -= llm_prefill_cost(&s->cost, seq->n_done,
                                            (size_t) it->n_tokens);
        it->tokens = seq->prompt + seq->n_done + r;
        if ((size_t) it->n_tokens > left) {
            s->n_prefill -= it->n_tokens - (int) left;
            it->n_tokens = (int) left;
        }
        it->want_logits = seq->n_done + r + (size_t) it->n_tokens
                          == seq->n_input;
        s->prefill_work += llm_prefill_cost(&s->cost, (size_t) len,
                                            (size_t) it->n_tokens);
    }
}


void
llm_sched_step_run(llm_sched *s)
{
    int               i;
    size_t            d;
    llm_seq          *seq;
    const float      *emb;
    struct timespec   t0, t1;

    if (s->disk_only) {
        llm_sched_persist(s, LLM_SCHED_DISK_IDLE_MS);
        return;
    }

    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* weights rewritten in place: their mapping must not be read (SIGBUS) */
    if (llm_model_files_changed(s->model, s->err, sizeof(s->err))
        || (s->cfg.draft
            && llm_model_files_changed(s->cfg.draft, s->err, sizeof(s->err))))
    {
        s->rc = -1;
        s->files_changed = 1;
        return;
    }

    if (s->disk_on) {
        llm_sched_restore(s);
        /* file reads are not the model's step time */
        clock_gettime(CLOCK_MONOTONIC, &t0);
    }

    s->draft_passes = 0;
    if (s->draft_rt) {
        /* timed apart: the model's step times stay the model's */
        s->draft_passes = llm_sched_draft(s);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        s->draft_ms = (t1.tv_sec - t0.tv_sec) * 1e3
                      + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        t0 = t1;
    }

    /* rc > 0: some items failed on their own; the others ran */
    s->rc = llm_forward(s->rt, s->items, s->n_items, s->err, sizeof(s->err));
    if (s->rc < 0) {
        return;
    }

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];

        if (llm_forward_item_error(s->rt, i)) {
            continue;
        }

        if (s->items[i].want_embedding) {
            emb = llm_forward_embedding(s->rt, i);
            if (emb) {
                /* the engine averages per chunk: weight by chunk size */
                for (d = 0; d < s->hidden; d++) {
                    seq->embed_sum[d] += emb[d] * s->items[i].n_tokens;
                }
            }
        }

        if (!s->items[i].want_logits || seq->sampler == NULL) {
            continue;
        }

        llm_seq_verify(s, i, seq);
    }

    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->step_ms = (t1.tv_sec - t0.tv_sec) * 1e3
                 + (t1.tv_nsec - t0.tv_nsec) / 1e6;

    if (s->disk_on) {
        /* a slice of a decode step for writing, so tokens are not held up */
        llm_sched_persist(s, LLM_SCHED_DISK_BUSY * s->decode_ms);
    }
}


/*
 * Embedding pooling, all of it in one place: the engine gives the mean of a
 * chunk's final hidden states, the step sums them weighted by chunk size,
 * and here the sum becomes the mean over the whole input, L2-normalised.
 */
static void
llm_seq_pool_embedding(llm_seq *seq)
{
    size_t  d, h = seq->sched->hidden;
    float   norm = 0;

    for (d = 0; d < h; d++) {
        seq->embed_sum[d] /= (float) seq->n_prompt;
        norm += seq->embed_sum[d] * seq->embed_sum[d];
    }

    norm = sqrtf(norm);
    if (norm > 0) {
        for (d = 0; d < h; d++) {
            seq->embed_sum[d] /= norm;
        }
    }
}


/* on_done once, with the place already given back. */
static void
llm_seq_done(llm_seq *seq, llm_finish reason, const char *error)
{
    llm_seq_end(seq);
    if (seq->owner) {
        seq->ev->on_done(seq->owner, seq, reason, error);
    }
}


/* Each owner's flush once, after all its sequences' tokens of the step. */
static void
llm_sched_flush(llm_sched *s)
{
    int    i, j, seen;
    void  *owner;

    for (i = 0; i < s->n_items; i++) {
        owner = s->item_seq[i]->owner;
        if (owner == NULL) {
            continue;
        }
        seen = 0;
        for (j = 0; j < i && !seen; j++) {
            seen = s->item_seq[j]->owner == owner;
        }
        if (!seen) {
            s->item_seq[i]->ev->on_flush(owner);
        }
    }
}


/* Frees the step's sequences whose owner let go during the step. */
static void
llm_sched_step_end(llm_sched *s)
{
    int       i;
    llm_seq  *seq;

    for (i = 0; i < s->n_items; i++) {
        seq = s->item_seq[i];
        if (seq->owner == NULL && seq->running) {
            llm_slot_release(s, seq);
            llm_seq_free(seq);
        }
    }

    s->in_flight = 0;
}


void
llm_seq_set_constraint(llm_seq *seq, llm_constraint *c)
{
    llm_constraint_free(seq->constraint);
    seq->constraint = c;
}


void
llm_seq_set_reasoning_budget(llm_seq *seq, llm_reasoning_budget *b)
{
    llm_reasoning_budget_free(seq->budget);
    seq->budget = b;
}


void
llm_seq_set_speculation(llm_seq *seq, llm_spec_mode mode)
{
    llm_spec_init(&seq->spec, mode);
}



const char *
llm_sched_step_failure(const llm_sched *s, int *files_changed)
{
    *files_changed = s->files_changed;
    return s->rc < 0 ? s->err : NULL;
}


/*
 * The step's output of one sequence to its owner, token by token: 0 when
 * all of it went and the sequence goes on, 1 when it ended (end of
 * sequence, a grammar error, a stop string, the owner let go).
 */
static int
llm_seq_deliver(llm_sched *s, llm_seq *seq)
{
    int      j, sampled = 0;
    int32_t  tok;

    for (j = 0; j < seq->n_out; j++) {
        tok = seq->out[j];

        if (tok < 0) {
            llm_seq_done(seq, LLM_FINISH_ERROR,
                         "the output grammar allows no further token");
            return 1;
        }

        if (!seq->out_forced[j] && llm_model_is_eos(s->model, tok)) {
            llm_seq_done(seq, LLM_FINISH_STOP, NULL);
            return 1;
        }

        seq->gen[seq->n_gen++] = tok;
        s->generated_tokens++;

        seq->ev->on_token(seq->owner, seq, tok,
                          seq->out_forced[j] || seq->lps == NULL
                          ? NULL : &seq->lps[sampled]);
        sampled += !seq->out_forced[j];

        if (seq->finished || seq->owner == NULL) {
            return 1;    /* a stop sequence matched, or the owner let go */
        }
    }

    return 0;
}


void
llm_sched_step_complete(llm_sched *s)
{
    int              i;
    size_t           d, kept;
    llm_seq         *seq;
    const char      *error;
    llm_batch_item  *it;

    /*
     * in_flight stays set while tokens are delivered: callbacks may finish
     * or release sequences of this step, which must outlive the loops below.
     */

    if (s->disk_only) {
        s->disk_only = 0;
        s->in_flight = 0;
        return;
    }

    if (s->rc == 0) {
        llm_sched_step_timing(s);
    }

    for (i = 0; i < s->n_items; i++) {
        it = &s->items[i];
        seq = s->item_seq[i];

        if (seq->n_restored) {
            /* the prompt's blocks the step read from disk, before its chunk */
            memcpy(s->slot_tokens[it->slot] + s->slot_len[it->slot],
                   seq->prompt + seq->n_done, seq->n_restored * sizeof(int32_t));
            s->slot_len[it->slot] += seq->n_restored;
            seq->n_done += seq->n_restored;
            s->disk_tokens += seq->n_restored;
            if (seq->restore_counts) {
                seq->n_cached += seq->n_restored;
                s->cached_tokens += seq->n_restored;
            }
            seq->n_restored = 0;
        }

        /* a failed step, or only this item of it */
        error = s->rc < 0 ? s->err : llm_forward_item_error(s->rt, i);

        if (error) {
            llm_seq_done(seq, LLM_FINISH_ERROR, error);
            continue;
        }

        /*
         * the slot's cache now holds these tokens too, but for proposals
         * that were not kept
         */
        d = it->want_logits > 1 ? (size_t) it->want_logits - 1 : 0;
        kept = (size_t) it->n_tokens - d + (size_t) seq->n_accepted;
        memcpy(s->slot_tokens[it->slot] + s->slot_len[it->slot], it->tokens,
               kept * sizeof(int32_t));
        llm_sched_slot_truncate(s, it->slot, s->slot_len[it->slot] + kept);

        if (seq->n_done < seq->n_input) {
            seq->n_done += kept;
            if (seq->n_done == seq->n_input || seq->n_done == seq->retain
                || seq->n_done == seq->snap_at)
            {
                /* recurrent state at the reusable boundaries the prompt has:
                 * its system prompt, its cache breakpoint and its end (a next
                 * turn starts with it) */
                llm_seq_snapshot(s->rt, it->slot);
            }
        }
        if (seq->retain && !seq->retained && seq->n_done >= seq->retain) {
            /* the prompt head up to its breakpoint is kept cached */
            llm_runtime_kv_pin(s->rt, it->slot, (int) seq->retain,
                               llm_sched_now(s) + seq->retain_s);
            seq->retained = 1;
        }

        if (seq->spec.proposer == LLM_PROPOSER_DRAFT) {
            seq->spec.n_proposed = (int) d;    /* the draft may have made fewer */
            s->draft_proposed += d;
            s->draft_accepted += (uint64_t) seq->n_accepted;
        }
        if (d > 0) {
            s->spec_steps++;
            s->spec_proposed += d;
            s->spec_accepted += (uint64_t) seq->n_accepted;
        }
        llm_spec_update(&seq->spec, seq->n_accepted);

        if (seq->owner == NULL || seq->finished) {
            continue;
        }

        if (seq->sampler == NULL) {
            if (seq->n_done == seq->n_input) {
                llm_seq_pool_embedding(seq);
                llm_seq_done(seq, LLM_FINISH_STOP, NULL);
            }
            continue;
        }

        if (!it->want_logits) {
            continue;    /* a prefill chunk that is not the last */
        }

        s->seq_steps++;
        if (llm_seq_deliver(s, seq) == 0) {
            /* the output not yet in the cache is fed by the next step */
            seq->n_unfed = (size_t) (seq->n_out - seq->n_accepted);
            if (seq->n_gen >= seq->max_gen
                || s->slot_len[it->slot] + seq->n_unfed >= s->n_ctx)
            {
                llm_seq_done(seq, LLM_FINISH_LENGTH, NULL);
            }
        }
    }

    /* one write per owner per step */
    llm_sched_flush(s);
    llm_sched_step_end(s);

}


void
llm_sched_step_abort(llm_sched *s, const char *error)
{
    int  i;

    for (i = 0; i < s->n_items; i++) {
        llm_seq_done(s->item_seq[i], LLM_FINISH_ERROR, error);
    }

    for (i = 0; i < s->n_items; i++) {
        /* released or not, an aborted sequence leaves its slot */
        llm_slot_release(s, s->item_seq[i]);
        if (s->item_seq[i]->owner == NULL) {
            llm_seq_free(s->item_seq[i]);
        }
    }

    s->n_items = 0;
    s->in_flight = 0;
}
