#include "kv/attention/chunked_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/hadamard.h"

namespace kvaudit {

namespace {
constexpr int kTokenBlock = 8;  // prefill tokens per work item (x one KV head)
}  // namespace

AttnShape AttnShapeFor(const ModelConfig& c, int layer) {
  AttnShape s;
  s.head_dim = c.head_dim;
  s.group = c.n_heads / c.n_kv_heads;
  s.window = c.layer_window(layer);
  s.scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  s.softcap = c.attn_softcap;
  if (!c.attn_sinks.empty()) s.sinks = c.attn_sinks.data() + static_cast<int64_t>(layer) * c.n_heads;
  return s;
}

LayerAttnShapes::LayerAttnShapes(const ModelConfig& c) : sinks_(c.attn_sinks) {
  for (int l = 0; l < c.n_layers; ++l) {
    shapes_.push_back(AttnShapeFor(c, l));
    if (!sinks_.empty()) shapes_.back().sinks = sinks_.data() + static_cast<int64_t>(l) * c.n_heads;
  }
}

void MergeChunks(const PartialRow* part, int64_t part_stride, const float* o_parts, int64_t o_stride, int n_chunks,
                 int hd, float sink, float* out) {
  float M = sink;
  for (int c = 0; c < n_chunks; ++c) {
    if (part[c * part_stride].l != 0) M = std::max(M, part[c * part_stride].m);
  }
  std::fill(out, out + hd, 0.0f);
  float L = 0;
  for (int c = 0; c < n_chunks; ++c) {
    const PartialRow pr = part[c * part_stride];
    if (pr.l == 0) continue;
    const float w = std::exp(pr.m - M);
    L += pr.l * w;
    const float* oc = o_parts + c * o_stride;
    for (int d = 0; d < hd; ++d) out[d] += oc[d] * w;
  }
  if (sink != -std::numeric_limits<float>::infinity()) L += std::exp(sink - M);
  for (int d = 0; d < hd; ++d) out[d] = out[d] / L;
}

void ChunkedAttention::GatherQ(const float* q, int g, int t0, int nt, bool rotate, float* qs) const {
  const int G = s_.group, hd = s_.head_dim;
  for (int t = 0; t < nt; ++t) {
    for (int j = 0; j < G; ++j) {
      const float* src = q + ((static_cast<int64_t>(t0 + t) * n_heads_) + g * G + j) * hd;
      float* dst = qs + (static_cast<int64_t>(t) * G + j) * hd;
      if (rotate) {
        std::memcpy(dst, src, sizeof(float) * hd);
        HadamardRows(dst, 1, hd, hd);
        for (int d = 0; d < hd; ++d) dst[d] *= s_.scale;
      } else {
        for (int d = 0; d < hd; ++d) dst[d] = src[d] * s_.scale;
      }
    }
  }
}

void ChunkedAttention::ScatterO(float* o, int g, int t0, int nt, bool rotate, float* out) const {
  const int G = s_.group, hd = s_.head_dim;
  if (rotate) HadamardRows(o, static_cast<int64_t>(nt) * G, hd, hd);
  for (int t = 0; t < nt; ++t) {
    for (int j = 0; j < G; ++j) {
      std::memcpy(out + ((static_cast<int64_t>(t0 + t) * n_heads_) + g * G + j) * hd,
                  o + (static_cast<int64_t>(t) * G + j) * hd, sizeof(float) * hd);
    }
  }
}

void ChunkedAttention::EnsureScratch(int n_threads, int64_t floats) {
  if (static_cast<int>(scratch_.size()) < n_threads) scratch_.resize(n_threads);
  for (AlignedBuffer& b : scratch_) {
    if (b.size() < floats) b.Resize(floats);
  }
}

float ChunkedAttention::Sink(int g, int j) const {
  return s_.sinks ? s_.sinks[g * s_.group + j] : -std::numeric_limits<float>::infinity();
}

void ChunkedAttention::Attend(const AttnShape& shape, int pos0, int n, const float* q, float* out, ThreadPool& pool,
                              const ChunkKernel& kernel, const std::function<bool(int)>& rot_q,
                              const std::function<bool(int)>& rot_o) {
  s_ = shape;
  if (n <= kDecodeMaxTokens) {
    Decode(pos0, n, q, out, pool, kernel, rot_q, rot_o);
  } else {
    Prefill(pos0, n, q, out, pool, kernel, rot_q, rot_o);
  }
}

void ChunkedAttention::Decode(int pos0, int n, const float* q, float* out, ThreadPool& pool, const ChunkKernel& kernel,
                              const std::function<bool(int)>& rot_q, const std::function<bool(int)>& rot_o) {
  const int G = s_.group, hd = s_.head_dim, rows = n * G;
  const int c_begin = FirstKey(s_, pos0) / kKeyChunk, c_end = (pos0 + n - 1) / kKeyChunk + 1;
  const int n_chunks = c_end - c_begin, n_items = n_kv_ * n_chunks;
  dq_.resize(static_cast<size_t>(n_kv_) * rows * hd);         // [n_kv, rows, hd] scaled queries
  dpart_o_.resize(static_cast<size_t>(n_items) * rows * hd);  // [n_kv, n_chunks, rows, hd]
  dpart_.resize(static_cast<size_t>(n_items) * rows);         // [n_kv, n_chunks, rows]
  dout_.resize(static_cast<size_t>(rows) * hd);               // [rows, hd] one KV head's outputs
  for (int g = 0; g < n_kv_; ++g) GatherQ(q, g, 0, n, rot_q(g), dq_.data() + static_cast<int64_t>(g) * rows * hd);
  EnsureScratch(pool.size(), static_cast<int64_t>(G) * kKeyChunk);
  pool.ForEachItem(n_items, [&](int item, int thread) {
    const int g = item / n_chunks, c = c_begin + item % n_chunks;
    kernel(g, dq_.data() + static_cast<int64_t>(g) * rows * hd, n, pos0, c * kKeyChunk, (c + 1) * kKeyChunk,
           dpart_o_.data() + static_cast<int64_t>(item) * rows * hd, dpart_.data() + static_cast<int64_t>(item) * rows,
           scratch_[thread].data());
  });
  for (int g = 0; g < n_kv_; ++g) {
    const int64_t first = static_cast<int64_t>(g) * n_chunks * rows;  // item (g, chunk 0)
    for (int r = 0; r < rows; ++r) {
      MergeChunks(dpart_.data() + first + r, rows, dpart_o_.data() + (first + r) * hd, static_cast<int64_t>(rows) * hd,
                  n_chunks, hd, Sink(g, r % G), dout_.data() + static_cast<int64_t>(r) * hd);
    }
    ScatterO(dout_.data(), g, 0, n, rot_o(g), out);
  }
}

void ChunkedAttention::Prefill(int pos0, int n, const float* q, float* out, ThreadPool& pool, const ChunkKernel& kernel,
                               const std::function<bool(int)>& rot_q, const std::function<bool(int)>& rot_o) {
  const int G = s_.group, hd = s_.head_dim, n_blocks = (n + kTokenBlock - 1) / kTokenBlock;
  const int max_chunks = (pos0 + n - 1) / kKeyChunk + 1;
  const int64_t rows = static_cast<int64_t>(kTokenBlock) * G;
  // Per thread: qs [rows, hd], o [rows, hd], scores [G, kKeyChunk], o_parts [max_chunks, G, hd].
  const int64_t per_thread =
      2 * rows * hd + static_cast<int64_t>(G) * kKeyChunk + static_cast<int64_t>(max_chunks) * G * hd;
  EnsureScratch(pool.size(), per_thread);
  if (static_cast<int>(pparts_.size()) < pool.size()) pparts_.resize(pool.size());
  for (auto& p : pparts_) p.resize(static_cast<size_t>(max_chunks) * G);
  pool.ForEachItem(n_kv_ * n_blocks, [&](int item, int thread) {
    // Latest (most expensive, causal) token blocks first, for balance.
    const int b = n_blocks - 1 - item / n_kv_, g = item % n_kv_;
    const int t0 = b * kTokenBlock, nt = std::min(kTokenBlock, n - t0);
    float* qs = scratch_[thread].data();                            // [nt·G, hd]
    float* o = qs + rows * hd;                                      // [nt·G, hd]
    float* scores = o + rows * hd;                                  // [G, kKeyChunk]
    float* o_parts = scores + static_cast<int64_t>(G) * kKeyChunk;  // [max_chunks, G, hd]
    PartialRow* parts = pparts_[thread].data();                     // [max_chunks, G]
    GatherQ(q, g, t0, nt, rot_q(g), qs);
    for (int t = 0; t < nt; ++t) {
      const int p = pos0 + t0 + t;
      const int c_lo = FirstKey(s_, p) / kKeyChunk, c_hi = p / kKeyChunk, nc = c_hi - c_lo + 1;
      const float* qt = qs + static_cast<int64_t>(t) * G * hd;
      for (int c = c_lo; c <= c_hi; ++c) {
        kernel(g, qt, 1, p, c * kKeyChunk, (c + 1) * kKeyChunk, o_parts + static_cast<int64_t>(c - c_lo) * G * hd,
               parts + static_cast<int64_t>(c - c_lo) * G, scores);
      }
      for (int j = 0; j < G; ++j) {
        MergeChunks(parts + j, G, o_parts + static_cast<int64_t>(j) * hd, static_cast<int64_t>(G) * hd, nc, hd,
                    Sink(g, j), o + (static_cast<int64_t>(t) * G + j) * hd);
      }
    }
    ScatterO(o, g, t0, nt, rot_o(g), out);
  });
}

}  // namespace kvaudit
