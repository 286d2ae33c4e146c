/*
 * The disk tier of the prefix cache: KV blocks kept as files, so that a
 * prefix computed before a reload or a restart (or by another worker) is read
 * back instead of recomputed.  Policy only: file names, the format, what a
 * reader verifies, the size bound.  Plain C with blocking I/O: callers run it
 * off the event loop (the runtime calls it from the compute thread).
 *
 * One file per full block (LLM_KV_BLOCK positions), named by the model's
 * fingerprint and the block's chain hash (the hash of every token up to the
 * block's end, llm_kv_chain):
 *     DIR/<fingerprint, 16 hex>/<first 2 hex of the chain>/<chain, 16 hex>.kv
 * and one per prefix for the newest block after it, named by the parent's
 * chain hash, since a reader knows the prefix but not how far the block goes:
 *     DIR/<fingerprint>/<first 2 hex of the parent>/<parent, 16 hex>.part
 * a partial block (1..LLM_KV_BLOCK-1 positions: where a sequence ended), or
 * a link to the last full block written after that prefix.  A newer one
 * replaces it (the newest conversation is the likeliest to be continued); a
 * reader uses the longest head it shares with its prompt, as the memory tier
 * does: a prompt that ends inside a block, or leaves it, still reads its head.
 * A header (magic, version, fingerprint, element size, layers, kv_dim,
 * parent chain hash, chain hash, the positions held, the block's token ids,
 * payload size) and the payload (the block's keys, then its values: for
 * each layer the positions held x kv_dim elements), followed by an FNV-1a 64
 * checksum of header and payload.
 *
 * A reader trusts nothing it has not checked: size, magic, version, the
 * fingerprint and shape against its own model, the parent, the tokens against
 * the prompt's own, the chain hash recomputed from them, and the checksum;
 * any mismatch rejects the file (counted, the reason kept for the log).
 * Writers write a temporary file in the same directory and rename(2) it into
 * place, so concurrent workers and a crash never leave a half-written file
 * under a block's name; temporary files left by a crash are removed by the size sweep.
 * The directory is bounded by max_size: after a write that takes it over, the
 * least recently used files (mtime; a read touches it) are removed down to
 * 90% of it.
 */
#ifndef LLM_KV_DISK_H
#define LLM_KV_DISK_H

#include <stddef.h>
#include <stdint.h>

typedef struct llm_kv_disk llm_kv_disk;

/* What a file must match to be read: the model (weights, quantization, KV type) and its shape. */
typedef struct {
    uint64_t fingerprint;
    int      row_bytes;      /* bytes of one position's kv_dim keys (f32, f16 or Q8_0 blocks) */
    int      n_layers;
    int      kv_dim;
} llm_kv_disk_shape;

typedef struct {
    uint64_t hits;           /* blocks read back (partial ones included) */
    uint64_t written;        /* blocks written */
    uint64_t rejected;       /* files found but not trusted */
    uint64_t removed;        /* files removed by the size bound */
    uint64_t bytes;          /* what the directory holds (as this process last counted) */
} llm_kv_disk_stats;

/* llm_kv_cache_path's bound when it names none. */
#define LLM_KV_DISK_DEFAULT_MAX  (1024ULL * 1024 * 1024)

/*
 * llm_kv_cache_path's optional parameter, "max_size=SIZE", SIZE as nginx
 * takes an offset (N, Nk, Nm or Ng; above 0): the bound into *max.  0, or
 * -1 with err in the words nginx logs, naming the parameter.
 */
int llm_kv_disk_option(const char *arg, uint64_t *max, char *err, size_t errlen);

/* Opens (creates) dir/<fingerprint>/; NULL with err when it cannot. */
llm_kv_disk *llm_kv_disk_open(const char *dir, uint64_t max_size, const llm_kv_disk_shape *shape,
    char *err, size_t errlen);
void llm_kv_disk_close(llm_kv_disk *d);

/* Bytes of one of k, v of a whole block (n_layers x LLM_KV_BLOCK rows of row_bytes). */
size_t llm_kv_disk_half_bytes(const llm_kv_disk *d);

/*
 * Writes the block after prefix `parent` holding n (1..LLM_KV_BLOCK) tokens
 * with keys k and values v (each laid out as a whole block's:
 * llm_kv_disk_half_bytes, of which the first n rows of every layer are
 * written).  A full block is not rewritten when its file is there already
 * (else it is also linked as the prefix's newest block); a partial one
 * replaces the prefix's newest block.  0 written or present, -1
 * on an I/O error (message in err).
 */
int llm_kv_disk_write(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, int n,
    const void *k, const void *v, char *err, size_t errlen);

/*
 * 1 when there is a file for the full block after `parent` holding
 * tokens[0..LLM_KV_BLOCK) (tokens NULL: for the newest block after it), unchecked:
 * worth a block of memory to read it into.
 */
int llm_kv_disk_has(const llm_kv_disk *d, uint64_t parent, const int32_t *tokens);

/*
 * Reads the full block after `parent` holding tokens[0..LLM_KV_BLOCK) into k
 * and v: 1 read and verified, 0 no file, -1 a file that did not verify
 * (ignored; the reason in why).  k and v are unspecified after 0 or -1.
 */
int llm_kv_disk_read(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, void *k, void *v,
    char *why, size_t whylen);

/*
 * Reads the newest block after `parent` (its .part file) into k and v
 * (whole-block layout) and its token ids into held[LLM_KV_BLOCK] when it
 * shares a head with tokens[0..n): the length of that head (1..LLM_KV_BLOCK;
 * the block holds *n_held >= it), 0 when there is no such file or it holds
 * other tokens, -1 when the file did not verify (the reason in why).
 */
int llm_kv_disk_read_head(llm_kv_disk *d, uint64_t parent, const int32_t *tokens, int n,
    int32_t *held, int *n_held, void *k, void *v, char *why, size_t whylen);

void llm_kv_disk_get_stats(const llm_kv_disk *d, llm_kv_disk_stats *st);

#endif
