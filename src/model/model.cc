#include "model/model.h"
#include "model/kv_scales.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/gguf.h"
#include "io/safetensors.h"

namespace kvaudit {

namespace fs = std::filesystem;

namespace {
bool HasGgufMagic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F';
}

enum class ModelPathKind { kHfDir, kGguf };

// What `path` names: a Hugging Face model directory or a GGUF file; anything else is BadInput.
Expected<ModelPathKind> ClassifyModelPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return ModelPathKind::kHfDir;
  if (!fs::is_regular_file(path, ec)) {
    return BadInput(path + ": no such file or directory; hint: pass a Hugging Face model directory or a .gguf file");
  }
  if (!HasGgufMagic(path)) {
    return BadInput(
        path + ": not a model directory or a GGUF file; hint: pass a Hugging Face model directory or a .gguf file");
  }
  return ModelPathKind::kGguf;
}
}  // namespace

Expected<ModelConfig> LoadModelConfig(const std::string& path) {
  KV_ASSIGN_OR_RETURN(ModelPathKind kind, ClassifyModelPath(path));
  if (kind == ModelPathKind::kHfDir) {
    // The checkpoint's k_scale/v_scale are part of what a configuration may name (scale=ckpt): read
    // from the safetensors headers and those small tensors. A directory with config.json alone
    // (shapes for a deployment plan) has none.
    KV_ASSIGN_OR_RETURN(ModelConfig c, ConfigFromHfJson((fs::path(path) / "config.json").string()));
    std::error_code ec;
    const bool tensors = fs::exists(fs::path(path) / "model.safetensors", ec) ||
                         fs::exists(fs::path(path) / "model.safetensors.index.json", ec);
    if (!tensors) return c;
    KV_ASSIGN_OR_RETURN(SafetensorsSet st, SafetensorsSet::OpenDir(path));
    KV_ASSIGN_OR_RETURN(c.kv_scales, ReadCheckpointKvScales(st, c, path));
    return c;
  }
  KV_ASSIGN_OR_RETURN(GgufFile g, GgufFile::Open(path));
  return ConfigFromGguf(g);
}

Expected<std::unique_ptr<Model>> Model::Load(const std::string& path, const WeightLoadOptions& options) {
  return LoadImpl(path, true, options);
}

Expected<std::unique_ptr<Model>> Model::LoadForTokenizing(const std::string& path) { return LoadImpl(path, false, {}); }

Expected<std::unique_ptr<Model>> Model::LoadImpl(const std::string& path, bool weights,
                                                 const WeightLoadOptions& options) {
  auto m = std::make_unique<Model>();
  m->path_ = path;
  std::error_code ec;
  KV_ASSIGN_OR_RETURN(ModelPathKind kind, ClassifyModelPath(path));
  if (kind == ModelPathKind::kHfDir) {
    m->format_ = "safetensors";
    KV_ASSIGN_OR_RETURN(m->config_, ConfigFromHfJson((fs::path(path) / "config.json").string()));
    if (weights) {
      KV_ASSIGN_OR_RETURN(SafetensorsSet st, SafetensorsSet::OpenDir(path));
      KV_ASSIGN_OR_RETURN(m->weights_, LoadWeightsHf(st, m->config_, path));
      KV_ASSIGN_OR_RETURN(m->config_.kv_scales, ReadCheckpointKvScales(st, m->config_, path));
    }
    if (fs::exists(fs::path(path) / "tokenizer.json", ec)) {
      KV_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::FromHfDir(path));
    }
  } else {
    m->format_ = "gguf";
    KV_ASSIGN_OR_RETURN(GgufFile g, GgufFile::Open(path));
    KV_ASSIGN_OR_RETURN(m->config_, ConfigFromGguf(g));
    if (weights) {
      KV_ASSIGN_OR_RETURN(m->weights_, LoadWeightsGguf(g, m->config_, options));
    }
    if (g.Has("tokenizer.ggml.model")) {
      KV_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::FromGguf(g));
    }
  }
  m->has_weights_ = weights;
  if (weights) {
    // gpt-oss's sink logits are weights that shape the attention: the caches read them from the
    // config (kv/attention/chunked_attention.h AttnShapeFor).
    for (const LayerWeights& L : m->weights_.layers) {
      m->config_.attn_sinks.insert(m->config_.attn_sinks.end(), L.attn_sinks.data(),
                                   L.attn_sinks.data() + L.attn_sinks.size());
    }
    KV_RETURN_IF_ERROR(m->config_.Validate(path));
  }
  if (m->tokenizer_ && m->tokenizer_->vocab_size() > m->config_.vocab_size) {
    return BadInput(path + ": tokenizer has " + std::to_string(m->tokenizer_->vocab_size()) +
                    " tokens but the model only " + std::to_string(m->config_.vocab_size) +
                    "; hint: the tokenizer does not belong to this model");
  }
  return m;
}

namespace {
// The per-layer attention: which layers slide and how far, their RoPE, the scale, softcaps, sinks.
std::string DescribeAttention(const ModelConfig& c) {
  std::string s;
  const int n_sliding = c.n_sliding_layers();
  if (n_sliding > 0) {
    s += "sliding window: " + std::to_string(c.sliding_window) + " on " + std::to_string(n_sliding) + " of " +
         std::to_string(c.n_layers) + " layers";
    if (n_sliding < c.n_layers) {
      std::string global;
      for (int l = 0; l < c.n_layers; ++l) {
        if (!c.is_sliding(l)) global += (global.empty() ? "" : ",") + std::to_string(l);
      }
      s += " (global: " + global + ")";
    }
    if (c.rope_local) {
      s += "; local rope: " + std::string(RopeTypeName(c.rope_local->type)) + " theta " +
           std::to_string(static_cast<long long>(c.rope_local->theta));
    }
    s += "\n";
  }
  if (c.attn_scale > 0 || c.attn_softcap > 0 || c.final_softcap > 0 || !c.attn_sinks.empty()) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "attention: scale %g%s%s\n",
                  c.attn_scale > 0 ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim)),
                  c.attn_softcap > 0 ? ("  softcap " + std::to_string(c.attn_softcap)).c_str() : "",
                  !c.attn_sinks.empty() ? "  learned sinks" : "");
    s += buf;
    if (c.final_softcap > 0) s += "final logit softcap: " + std::to_string(c.final_softcap) + "\n";
  }
  return s;
}
}  // namespace

std::string Model::Describe() const {
  const ModelConfig& c = config_;
  std::string dtypes;
  for (const auto& [name, n] : weights_.source_dtypes) {
    dtypes += (dtypes.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  const char* rope = RopeTypeName(c.rope.type);
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "model: %s\nformat: %s\narchitecture: %s\nlayers: %d  hidden: %d  heads: %d  kv_heads: %d  head_dim: "
                "%d  ffn: %d\n"
                "vocab: %d  context: %d  rms_eps: %g  rope: %s theta %g%s%s%s%s\n"
                "parameters: %lld (stored as %s)\nweights in memory: %.1f MiB (%s; %s)\n"
                "tokenizer: %s\n",
                path_.c_str(), format_.c_str(), ArchName(c.arch), c.n_layers, c.d_model, c.n_heads, c.n_kv_heads,
                c.head_dim, c.d_ff, c.vocab_size, c.max_ctx, c.rms_eps, rope, c.rope.theta,
                c.attn_qkv_bias ? "  qkv-bias" : "", c.qk_norm ? "  qk-norm" : "",
                c.tied_embeddings ? "  tied-embeddings" : "", c.sliding_window ? "  sliding-window" : "",
                static_cast<long long>(weights_.n_params), has_weights_ ? dtypes.c_str() : "not loaded",
                weights_.bytes() / 1048576.0, has_weights_ ? weights_.storage_summary().c_str() : "not loaded",
                weights_.mappings.empty() ? "copied from the files, 16-bit kept as stored, the rest as f32"
                                          : "read in place from the memory-mapped file, as stored",
                tokenizer_ ? "yes" : "none");
  std::string s = buf;
  if (c.rope.dims > 0) {
    s += "rotary: the first " + std::to_string(c.rope.dims) + " of " + std::to_string(c.head_dim) +
         " dims of each head (the rest pass through)\n";
  }
  s += DescribeAttention(c);
  if (c.unapplied_sliding_window) {
    s += "sliding window: none (the file declares " + std::to_string(c.unapplied_sliding_window) + "; llama.cpp runs " +
         ArchName(c.arch) + " without it, and so does kvaudit)\n";
  }
  if (c.is_moe()) {
    // Parameters above count every expert; a token runs n_experts_used of them.
    s += "experts: " + std::to_string(c.n_experts) + "  used per token: " + std::to_string(c.n_experts_used) +
         "  expert ffn: " + std::to_string(c.expert_ff) + "  router: " +
         (c.moe_softmax_after_topk
              ? std::string("top-k of the logits (with bias), softmax over the k")
              : std::string("softmax, top-k") + (c.norm_topk ? " renormalised" : " not renormalised")) +
         (c.expert_bias ? "  expert biases" : "") + (c.clamped_swiglu ? "  clamped SwiGLU" : "") + "\n";
  }
  return s;
}

}  // namespace kvaudit
