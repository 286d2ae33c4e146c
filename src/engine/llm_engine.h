/*
 * Inference engine: model loading, per-worker runtime (compute threads,
 * KV cache), batched forward pass and token sampling.  No nginx, no HTTP.
 *
 * Lifetimes:
 *   llm_model    loaded once (nginx master, before fork); weights stay mmap'd
 *                read-only and are shared by every worker.  Starts no threads.
 *   llm_runtime  one per process (each worker after fork): compute threads,
 *                KV memory as a pool of blocks (llm_kv.h) that up to
 *                n_seq_max sequences of up to n_ctx tokens share, with the
 *                prefix cache over them; scratch buffers.  Everything is
 *                allocated at creation.
 *   llm_sampler  one per request.
 *
 * Thread use: llm_forward may be called from any thread (for example an
 * nginx thread-pool thread), one call at a time per runtime.  Sequence slot
 * functions must not run concurrently with llm_forward on the same runtime.
 *
 * Errors are returned as -1 / NULL with a message in err[errlen].
 */
#ifndef LLM_ENGINE_H
#define LLM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/llm_kv_disk.h"

#include "core/llm_ir.h"
#include "engine/llm_kv.h"
#include "engine/llm_state.h"

/* ---- model ---- */

typedef struct llm_model llm_model;

#define LLM_MAX_EOS 8

typedef struct {
    const char *architecture;        /* "Qwen2ForCausalLM", ... */
    const char *model_type;          /* "qwen2", "llama", ... */
    const char *dtype;               /* weights as held: "float32" | "float16" | "bfloat16" |
                                        a GGUF type name ("Q8_0"); "<type> mix" when the
                                        matrices differ (the type of most parameters first) */
    uint64_t    n_params;
    uint64_t    weight_bytes;        /* bytes of all weights as held in memory */
    uint64_t    active_bytes;        /* weight bytes one token reads at batch 1: all but the
                                        unchosen experts (top_k of n_experts run) and, when
                                        not tied to the output, the embedding table (one row) */
    uint64_t    state_bytes;         /* recurrent state of one sequence, which every token reads
                                        and writes (LFM2, Qwen3-Next, Qwen3.5); 0 otherwise */
    int         n_vocab;
    int         max_position_embeddings;
    int         hidden;
    int         intermediate;
    int         n_layers;
    int         n_heads;
    int         n_kv_heads;
    int         head_dim;
    int         sliding_window;      /* 0 = full attention */
    int         n_experts;           /* experts of the sparse MLP layers, 0 = dense model */
    int         n_experts_per_token;
    int         tie_word_embeddings;
    double      rope_theta;
    double      rms_norm_eps;
    int32_t     bos_id;              /* -1 if none */
    int         n_eos;
    int32_t     eos_ids[LLM_MAX_EOS];/* generation_config.json, else config.json */

    /* Sampling defaults from generation_config.json; has_* = 0 when absent. */
    int         has_temperature, has_top_p, has_top_k, has_repetition_penalty;
    double      temperature, top_p, repetition_penalty;
    int         top_k;
} llm_model_info;

/*
 * Load a Hugging Face model directory: config.json, generation_config.json
 * (optional), model.safetensors or model.safetensors.index.json + shards.
 * Every tensor is checked for presence, dtype, shape and file bounds.
 */
llm_model *llm_model_load(const char *dir, char *err, size_t errlen);

typedef struct {
    /* on-load quantization of float matrices: NULL (none), "q8_0", "q4_0", "q4_k", "q6_k";
     * the per-tensor policy is in llm_quantize.c and docs/models.md */
    const char *quant;
} llm_model_opts;

/* llm_model_load with options (opts may be NULL) */
llm_model *llm_model_load_opts(const char *path, const llm_model_opts *opts, char *err, size_t errlen);
void llm_model_free(llm_model *m);
const llm_model_info *llm_model_get_info(const llm_model *m);
/* 1 if id is one of the model's end-of-sequence ids. */
int llm_model_is_eos(const llm_model *m, int32_t id);
/* 1 when the model has layers with recurrent state (LFM2's short convolutions): prefixes are
 * reused only through snapshots of it (llm_seq_snapshot) */
int llm_model_has_state(const llm_model *m);
/*
 * 0 while every weight file is as it was loaded; 1 when one was truncated or
 * rewritten in place (err names it): the model's mapped weights may then
 * fault (SIGBUS) or be other weights, so it must not run until reloaded from
 * disk.  Cheap (one fstat per file): callers check before each forward pass.
 */
int llm_model_files_changed(const llm_model *m, char *err, size_t errlen);
/* Index of the first id outside [0, n_vocab), or -1 when every id is valid. */
long llm_model_find_bad_token(const llm_model *m, const int32_t *ids, size_t n);
/*
 * What tells these weights from others (architecture, shape, dtype after
 * on-load quantization, and a sample of every weight file's bytes; never its
 * path or times): the disk tier of the prefix cache keys its files by it.
 */
uint64_t llm_model_fingerprint(const llm_model *m);

/*
 * Write a random-weight model (config.json copied with the dtype set,
 * generation_config.json, model.safetensors) for benchmarks.
 * dtype: "f32" | "f16" | "bf16".  Deterministic for a given seed.
 */
int llm_model_synth(const char *config_json_path, const char *out_dir,
    const char *dtype, uint64_t seed, char *err, size_t errlen);

/* ---- runtime (per process) ---- */

typedef struct llm_runtime llm_runtime;

typedef enum {
    LLM_KV_F32 = 0,      /* exact; the default */
    LLM_KV_F16,          /* half the memory and half the attention reads */
    LLM_KV_Q8_0          /* ggml's Q8_0: blocks of 32 int8 and a float16 scale, 34 bytes per
                            32 values (53% of f16); needs a head size that is a multiple of 32 */
} llm_kv_type;

/* "f32", "f16", "q8_0" */
const char *llm_kv_type_name(llm_kv_type kv);

typedef struct {
    int          n_threads;  /* compute threads including the caller of llm_forward
                                (<= 0: number of online CPUs) */
    int          n_ctx;      /* tokens per sequence; <= 0: the model's
                                max_position_embeddings, capped by kv_memory when
                                it is set, else at 4096 */
    int          n_seq_max;  /* sequence slots: sequences that run at once */
    llm_kv_type  kv;
    size_t       kv_memory;  /* bytes of KV blocks the sequences share; 0: room
                                for n_seq_max x n_ctx tokens (every slot full) */
    /*
     * NULL: compute threads of its own.  Else the compute threads of that
     * runtime (n_threads is taken from it): for a draft model's runtime,
     * whose passes alternate with its model's on one thread.  Two pools
     * would each keep their threads spinning between jobs (llm_pool.h) and
     * fight for the same cores.  That runtime must outlive this one and
     * never run at the same time.
     */
    const llm_runtime *threads_of;
} llm_runtime_opts;

llm_runtime *llm_runtime_create_opts(const llm_model *m, const llm_runtime_opts *o,
    char *err, size_t errlen);
/* Fills in the defaults of o as llm_runtime_create_opts would; -1 (err) when it would refuse o. */
int llm_runtime_resolve(const llm_model *m, llm_runtime_opts *o, char *err, size_t errlen);
/* The same with kv_memory 0 and f32 (create) or the given type (create_kv). */
llm_runtime *llm_runtime_create(const llm_model *m, int n_threads, int n_ctx,
    int n_seq_max, char *err, size_t errlen);
llm_runtime *llm_runtime_create_kv(const llm_model *m, int n_threads, int n_ctx,
    int n_seq_max, llm_kv_type kv, char *err, size_t errlen);
void llm_runtime_free(llm_runtime *rt);
/*
 * Bytes llm_runtime_create_opts allocates for these options (KV blocks and
 * their bookkeeping, block tables, scratch, results; *kv_bytes gets the KV
 * blocks' share), without allocating them: what a configuration check adds
 * up before any worker starts.  A runtime commits all of it at creation
 * (every page is written once), so an accepted size is resident from the
 * start instead of failing on first use.  0 for options
 * llm_runtime_create_opts refuses.
 */
size_t llm_runtime_memory(const llm_model *m, const llm_runtime_opts *o, size_t *kv_bytes);
/* Keys and values of one block of LLM_KV_BLOCK positions, all layers. */
size_t llm_runtime_kv_block_bytes(const llm_model *m, llm_kv_type kv);
/*
 * The default kv_memory: room for n_seq_max sequences of n_ctx tokens (<= 0:
 * the model's max_position_embeddings), but at most an eighth of `available`
 * (the memory of the machine or its cgroup; 0 = unknown, no cap), and at
 * least one block.
 */
size_t llm_runtime_kv_default(const llm_model *m, llm_kv_type kv, int n_seq_max,
    int n_ctx, uint64_t available);
/* KV blocks' bytes (recurrent state apart: llm_runtime_state_bytes). */
size_t llm_runtime_kv_bytes(const llm_runtime *rt);
/*
 * Models with recurrent layers (LFM2's short convolutions): each slot's
 * state and LLM_STATE_SNAPS_PER_SLOT snapshots per slot, taken out of
 * kv_memory before the KV blocks (llm_runtime_memory counts them; its
 * *kv_bytes includes them).  0 / 0 for attention-only models.
 */
size_t llm_runtime_state_bytes(const llm_runtime *rt);
int llm_runtime_has_state(const llm_runtime *rt);
/* Its snapshots: entries, held now, made and restored since creation (all 0 without state). */
void llm_runtime_state_stats(const llm_runtime *rt, llm_state_stats *st);
int llm_runtime_kv_blocks(const llm_runtime *rt);
/* Blocks used by sequences, cached (unreferenced, reusable), free. */
void llm_runtime_kv_stats(const llm_runtime *rt, llm_kv_stats *st);
/*
 * Retention (llm_kv_pin): the full blocks holding the slot's first n
 * positions are kept from eviction until `until`, on the clock given by
 * llm_runtime_kv_set_now (seconds; the disk tier's once-a-minute touch of
 * the files of blocks in use reads it too).
 */
void llm_runtime_kv_pin(llm_runtime *rt, int slot, int n, double until);
void llm_runtime_kv_set_now(llm_runtime *rt, double now);
int llm_runtime_n_ctx(const llm_runtime *rt);
int llm_runtime_n_seq_max(const llm_runtime *rt);
const llm_model *llm_runtime_model(const llm_runtime *rt);
/* name of the kernel table chosen at start-up: "avx2", "avx512vnni", ... */
const char *llm_runtime_kernels(const llm_runtime *rt);

/*
 * Memory read bandwidth in bytes/s seen by this runtime's compute threads:
 * best of several streaming reads of a buffer of the given size (for the
 * bandwidth bound of decode: weight bytes per token / bandwidth).  -1 on error.
 */
double llm_runtime_read_bandwidth(llm_runtime *rt, size_t bytes);
/* The same measured over the model's own mapped weight files (best of 3 passes). */
double llm_runtime_weight_read_bandwidth(llm_runtime *rt);

/*
 * Where the forward passes' time goes (llm bench's decode profile): while a
 * record is attached, every forward adds the seconds of each phase of the
 * pass to it, and the pool adds the time the calling thread waited at the
 * end of each parallel step for the other threads (imbalance, wake-up).
 */
typedef enum {
    LLM_PHASE_EMBED, LLM_PHASE_NORM, LLM_PHASE_QUANTIZE, LLM_PHASE_QKV, LLM_PHASE_ROPE,
    LLM_PHASE_ATTENTION, LLM_PHASE_O, LLM_PHASE_CONV, LLM_PHASE_GATE_UP, LLM_PHASE_DOWN,
    LLM_PHASE_MOE, LLM_PHASE_LM_HEAD, LLM_PHASE_N
} llm_phase;

typedef struct {
    double seconds[LLM_PHASE_N];
    double pool_wait;        /* caller's wait for the other threads, inside the phases above */
    long   pool_steps;       /* parallel steps run on more than one thread */
    long   pool_wakes;       /* of them: steps that had to wake a sleeping thread */
} llm_phase_times;

const char *llm_phase_name(llm_phase ph);
/* Attach a record (NULL detaches); the caller zeroes it and reads it. */
void llm_runtime_time_phases(llm_runtime *rt, llm_phase_times *t);

/* ---- sequence slots ---- */

/*
 * A slot holds one sequence's block table (and, with recurrent layers, its
 * state).  Opening gives an empty one; closing releases its blocks, which
 * stay in the prefix cache (its partial last block too) until the pool
 * needs them, and snapshots its recurrent state (llm_seq_snapshot).
 */
int  llm_seq_open(llm_runtime *rt);                 /* slot id, -1 if none free */
void llm_seq_close(llm_runtime *rt, int slot);
int  llm_seq_len(const llm_runtime *rt, int slot);  /* cached positions */
/*
 * New blocks the slot takes to append n positions (a copy of a shared
 * partial last block included): what the scheduler checks against the
 * pool's free and cached blocks before a step, so no item runs out.
 */
int  llm_seq_blocks_to_grow(const llm_runtime *rt, int slot, int n);
/*
 * Keep the first n cached positions (rollback of rejected draft tokens, or a
 * shorter prefix); n >= current length is a no-op.  Blocks past n are
 * released; a kept partial block that others share is copied before the
 * slot writes into it, so no other sequence sees the change.
 */
void llm_seq_truncate(llm_runtime *rt, int slot, int n);
/*
 * Recurrent layers: keeps the slot's state after its current tokens (none
 * when the slot is empty or the model has no such layers) as a snapshot
 * that llm_seq_reuse restores for a sequence starting with those tokens.
 * Recurrent state cannot be cut back, so a truncation to n < length on
 * such a model empties the slot (its length is then 0).
 */
void llm_seq_snapshot(llm_runtime *rt, int slot);
/*
 * On an empty slot: takes from the prefix cache every block of tokens[0..n)
 * that any earlier sequence computed (shared: whole blocks, and the block
 * holding the longest common head of the rest, which the slot copies before
 * it writes after that head).  Returns the positions now cached (<= n); the
 * caller feeds tokens from there.  With recurrent layers only as far as the
 * longest snapshot (llm_seq_snapshot) of a prefix the blocks hold, whose
 * state the slot takes: 0 when there is none.
 */
int  llm_seq_reuse(llm_runtime *rt, int slot, const int32_t *tokens, int n);

/* ---- the disk tier of the prefix cache (llm_kv_disk.h; llm_kv_tier.c) ---- */

/*
 * Keeps the runtime's prefix blocks as files under dir (a directory
 * per model fingerprint and KV type), at most max_size bytes in all (0: no
 * bound).  0, or -1 with err (the runtime works on without it).
 */
int  llm_runtime_kv_disk_open(llm_runtime *rt, const char *dir, uint64_t max_size,
    char *err, size_t errlen);
/* What llm_runtime_kv_disk_open allocates for a runtime of these options. */
size_t llm_runtime_kv_disk_memory(const llm_model *m, const llm_runtime_opts *o);
/* Its counters; -1 (zeroes) without a disk tier. */
int  llm_runtime_kv_disk_stats(const llm_runtime *rt, llm_kv_disk_stats *st);
/*
 * Blocking file I/O, for a compute thread, never an event loop.  Writes the
 * queued blocks (full ones as they fill, a sequence's partial last block
 * when its slot closes) until none is
 * left or ms have passed (ms < 0: all of them; at least one is written);
 * returns the blocks still queued, or -1 with err when the directory cannot
 * be written (the queue is dropped).
 */
int  llm_runtime_kv_persist(llm_runtime *rt, double ms, char *err, size_t errlen);
int  llm_runtime_kv_persist_pending(const llm_runtime *rt);
/*
 * After llm_seq_reuse: continues the slot's prefix with the whole blocks of
 * tokens[0..n) whose files verify (or that the prefix cache got meanwhile),
 * then the longest head of the next block that a partial block's file (or
 * the memory tier) holds; a head that llm_seq_reuse left is continued or
 * replaced by a longer one.  Returns the positions now cached (-1: no such
 * slot).  A file found but not trusted
 * stops it, with the reason in why (else why is "").  Blocking file I/O.
 */
int  llm_seq_restore(llm_runtime *rt, int slot, const int32_t *tokens, int n, char *why,
    size_t whylen);

/* ---- batched forward ---- */

typedef struct {
    int            slot;
    const int32_t *tokens;        /* appended at the slot's current length */
    int            n_tokens;
    int            want_logits;   /* logits of the item's last want_logits tokens: 1 for the
                                     next token; more to verify proposed tokens (speculative
                                     decoding); at most n_tokens */
    int            want_embedding;/* mean of final-normed hidden states of the item's tokens */
} llm_batch_item;

/*
 * One step over several sequences at once (prefill chunks and decode tokens
 * mixed, different slots, different positions).  Each weight matrix is read
 * once per internal chunk of tokens for all items.  The same slot may appear
 * only once per call.
 *
 * An item that cannot run (a token id outside the vocabulary, more tokens
 * than its slot has room for, no tokens) fails on its own: the others run
 * as if it were not there, so one bad sequence never fails the rest of a
 * batch.  Returns 0 when every item ran, the number of failed items (> 0;
 * llm_forward_item_error says why, err holds the first message), or -1 when
 * the call as a whole is invalid (the caller's bug: too many items, a slot
 * that is not open or appears twice), in which case nothing ran.  A failed
 * item, or a failed call, changes no slot's length.
 */
int llm_forward(llm_runtime *rt, const llm_batch_item *items, int n_items,
    char *err, size_t errlen);

/*
 * Logit rows of one call across all items: one per sequence slot plus
 * LLM_VERIFY_ROWS that items verifying proposed tokens share.  A call that
 * asks for more (the sum of want_logits) is invalid as a whole.
 */
#define LLM_VERIFY_ROWS 32
int llm_runtime_logit_rows(const llm_runtime *rt);

/* Results of the last llm_forward call, valid until the next one. */
/* the item's last token: n_vocab floats */
const float *llm_forward_logits(const llm_runtime *rt, int item_index);
/* the logits after the item's token n_tokens - want_logits + j, 0 <= j < want_logits */
const float *llm_forward_logits_at(const llm_runtime *rt, int item_index, int j);
const float *llm_forward_embedding(const llm_runtime *rt, int item_index);  /* hidden floats */
/* Why the item failed in the last llm_forward call; NULL when it ran. */
const char *llm_forward_item_error(const llm_runtime *rt, int item_index);

/* ---- sampler (per request) ---- */

/* llm_logit_bias: core/llm_ir.h (the request's parsed logit_bias). */

typedef struct {
    float    temperature;         /* 0 = greedy */
    int      top_k;               /* 0 = off */
    float    top_p;               /* 1 = off */
    float    min_p;               /* 0 = off */
    float    repetition_penalty;  /* 1 = off; HF semantics over prompt + generated */
    float    presence_penalty;    /* 0 = off; OpenAI semantics over generated */
    float    frequency_penalty;   /* 0 = off; OpenAI semantics over generated */
    const llm_logit_bias *logit_bias;  /* copied at create */
    int      n_logit_bias;
    int      has_seed;
    uint64_t seed;                /* same seed + same request = same tokens */
} llm_sampler_params;

typedef struct llm_sampler llm_sampler;

void llm_sampler_params_default(llm_sampler_params *p);
llm_sampler *llm_sampler_create(const llm_sampler_params *p, int n_vocab);
void llm_sampler_free(llm_sampler *s);
/* Prompt tokens count for the repetition penalty only. */
void llm_sampler_accept_prompt(llm_sampler *s, const int32_t *ids, int n);
/*
 * Pick the next token.  lp (may be NULL) receives the log-probability of the
 * chosen token and of the n_top most likely ones (n_top <= LLM_MAX_TOP_LOGPROBS),
 * taken from the model's distribution after logit_bias and penalties, before
 * temperature and truncation.
 */
int32_t llm_sampler_sample(llm_sampler *s, const float *logits,
    llm_token_logprobs *lp, int n_top);
/*
 * The same restricted to the ids set in `allowed` (a bitset of n_vocab bits,
 * e.g. a grammar's token mask): the others get probability 0, truncation
 * (top_k/top_p/min_p) and logprobs see only allowed tokens.  -1 when none is
 * allowed.
 */
int32_t llm_sampler_sample_allowed(llm_sampler *s, const float *logits,
    const uint64_t *allowed, llm_token_logprobs *lp, int n_top);
/* The vocabulary size the sampler was created for (the model's logits,
 * which may pad past the tokenizer's ids). */
int llm_sampler_n_vocab(const llm_sampler *s);
void llm_sampler_accept(llm_sampler *s, int32_t tok);
/* 1 when sampling picks the most likely token (temperature 0 or top_k 1). */
int llm_sampler_greedy(const llm_sampler *s);
/*
 * The distribution llm_sampler_sample[_allowed] draws from, as n_vocab
 * probabilities summing to 1 (0 outside the truncation and the mask;
 * greedy: 1 at the most likely token): logit_bias, penalties, `allowed`
 * (may be NULL), temperature, top_k, top_p, min_p.  Returns the most likely
 * token, -1 when none is allowed.  Draws nothing from the random stream.
 * The processed logits stay for llm_sampler_logprobs until the next call.
 * For speculative rejection sampling (llm_spec_verify_token), which needs
 * the target's and the draft's distributions, not a token.
 */
int32_t llm_sampler_dist(llm_sampler *s, const float *logits,
    const uint64_t *allowed, float *probs);
/* A token drawn from probs (n_vocab weights, not all 0) with the sampler's
 * random stream; -1 when all are 0. */
int32_t llm_sampler_draw(llm_sampler *s, const float *probs);
/* A number in [0, 1) from the sampler's random stream. */
double llm_sampler_uniform(llm_sampler *s);
/* lp for `chosen` from the last llm_sampler_dist's logits (as llm_sampler_sample fills it). */
void llm_sampler_logprobs(llm_sampler *s, llm_token_logprobs *lp, int n_top,
    int32_t chosen);
/*
 * Tentative accepts: a draft sampling its proposals accepts each to
 * penalise the next as the target will, then rewinds to the mark taken
 * before them (toks: the n tokens accepted since).
 */
typedef struct {
    int  n_seen;
    int  n_gen;
} llm_sampler_mark;
llm_sampler_mark llm_sampler_get_mark(const llm_sampler *s);
void llm_sampler_rewind(llm_sampler *s, llm_sampler_mark m, const int32_t *toks,
    int n);

#endif
