#include "support/tiny_llama.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/random_rows.h"

namespace kvaudit::testing {
namespace {

namespace fs = std::filesystem;

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  bool is_norm = false;
};

std::vector<Spec> Tensors(const TinyLlamaShape& s) {
  const int64_t q = int64_t{s.heads} * s.head_dim, kv = int64_t{s.kv_heads} * s.head_dim;
  std::vector<Spec> t = {{"model.embed_tokens.weight", {s.vocab, s.hidden}},
                         {"model.norm.weight", {s.hidden}, true},
                         {"lm_head.weight", {s.vocab, s.hidden}}};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {s.hidden}, true});
    t.push_back({p + "self_attn.q_proj.weight", {q, s.hidden}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, s.hidden}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, s.hidden}});
    t.push_back({p + "self_attn.o_proj.weight", {s.hidden, q}});
    t.push_back({p + "post_attention_layernorm.weight", {s.hidden}, true});
    t.push_back({p + "mlp.gate_proj.weight", {s.ffn, s.hidden}});
    t.push_back({p + "mlp.up_proj.weight", {s.ffn, s.hidden}});
    t.push_back({p + "mlp.down_proj.weight", {s.hidden, s.ffn}});
  }
  return t;
}

nlohmann::json Config(const TinyLlamaShape& s) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", s.hidden},
          {"intermediate_size", s.ffn},
          {"num_attention_heads", s.heads},
          {"num_key_value_heads", s.kv_heads},
          {"head_dim", s.head_dim},
          {"num_hidden_layers", s.layers},
          {"vocab_size", s.vocab},
          {"max_position_embeddings", s.ctx},
          {"rms_norm_eps", 1e-5},
          {"hidden_act", "silu"},
          {"rope_parameters", {{"rope_theta", 10000.0}, {"rope_type", "default"}}},
          {"tie_word_embeddings", false},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"bos_token_id", 0},
          {"eos_token_id", 0},
          {"dtype", "float32"}};
}

uint64_t Elements(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

void WriteF32Safetensors(const fs::path& file, const std::vector<F32Tensor>& tensors) {
  WriteSafetensors(file, tensors, {});
}

void WriteSafetensors(const fs::path& file, const std::vector<F32Tensor>& tensors, const std::vector<RawTensor>& raw) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t off = 0;
  for (const F32Tensor& t : tensors) {
    const uint64_t n = Elements(t.shape);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + 4 * n}}};
    off += 4 * n;
  }
  for (const RawTensor& t : raw) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream f(file, std::ios::binary);
  const uint64_t len = h.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f << h;
  for (const F32Tensor& t : tensors) {
    const std::vector<float> zeros(t.values.empty() ? Elements(t.shape) : 0, 0.0f);
    const std::vector<float>& v = t.values.empty() ? zeros : t.values;
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(4 * v.size()));
  }
  for (const RawTensor& t : raw)
    f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

fs::path WriteTinyLlama(const fs::path& dir, const TinyLlamaShape& shape, const std::function<void(TinyTensors&)>& edit,
                        const std::vector<F32Tensor>& extra) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << Config(shape).dump(2);
  const std::vector<Spec> specs = Tensors(shape);
  TinyTensors values;
  uint64_t seed = shape.seed;
  for (const Spec& t : specs) {
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    const bool embed = t.name == "model.embed_tokens.weight";
    const bool branch = t.name.find("o_proj") != std::string::npos || t.name.find("down_proj") != std::string::npos;
    const float sigma = embed ? shape.embed_std : branch ? shape.branch_std : shape.std;
    values[t.name] = t.is_norm ? std::vector<float>(static_cast<size_t>(cols), 1.0f)
                               : NormalRows(rows, cols, seed++ * 0x9e3779b97f4a7c15ULL, sigma);
  }
  if (edit) edit(values);
  std::vector<F32Tensor> tensors;
  for (const Spec& t : specs) tensors.push_back({t.name, t.shape, std::move(values.at(t.name))});
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  WriteF32Safetensors(dir / "model.safetensors", tensors);
  return dir;
}

void ScaleKeyChannels(TinyTensors& t, const TinyLlamaShape& shape, int layer, const std::vector<int>& channels,
                      float scale) {
  // [kv_heads * head_dim, hidden]
  std::vector<float>& k = t.at("model.layers." + std::to_string(layer) + ".self_attn.k_proj.weight");
  for (int g = 0; g < shape.kv_heads; ++g) {
    for (int c : channels) {
      for (int i = 0; i < shape.hidden; ++i)
        k[static_cast<size_t>((g * shape.head_dim + c) * shape.hidden + i)] *= scale;
    }
  }
}

std::vector<std::vector<int32_t>> RandomWindows(int n, int len, int vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<int32_t>> w(static_cast<size_t>(n));
  for (auto& ids : w) {
    for (int i = 0; i < len; ++i) ids.push_back(static_cast<int32_t>(rng.Below(static_cast<uint32_t>(vocab))));
  }
  return w;
}

}  // namespace kvaudit::testing
