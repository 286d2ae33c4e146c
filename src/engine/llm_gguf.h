/*
 * GGUF files (llama.cpp's format, versions 2 and 3), single or split
 * (name-00001-of-00003.gguf), mmap'd read-only and used in place.
 *
 * A GGUF model becomes what the loader reads from a Hugging Face folder:
 *   - its tensors as llm_st_file entries under the Hugging Face names and
 *     shapes (token_embd.weight -> model.embed_tokens.weight, [ne1, ne0]),
 *     the llama architecture's Q/K rows put back from llama.cpp's
 *     interleaved RoPE order (copies; every other tensor stays in place);
 *   - its metadata as the JSON documents config.json, generation_config.json,
 *     tokenizer.json and tokenizer_config.json would hold (llm_gguf_json).
 * Every length, count and tensor range is checked against the file.
 */
#ifndef LLM_GGUF_H
#define LLM_GGUF_H

#include <jansson.h>
#include <stddef.h>

#include "engine/llm_safetensors.h"

/* 1 when path names a GGUF file (by its name: *.gguf) */
int llm_gguf_is_path(const char *path);

typedef struct {
    llm_st_file *files;       /* one per split, tensors renamed and reshaped */
    int          n_files;
    json_t      *meta;        /* key -> value of all splits' key/value pairs */
} llm_gguf;

int llm_gguf_open(llm_gguf *g, const char *path, char *err, size_t errlen);
/* closes the files unless they were taken (files set to NULL by the taker) */
void llm_gguf_close(llm_gguf *g);

/*
 * The document `name` ("config.json", "generation_config.json",
 * "tokenizer.json", "tokenizer_config.json") made from the metadata; NULL
 * with err set when the metadata cannot make it (unsupported architecture
 * or tokenizer model, missing keys).
 */
json_t *llm_gguf_json(const llm_gguf *g, const char *name, char *err, size_t errlen);

/*
 * The JSON document `name` of a model path: a folder's file; for a GGUF
 * file, tokenizer.json / tokenizer_config.json beside it when present, else
 * the document made from its metadata.  NULL with err set on failure;
 * *absent = 1 (and NULL) when a folder has no such file.  flags: json_loadb's.
 */
json_t *llm_model_doc(const char *path, const char *name, size_t flags, int *absent, char *err, size_t errlen);

#endif
