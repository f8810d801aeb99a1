#include "synth_plan.h"

#include <cmath>
#include <numbers>

namespace kvaudit::synth {
namespace {

// From each model's config.json on Hugging Face (meta-llama/Llama-3.2-1B, meta-llama/Llama-3.1-8B):
// num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, max_position_embeddings, rms_norm_eps, rope_theta, rope_scaling
// {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}, tie_word_embeddings.
// `tiny` keeps every code path of the real ones (GQA, llama3 RoPE, untied output, Q6_K and Q4_K
// layers under Q4_K_M, the real vocabulary) at a size a test writes in a second.
constexpr Shape kShapes[] = {
    {"llama-3.2-1b", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 1e-5, 500000.0, 32.0, 1.0, 4.0, 8192, true},
    {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, 131072, 1e-5, 500000.0, 8.0, 1.0, 4.0, 8192, false},
    {"tiny", 2, 256, 4, 2, 64, 512, 128256, 131072, 1e-5, 500000.0, 8.0, 1.0, 4.0, 8192, false},
};

// llama.cpp src/llama-quant.cpp, llama_tensor_get_type_impl (read at ggml-org/llama.cpp 007dbbf):
//   use_more_bits(i, n) = i < n/8 || i >= 7*n/8 || (i - n/8) % 3 == 2
// The counters it is called with (i_attention_wv, i_ffn_down) count tensors in weight_name_comparer
// order, i.e. they equal the layer index for a dense model.
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The type llama_tensor_get_type gives a 2-D weight of a dense llama model (no experts, not 70B,
// no imatrix, no --pure or overrides). 1-D tensors (norms, rope_freqs) are never quantized:
// tensor_allows_quantization needs ggml_n_dims >= 2 and skips "_norm.weight"; the converter wrote
// them f32. The branches that apply:
//   - OUTPUT, or TOKEN_EMBD when the model has no output.weight (has_tied_embeddings): Q6_K
//     unless the default type is Q8_0 ("else if (new_type != GGML_TYPE_Q8_0) new_type = Q6_K").
//   - TOKEN_EMBD of an untied model: the default type (the branch changes only IQ*/TQ/Q2_0 types).
//   - attn_v (category_is_attn_v) under Q4_K_M: Q6_K when use_more_bits(i_attention_wv, n_attention_wv).
//   - ffn_down under Q4_K_M (arch != FALCON): Q6_K when use_more_bits(i_layer, n_layer).
//   - attn_q, attn_k, attn_output, ffn_gate, ffn_up under Q4_K_M or Q8_0: the default type.
//   - F16/BF16 are not quantized types: llama_tensor_get_type returns the default type unchanged
//     ("if (ggml_is_quantized(default_type))"), so every matrix, embeddings included, is f16/bf16.
// Every shape here has rows of a multiple of 256 elements, so tensor_type_fallback never fires.
DType MatrixType(FileType ft, const std::string& role, int layer, int n_layers, bool tied) {
  switch (ft) {
    case FileType::kF16: return DType::kF16;
    case FileType::kBF16: return DType::kBF16;
    case FileType::kQ8_0: return DType::kQ8_0;
    case FileType::kQ4_K_M: break;
  }
  if (role == "output" || (tied && role == "token_embd")) return DType::kQ6_K;
  if ((role == "attn_v" || role == "ffn_down") && UseMoreBits(layer, n_layers)) return DType::kQ6_K;
  return DType::kQ4_K;
}

}  // namespace

const Shape* FindShape(std::string_view name) {
  for (const Shape& s : kShapes) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string ShapeNames() {
  std::string r;
  for (const Shape& s : kShapes) r += (r.empty() ? "" : "|") + std::string(s.name);
  return r;
}

bool ParseFileType(std::string_view s, FileType* out) {
  for (FileType t : {FileType::kQ4_K_M, FileType::kQ8_0, FileType::kF16, FileType::kBF16}) {
    if (s == FileTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

const char* FileTypeName(FileType t) {
  switch (t) {
    case FileType::kQ4_K_M: return "q4_k_m";
    case FileType::kQ8_0: return "q8_0";
    case FileType::kF16: return "f16";
    case FileType::kBF16: return "bf16";
  }
  return "?";
}

uint32_t LlamaFtype(FileType t) {
  switch (t) {
    case FileType::kF16: return 1;
    case FileType::kQ8_0: return 7;
    case FileType::kQ4_K_M: return 15;
    case FileType::kBF16: return 32;
  }
  return 0;
}

uint32_t GgmlTypeId(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ8_0: return 8;
    case DType::kQ4_K: return 12;
    case DType::kQ6_K: return 14;
    case DType::kBF16: return 30;
    default: return UINT32_MAX;  // not produced by PlanTensors
  }
}

uint64_t TensorPlan::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t TensorPlan::bytes() const {
  const DTypeInfo& info = GetDTypeInfo(type);
  return numel() / static_cast<uint64_t>(info.block_elems) * static_cast<uint64_t>(info.block_bytes);
}

std::vector<TensorPlan> PlanTensors(const Shape& s, FileType ft, bool gguf) {
  const int64_t d = s.d_model, q = int64_t{s.n_heads} * s.head_dim, kv = int64_t{s.n_kv_heads} * s.head_dim;
  const int64_t ff = s.d_ff, V = s.vocab;
  const DType norm_type = gguf ? DType::kF32 : (ft == FileType::kF16 ? DType::kF16 : DType::kBF16);
  std::vector<TensorPlan> plan;
  auto add = [&](std::string role, int layer, std::string hf, std::vector<int64_t> shape) {
    const std::string name = (layer < 0 ? "" : "blk." + std::to_string(layer) + ".") + role + ".weight";
    DType t = shape.size() == 1 ? norm_type : MatrixType(ft, role, layer, s.n_layers, s.tied_embeddings);
    if (role == "rope_freqs") t = DType::kF32;
    plan.push_back({name, std::move(hf), std::move(shape), t, std::move(role), layer});
  };
  // Non-block tensors, sorted by GGUF name as weight_name_comparer sorts them.
  if (!s.tied_embeddings) add("output", -1, "lm_head.weight", {V, d});
  add("output_norm", -1, "model.norm.weight", {d});
  if (gguf) add("rope_freqs", -1, "", {s.head_dim / 2});
  add("token_embd", -1, "model.embed_tokens.weight", {V, d});
  for (int i = 0; i < s.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add("attn_k", i, p + "self_attn.k_proj.weight", {kv, d});
    add("attn_norm", i, p + "input_layernorm.weight", {d});
    add("attn_output", i, p + "self_attn.o_proj.weight", {d, q});
    add("attn_q", i, p + "self_attn.q_proj.weight", {q, d});
    add("attn_v", i, p + "self_attn.v_proj.weight", {kv, d});
    add("ffn_down", i, p + "mlp.down_proj.weight", {d, ff});
    add("ffn_gate", i, p + "mlp.gate_proj.weight", {ff, d});
    add("ffn_norm", i, p + "post_attention_layernorm.weight", {d});
    add("ffn_up", i, p + "mlp.up_proj.weight", {ff, d});
  }
  return plan;
}

std::vector<float> RopeFreqDivisors(const Shape& s) {
  // convert_hf_to_gguf.py: freqs = 1 / base^(arange(0, dim, 2) / dim); wavelen = 2*pi/freq;
  // factor 1 below original_ctx/high_freq_factor, `factor` above original_ctx/low_freq_factor,
  // and 1 / ((1 - smooth)/factor + smooth) between, smooth = (original_ctx/wavelen - low)/(high - low).
  const double low_wavelen = s.rope_original_ctx / s.rope_low;
  const double high_wavelen = s.rope_original_ctx / s.rope_high;
  std::vector<float> r;
  for (int i = 0; i < s.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(s.rope_theta, static_cast<double>(i) / s.head_dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      r.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      r.push_back(static_cast<float>(s.rope_factor));
    } else {
      const double smooth = (s.rope_original_ctx / wavelen - s.rope_low) / (s.rope_high - s.rope_low);
      r.push_back(static_cast<float>(1.0 / ((1 - smooth) / s.rope_factor + smooth)));
    }
  }
  return r;
}

}  // namespace kvaudit::synth
