/*
 * The scheduler of one model in one process: sequence slots with a prefix
 * cache, admission places, a wait queue, and the batched step.  No nginx:
 * the caller owns the threads.  The protocol is
 *
 *   event loop:  llm_sched_step_prepare()  -> n items (0: nothing to run)
 *   any thread:  llm_sched_step_run()         the forward pass and sampling
 *   event loop:  llm_sched_step_complete()    tokens to their owners, retire
 *
 * with at most one step in flight.  Everything except step_run belongs to
 * one thread (the event loop); step_run touches only the step's own items
 * and the sequences in them, which stay alive until step_complete even when
 * their owner lets go of them during the step.
 *
 * Continuous batching falls out of this: every step serves every running
 * sequence (a prefill chunk of a newly admitted one, one decode token of the
 * others, with the tokens proposed to follow it when it speculates), and a
 * sequence submitted during a step joins the next one.
 *
 * A sequence's KV blocks stay in the runtime's prefix cache after it ends
 * (llm_kv.h); a new sequence takes every cached block of its prompt's
 * prefix, whoever computed it, and skips those tokens (n_cached).  When the
 * running sequences' next tokens need more blocks than the pool has free or
 * cached, the newest is preempted: it gives its blocks back, waits at the
 * front of the queue and, readmitted, reads its prompt and output again
 * (through the prefix cache) and samples on; its output does not change.
 */
#ifndef LLM_SCHED_H
#define LLM_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "engine/llm_admission.h"
#include "engine/llm_constrain.h"
#include "engine/llm_engine.h"
#include "engine/llm_reasoning_budget.h"
#include "engine/llm_spec.h"

typedef struct llm_sched llm_sched;
typedef struct llm_seq   llm_seq;

/*
 * What a sequence tells its owner, always on the event loop, from
 * llm_sched_step_complete (or llm_sched_step_abort).  on_done runs once; the
 * sequence's admission place is already free by then, so it may submit
 * again.  The owner calls llm_seq_release when it no longer needs the
 * sequence (from a callback too).
 */
typedef struct {
    void (*on_token)(void *owner, llm_seq *seq, int32_t token,
                     const llm_token_logprobs *lp);
    void (*on_done)(void *owner, llm_seq *seq, llm_finish reason,
                    const char *error);
    void (*on_flush)(void *owner);   /* once per owner and step, after tokens */
} llm_seq_events;

typedef struct {
    int          parallel;   /* slots: sequences that run at once */
    int          queue;      /* sequences that may wait for a slot */
    int          n_ctx;      /* tokens per sequence; <= 0: see llm_runtime_opts */
    int          threads;    /* compute threads of the runtime */
    llm_kv_type  kv;
    llm_spec_mode speculation;  /* sequences' speculative decoding until set */
    size_t       kv_memory;  /* bytes of KV blocks shared by the sequences (llm_runtime_opts) */
    size_t       prefill_chunk;  /* prompt tokens from position 0 whose time bounds a
                                    step's prefill when nobody decodes; 0: 512 */
    double     (*now)(void);     /* the retention clock in seconds; NULL: monotonic */
    /*
     * The disk tier of the prefix cache (llm_kv_disk.h), or NULL: full
     * blocks of ended sequences are written under this directory by idle
     * steps (and a slice of busy ones), and a new sequence's first step
     * reads every whole block of its prompt found there past what memory
     * holds, instead of computing it.  At most kv_disk_max bytes (0: no
     * bound).  Not with a draft model.
     */
    const char  *kv_disk;
    uint64_t     kv_disk_max;
    /*
     * A draft model (same vocabulary; NULL: none): it follows every
     * speculating sequence's tokens in a runtime of its own and, when the
     * draft-free proposers have no guess, proposes by greedy decoding, k
     * tokens in k batched steps of its own before the step's forward pass.
     */
    const llm_model *draft;
    /*
     * Called when new work may be runnable (a submit, a resume, a slot set
     * free) so the caller can post a step if none is in flight; may be NULL.
     */
    void       (*wake)(void *data);
    void        *wake_data;
} llm_sched_config;

typedef struct {
    size_t   running;         /* sequences holding a slot */
    size_t   paused;          /* of those, left out of steps (backpressure) */
    size_t   waiting;         /* sequences in the wait queue */
    size_t   live;            /* sequences allocated */
    uint64_t requests;
    uint64_t cancelled;
    uint64_t rejected;
    uint64_t prompt_tokens;
    uint64_t cached_tokens;
    uint64_t generated_tokens;
    uint64_t steps;
    double   decode_step_ms;  /* moving average of a decode-only step */
    double   prefill_token_ms;/* moving average per prompt token */
    double   prefill_gflops;  /* measured prompt throughput that sizes the chunks */
    size_t   kv_cache_bytes;
    llm_kv_type kv_type;      /* what a KV value is stored as (kv=) */
    llm_kv_stats kv;          /* KV blocks: used, cached, free, evicted */
    size_t   state_bytes;     /* recurrent models: slots' states and snapshots (0 otherwise) */
    llm_state_stats state;    /* their snapshots: entries, held, made, restored (0 otherwise) */
    uint64_t preempted;       /* sequences that gave their KV blocks back for others to
                                 grow, and read their tokens again when readmitted */
    int      kv_disk;         /* a disk tier is in use */
    llm_kv_disk_stats disk;   /* its blocks read, written, rejected, removed; bytes */
    uint64_t disk_tokens;     /* prompt tokens read from it */
    size_t   step_items;      /* the last prepared step: sequences in it */
    size_t   step_prefill_tokens;  /* and its prompt tokens */
    /* speculative decoding */
    uint64_t seq_steps;       /* steps of a sequence that gave it tokens */
    uint64_t spec_steps;      /* of those, steps that verified proposed tokens */
    uint64_t spec_proposed;   /* tokens proposed */
    uint64_t spec_accepted;   /* of those, kept */
    uint64_t draft_proposed;  /* of the proposed, made by the draft model */
    uint64_t draft_accepted;  /* and of those, kept */
    double   draft_pass_ms;   /* moving average of one draft forward pass (0: none yet);
                                 with decode_step_ms, what a draft token costs */
} llm_sched_stats;

/* Creates the runtime (KV memory, compute threads), and the draft model's. */
llm_sched *llm_sched_create(const llm_model *m, const llm_sched_config *cfg,
    char *err, size_t errlen);
/*
 * Not while a step is in flight.  Frees the sequences still in its slots or
 * queue (a worker that exits); every other sequence must have been released.
 */
void llm_sched_free(llm_sched *s);

/*
 * Bytes llm_sched_create(m, cfg) allocates, without allocating them: the
 * model's runtime and the draft model's (llm_runtime_memory: KV blocks and
 * scratch), the copy of the tokens each slot's KV holds, the suffix store
 * of recent requests, and with a draft the distributions a sampled draft
 * keeps per sequence.  *kv_bytes: of that, the KV blocks.  What a
 * configuration check counts per worker before any worker starts.
 */
size_t llm_sched_memory(const llm_model *m, const llm_sched_config *cfg,
    size_t *kv_bytes);

/*
 * The runtime options of a draft model for a model whose runtime has the
 * options `target`: the same threads, context and slots, KV memory for as
 * many positions as the model's and a block more per slot (what
 * llm_sched_create gives it, and what a configuration check counts).
 * 0, or -1 with err.
 */
int llm_sched_draft_opts(const llm_model *m, const llm_model *draft,
    const llm_runtime_opts *target, llm_runtime_opts *out, char *err,
    size_t errlen);

const llm_model *llm_sched_model(const llm_sched *s);
size_t llm_sched_n_ctx(const llm_sched *s);
/* parallel + queue: the most sequences the scheduler holds at once. */
size_t llm_sched_capacity(const llm_sched *s);
void llm_sched_get_stats(const llm_sched *s, llm_sched_stats *st);
/*
 * What the disk tier has to say for the log since the last call (a file
 * not trusted and why, a directory that cannot be written, the tier off),
 * copied into buf; 0 when nothing.  The first message of a step is kept.
 * On the event loop, after llm_sched_create and after each step.
 */
int llm_sched_take_note(llm_sched *s, char *buf, size_t len);

/*
 * Reserves admission places for between min and want sequences before any
 * work (llm_admission.h): LLM_ADMIT_OK with *granted; BUSY when too few are
 * free now (retry later); NEVER when min exceeds parallel + queue.
 */
llm_admit llm_sched_reserve(llm_sched *s, size_t min, size_t want,
    size_t *granted);

/* ---- sequences ---- */

/*
 * A sequence over a copy of the prompt.  sp == NULL makes an embedding
 * sequence: its prompt is read, nothing is sampled, and llm_seq_embedding
 * gives the L2-normalised mean of its final hidden states when it is done.  top_logprobs
 * < 0: no logprobs; >= 0: the sampled token's logprob and that many
 * alternatives with every token.  NULL when out of memory.
 */
llm_seq *llm_seq_create(llm_sched *s, const int32_t *prompt, size_t n_prompt,
    size_t max_gen, const llm_sampler_params *sp, int top_logprobs,
    const llm_seq_events *ev, void *owner, size_t index);

/*
 * The sequence's output must follow a grammar (structured output): sampling
 * goes through c, and tokens the grammar forces are appended without
 * sampling (jump-forward; not with logprobs).  Takes ownership of c; call
 * before submitting.
 */
void llm_seq_set_constraint(llm_seq *seq, llm_constraint *c);

/*
 * A thinking budget (llm_reasoning_budget.h): once the output's reasoning
 * blocks hold it, the close marker's tokens are appended without sampling
 * (as a grammar's forced tokens are, logprobs or not; a grammar reads them
 * as written) and the answer follows.  Takes ownership of b; call before
 * submitting.
 */
void llm_seq_set_reasoning_budget(llm_seq *seq, llm_reasoning_budget *b);

/*
 * Speculative decoding for this sequence (before submitting; the default is
 * the scheduler's cfg.speculation): each decode step may feed tokens that
 * a draft-free proposer guesses (llm_spec.h) and keep those that sampling
 * at their positions confirms.  The output is the same token for token.
 */
void llm_seq_set_speculation(llm_seq *seq, llm_spec_mode mode);

/*
 * Retention (Anthropic cache_control breakpoints): once read, the KV blocks
 * of the prompt's first n_tokens stay cached for `seconds` after this
 * request, kept from eviction while other blocks can go (llm_kv_pin).
 * Before submitting.
 */
void llm_seq_set_retention(llm_seq *seq, size_t n_tokens, double seconds);
/*
 * Models with recurrent state: a reusable boundary of the prompt (its system
 * prompt's end) where a prompt chunk ends and the state is snapshotted, so a
 * later prompt with the same head skips it.  No effect on other models.
 */
void llm_seq_set_snapshot_at(llm_seq *seq, size_t n_tokens);
/*
 * Prompt tokens up to the breakpoint that this request wrote to the cache
 * (not read from it): Anthropic's cache_creation_input_tokens.  0 without
 * retention.  After admission (with llm_seq_n_cached).
 */
size_t llm_seq_n_cache_written(const llm_seq *seq);

/* Queues a sequence into a place reserved for it with llm_sched_reserve. */
void llm_sched_submit(llm_sched *s, llm_seq *seq);

/*
 * The owner lets go (finished, or its client went away): no more callbacks;
 * the sequence is freed now, or when the step in flight that uses it ends.
 */
void llm_seq_release(llm_seq *seq);

/* The owner ended the sequence (a stop string matched): no on_done follows. */
void llm_seq_finish(llm_seq *seq);

/*
 * Backpressure: a paused sequence keeps its slot and KV cache but is left
 * out of steps until it is resumed (its client has not taken the output).
 */
void llm_seq_pause(llm_seq *seq, int paused);

size_t llm_seq_index(const llm_seq *seq);
size_t llm_seq_n_prompt(const llm_seq *seq);
size_t llm_seq_n_cached(const llm_seq *seq);     /* prompt tokens reused */
const int32_t *llm_seq_generated(const llm_seq *seq, size_t *n);
/* Embedding sequences, after on_done(STOP): `hidden` floats, else NULL. */
const float *llm_seq_embedding(const llm_seq *seq);

/* ---- the step ---- */

/*
 * Prefill chunks are sized by time, not tokens.  A token's cost in flops
 * is its share of the weight matrices plus, for every key position it
 * attends to, its attention reads; n prompt tokens from position pos cost
 * n * weights + per_key * (n * pos + n (n + 1) / 2), so the same number of
 * tokens costs more the further into a long prompt they are.
 */
typedef struct {
    double  weights;     /* flops of one token through the layers' matrices */
    double  per_key;     /* flops of one token per key position it reads */
} llm_token_cost;

void llm_token_cost_of(const llm_model_info *in, llm_token_cost *c);
double llm_prefill_cost(const llm_token_cost *c, size_t pos, size_t n);
/* The most tokens, at most want, from pos whose cost is within budget. */
size_t llm_prefill_fit(const llm_token_cost *c, size_t pos, size_t want,
    double budget);

/*
 * The prompt work of one step (flops across all sequences).  With nobody
 * decoding it is what `chunk` tokens from position 0 cost (big GEMMs are
 * efficient; later chunks of a long prompt get fewer tokens for the same
 * time).  While some sequence decodes it is sized from the measured step
 * times so that a step with prefill takes about two decode-only steps:
 * decode_ms / flop_ms, at most the idle budget.  The scheduler gives the
 * prompt with the fewest tokens left its chunk first, and the first chunk
 * of a step at least LLM_PREFILL_MIN tokens, so every prompt advances and a
 * short prompt that arrives during a long prefill is read in the next step.
 */
#define LLM_PREFILL_MIN    16
#define LLM_PREFILL_CHUNK  512

double llm_prefill_budget(const llm_token_cost *c, size_t chunk, int decoding,
    double decode_ms, double flop_ms);

int  llm_sched_in_flight(const llm_sched *s);
/*
 * Retires ended sequences, admits waiting ones, builds the next batch:
 * returns its number of items and marks the step in flight (> 0), or 0 when
 * there is nothing to run (or a step is in flight already).  With no item
 * to run but blocks to write to the disk tier it returns 1 for a step that
 * only writes them (step_run, then step_complete, as any step).
 */
int  llm_sched_step_prepare(llm_sched *s);
/* The model math and sampling of the prepared step (any thread). */
void llm_sched_step_run(llm_sched *s);
/*
 * After step_run, before step_complete: the step's failure (the whole step
 * failed) for the caller to log before any owner hears of it, or NULL;
 * *files_changed is set when a weight file was rewritten in place.
 */
const char *llm_sched_step_failure(const llm_sched *s, int *files_changed);
/*
 * Delivers the step's results through the callbacks and ends the step.  On
 * a failed step every item's owner gets on_done(ERROR).
 */
void llm_sched_step_complete(llm_sched *s);
/* The prepared step could not be run: its sequences fail with `error`. */
void llm_sched_step_abort(llm_sched *s, const char *error);

#endif
