// The tensors of the architectures beyond Llama, named and shaped as llama.cpp's loaders want them
// (src/models/qwen3moe.cpp, gemma3.cpp, openai-moe.cpp load_arch_tensors @de3ff815), and the type
// llama.cpp's quantizer gives each matrix.
#include <string>

#include "synth_plan.h"

namespace kvaudit::synth {
namespace {

// llama.cpp src/llama-quant.cpp llama_tensor_get_type_impl @de3ff815:
//   use_more_bits(i, n) = i < n/8 || i >= 7*n/8 || (i - n/8) % 3 == 2
// The counters it is called with (i_attention_wv; ffn_down's layer, parsed from the tensor name
// for MoE models) equal the layer index here.
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

// The branches that apply to these models (no imatrix, --pure or overrides; n_expert is never 8):
//   - 1-D tensors are never quantized (tensor_allows_quantization: ggml_n_dims >= 2), nor the router
//     ffn_gate_inp ("quantize &= name.find("ffn_gate_inp.weight") == npos"): f32, as the converter wrote them.
//   - MXFP4_MOE: 3-D tensors (the experts) MXFP4, every other matrix Q8_0, output and embeddings too.
//   - OUTPUT, or TOKEN_EMBD when tied: Q6_K unless the file type is Q8_0.
//   - attn_v under Q4_K_M: Q6_K when use_more_bits(layer); ffn_down and ffn_down_exps likewise.
//   - everything else: the file type's default (Q4_K for Q4_K_M).
// Every row here is a whole number of 256-element super-blocks, so tensor_type_fallback never fires.
DType MatrixType(const Shape& s, FileType ft, const std::string& role, int layer, bool three_d) {
  if (role == "ffn_gate_inp") return DType::kF32;
  switch (ft) {
    case FileType::kF16: return DType::kF16;
    case FileType::kBF16: return DType::kBF16;
    case FileType::kQ8_0: return DType::kQ8_0;
    case FileType::kMXFP4_MOE: return three_d ? DType::kMXFP4 : DType::kQ8_0;
    case FileType::kQ4_K_M: break;
  }
  if (role == "output" || (s.tied_embeddings && role == "token_embd")) return DType::kQ6_K;
  const bool down = role == "ffn_down" || role == "ffn_down_exps";
  if ((role == "attn_v" || down) && UseMoreBits(layer, s.n_layers)) return DType::kQ6_K;
  return DType::kQ4_K;
}

std::vector<TensorPlan> PlanMoeOrGemma(const Shape& s, FileType ft) {
  const int64_t d = s.d_model, q = int64_t{s.n_heads} * s.head_dim, kv = int64_t{s.n_kv_heads} * s.head_dim;
  const int64_t ff = s.d_ff, E = s.n_experts, eff = s.expert_ff, V = s.vocab, hd = s.head_dim;
  std::vector<TensorPlan> plan;
  auto add = [&](const std::string& role, int layer, std::vector<int64_t> shape, bool bias = false) {
    const std::string name =
        (layer < 0 ? "" : "blk." + std::to_string(layer) + ".") + role + (bias ? ".bias" : ".weight");
    const DType t = shape.size() == 1 || bias ? DType::kF32 : MatrixType(s, ft, role, layer, shape.size() == 3);
    plan.push_back({name, "", std::move(shape), t, bias ? role + ".bias" : role, layer, bias});
  };
  const bool gpt_oss = s.arch == SynthArch::kGptOss, moe = s.n_experts > 0;
  // Non-block tensors, then each layer's, names sorted (llama_model_loader's weight_name_comparer).
  if (!s.tied_embeddings) add("output", -1, {V, d});
  add("output_norm", -1, {d});
  add("token_embd", -1, {V, d});
  for (int i = 0; i < s.n_layers; ++i) {
    add("attn_k", i, {kv, d});
    if (gpt_oss) add("attn_k", i, {kv}, true);
    if (s.arch != SynthArch::kGptOss) add("attn_k_norm", i, {hd});
    add("attn_norm", i, {d});
    add("attn_output", i, {d, q});
    if (gpt_oss) add("attn_output", i, {d}, true);
    add("attn_q", i, {q, d});
    if (gpt_oss) add("attn_q", i, {q}, true);
    if (s.arch != SynthArch::kGptOss) add("attn_q_norm", i, {hd});
    if (gpt_oss) add("attn_sinks", i, {s.n_heads});
    add("attn_v", i, {kv, d});
    if (gpt_oss) add("attn_v", i, {kv}, true);
    if (moe) {
      add("ffn_down_exps", i, {E, d, eff});
      if (gpt_oss) add("ffn_down_exps", i, {E, d}, true);
      add("ffn_gate_exps", i, {E, eff, d});
      if (gpt_oss) add("ffn_gate_exps", i, {E, eff}, true);
      add("ffn_gate_inp", i, {E, d});
      if (gpt_oss) add("ffn_gate_inp", i, {E}, true);
      if (!gpt_oss) add("ffn_norm", i, {d});
      add("ffn_up_exps", i, {E, eff, d});
      if (gpt_oss) add("ffn_up_exps", i, {E, eff}, true);
    } else {
      add("ffn_down", i, {d, ff});
      add("ffn_gate", i, {ff, d});
      add("ffn_norm", i, {d});
      add("ffn_up", i, {ff, d});
    }
    // Gemma's sandwich norms; gpt-oss's pre-FFN norm has this name too.
    if (s.arch == SynthArch::kGemma3 || gpt_oss) add("post_attention_norm", i, {d});
    if (s.arch == SynthArch::kGemma3) add("post_ffw_norm", i, {d});
  }
  return plan;
}

}  // namespace kvaudit::synth
