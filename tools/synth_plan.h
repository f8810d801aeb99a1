// What kvaudit-synth-model writes: the shapes of real models (their Hugging Face config.json:
// Llama 3, Qwen3-MoE, Gemma 3, gpt-oss) and, per tensor, the type llama.cpp's quantizer would
// choose for a file type. Plain data; the writers (synth_gguf.h, synth_safetensors.h) only
// serialize a plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/dtype.h"

namespace kvaudit::synth {

// The GGUF architectures the tool writes (llama.cpp's general.architecture).
enum class SynthArch { kLlama, kQwen3Moe, kGemma3, kGptOss };
const char* SynthArchName(SynthArch a);  // "llama", "qwen3moe", "gemma3", "gpt-oss"

// The hyperparameters of one model, as its config.json spells them.
struct Shape {
  std::string_view name;
  int n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab, max_ctx;
  double rms_eps;
  double rope_theta;
  // rope_scaling {rope_type: llama3, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}
  double rope_factor, rope_low, rope_high;
  int rope_original_ctx;
  bool tied_embeddings;
  // Beyond Llama (0 where the architecture has none): experts (Qwen3-MoE, gpt-oss), the sliding
  // window and its layer period (Gemma 3: 6, gpt-oss: 2), the local layers' RoPE base (Gemma 3).
  // rope_factor is linear for Gemma 3 and YaRN for gpt-oss (rope_original_ctx its original context).
  SynthArch arch;
  int n_experts, n_experts_used, expert_ff;
  int sliding_window, swa_period;
  double rope_local_theta;
};

// nullptr when unknown; ShapeNames() lists the known ones ("a|b|c").
const Shape* FindShape(std::string_view name);
std::string ShapeNames();

// --type: a llama.cpp file type. kF16/kBF16 are also the safetensors dtypes. kMXFP4_MOE: expert
// tensors MXFP4, every other matrix Q8_0 (llama-quant.cpp LLAMA_FTYPE_MOSTLY_MXFP4_MOE; what
// ggml-org publishes for gpt-oss).
enum class FileType { kQ4_K_M, kQ8_0, kF16, kBF16, kMXFP4_MOE };
bool ParseFileType(std::string_view s, FileType* out);
const char* FileTypeName(FileType t);  // as --type spells it
// general.file_type: enum llama_ftype (llama.cpp include/llama.h): MOSTLY_F16 = 1, MOSTLY_Q8_0 = 7,
// MOSTLY_Q4_K_M = 15, MOSTLY_BF16 = 32, MOSTLY_MXFP4_MOE = 38.
uint32_t LlamaFtype(FileType t);

// One tensor of the file. shape is outermost first ([rows, cols], as TensorView); GGUF writes it
// reversed (ne[0] = cols).
struct TensorPlan {
  std::string gguf_name;  // llama.cpp's name (token_embd.weight, blk.3.attn_v.weight, ...)
  std::string hf_name;    // transformers' name (model.embed_tokens.weight, ...); empty: GGUF only
  std::vector<int64_t> shape;
  DType type;
  std::string role;   // gguf_name without "blk.N." and ".weight": attn_v, output_norm, attn_v.bias, ...
  int layer;          // -1 for tensors outside the blocks
  bool bias = false;  // a ".bias" tensor (gpt-oss): written as zeros
  uint64_t numel() const;
  uint64_t bytes() const;  // whole blocks (shape[-1] is a multiple of the block size)
};

// The tensors in llama.cpp's order (llama_model_loader's weight_name_comparer: the non-block
// tensors first, then layer by layer, names sorted within each). gguf adds rope_freqs.weight
// (llama3 RoPE, as convert_hf_to_gguf.py writes it); safetensors has no such tensor.
std::vector<TensorPlan> PlanTensors(const Shape& s, FileType t, bool gguf);

// The tensors of the architectures beyond Llama (synth_archs.cc), GGUF only.
std::vector<TensorPlan> PlanMoeOrGemma(const Shape& s, FileType t);
// The type llama_tensor_get_type gives a matrix (synth_archs.cc).
DType MatrixType(const Shape& s, FileType ft, const std::string& role, int layer, bool three_d);

// llama3 RoPE as convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors) stores it: one divisor
// of the default inverse frequency per rotated pair [head_dim/2].
std::vector<float> RopeFreqDivisors(const Shape& s);

// ggml's type id (ggml/include/ggml.h enum ggml_type) of the types a plan uses.
uint32_t GgmlTypeId(DType t);

}  // namespace kvaudit::synth
