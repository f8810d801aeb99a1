#include "support/gguf_as_hf.h"

#include <fstream>
#include <map>

#include "base/status.h"
#include "io/dequantize.h"

namespace kvaudit::testing {

namespace fs = std::filesystem;

F32Tensor GgufAsHf(const GgufFile& gguf, const std::string& gguf_name, const std::string& hf_name, bool minus_one) {
  const TensorView* t = gguf.FindTensor(gguf_name);
  KV_CHECK_MSG(t != nullptr, gguf_name.c_str());
  F32Tensor out{hf_name, t->shape, std::vector<float>(t->numel())};
  KV_CHECK(DequantizeToF32(*t, out.values.data()).ok());
  if (minus_one) {
    for (float& v : out.values) v = v - 1.0f;
  }
  return out;
}

fs::path WritePhi3AsHf(const fs::path& gguf_path, const fs::path& dir, const std::string& rope) {
  auto gguf = GgufFile::Open(gguf_path.string());
  KV_CHECK_MSG(gguf.ok(), gguf.ok() ? "" : gguf.error().message.c_str());
  const std::map<std::string, std::string> kLayer = {
      {"attn_norm", "input_layernorm"},         {"attn_qkv", "self_attn.qkv_proj"}, {"attn_output", "self_attn.o_proj"},
      {"ffn_norm", "post_attention_layernorm"}, {"ffn_up", "mlp.gate_up_proj"},     {"ffn_down", "mlp.down_proj"}};
  std::vector<F32Tensor> tensors;
  auto add = [&](const std::string& gguf_name, const std::string& hf_name) {
    tensors.push_back(GgufAsHf(*gguf, gguf_name, hf_name));
  };
  add("token_embd.weight", "model.embed_tokens.weight");
  add("output_norm.weight", "model.norm.weight");
  add("output.weight", "lm_head.weight");
  for (int i = 0; i < 3; ++i) {
    for (const auto& [g, h] : kLayer)
      add("blk." + std::to_string(i) + "." + g + ".weight", "model.layers." + std::to_string(i) + "." + h + ".weight");
  }
  fs::create_directories(dir);
  WriteF32Safetensors(dir / "model.safetensors", tensors);
  std::ofstream(dir / "config.json") << R"({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"],
    "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": false, "hidden_act": "silu", "sliding_window": null, )"
                                     << rope << "}";
  return dir;
}

}  // namespace kvaudit::testing
