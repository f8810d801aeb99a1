#include "model/moe.h"

#include <algorithm>
#include <cstring>

#include "ops/activation.h"
#include "ops/gated_units.h"
#include "ops/ggml/elementwise.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "ops/matmul.h"

namespace kvaudit {

MoeFfn::MoeFfn(const ModelConfig& c, int max_tokens, bool llamacpp) : c_(c), llamacpp_(llamacpp) {
  const int64_t C = max_tokens, k = c.n_experts_used;
  probs_.Resize(C * c.n_experts);
  selected_.resize(C * k);
  weights_.Resize(C * k);
  slot_of_.resize(C);
  xin_.Resize(C * c.d_model);
  gu_.Resize(C * 2 * c.expert_ff);
  act_.Resize(C * c.expert_ff);
  eout_.Resize(C * c.d_model);
  slot_out_.Resize(C * k * c.d_model);
}

uint64_t MoeFfn::BufferBytes(const ModelConfig& c, int max_tokens) {
  const uint64_t C = static_cast<uint64_t>(max_tokens), k = static_cast<uint64_t>(c.n_experts_used);
  const uint64_t floats = C * (c.n_experts + k + 2 * c.d_model + 3 * c.expert_ff + k * c.d_model);
  const uint64_t ints = C * (k + 1);
  return floats * sizeof(float) + ints * sizeof(int32_t);
}

uint64_t MoeFfn::buffer_bytes() const {
  uint64_t b = (selected_.size() + slot_of_.size()) * sizeof(int32_t);
  for (const AlignedBuffer* p : {&probs_, &weights_, &xin_, &gu_, &act_, &eout_, &slot_out_}) b += p->bytes();
  return b;
}

void MoeFfn::Run(const LayerWeights& w, const float* h, int n, float* out, ThreadPool& pool) {
  KV_CHECK(static_cast<int64_t>(slot_of_.size()) >= n);
  Route(w, h, n, pool);
  // Experts in ascending index order, each over its tokens in ascending order; which order the
  // experts run in changes no bit (every (token, slot) output has its own row of slot_out_).
  for (int e = 0; e < c_.n_experts; ++e) RunExpert(w.experts[e], e, h, n, pool);
  Combine(n, out, pool);
}

void MoeFfn::Router(const float* x, int n, const WeightMatrix& w, float* y, ThreadPool& pool) const {
  if (llamacpp_) return ggml::LlamaCppMatMul(x, n, w, y, pool);
  MatMul(x, n, w, y, pool);
}

void MoeFfn::Expert(const float* x, int n, const WeightMatrix& w, float* y, ThreadPool& pool) const {
  if (llamacpp_) return ggml::LlamaCppMatMulEachRow(x, n, w, y, pool);
  MatMul(x, n, w, y, pool);
}

void MoeFfn::Route(const LayerWeights& w, const float* h, int n, ThreadPool& pool) {
  const int ne = c_.n_experts, k = c_.n_experts_used;
  Router(h, n, w.router, probs_.data(), pool);  // [n, n_experts] router logits
  pool.ParallelFor(n, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (!w.router_bias.empty()) {
        float* r = probs_.data() + t * ne;
        for (int e = 0; e < ne; ++e) r[e] = r[e] + w.router_bias.data()[e];
      }
      RouteToken(probs_.data() + t * ne, selected_.data() + t * k, weights_.data() + t * k);
    }
  });
}

// One token: softmax over all experts (llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX, and
// transformers' softmax before topk), then the k best by repeated arg-max with a strict '>' over
// ascending indices, so a tie goes to the lower expert index. probs [n_experts] is overwritten.
// gpt-oss (moe_softmax_after_topk): the same selection on the raw logits, then the weights are a
// softmax over the k selected logits (llama.cpp LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT;
// transformers GptOssTopKRouter: topk, then softmax over the top values).
void MoeFfn::RouteToken(float* probs, int32_t* sel, float* wts) const {
  const int ne = c_.n_experts, k = c_.n_experts_used;
  if (!c_.moe_softmax_after_topk) Softmax(probs, ne);
  float sum = 0;  // in slot order, as llama.cpp's ggml_sum_rows over the k selected weights
  for (int s = 0; s < k; ++s) {
    int best = -1;
    for (int e = 0; e < ne; ++e) {
      if (std::find(sel, sel + s, e) != sel + s) continue;
      if (best < 0 || probs[e] > probs[best]) best = e;
    }
    sel[s] = best;
    wts[s] = probs[best];
    sum += wts[s];
  }
  if (c_.moe_softmax_after_topk) {
    Softmax(wts, k);
    return;
  }
  if (!c_.norm_topk) return;
  // build_moe_ffn clamps the sum at the smallest normal f16 (6.103515625e-5) before dividing.
  sum = std::max(sum, 6.103515625e-5f);
  for (int s = 0; s < k; ++s) wts[s] = wts[s] / sum;
}

// Expert e over the tokens routed to it: gathers their inputs, runs gate|up, SwiGLU and down, and
// scatters each output row to its (token, slot) row of slot_out_.
void MoeFfn::RunExpert(const ExpertWeights& ex, int e, const float* h, int n, ThreadPool& pool) {
  const int d = c_.d_model, ff = c_.expert_ff, k = c_.n_experts_used;
  int m = 0;
  for (int t = 0; t < n; ++t) {
    for (int s = 0; s < k; ++s) {
      if (selected_[t * k + s] != e) continue;
      std::memcpy(xin_.data() + static_cast<int64_t>(m) * d, h + static_cast<int64_t>(t) * d, sizeof(float) * d);
      slot_of_[m++] = t * k + s;
    }
  }
  if (m == 0) return;
  Expert(xin_.data(), m, ex.gate_up, gu_.data(), pool);
  pool.ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* g = gu_.data() + r * 2 * ff;
      if (ex.gate_up_bias) {
        for (int i = 0; i < 2 * ff; ++i) g[i] = g[i] + ex.gate_up_bias[i];
      }
      if (c_.clamped_swiglu) {
        ClampedSwigluMul(g, g + ff, act_.data() + r * ff, ff);  // ggml's swiglu_oai computes the same
      } else if (llamacpp_) {
        ggml::SwiGlu(g, g + ff, act_.data() + r * ff, ff);
      } else {
        SiluMul(g, g + ff, act_.data() + r * ff, ff);
      }
    }
  });
  Expert(act_.data(), m, ex.down, eout_.data(), pool);
  if (ex.down_bias) {
    for (int64_t r = 0; r < m; ++r) {
      float* y = eout_.data() + r * d;
      for (int i = 0; i < d; ++i) y[i] = y[i] + ex.down_bias[i];
    }
  }
  for (int r = 0; r < m; ++r) {
    std::memcpy(slot_out_.data() + static_cast<int64_t>(slot_of_[r]) * d, eout_.data() + static_cast<int64_t>(r) * d,
                sizeof(float) * d);
  }
}

// out[t] = w_0·y_0 + w_1·y_1 + ... over the token's slots, best first, left to right (llama.cpp
// build_moe_ffn scales each expert's output by its weight, then adds the experts' views in slot order).
void MoeFfn::Combine(int n, float* out, ThreadPool& pool) const {
  const int d = c_.d_model, k = c_.n_experts_used;
  pool.ParallelFor(n, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out + t * d;
      const float* wt = weights_.data() + t * k;
      const float* y = slot_out_.data() + t * k * d;
      for (int i = 0; i < d; ++i) o[i] = wt[0] * y[i];
      for (int s = 1; s < k; ++s) {
        for (int i = 0; i < d; ++i) o[i] = o[i] + wt[s] * y[static_cast<int64_t>(s) * d + i];
      }
    }
  });
}

}  // namespace kvaudit
