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
    {"llama-3.2-1b",    16, 2048, 32, 8, 64, 8192, 128256, 131072, 1e-5, 500000.0, 32.0, 1.0, 4.0, 8192, true,
     SynthArch::kLlama, 0,  0,    0,  0, 0,  0.0},
    {"llama-3.1-8b",    32, 4096, 32, 8, 128, 14336, 128256, 131072, 1e-5, 500000.0, 8.0, 1.0, 4.0, 8192, false,
     SynthArch::kLlama, 0,  0,    0,  0, 0,   0.0},
    {"tiny", 2, 256, 4, 2, 64, 512, 128256, 131072, 1e-5, 500000.0, 8.0, 1.0, 4.0, 8192, false, SynthArch::kLlama,
     0,      0, 0,   0, 0, 0.0},
    // Qwen/Qwen3-30B-A3B: 128 experts of moe_intermediate_size 768, 8 per token (intermediate_size
    // 6144 is written as feed_forward_length, as the converter does; no layer is dense).
    {"qwen3-30b-a3b",      48,  2048, 32,  4, 128, 6144, 151936, 40960, 1e-6, 1000000.0, 1.0, 1.0, 1.0, 0, false,
     SynthArch::kQwen3Moe, 128, 8,    768, 0, 0,   0.0},
    // google/gemma-3-12b-it's text_config: 5 local layers (window 1024, RoPE base 10000) per global
    // one (base 1e6, linear scaling 8), head_dim 256, tied embeddings.
    {"gemma-3-12b",      48, 3840, 16, 8,    256, 15360,  262208, 131072, 1e-6, 1000000.0, 8.0, 1.0, 1.0, 0, true,
     SynthArch::kGemma3, 0,  0,    0,  1024, 6,   10000.0},
    // openai/gpt-oss-20b: 32 experts of 2880, 4 per token, window 128 on even layers, YaRN ×32 over an
    // original 4096, attention biases and sinks, untied output.
    {"gpt-oss-20b",      24, 2880, 64,   8,   64, 2880, 201088, 131072, 1e-5, 150000.0, 32.0, 1.0, 1.0, 4096, false,
     SynthArch::kGptOss, 32, 4,    2880, 128, 2,  0.0},
    // Test sizes of the same code paths, head_dim 64 so that every KV block format fits.
    {"tiny-qwen3moe",      2, 256, 4,   2, 64, 512, 128256, 40960, 1e-6, 1000000.0, 1.0, 1.0, 1.0, 0, false,
     SynthArch::kQwen3Moe, 8, 2,   256, 0, 0,  0.0},
    {"tiny-gemma3",      6, 256, 4, 2,  64, 512,    128256, 131072, 1e-6, 1000000.0, 8.0, 1.0, 1.0, 0, true,
     SynthArch::kGemma3, 0, 0,   0, 64, 6,  10000.0},
    {"tiny-gpt-oss",     2, 256, 4,   2,  64, 256, 128256, 131072, 1e-5, 150000.0, 32.0, 1.0, 1.0, 4096, false,
     SynthArch::kGptOss, 4, 2,   256, 64, 2,  0.0},
};

}  // namespace

const char* SynthArchName(SynthArch a) {
  switch (a) {
    case SynthArch::kLlama: return "llama";
    case SynthArch::kQwen3Moe: return "qwen3moe";
    case SynthArch::kGemma3: return "gemma3";
    case SynthArch::kGptOss: return "gpt-oss";
  }
  return "?";
}

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
  for (FileType t : {FileType::kQ4_K_M, FileType::kQ8_0, FileType::kF16, FileType::kBF16, FileType::kMXFP4_MOE}) {
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
    case FileType::kMXFP4_MOE: return "mxfp4_moe";
  }
  return "?";
}

uint32_t LlamaFtype(FileType t) {
  switch (t) {
    case FileType::kF16: return 1;
    case FileType::kQ8_0: return 7;
    case FileType::kQ4_K_M: return 15;
    case FileType::kBF16: return 32;
    case FileType::kMXFP4_MOE: return 38;
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
    case DType::kMXFP4: return 39;
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
  if (s.arch != SynthArch::kLlama) return PlanMoeOrGemma(s, ft);
  const int64_t d = s.d_model, q = int64_t{s.n_heads} * s.head_dim, kv = int64_t{s.n_kv_heads} * s.head_dim;
  const int64_t ff = s.d_ff, V = s.vocab;
  const DType norm_type = gguf ? DType::kF32 : (ft == FileType::kF16 ? DType::kF16 : DType::kBF16);
  std::vector<TensorPlan> plan;
  auto add = [&](std::string role, int layer, std::string hf, std::vector<int64_t> shape) {
    const std::string name = (layer < 0 ? "" : "blk." + std::to_string(layer) + ".") + role + ".weight";
    DType t = shape.size() == 1 ? norm_type : MatrixType(s, ft, role, layer, false);
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
