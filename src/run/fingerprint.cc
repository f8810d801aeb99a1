#include "run/fingerprint.h"

#include <cstdio>
#include <cstring>

#include "model/model.h"

namespace kvaudit {

uint64_t HashBytes(const void* data, size_t n, uint64_t seed) {
  // FNV-1a over 8-byte words with a final avalanche: fast enough to hash every weight (~60 MB for
  // the bundled model in tens of milliseconds).
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

namespace {

// The config numbers and the RoPE frequencies: the first part of both model hashes.
uint64_t HashConfig(const ModelConfig& c) {
  const int64_t numbers[] = {static_cast<int64_t>(c.arch),
                             c.n_layers,
                             c.d_model,
                             c.n_heads,
                             c.n_kv_heads,
                             c.head_dim,
                             c.d_ff,
                             c.vocab_size,
                             c.max_ctx,
                             c.attn_qkv_bias,
                             c.attn_o_bias,
                             c.qk_norm,
                             c.tied_embeddings,
                             c.sliding_window,
                             c.bos_id,
                             c.eos_id};
  uint64_t h = HashBytes(numbers, sizeof(numbers), 1);
  if (c.is_moe()) {  // dense models keep the hashes they had before experts existed
    const int64_t moe[] = {c.n_experts, c.n_experts_used, c.expert_ff, c.norm_topk};
    h = HashBytes(moe, sizeof(moe), h);
  }
  // Per-layer attention and the Gemma / gpt-oss blocks: hashed only where a model has them, so the
  // other models keep their hashes.
  if (!c.sliding_layers.empty()) h = HashBytes(c.sliding_layers.data(), c.sliding_layers.size(), h);
  const float attn[] = {c.attn_scale, c.attn_softcap, c.final_softcap};
  const int64_t blocks[] = {c.sandwich_norms,         c.embed_scale, c.gelu_ffn,
                            c.moe_softmax_after_topk, c.expert_bias, c.clamped_swiglu};
  const bool extra = attn[0] != 0 || attn[1] != 0 || attn[2] != 0 || c.sandwich_norms || c.embed_scale || c.gelu_ffn ||
                     c.moe_softmax_after_topk || c.expert_bias || c.clamped_swiglu;
  if (extra) h = HashBytes(blocks, sizeof(blocks), HashBytes(attn, sizeof(attn), h));
  if (!c.attn_sinks.empty()) h = HashBytes(c.attn_sinks.data(), c.attn_sinks.size() * sizeof(float), h);
  if (c.rope.attn_factor != 1.0) h = HashBytes(&c.rope.attn_factor, sizeof(c.rope.attn_factor), h);
  if (c.rope_local) {
    const std::vector<float> local = RopeInvFreq(*c.rope_local, c.head_dim);  // [head_dim/2]
    h = HashBytes(local.data(), local.size() * sizeof(float), h);
  }
  h = HashBytes(&c.rms_eps, sizeof(c.rms_eps), h);
  if (c.rope.is_longrope()) {  // both sets and what decides between them; the run's context is the run's
    h = HashBytes(c.rope.long_factors.data(), c.rope.long_factors.size() * sizeof(float), h);
    h = HashBytes(&c.rope.original_max_position_embeddings, sizeof(int), h);
  }
  // LongRoPE: the short set here (context 0), the long one above.
  const std::vector<float> inv_freq = RopeInvFreq(c.rope.ForContext(0), c.head_dim);  // [head_dim/2]
  return HashBytes(inv_freq.data(), inv_freq.size() * sizeof(float), h);
}

}  // namespace

uint64_t HashModel(const Model& model) {
  uint64_t h = HashConfig(model.config());
  const ModelWeights& w = model.weights();
  // Weight bytes as held in memory (the stored type: bf16/f16/f32 or GGUF blocks), plus the type, so
  // a checkpoint re-saved with other dtypes but equal values still matches only if equal as loaded.
  auto add = [&h](const void* data, uint64_t bytes, int tag) {
    h = HashBytes(&tag, sizeof(tag), h);
    h = HashBytes(data, bytes, h);
  };
  auto buf = [&add](const AlignedBuffer& b) { add(b.data(), b.bytes(), -1); };
  // A matrix: its type tag, then each part's rows in the order the kernels read them (a row map
  // of GGUF Q/K rows hashes row by row; a plain part, as one block of bytes).
  auto mat = [&add, &h](const WeightMatrix& m) {
    const int tag = static_cast<int>(m.type());
    for (const WeightView& p : m.parts()) {
      if (!p.row_map) {
        add(p.data, static_cast<uint64_t>(p.rows) * p.row_bytes(), tag);
        continue;
      }
      h = HashBytes(&tag, sizeof(tag), h);
      for (int64_t r = 0; r < p.rows; ++r) h = HashBytes(p.row(r), p.row_bytes(), h);
    }
  };
  mat(w.embed);
  buf(w.final_norm);
  mat(w.lm_head);
  for (const LayerWeights& l : w.layers) {
    buf(l.attn_norm), mat(l.wqkv), buf(l.bqkv), buf(l.q_norm), buf(l.k_norm), mat(l.wo), buf(l.bo);
    buf(l.ffn_norm), mat(l.w_gate_up), mat(l.w_down);
    if (l.experts.empty()) continue;
    mat(l.router);
    for (const ExpertWeights& e : l.experts) mat(e.gate_up), mat(e.down);
  }
  return h;
}

uint64_t HashModelConfigTokenizer(const Model& model) {
  uint64_t h = HashBytes("config+tokenizer", 16, HashConfig(model.config()));
  if (const Tokenizer* tok = model.tokenizer()) {
    tok->Digest([&h](const void* data, size_t bytes) { h = HashBytes(data, bytes, h); });
  }
  return h;
}

ModelIdentity IdentifyModel(const Model& model) {
  if (model.has_weights()) return {HexHash(HashModel(model)), kHashKindWeights};
  return {HexHash(HashModelConfigTokenizer(model)), kHashKindConfigTokenizer};
}

uint64_t HashWindows(const std::vector<std::vector<int32_t>>& windows) {
  uint64_t h = HashBytes(nullptr, 0, windows.size());
  for (const auto& w : windows) {
    const uint64_t n = w.size();
    h = HashBytes(&n, sizeof(n), h);  // window boundaries matter, not just the concatenation
    h = HashBytes(w.data(), w.size() * sizeof(int32_t), h);
  }
  return h;
}

std::string HexHash(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace kvaudit
