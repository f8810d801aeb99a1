// engine=llama.cpp cache: storage, write-path quantizers, rotation and dispatch (see kv/llamacpp/cache.h).
#include "kv/llamacpp/cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "ops/hadamard.h"
#include "kv/llamacpp/attention.h"
#include "kv/store/reservation.h"

namespace kvaudit {
namespace {

using llamacpp::FaScratch;
using llamacpp::FaShape;
using llamacpp::HeadKv;

constexpr int kQueryTile = 64;  // query tokens per work item (GGML_FA_TILE_Q)

// llama.cpp's channel order of a Q/K head vector. convert_hf_to_gguf.py (LlamaModel, which also
// converts MistralForCausalLM) permutes the q_proj/k_proj rows so that llama.cpp's 'llama' graph can
// use LLAMA_ROPE_TYPE_NORM (pairs of consecutive values, llama-model.cpp llama_model_rope_type):
// GGUF channel 2j + t of a head holds HF channel t·hd/2 + j. kvaudit un-permutes the weights at
// load (model/weights.cc), so its K is in HF order; llama.cpp quantizes K, converts Q to q8_0/q8_1
// and rotates both in GGUF order, so a 32-value block there holds HF channels {j, j + hd/2} for
// j in a run of 16 — different blocks, different block scales. Q·K is unchanged.
// convert_hf_to_gguf.py converts MixtralForCausalLM with the same LlamaModel permutation.
bool UsesGgufPairOrder(Arch a) { return a == Arch::kLlama || a == Arch::kMistral || a == Arch::kMixtral; }

// x [hd] in HF order -> y [hd] in GGUF order.
void ToGgufOrder(const float* x, int hd, float* y) {
  const int half = hd / 2;
  for (int j = 0; j < half; ++j) {
    y[2 * j] = x[j];
    y[2 * j + 1] = x[half + j];
  }
}
// The inverse: y [hd] in GGUF order -> x [hd] in HF order.
void FromGgufOrder(const float* y, int hd, float* x) {
  const int half = hd / 2;
  for (int j = 0; j < half; ++j) {
    x[j] = y[2 * j];
    x[half + j] = y[2 * j + 1];
  }
}

struct HeadStore {  // one (layer, KV head)
  KvFormat fk = KvFormat::kF32, fv = KvFormat::kF32;
  int rot_k = 0, rot_v = 0;  // Hadamard block (0 = not rotated)
  ChunkedRows k, v;          // [positions, k row bytes], [positions, v row bytes], in chunks
};

class LlamaCppCache final : public KvCache {
 public:
  LlamaCppCache(const ModelConfig& c, const CacheConfig& cache_config, int max_pos)
      : n_layers_(c.n_layers),
        n_heads_(c.n_heads),
        n_kv_(c.n_kv_heads),
        hd_(c.head_dim),
        max_pos_(max_pos),
        gguf_order_(UsesGgufPairOrder(c.arch) && c.head_dim % 2 == 0),
        spec_(cache_config.spec()),
        len_(c.n_layers, 0),
        heads_(static_cast<size_t>(c.n_layers) * c.n_kv_heads),
        sinks_(c.attn_sinks) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    // llama.cpp's Gemma graphs scale Q in f32 before attention (gemma2.cpp / gemma3.cpp:
    // ggml_scale(Qcur, f_attention_scale)) and call it with kq_scale 1; the others pass the scale.
    const float scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd_));
    const bool gemma = c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3;
    q_prescale_ = gemma ? scale : 0.0f;
    shape_ = {hd_, n_heads_ / n_kv_, 0, gemma ? 1.0f : scale, c.attn_softcap, nullptr};
    for (int l = 0; l < n_layers_; ++l) windows_.push_back(c.layer_window(l));
    const RotationBlocks rb = LlamaCppRotationBlocks(hd_);  // {0, 0} unless head_dim % 64 == 0
    for (int l = 0; l < n_layers_; ++l) {
      for (int g = 0; g < n_kv_; ++g) {
        const HeadConfig hp = cache_config.ForHead(c, l, g);
        HeadStore& h = Head(l, g);
        h.fk = hp.k;
        h.fv = hp.v;
        KV_CHECK_MSG(hd_ % 32 == 0 || (IsFullPrecision(h.fk) && IsFullPrecision(h.fv)),
                     "engine=llama.cpp: block formats need head_dim % 32 == 0");
        const bool rot = hp.rot != RotationMode::kOff;
        h.rot_k = rot && !IsFullPrecision(hp.k) ? rb.k : 0;  // ggml_is_quantized(type_k) && hd % 64 == 0
        h.rot_v = rot && !IsFullPrecision(hp.v) ? rb.v : 0;
        h.k = ChunkedRows(llamacpp::RowBytes(h.fk, hd_));
        h.v = ChunkedRows(llamacpp::RowBytes(h.fv, hd_));
        bytes_per_token_ += h.k.row_bytes() + h.v.row_bytes();
      }
    }
  }

  void Append(int layer, int pos0, int n, const float* k, const float*, const float* v) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n >= 0);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    KV_CHECK_MSG(pos0 <= len_[layer], "KV cache positions must be appended without gaps");
    std::vector<float> row(hd_);  // [hd] one (token, head) row, rotated in place
    for (int g = 0; g < n_kv_; ++g) {
      HeadStore& h = Head(layer, g);
      h.k.Grow(pos0 + n);
      h.v.Grow(pos0 + n);
      for (int t = 0; t < n; ++t) {
        const int64_t src = (static_cast<int64_t>(t) * n_kv_ + g) * hd_;
        if (gguf_order_) {
          ToGgufOrder(k + src, hd_, row.data());  // K is stored in llama.cpp's channel order
        } else {
          std::memcpy(row.data(), k + src, sizeof(float) * hd_);
        }
        if (h.rot_k) HadamardRows(row.data(), 1, hd_, h.rot_k);
        llamacpp::WriteRow(h.fk, row.data(), hd_, h.k.Row(pos0 + t));
        std::memcpy(row.data(), v + src, sizeof(float) * hd_);
        if (h.rot_v) HadamardRows(row.data(), 1, hd_, h.rot_v);
        llamacpp::WriteRow(h.fv, row.data(), hd_, h.v.Row(pos0 + t));
      }
    }
    len_[layer] = pos0 + n;
  }

  // Rows as ggml's to_float returns them, rotated back. Every query reads the same bytes (no
  // position-dependent protections in this engine), so p only bounds the range.
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && g >= 0 && g < n_kv_ && 0 <= t0 && t0 <= t1 && t1 <= p + 1 &&
             p < len_[layer]);
    const HeadStore& h = heads_[static_cast<size_t>(layer) * n_kv_ + g];
    std::vector<float> tmp(gguf_order_ ? hd_ : 0);  // [hd] one K row in GGUF order
    for (int t = t0; t < t1; ++t) {
      float* kr = k + static_cast<int64_t>(t - t0) * hd_;
      float* vr = v + static_cast<int64_t>(t - t0) * hd_;
      llamacpp::RowToF32(h.fk, h.k.Row(t), hd_, kr);
      llamacpp::RowToF32(h.fv, h.v.Row(t), hd_, vr);
      if (h.rot_k) HadamardRows(kr, 1, hd_, h.rot_k);
      if (h.rot_v) HadamardRows(vr, 1, hd_, h.rot_v);
      if (gguf_order_) {
        std::memcpy(tmp.data(), kr, sizeof(float) * hd_);
        FromGgufOrder(tmp.data(), hd_, kr);
      }
    }
    return true;
  }

  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n > 0);
    KV_CHECK_MSG(pos0 + n <= len_[layer], "Attend before Append of the same positions");
    const int n_qt = (n + kQueryTile - 1) / kQueryTile, n_items = n_kv_ * n_qt;
    if (static_cast<int>(scratch_.size()) < pool.size()) scratch_.resize(pool.size());
    if (static_cast<int>(qs_.size()) < pool.size()) qs_.resize(pool.size());
    if (static_cast<int>(os_.size()) < pool.size()) os_.resize(pool.size());
    // Items = (KV head, query tile), latest (longest) tiles first; each item's arithmetic is
    // independent of the thread running it.
    pool.ForEachItem(n_items, [&](int item, int thread) {
      const int qt = n_qt - 1 - item / n_kv_, g = item % n_kv_;
      const int t0 = qt * kQueryTile, nt = std::min(kQueryTile, n - t0);
      AttendItem(layer, g, pos0, n, t0, nt, q, out, thread);
    });
  }

  void Reset() override { std::fill(len_.begin(), len_.end(), 0); }
  // llama.cpp's whole forward pass: its weight products too, not only its attention.
  EngineArithmetic arithmetic() const override { return EngineArithmetic::kLlamaCpp; }
  uint64_t bytes_per_token() const override { return bytes_per_token_; }
  uint64_t bytes_used() const override {
    uint64_t b = 0;
    for (int l = 0; l < n_layers_; ++l) {
      for (int g = 0; g < n_kv_; ++g) {
        b += static_cast<uint64_t>(len_[l]) * (Head(l, g).k.row_bytes() + Head(l, g).v.row_bytes());
      }
    }
    return b;
  }
  uint64_t bytes_reserved() const override {
    uint64_t b = 0;
    for (const HeadStore& h : heads_) b += h.k.bytes_reserved() + h.v.bytes_reserved();
    return b;
  }
  Status Reserve(int n_pos) override {
    KV_CHECK(n_pos >= 0 && n_pos <= max_pos_);
    uint64_t total = 0;
    for (const HeadStore& h : heads_) total += h.k.BytesFor(n_pos) + h.v.BytesFor(n_pos);
    const std::string what =
        spec_ + ": " + std::to_string(n_layers_) + " layers × " + std::to_string(n_kv_) + " KV heads";
    return ReserveKvStorage(n_pos, total, bytes_reserved(), what, [&] {
      for (HeadStore& h : heads_) {
        if (!h.k.Reserve(n_pos) || !h.v.Reserve(n_pos)) return false;
      }
      return true;
    });
  }

 private:
  HeadStore& Head(int l, int g) { return heads_[static_cast<size_t>(l) * n_kv_ + g]; }
  const HeadStore& Head(int l, int g) const { return heads_[static_cast<size_t>(l) * n_kv_ + g]; }

  // Tokens [t0, t0+nt) of this call, the G query heads of KV head g.
  void AttendItem(int layer, int g, int pos0, int n, int t0, int nt, const float* q, float* out, int thread) {
    const HeadStore& h = Head(layer, g);
    FaShape sh = shape_;
    sh.window = windows_[layer];
    const int G = sh.group, rows = nt * G;
    if (!sinks_.empty()) sh.sinks = sinks_.data() + static_cast<size_t>(layer) * n_heads_ + static_cast<size_t>(g) * G;
    std::vector<float>& qs = qs_[thread];  // [rows, hd] gathered (and rotated) queries
    std::vector<float>& os = os_[thread];  // [rows, hd] outputs
    if (qs.size() < static_cast<size_t>(rows) * hd_) qs.resize(static_cast<size_t>(rows) * hd_);
    if (os.size() < static_cast<size_t>(rows) * hd_) os.resize(static_cast<size_t>(rows) * hd_);
    for (int r = 0; r < rows; ++r) {
      const float* src = q + (static_cast<int64_t>(t0 + r / G) * n_heads_ + g * G + r % G) * hd_;
      float* dst = qs.data() + static_cast<int64_t>(r) * hd_;
      if (gguf_order_) {
        ToGgufOrder(src, hd_, dst);  // Q in K's channel order: its q8 blocks are llama.cpp's too
      } else {
        std::memcpy(dst, src, sizeof(float) * hd_);
      }
      if (q_prescale_ > 0) {
        for (int d = 0; d < hd_; ++d) dst[d] = dst[d] * q_prescale_;
      }
    }
    if (h.rot_k) HadamardRows(qs.data(), rows, hd_, h.rot_k);  // Q rotated like K, after RoPE
    const HeadKv kv{h.fk, h.fv, &h.k, &h.v};
    // The path is chosen per ubatch (n = this call's tokens), as ggml chooses per FA op.
    if (llamacpp::UsesTiledPath(h.fk, h.fv, n)) {
      llamacpp::TiledRows(sh, kv, qs.data(), nt, pos0 + t0, os.data(), scratch_[thread]);
    } else {
      llamacpp::OneChunkRows(sh, kv, qs.data(), nt, pos0 + t0, os.data(), scratch_[thread]);
    }
    if (h.rot_v) HadamardRows(os.data(), rows, hd_, h.rot_v);  // rotate the output back (H = H⁻¹)
    for (int r = 0; r < rows; ++r) {
      float* dst = out + (static_cast<int64_t>(t0 + r / G) * n_heads_ + g * G + r % G) * hd_;
      std::memcpy(dst, os.data() + static_cast<int64_t>(r) * hd_, sizeof(float) * hd_);
    }
  }

  const int n_layers_, n_heads_, n_kv_, hd_, max_pos_;
  const bool gguf_order_;         // K and Q in llama.cpp's GGUF channel order (UsesGgufPairOrder)
  const std::string spec_;        // the configuration's canonical spec, for Reserve's error
  FaShape shape_;                 // every layer's but the window and sinks
  std::vector<int> windows_;      // [n_layers] each layer's sliding window, 0 = global
  std::vector<int> len_;          // [n_layers] positions stored
  std::vector<HeadStore> heads_;  // [n_layers, n_kv_heads]
  std::vector<float> sinks_;      // [n_layers, n_heads] gpt-oss's sink logits, or empty
  float q_prescale_ = 0.0f;       // Gemma: Q × this before attention (kernel scale 1); 0 = none
  uint64_t bytes_per_token_ = 0;
  std::vector<FaScratch> scratch_;           // [threads]
  std::vector<std::vector<float>> qs_, os_;  // [threads] of [rows, hd]
};

}  // namespace

std::unique_ptr<KvCache> MakeLlamaCppCache(const ModelConfig& config, const CacheConfig& cache_config,
                                           int max_positions) {
  return std::make_unique<LlamaCppCache>(config, cache_config, max_positions);
}

}  // namespace kvaudit
