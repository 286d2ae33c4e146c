/*
 * MLX affine-quantized safetensors folders (mlx-lm's "-4bit", "-8bit", mixed
 * recipes).  config.json holds
 *     "quantization": {"group_size": 64, "bits": 4,
 *                      "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
 *                      "model.layers.0.self_attn.k_proj": false, ...}
 * (defaults, then per-module overrides; false: that module is not
 * quantized), and every quantized module M has
 *     M.weight  U32 [rows, cols * bits / 32]  the values, an LSB-first bit
 *               stream per row (bits 2, 3, 4, 5, 6, 8)
 *     M.scales, M.biases  F32/F16/BF16 [rows, cols / group_size]
 * with value = scale * q + bias per group of group_size values along a row.
 *
 * At load each quantized weight becomes a block matrix the kernels read
 * (a copy owned by its tensor entry; scales and biases are then unused):
 *   4 bits -> Q4_1, 5 bits -> Q5_1 (d = scale, m = bias as f16) when every
 *             scale and bias of the matrix is exactly an f16, so nothing is
 *             rounded and the matrix stays at 5 / 6 bits per value;
 *   else   -> AQ8 (f32 d, m and q as bytes; 10 bits per value), exact for
 *             every width.
 * Group sizes must be multiples of 32 (MLX's are 32, 64 and 128).
 */
#ifndef LLM_MLX_H
#define LLM_MLX_H

#include <jansson.h>
#include <stddef.h>

#include "engine/llm_safetensors.h"

/*
 * Replace every U32 "*.weight" tensor of the files by its unpacked block
 * matrix; quantization: config.json's "quantization" object.  0, or -1 with
 * err naming the tensor and what is wrong with it.
 */
int llm_mlx_unpack(llm_st_file *files, int n_files, const json_t *quantization, char *err, size_t errlen);

#endif
