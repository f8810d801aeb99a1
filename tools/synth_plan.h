// What kvaudit-synth-model writes: the shapes of real Llama models (their Hugging Face config.json)
// and, per tensor, the type llama.cpp's quantizer would choose for a file type. Plain data; the
// writers (synth_gguf.h, synth_safetensors.h) only serialize a plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/dtype.h"

namespace kvaudit::synth {

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
};

// nullptr when unknown; ShapeNames() lists the known ones ("a|b|c").
const Shape* FindShape(std::string_view name);
std::string ShapeNames();

// --type: a llama.cpp file type. kF16/kBF16 are also the safetensors dtypes.
enum class FileType { kQ4_K_M, kQ8_0, kF16, kBF16 };
bool ParseFileType(std::string_view s, FileType* out);
const char* FileTypeName(FileType t);  // as --type spells it
// general.file_type: enum llama_ftype (llama.cpp include/llama.h): MOSTLY_F16 = 1, MOSTLY_Q8_0 = 7,
// MOSTLY_Q4_K_M = 15, MOSTLY_BF16 = 32.
uint32_t LlamaFtype(FileType t);

// One tensor of the file. shape is outermost first ([rows, cols], as TensorView); GGUF writes it
// reversed (ne[0] = cols).
struct TensorPlan {
  std::string gguf_name;  // llama.cpp's name (token_embd.weight, blk.3.attn_v.weight, ...)
  std::string hf_name;    // transformers' name (model.embed_tokens.weight, ...); empty: GGUF only
  std::vector<int64_t> shape;
  DType type;
  std::string role;  // gguf_name without "blk.N." and ".weight": attn_v, output_norm, ...
  int layer;         // -1 for tensors outside the blocks
  uint64_t numel() const;
  uint64_t bytes() const;  // whole blocks (shape[-1] is a multiple of the block size)
};

// The tensors in llama.cpp's order (llama_model_loader's weight_name_comparer: the non-block
// tensors first, then layer by layer, names sorted within each). gguf adds rope_freqs.weight
// (llama3 RoPE, as convert_hf_to_gguf.py writes it); safetensors has no such tensor.
std::vector<TensorPlan> PlanTensors(const Shape& s, FileType t, bool gguf);

// llama3 RoPE as convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors) stores it: one divisor
// of the default inverse frequency per rotated pair [head_dim/2].
std::vector<float> RopeFreqDivisors(const Shape& s);

// ggml's type id (ggml/include/ggml.h enum ggml_type) of the types a plan uses.
uint32_t GgmlTypeId(DType t);

}  // namespace kvaudit::synth
