// ModelWeights: every tensor of the model, loaded once.
//
// GGUF matrices are read in place from the memory-mapped file, in their stored type (f32, f16,
// bf16 or a ggml block format: an 8B q4_k_m model costs its 4.9 GB file, not 32 GB of f32);
// safetensors matrices are copied, bf16/f16 kept as stored, other dtypes converted to f32 (the
// file's offsets need not be aligned). Why this changes no result: every kernel computes with the
// exact f32 value of each weight (16-bit upcast, blocks dequantized with ggml's arithmetic right
// before use) in the canonical accumulation order (ops/weight_matrix.h), so a matrix computes as
// if converted to f32 at load — which WeightLoadOptions::dequantize_at_load still does, for the
// tests that pin this. kvaudit measures how KV-cache formats change the model's output, so the
// weight path must be the same exact reference whatever the weights' storage. Norm weights and
// biases are f32. q/k/v and gate/up are fused (one matmul, one thread hand-off per pair) as parts
// of one matrix, each part in its tensor's type.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "ops/aligned_buffer.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

class GgufFile;
class SafetensorsSet;

// One expert of a mixture-of-experts FFN (model/moe.h): a SiLU-gated MLP of width expert_ff. From
// a GGUF each matrix part views the expert's slice of the 3-D blk.N.ffn_{gate,up,down}_exps tensor
// ([n_expert][n_out][n_in]) in place; from safetensors, each expert's own tensors are copied.
struct ExpertWeights {
  WeightMatrix gate_up;                 // [2*expert_ff, d_model]  rows: gate, then up
  WeightMatrix down;                    // [d_model, expert_ff]
  const float* gate_up_bias = nullptr;  // [2*expert_ff] gate, then up (gpt-oss), or null
  const float* down_bias = nullptr;     // [d_model] (gpt-oss), or null
};

struct LayerWeights {
  AlignedBuffer attn_norm;       // [d_model]            input_layernorm / attn_norm
  WeightMatrix wqkv;             // [q_dim + 2*kv_dim, d_model]  rows: q (HF rotate-half order), k, v
  AlignedBuffer bqkv;            // [q_dim + 2*kv_dim] or empty
  AlignedBuffer q_norm;          // [head_dim] or empty (qwen3)
  AlignedBuffer k_norm;          // [head_dim] or empty (qwen3)
  WeightMatrix wo;               // [d_model, q_dim]
  AlignedBuffer bo;              // [d_model] or empty
  AlignedBuffer post_attn_norm;  // [d_model] or empty  Gemma's norm of the attention output
  AlignedBuffer attn_sinks;      // [n_heads] or empty  gpt-oss's sink logits (copied into the config)
  AlignedBuffer ffn_norm;  // [d_model]            post_attention_layernorm / ffn_norm (gpt-oss: post_attention_norm)
  AlignedBuffer post_ffn_norm;  // [d_model] or empty  Gemma's norm of the FFN output
  WeightMatrix w_gate_up;       // [2*d_ff, d_model]    rows: gate, then up (empty for MoE)
  WeightMatrix w_down;          // [d_model, d_ff]      (empty for MoE)
  // Mixture of experts (n_experts > 0) in place of w_gate_up / w_down:
  WeightMatrix router;                 // [n_experts, d_model]  ffn_gate_inp / mlp.gate
  AlignedBuffer router_bias;           // [n_experts] or empty (gpt-oss)
  AlignedBuffer expert_gate_up_bias;   // [n_experts, 2*expert_ff] or empty: each expert's gate | up biases
  AlignedBuffer expert_down_bias;      // [n_experts, d_model] or empty
  std::vector<ExpertWeights> experts;  // [n_experts]
};

struct WeightLoadOptions {
  // Convert every matrix to f32 at load (owned memory, 4 bytes per parameter), as kvaudit did
  // before packed weights: the reference the packed path is tested bitwise against.
  bool dequantize_at_load = false;
};

struct ModelWeights {
  WeightMatrix embed;  // [vocab, d_model]
  std::vector<LayerWeights> layers;
  AlignedBuffer final_norm;  // [d_model]
  WeightMatrix lm_head;      // [vocab, d_model]; empty when tied (use embed)

  const WeightMatrix& output_matrix() const { return lm_head.empty() ? embed : lm_head; }
  // The memory-mapped files matrices point into (kept alive as long as the weights).
  std::vector<std::shared_ptr<const void>> mappings;
  // f32 copies of tensors read "in place" whose dtype the kernels cannot read (f64) or whose data
  // is misaligned for its element size: matrix parts point into these.
  std::vector<std::unique_ptr<AlignedBuffer>> converted;
  uint64_t bytes() const;
  // Stored dtype name -> element count, for Describe().
  std::map<std::string, int64_t> source_dtypes;
  int64_t n_params = 0;
  // In-memory types of the matrices, e.g. "bf16" or "f32" or "q4_K+q6_K+f32" (for `kvaudit info`).
  std::string storage_summary() const;
};

Expected<ModelWeights> LoadWeightsHf(const SafetensorsSet& st, const ModelConfig& c, const std::string& dir);
Expected<ModelWeights> LoadWeightsGguf(const GgufFile& g, const ModelConfig& c, const WeightLoadOptions& options = {});

// Undoes llama.cpp's Q/K row permutation (convert_hf_to_gguf.py LlamaModel.permute:
// w.reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)): GGUF row h*hd + 2j + t holds HF row
// h*hd + t*hd/2 + j. `w` has rows = n_head*head_dim, cols each (cols = 1 for biases). Exposed for tests.
void UnpermuteGgufQk(float* w, int n_head, int head_dim, int64_t cols);

// One MXFP4 block of a Hugging Face gpt-oss checkpoint (16 bytes of nibbles, element 2k in byte k's
// low nibble and 2k+1 in its high one, plus its E8M0 scale byte) as ggml's 17-byte block_mxfp4
// (scale, then byte j = element j | element j+16 << 4): the same values. Exposed for tests.
void RepackHfMxfp4Block(const uint8_t* hf, uint8_t scale, uint8_t* ggml);

}  // namespace kvaudit
