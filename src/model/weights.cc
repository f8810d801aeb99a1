#include "model/weights.h"

#include <cstring>
#include <functional>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "io/safetensors.h"

namespace kvaudit {

uint64_t ModelWeights::bytes() const {
  uint64_t b = embed.bytes() + final_norm.bytes() + lm_head.bytes();
  for (const LayerWeights& l : layers) {
    for (const AlignedBuffer* p : {&l.attn_norm, &l.wqkv, &l.bqkv, &l.q_norm, &l.k_norm, &l.wo, &l.bo, &l.ffn_norm,
                                   &l.w_gate_up, &l.w_down}) {
      b += p->bytes();
    }
  }
  return b;
}

void UnpermuteGgufQk(float* w, int n_head, int head_dim, int64_t cols) {
  const int half = head_dim / 2;
  std::vector<float> tmp(static_cast<size_t>(head_dim) * cols);  // [head_dim, cols] one head
  for (int h = 0; h < n_head; ++h) {
    float* head = w + static_cast<int64_t>(h) * head_dim * cols;
    std::memcpy(tmp.data(), head, tmp.size() * sizeof(float));
    for (int j = 0; j < half; ++j) {
      for (int t = 0; t < 2; ++t) {
        std::memcpy(head + static_cast<int64_t>(t * half + j) * cols, tmp.data() + static_cast<int64_t>(2 * j + t) * cols,
                    cols * sizeof(float));
      }
    }
  }
}

namespace {

// Resolves names in one file format and copies tensors, converted to f32, into place.
class Loader {
 public:
  Loader(std::function<const TensorView*(const std::string&)> find, std::string source, std::string hint)
      : find_(std::move(find)), source_(std::move(source)), hint_(std::move(hint)) {}

  bool Has(const std::string& name) const { return find_(name) != nullptr; }

  // Checks dtype and exact shape (outermost first), then dequantizes into dst.
  Status Load(const std::string& name, const std::vector<int64_t>& shape, float* dst, ModelWeights& w) const {
    const TensorView* t = find_(name);
    if (!t) return BadInput(source_ + ": missing tensor '" + name + "'; hint: " + hint_);
    if (t->shape != shape) {
      return BadInput(source_ + ": tensor '" + name + "' has shape " + ShapeStr(t->shape) + ", expected " + ShapeStr(shape) +
                      "; hint: the tensor does not match config (check hidden_size, heads, head_dim, intermediate_size, vocab_size)");
    }
    const DTypeInfo& info = GetDTypeInfo(t->dtype);
    if (!info.float_convertible) {
      return BadInput(source_ + ": tensor '" + name + "' has dtype " + std::string(info.name) +
                      ", which cannot be converted to f32; hint: weights must be F32/F16/BF16 or a ggml block type");
    }
    KV_RETURN_IF_ERROR(DequantizeToF32(*t, dst));
    w.source_dtypes[std::string(info.name)] += t->numel();
    w.n_params += t->numel();
    return Status::Ok();
  }

  Status LoadNew(const std::string& name, const std::vector<int64_t>& shape, AlignedBuffer& buf, ModelWeights& w) const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    buf.Resize(n);
    return Load(name, shape, buf.data(), w);
  }

 private:
  static std::string ShapeStr(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }
  std::function<const TensorView*(const std::string&)> find_;
  std::string source_, hint_;
};

// Tensor names of one format; `layer(i, role)` gives per-layer names.
struct Names {
  std::string embed, final_norm, output;
  std::function<std::string(int, const char*)> layer;
};

// Roles: attn_norm q k v o q_norm k_norm ffn_norm gate up down; suffix ".weight"/".bias" added by caller.
Expected<ModelWeights> LoadAll(const Loader& ld, const Names& nm, const ModelConfig& c, bool gguf_llama) {
  ModelWeights w;
  const int64_t d = c.d_model, qd = c.q_dim(), kvd = c.kv_dim(), ff = c.d_ff, V = c.vocab_size, hd = c.head_dim;
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.embed, {V, d}, w.embed, w));
  w.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    LayerWeights& L = w.layers[i];
    auto name = [&](const char* role, const char* suffix) { return nm.layer(i, role) + suffix; };
    KV_RETURN_IF_ERROR(ld.LoadNew(name("attn_norm", ".weight"), {d}, L.attn_norm, w));
    L.wqkv.Resize((qd + 2 * kvd) * d);
    KV_RETURN_IF_ERROR(ld.Load(name("q", ".weight"), {qd, d}, L.wqkv.data(), w));
    KV_RETURN_IF_ERROR(ld.Load(name("k", ".weight"), {kvd, d}, L.wqkv.data() + qd * d, w));
    KV_RETURN_IF_ERROR(ld.Load(name("v", ".weight"), {kvd, d}, L.wqkv.data() + (qd + kvd) * d, w));
    if (gguf_llama) {
      UnpermuteGgufQk(L.wqkv.data(), c.n_heads, c.head_dim, d);
      UnpermuteGgufQk(L.wqkv.data() + qd * d, c.n_kv_heads, c.head_dim, d);
    }
    if (c.attn_qkv_bias) {
      L.bqkv.Resize(qd + 2 * kvd);
      KV_RETURN_IF_ERROR(ld.Load(name("q", ".bias"), {qd}, L.bqkv.data(), w));
      KV_RETURN_IF_ERROR(ld.Load(name("k", ".bias"), {kvd}, L.bqkv.data() + qd, w));
      KV_RETURN_IF_ERROR(ld.Load(name("v", ".bias"), {kvd}, L.bqkv.data() + qd + kvd, w));
      if (gguf_llama) {
        UnpermuteGgufQk(L.bqkv.data(), c.n_heads, c.head_dim, 1);
        UnpermuteGgufQk(L.bqkv.data() + qd, c.n_kv_heads, c.head_dim, 1);
      }
    }
    if (c.qk_norm) {
      KV_RETURN_IF_ERROR(ld.LoadNew(name("q_norm", ".weight"), {hd}, L.q_norm, w));
      KV_RETURN_IF_ERROR(ld.LoadNew(name("k_norm", ".weight"), {hd}, L.k_norm, w));
    }
    KV_RETURN_IF_ERROR(ld.LoadNew(name("o", ".weight"), {d, qd}, L.wo, w));
    if (c.attn_o_bias) KV_RETURN_IF_ERROR(ld.LoadNew(name("o", ".bias"), {d}, L.bo, w));
    KV_RETURN_IF_ERROR(ld.LoadNew(name("ffn_norm", ".weight"), {d}, L.ffn_norm, w));
    L.w_gate_up.Resize(2 * ff * d);
    KV_RETURN_IF_ERROR(ld.Load(name("gate", ".weight"), {ff, d}, L.w_gate_up.data(), w));
    KV_RETURN_IF_ERROR(ld.Load(name("up", ".weight"), {ff, d}, L.w_gate_up.data() + ff * d, w));
    KV_RETURN_IF_ERROR(ld.LoadNew(name("down", ".weight"), {d, ff}, L.w_down, w));
  }
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.final_norm, {d}, w.final_norm, w));
  if (!c.tied_embeddings && ld.Has(nm.output)) KV_RETURN_IF_ERROR(ld.LoadNew(nm.output, {V, d}, w.lm_head, w));
  return w;
}

}  // namespace

Expected<ModelWeights> LoadWeightsHf(const SafetensorsSet& st, const ModelConfig& c, const std::string& dir) {
  Loader ld([&](const std::string& n) { return st.Find(n); }, dir,
            "the checkpoint does not match config.json (architecture " + std::string(ArchName(c.arch)) + ")");
  Names nm;
  nm.embed = "model.embed_tokens.weight";
  nm.final_norm = "model.norm.weight";
  nm.output = "lm_head.weight";
  nm.layer = [](int i, const char* role) {
    static const std::map<std::string, std::string> kRole = {
        {"attn_norm", "input_layernorm"}, {"q", "self_attn.q_proj"}, {"k", "self_attn.k_proj"},
        {"v", "self_attn.v_proj"}, {"o", "self_attn.o_proj"}, {"q_norm", "self_attn.q_norm"},
        {"k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"}, {"gate", "mlp.gate_proj"},
        {"up", "mlp.up_proj"}, {"down", "mlp.down_proj"}};
    return "model.layers." + std::to_string(i) + "." + kRole.at(role);
  };
  return LoadAll(ld, nm, c, /*gguf_llama=*/false);
}

Expected<ModelWeights> LoadWeightsGguf(const GgufFile& g, const ModelConfig& c) {
  Loader ld([&](const std::string& n) { return g.FindTensor(n); }, g.label(),
            "the GGUF does not match its metadata; re-convert with llama.cpp's convert_hf_to_gguf.py");
  Names nm;
  nm.embed = "token_embd.weight";
  nm.final_norm = "output_norm.weight";
  nm.output = "output.weight";
  nm.layer = [](int i, const char* role) {
    static const std::map<std::string, std::string> kRole = {
        {"attn_norm", "attn_norm"}, {"q", "attn_q"}, {"k", "attn_k"}, {"v", "attn_v"}, {"o", "attn_output"},
        {"q_norm", "attn_q_norm"}, {"k_norm", "attn_k_norm"}, {"ffn_norm", "ffn_norm"}, {"gate", "ffn_gate"},
        {"up", "ffn_up"}, {"down", "ffn_down"}};
    return "blk." + std::to_string(i) + "." + kRole.at(role);
  };
  // Only the 'llama' converter permutes Q/K (LlamaModel.modify_tensors); qwen2/qwen3 use NEOX RoPE
  // in llama.cpp, which is already rotate-half.
  return LoadAll(ld, nm, c, /*gguf_llama=*/c.arch == Arch::kLlama);
}

}  // namespace kvaudit
