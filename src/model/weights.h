// ModelWeights: every tensor of the model, loaded once.
//
// Matrices keep a 16-bit file dtype (bf16 or f16) as stored; everything else (f32 files, GGUF
// block formats, and fused matrices whose parts differ in dtype) is dequantized to f32 at load.
// Why: kvaudit measures how KV-cache formats change the model's output, so the weight path must be
// the same exact reference for every format. A 16-bit weight upcasts to f32 exactly inside the
// kernels (ops/weight_matrix.h), so keeping it 16-bit changes no result, halves the memory (kvq-
// code-16m: 31 MB instead of 63 MB) and halves the bytes a decoded token reads. Norm weights and
// biases are f32. Buffers are 64-byte aligned. q/k/v and gate/up are stored fused so one matmul
// (one pass over the activations, one thread hand-off) computes each pair.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "ops/aligned_buffer.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

class GgufFile;
class SafetensorsSet;

struct LayerWeights {
  AlignedBuffer attn_norm;   // [d_model]            input_layernorm / attn_norm
  WeightMatrix wqkv;         // [q_dim + 2*kv_dim, d_model]  rows: q (HF rotate-half order), k, v
  AlignedBuffer bqkv;        // [q_dim + 2*kv_dim] or empty
  AlignedBuffer q_norm;      // [head_dim] or empty (qwen3)
  AlignedBuffer k_norm;      // [head_dim] or empty (qwen3)
  WeightMatrix wo;           // [d_model, q_dim]
  AlignedBuffer bo;          // [d_model] or empty
  AlignedBuffer ffn_norm;    // [d_model]            post_attention_layernorm / ffn_norm
  WeightMatrix w_gate_up;    // [2*d_ff, d_model]    rows: gate, then up
  WeightMatrix w_down;       // [d_model, d_ff]
};

struct ModelWeights {
  WeightMatrix embed;        // [vocab, d_model]
  std::vector<LayerWeights> layers;
  AlignedBuffer final_norm;  // [d_model]
  WeightMatrix lm_head;      // [vocab, d_model]; empty when tied (use embed)

  WeightView output_matrix() const { return lm_head.empty() ? embed.view() : lm_head.view(); }
  uint64_t bytes() const;
  // Stored dtype name -> element count, for Describe().
  std::map<std::string, int64_t> source_dtypes;
  int64_t n_params = 0;
  // In-memory dtype of the matrices, e.g. "bf16" or "f32" or "f16+f32" (for `kvaudit info`).
  std::string storage_summary() const;
};

Expected<ModelWeights> LoadWeightsHf(const SafetensorsSet& st, const ModelConfig& c, const std::string& dir);
Expected<ModelWeights> LoadWeightsGguf(const GgufFile& g, const ModelConfig& c);

// Undoes llama.cpp's Q/K row permutation (convert_hf_to_gguf.py LlamaModel.permute:
// w.reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)): GGUF row h*hd + 2j + t holds HF row
// h*hd + t*hd/2 + j. `w` has rows = n_head*head_dim, cols each (cols = 1 for biases). Exposed for tests.
void UnpermuteGgufQk(float* w, int n_head, int head_dim, int64_t cols);

}  // namespace kvaudit
