// The attention driver shared by the f32 cache and the quantized cache: how the queries of one
// Attend call are split into work, and how per-chunk partial softmax states are merged. It is what
// makes attention batch-invariant (docs/architecture.md "Batch invariance"): every query row is
// computed the same way whether it arrives alone (decode) or among thousands of tokens (prefill).
//
// Contract, per query row at position p over keys [FirstKey(p), p]:
//   1. keys are cut at ABSOLUTE chunk boundaries [c·kKeyChunk, (c+1)·kKeyChunk) — never relative to
//      the call's first position — and each non-empty chunk c yields a partial (m_c, l_c, o_c) from
//      the chunk kernel (AttendChunkGrouped for f32 rows, AttendChunkStores for stores): scores by
//      the canonical dot, m_c = max, p_t = exp(s_t − m_c), l_c = Σ p_t, o_c = Σ p_t·v_t
//      accumulated in ascending t;
//   2. MergeChunks combines the partials in ascending c: M = max m_c, w_c = exp(m_c − M),
//      L = Σ l_c·w_c, o = (Σ o_c·w_c) / L. A head's sink logit s (gpt-oss) is one more partial
//      with m = s, l = 1 and o = 0, merged last: it only adds to the denominator.
// Decode (n <= kDecodeMaxTokens) parallelises over (KV head, chunk) so one token keeps every thread
// busy; prefill parallelises over (token block, KV head) and runs a row's chunks in order. Both call
// the same kernel with the same (row, chunk) arguments and the same merge, so the bits agree.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/thread_pool.h"
#include "kv/attention/f32_attention.h"
#include "model/config.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

inline constexpr int kKeyChunk = 256;       // keys per chunk (absolute boundaries)
inline constexpr int kDecodeMaxTokens = 4;  // up to this many tokens: chunk-parallel decode split

// The attention shape of one layer: G = n_heads / n_kv_heads, the layer's window (0 for a global
// layer), the scores' scale and softcap, and its sinks (pointing into c.attn_sinks: the config
// must outlive the shape).
AttnShape AttnShapeFor(const ModelConfig& c, int layer);
// Every layer's shape, pointing into this object's own copy of the sinks (a cache does not rely
// on the config it was built from staying alive). Not copyable: the pointers are into sinks_.
class LayerAttnShapes {
 public:
  explicit LayerAttnShapes(const ModelConfig& c);
  LayerAttnShapes(const LayerAttnShapes&) = delete;
  LayerAttnShapes& operator=(const LayerAttnShapes&) = delete;
  const AttnShape& operator[](int layer) const { return shapes_[layer]; }

 private:
  std::vector<float> sinks_;       // [n_layers, n_heads] or empty
  std::vector<AttnShape> shapes_;  // [n_layers]
};

// o [hd] = merged output of n_chunks partials: part[c · part_stride], o_c = o_parts + c · o_stride,
// and the row's sink logit (−inf: none). Chunks with l = 0 (the row saw no key there) are skipped.
void MergeChunks(const PartialRow* part, int64_t part_stride, const float* o_parts, int64_t o_stride, int n_chunks,
                 int hd, float sink, float* out);

// The chunk kernel of KV head g: AttendChunk's contract (rows = n_tok · G of qs [rows, hd], tokens at
// pos0.., keys [k0, k1)); scores scratch: [G, kKeyChunk].
using ChunkKernel = std::function<void(int g, const float* qs, int n_tok, int pos0, int k0, int k1, float* o,
                                       PartialRow* part, float* scores)>;

class ChunkedAttention {
 public:
  ChunkedAttention(int n_heads, int n_kv_heads) : n_heads_(n_heads), n_kv_(n_kv_heads) {}

  // q: [n, n_heads, hd] after RoPE; out: [n, n_heads, hd], with the layer's shape (its window,
  // scale, softcap, sinks; the kernel must use the same). rot_q(g) / rot_o(g): rotate the queries
  // of KV head g into the keys' Hadamard basis / rotate its outputs back (V stored rotated).
  void Attend(const AttnShape& shape, int pos0, int n, const float* q, float* out, ThreadPool& pool,
              const ChunkKernel& kernel, const std::function<bool(int)>& rot_q, const std::function<bool(int)>& rot_o);

 private:
  void Decode(int pos0, int n, const float* q, float* out, ThreadPool& pool, const ChunkKernel& kernel,
              const std::function<bool(int)>& rot_q, const std::function<bool(int)>& rot_o);
  void Prefill(int pos0, int n, const float* q, float* out, ThreadPool& pool, const ChunkKernel& kernel,
               const std::function<bool(int)>& rot_q, const std::function<bool(int)>& rot_o);
  // Rows of KV head g for tokens [t0, t0+nt) into qs [nt·G, hd]: rotated like the keys, then scaled
  // by 1/sqrt(hd) (transformers multiplies QKᵀ by `scaling`; scaling q first differs by rounding).
  void GatherQ(const float* q, int g, int t0, int nt, bool rotate, float* qs) const;
  // o [nt·G, hd] (rotated back in place if `rotate`) into out [n, n_heads, hd].
  void ScatterO(float* o, int g, int t0, int nt, bool rotate, float* out) const;
  void EnsureScratch(int n_threads, int64_t floats);
  float Sink(int g, int j) const;  // query head g·G + j's sink logit, −inf when the layer has none

  AttnShape s_;  // the current call's
  int n_heads_, n_kv_;
  std::vector<AlignedBuffer> scratch_;  // [threads] per-thread kernel scratch
  std::vector<float> dq_, dpart_o_, dout_;
  std::vector<PartialRow> dpart_;
  std::vector<std::vector<PartialRow>> pparts_;  // [threads][max_chunks, G] prefill partials
};

}  // namespace kvaudit
