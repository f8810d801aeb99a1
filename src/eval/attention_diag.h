// The attention-level diagnosis of `kvaudit eval` (docs/metrics.md): a KvCache wrapper
// around the baseline cache that feeds every K/V row the baseline stores into one shadow cache
// per configuration, and at sampled query positions compares what each shadow reads and computes
// with what the baseline does — on the baseline's own queries and rows. Every layer's error is
// therefore its own (identical inputs; nothing compounds from the layers below), which is what
// "where inside the model the error arises" needs. The compounded, end-to-end effect is what the
// logit metrics measure.
//
// The wrapper rides along the streaming run: no extra forward pass, memory of one more cache per
// configuration, and per sampled position one decode-style Attend per configuration and layer.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "eval/attention_stats.h"
#include "eval/buckets.h"
#include "model/config.h"
#include "kv/attention/chunked_attention.h"
#include "model/kv_cache.h"

namespace kvaudit {

// Query positions (0-based) sampled in a window that runs positions [0, n_run): per bucket of
// context length p + 1 that the window reaches, max(1, samples / reached buckets) distinct
// positions drawn uniformly (all of them if the bucket is smaller), ascending. Deterministic in
// (n_run, buckets, samples, window).
std::vector<int> SampleQueryPositions(int n_run, const std::vector<Bucket>& buckets, int samples, int window);

class AttentionDiagnosis final : public KvCache {
 public:
  // shadows[c]: an empty cache of configuration c, sized like the baseline (all must implement
  // ReadRows, as every kvaudit cache does). The wrapper does not own them.
  AttentionDiagnosis(const ModelConfig& config, KvCache& baseline, std::vector<KvCache*> shadows,
                     std::vector<Bucket> buckets, int samples_per_window);

  // Call before a window's first Append: picks its sampled positions and clears its sums.
  void BeginWindow(int window, int n_run);
  // The window's sums: [n_configs][n_layers, n_kv_heads, n_buckets].
  std::vector<std::vector<AttnCell>> TakeWindow();

  void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) override;
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override;
  void Reset() override;
  // Reserves the baseline and every shadow (Append writes all of them); the sizes are the baseline's.
  Status Reserve(int n_positions) override;
  EngineArithmetic arithmetic() const override { return baseline_.arithmetic(); }
  uint64_t bytes_per_token() const override { return baseline_.bytes_per_token(); }
  uint64_t bytes_used() const override { return baseline_.bytes_used(); }
  uint64_t bytes_reserved() const override { return baseline_.bytes_reserved(); }
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    return baseline_.ReadRows(layer, g, p, t0, t1, k, v);
  }

 private:
  struct Scratch {
    std::vector<float> bk, bv, ck, cv;  // [p + 1, hd] baseline and configuration rows
    std::vector<double> s, sh;          // [p + 1] scores
  };
  // One sampled query position p of `layer`: q [n_heads, hd], base_out/cfg_out [n_heads, hd].
  void Compare(size_t config, int layer, int g, int p, const float* q, const float* base_out, const float* cfg_out,
               Scratch& sc);

  const int n_layers_, n_heads_, n_kv_, hd_;
  const LayerAttnShapes shapes_;  // [n_layers] each layer's window, scale, softcap, sinks
  KvCache& baseline_;
  std::vector<KvCache*> shadows_;
  std::vector<Bucket> buckets_;
  const int samples_;
  std::vector<int> sampled_;                  // ascending positions of the current window
  std::vector<std::vector<AttnCell>> cells_;  // [n_configs][n_layers, n_kv_heads, n_buckets]
  std::vector<Scratch> scratch_;              // [threads]
  std::vector<float> cfg_out_;                // [n_configs, n_sampled_in_call, n_heads, hd]
};

}  // namespace kvaudit
