/*
 * gpt-oss (GptOssForCausalLM) experts as its checkpoints store them, brought
 * into the layout the engine binds (llm_model.c's stacked gate_proj / up_proj
 * / down_proj, as for GGUF experts).
 *
 * A checkpoint has, per layer L, under model.layers.L.mlp.experts.:
 *   gate_up_proj       F32/F16/BF16 [E][H][2I]  transposed (input rows), gate and
 *                      up interleaved along the last axis: gate i = column 2i,
 *                      up i = column 2i+1
 *   down_proj          [E][I][H]  transposed
 * or, quantized (config.json "quantization_config": {"quant_method": "mxfp4"}),
 *   gate_up_proj_blocks U8 [E][2I][H/32][16], gate_up_proj_scales U8 [E][2I][H/32]
 *                      (rows interleaved: row 2i gate i, row 2i+1 up i)
 *   down_proj_blocks   U8 [E][H][I/32][16],  down_proj_scales U8 [E][H][I/32]
 *                      (MXFP4: two E2M1 codes a byte, E8M0 scale per 32 values)
 * and always gate_up_proj_bias [E][2I] (interleaved) and down_proj_bias [E][H].
 *
 * After llm_gptoss_unpack the files hold, per layer (owned copies):
 *   gate_proj, up_proj [E][I][H] and down_proj [E][H][I] (a float down_proj
 *   is replaced in place) in the checkpoint's float type, or as MXFP4 blocks
 *   (the values do not change), and gate_bias, up_bias [E*I] and down_bias
 *   [E*H] (F32): what walk_moe binds for gpt-oss.
 */
#ifndef LLM_GPTOSS_H
#define LLM_GPTOSS_H

#include <stddef.h>

#include "engine/llm_safetensors.h"

/*
 * prefix: of the text model's tensors ("model."); H hidden, I intermediate,
 * E experts, as config.json says.  0, or -1 with err naming the tensor.
 */
int llm_gptoss_unpack(llm_st_file *files, int n_files, const char *prefix, int n_layers, int H, int I, int E,
    char *err, size_t errlen);

#endif
