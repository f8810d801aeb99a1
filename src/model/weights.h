// ModelWeights: every tensor of the model as f32, dequantized once at load.
//
// Why f32 at load: kvaudit measures how KV-cache formats change the model's output, so the weight
// path must be the same exact reference for every format; dequantizing on the fly would add a
// second source of error and a per-token cost. Memory cost: 4 bytes x parameters (kvq-code-16m:
// 15.7M params = 63 MB, whatever the file's dtype: bf16 shards or q4_k_m GGUF alike). Buffers are
// 64-byte aligned (ops/aligned_buffer.h). q/k/v and gate/up are stored fused so one matmul (one
// pass over the activations, one thread hand-off) computes each pair.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

class GgufFile;
class SafetensorsSet;

struct LayerWeights {
  AlignedBuffer attn_norm;   // [d_model]            input_layernorm / attn_norm
  AlignedBuffer wqkv;        // [q_dim + 2*kv_dim, d_model]  rows: q (HF rotate-half order), k, v
  AlignedBuffer bqkv;        // [q_dim + 2*kv_dim] or empty
  AlignedBuffer q_norm;      // [head_dim] or empty (qwen3)
  AlignedBuffer k_norm;      // [head_dim] or empty (qwen3)
  AlignedBuffer wo;          // [d_model, q_dim]
  AlignedBuffer bo;          // [d_model] or empty
  AlignedBuffer ffn_norm;    // [d_model]            post_attention_layernorm / ffn_norm
  AlignedBuffer w_gate_up;   // [2*d_ff, d_model]    rows: gate, then up
  AlignedBuffer w_down;      // [d_model, d_ff]
};

struct ModelWeights {
  AlignedBuffer embed;       // [vocab, d_model]
  std::vector<LayerWeights> layers;
  AlignedBuffer final_norm;  // [d_model]
  AlignedBuffer lm_head;     // [vocab, d_model]; empty when tied (use embed)

  const float* output_matrix() const { return lm_head.empty() ? embed.data() : lm_head.data(); }
  uint64_t bytes() const;
  // Stored dtype name -> element count, for Describe().
  std::map<std::string, int64_t> source_dtypes;
  int64_t n_params = 0;
};

Expected<ModelWeights> LoadWeightsHf(const SafetensorsSet& st, const ModelConfig& c, const std::string& dir);
Expected<ModelWeights> LoadWeightsGguf(const GgufFile& g, const ModelConfig& c);

// Undoes llama.cpp's Q/K row permutation (convert_hf_to_gguf.py LlamaModel.permute:
// w.reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)): GGUF row h*hd + 2j + t holds HF row
// h*hd + t*hd/2 + j. `w` has rows = n_head*head_dim, cols each (cols = 1 for biases). Exposed for tests.
void UnpermuteGgufQk(float* w, int n_head, int head_dim, int64_t cols);

}  // namespace kvaudit
