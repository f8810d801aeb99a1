#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/activation.h"
#include "ops/gated_units.h"
#include "ops/ggml/elementwise.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace kvaudit {

Forward::Forward(const Model& model, KvCache& cache, ThreadPool& pool, int context)
    : model_(model),
      c_(model.config()),
      cache_(cache),
      pool_(pool),
      llamacpp_(cache.arithmetic() == EngineArithmetic::kLlamaCpp),
      rope_arithmetic_(llamacpp_ ? RopeArithmetic::kGgml : RopeArithmetic::kTransformers) {
  // A model loaded for tokenizing (an all-remote audit) has no weights: computing with it is a bug.
  KV_CHECK_MSG(model.has_weights(), "Forward over a model loaded without weights (Model::LoadForTokenizing)");
  KV_CHECK_MSG(context > 0 || !c_.rope.is_longrope(), "a LongRoPE model's Forward needs the run's context");
  rope_params_ = c_.rope.ForContext(context);
  if (c_.rope_local) rope_local_params_ = c_.rope_local->ForContext(context);
  const int64_t C = kMaxChunk;
  x_.Resize(C * c_.d_model);
  h_.Resize(C * c_.d_model);
  qkv_.Resize(C * (c_.q_dim() + 2 * c_.kv_dim()));
  q_.Resize(C * c_.q_dim());
  k_.Resize(C * c_.kv_dim());
  kpre_.Resize(C * c_.kv_dim());
  v_.Resize(C * c_.kv_dim());
  attn_.Resize(C * c_.q_dim());
  proj_.Resize(C * c_.d_model);
  if (c_.is_moe()) {
    moe_ = std::make_unique<MoeFfn>(c_, kMaxChunk, llamacpp_);
  } else {
    gu_.Resize(C * 2 * c_.d_ff);
    act_.Resize(C * c_.d_ff);
  }
}

uint64_t Forward::ActivationBytes(const ModelConfig& c) {
  const uint64_t C = kMaxChunk, d = static_cast<uint64_t>(c.d_model), q = static_cast<uint64_t>(c.q_dim()),
                 kv = static_cast<uint64_t>(c.kv_dim());
  const uint64_t ffn = c.is_moe() ? 0 : 3 * static_cast<uint64_t>(c.d_ff);  // gu_ and act_
  const uint64_t floats = C * (3 * d + 2 * q + 2 * kv + q + 3 * kv + ffn);  // x h proj, q attn, k kpre v, qkv
  return floats * sizeof(float) + (c.is_moe() ? MoeFfn::BufferBytes(c, kMaxChunk) : 0);
}

uint64_t Forward::activation_bytes() const {
  uint64_t b = moe_ ? moe_->buffer_bytes() : 0;
  for (const AlignedBuffer* p : {&x_, &h_, &qkv_, &q_, &k_, &kpre_, &v_, &attn_, &proj_, &gu_, &act_}) b += p->bytes();
  return b;
}

void Forward::Run(std::span<const int32_t> tokens, int pos0, float* logits, bool all_logits) {
  const int n = static_cast<int>(tokens.size());
  KV_CHECK(n > 0 && pos0 >= 0);
  for (int32_t t : tokens) KV_CHECK_MSG(t >= 0 && t < c_.vocab_size, "token id out of range");
  if (rope_.max_pos() < pos0 + n) {
    // Grow geometrically so token-by-token decoding rebuilds the table O(log n) times.
    const int max_pos = std::max(pos0 + n, std::max(2 * rope_.max_pos(), 1024));
    rope_ = RopeTable(rope_params_, c_.head_dim, max_pos, rope_arithmetic_);
    if (c_.rope_local) rope_local_ = RopeTable(rope_local_params_, c_.head_dim, max_pos, rope_arithmetic_);
  }
  for (int t0 = 0; t0 < n; t0 += kMaxChunk) {
    const int nc = std::min(kMaxChunk, n - t0);
    const bool last = t0 + nc == n;
    float* out = all_logits ? logits + static_cast<int64_t>(t0) * c_.vocab_size : (last ? logits : nullptr);
    RunChunk(tokens.data() + t0, nc, pos0 + t0, out, all_logits);
  }
}

void Forward::RunChunk(const int32_t* tokens, int n, int pos0, float* logits, bool all_logits) {
  const int d = c_.d_model;
  const WeightView embed = model_.weights().embed.view();
  for (int t = 0; t < n; ++t) WeightRowsToF32(embed, tokens[t], tokens[t] + 1, x_.data() + static_cast<int64_t>(t) * d);
  if (c_.embed_scale) {
    // Gemma: × sqrt(hidden) as an f32 (transformers Gemma2Model's normalizer in the activations'
    // dtype; llama.cpp ggml_scale by sqrtf(n_embd)).
    const float scale = std::sqrt(static_cast<float>(d));
    for (int64_t i = 0; i < static_cast<int64_t>(n) * d; ++i) x_.data()[i] = x_.data()[i] * scale;
  }
  for (int l = 0; l < c_.n_layers; ++l) Layer(l, n, pos0);
  if (!logits) return;
  // Final norm and LM head: every row, or only the last one.
  const int first = all_logits ? 0 : n - 1, rows = n - first;
  const float* xs = x_.data() + static_cast<int64_t>(first) * d;
  Norm(xs, model_.weights().final_norm.data(), h_.data(), rows, d, c_.rms_eps);
  Project(h_.data(), rows, model_.weights().output_matrix(), logits);
  if (c_.final_softcap > 0) {
    // Gemma 2: z -> cap·tanh(z/cap) (transformers Gemma2ForCausalLM; llama.cpp gemma2.cpp).
    const float cap = c_.final_softcap;
    const int64_t total = static_cast<int64_t>(rows) * c_.vocab_size;
    for (int64_t i = 0; i < total; ++i) logits[i] = std::tanh(logits[i] / cap) * cap;
  }
}

// y [n, w.rows()] = x [n, w.cols()] · Wᵀ in the arithmetic the cache's engine computes with.
void Forward::Project(const float* x, int n, const WeightMatrix& w, float* y) {
  if (llamacpp_) return ggml::LlamaCppMatMul(x, n, w, y, pool_);
  MatMul(x, n, w, y, pool_);
}

void Forward::Norm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) const {
  if (llamacpp_) return ggml::RmsNorm(x, w, y, rows, dim, eps);
  RmsNorm(x, w, y, rows, dim, eps);
}

void Forward::GatedSilu(const float* gate, const float* up, float* out, int64_t n) const {
  if (llamacpp_) return ggml::SwiGlu(gate, up, out, n);
  SiluMul(gate, up, out, n);
}

// The attention sublayer, then Ffn.
void Forward::Layer(int layer, int n, int pos0) {
  const LayerWeights& w = model_.weights().layers[layer];
  const int d = c_.d_model, hd = c_.head_dim, qd = c_.q_dim(), kvd = c_.kv_dim();
  const int qkv_w = qd + 2 * kvd;
  float* x = x_.data();
  float* h = h_.data();
  const RopeTable& rope = c_.rope_local && c_.is_sliding(layer) ? rope_local_ : rope_;

  // --- attention block
  pool_.ParallelFor(
      n, 16, [&](int64_t r0, int64_t r1) { Norm(x + r0 * d, w.attn_norm.data(), h + r0 * d, r1 - r0, d, c_.rms_eps); });
  Project(h, n, w.wqkv, qkv_.data());
  pool_.ParallelFor(n, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t t = r0; t < r1; ++t) {
      float* row = qkv_.data() + t * qkv_w;
      if (!w.bqkv.empty()) {
        for (int i = 0; i < qkv_w; ++i) row[i] += w.bqkv.data()[i];
      }
      float* q = q_.data() + t * qd;
      float* k = k_.data() + t * kvd;
      std::memcpy(q, row, sizeof(float) * qd);
      std::memcpy(k, row + qd, sizeof(float) * kvd);
      std::memcpy(v_.data() + t * kvd, row + qd + kvd, sizeof(float) * kvd);
      if (c_.qk_norm) {  // Qwen3Attention: q_norm/k_norm over head_dim, before RoPE
        Norm(q, w.q_norm.data(), q, c_.n_heads, hd, c_.rms_eps);
        Norm(k, w.k_norm.data(), k, c_.n_kv_heads, hd, c_.rms_eps);
      }
      std::memcpy(kpre_.data() + t * kvd, k, sizeof(float) * kvd);
      rope.Apply(q, 1, c_.n_heads, pos0 + static_cast<int>(t));
      rope.Apply(k, 1, c_.n_kv_heads, pos0 + static_cast<int>(t));
    }
  });
  if (kv_observer_) kv_observer_(layer, pos0, n, k_.data(), v_.data());
  cache_.Append(layer, pos0, n, k_.data(), kpre_.data(), v_.data());
  cache_.Attend(layer, pos0, n, q_.data(), attn_.data(), pool_);
  Project(attn_.data(), n, w.wo, proj_.data());
  if (!w.post_attn_norm.empty()) {  // Gemma: the residual adds the normalised attention output
    if (!w.bo.empty()) AddBias(proj_.data(), w.bo.data(), n, d);
    PostNorm(w.post_attn_norm.data(), n);
  }
  for (int64_t t = 0; t < n; ++t) {
    float* xr = x + t * d;
    const float* pr = proj_.data() + t * d;
    if (!w.bo.empty() && w.post_attn_norm.empty()) {
      for (int i = 0; i < d; ++i) xr[i] = xr[i] + (pr[i] + w.bo.data()[i]);
    } else {
      for (int i = 0; i < d; ++i) xr[i] = xr[i] + pr[i];
    }
  }

  Ffn(layer, n, pos0);
}

// proj_ [n, d_model] += bias [d_model].
void Forward::AddBias(float* proj, const float* bias, int n, int d) {
  for (int64_t t = 0; t < n; ++t) {
    for (int i = 0; i < d; ++i) proj[t * d + i] = proj[t * d + i] + bias[i];
  }
}

// Gemma's sandwich norm: proj_ [n, d_model] <- RMSNorm(proj_)·w, in place (RmsNorm reads a row
// whole before writing it).
void Forward::PostNorm(const float* w, int n) {
  const int d = c_.d_model;
  pool_.ParallelFor(n, 16, [&](int64_t r0, int64_t r1) {
    Norm(proj_.data() + r0 * d, w, proj_.data() + r0 * d, r1 - r0, d, c_.rms_eps);
  });
}

// The FFN sublayer: x = x + FFN(RMSNorm(x)·w_ffn), dense SwiGLU or routed experts (model/moe.h).
void Forward::Ffn(int layer, int n, int pos0) {
  const LayerWeights& w = model_.weights().layers[layer];
  const int d = c_.d_model, ff = c_.d_ff;
  float* x = x_.data();
  float* h = h_.data();
  pool_.ParallelFor(
      n, 16, [&](int64_t r0, int64_t r1) { Norm(x + r0 * d, w.ffn_norm.data(), h + r0 * d, r1 - r0, d, c_.rms_eps); });
  if (moe_) {
    moe_->Run(w, h, n, proj_.data(), pool_);
    if (route_observer_) route_observer_(layer, pos0, n, moe_->selected(), moe_->weights());
  } else {
    Project(h, n, w.w_gate_up, gu_.data());
    pool_.ParallelFor(n, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t t = r0; t < r1; ++t) {
        const float* g = gu_.data() + t * 2 * ff;
        if (c_.gelu_ffn) {
          GeluTanhMul(g, g + ff, act_.data() + t * ff, ff);
        } else {
          GatedSilu(g, g + ff, act_.data() + t * ff, ff);
        }
      }
    });
    Project(act_.data(), n, w.w_down, proj_.data());
  }
  if (!w.post_ffn_norm.empty()) PostNorm(w.post_ffn_norm.data(), n);
  const int64_t nd = static_cast<int64_t>(n) * d;
  for (int64_t i = 0; i < nd; ++i) x[i] = x[i] + proj_.data()[i];
}

}  // namespace kvaudit
