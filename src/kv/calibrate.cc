// Gathers the calibration statistics of kv/config/calibration.h by running the f32 model over
// user text (`--kv-calib FILE`): a KvCache wrapper records the amax of every appended K/V row.
#include "kv/calibrate.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"

namespace kvaudit {

namespace {

// Forwards to the f32 reference cache and records amax statistics of every appended row.
class RecordingCache final : public KvCache {
 public:
  RecordingCache(KvCache& inner, KvCalibration& cal) : inner_(inner), cal_(cal) {}

  void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) override {
    const int nkv = cal_.n_kv_heads, hd = cal_.head_dim;
    for (int t = 0; t < n; ++t) {
      for (int g = 0; g < nkv; ++g) {
        const size_t head = static_cast<size_t>(layer) * nkv + g;
        const size_t row = (static_cast<size_t>(t) * nkv + g) * hd;
        float* kc = cal_.k_channel_amax.data() + head * hd;            // [hd]
        float* kpc = cal_.k_pre_rope_channel_amax.data() + head * hd;  // [hd]
        for (int d = 0; d < hd; ++d) {
          const float ka = std::fabs(k[row + d]), va = std::fabs(v[row + d]);
          kc[d] = std::max(kc[d], ka);
          cal_.k_amax[head] = std::max(cal_.k_amax[head], ka);
          cal_.v_amax[head] = std::max(cal_.v_amax[head], va);
          if (k_pre_rope) kpc[d] = std::max(kpc[d], std::fabs(k_pre_rope[row + d]));
        }
      }
    }
    if (layer == 0) cal_.tokens += n;
    inner_.Append(layer, pos0, n, k, k_pre_rope, v);
  }
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    inner_.Attend(layer, pos0, n, q, out, pool);
  }
  void Reset() override { inner_.Reset(); }
  Status Reserve(int n_positions) override { return inner_.Reserve(n_positions); }
  EngineArithmetic arithmetic() const override { return inner_.arithmetic(); }
  uint64_t bytes_per_token() const override { return inner_.bytes_per_token(); }
  uint64_t bytes_used() const override { return inner_.bytes_used(); }
  uint64_t bytes_reserved() const override { return inner_.bytes_reserved(); }

 private:
  KvCache& inner_;
  KvCalibration& cal_;
};

}  // namespace

Expected<KvCalibration> CalibrateKv(const Model& model, const std::vector<int32_t>& tokens, int ctx, ThreadPool& pool,
                                    int run_context) {
  const ModelConfig& c = model.config();
  if (tokens.empty()) return BadInput("KV calibration text has no tokens; hint: pass a non-empty --kv-calib FILE");
  if (ctx <= 0) return BadInput("KV calibration window must be positive; hint: use --ctx N with N > 0");
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.vocab_size) {
      return BadInput("KV calibration token id " + std::to_string(t) + " is outside the vocabulary; hint: tokenize " +
                      "the calibration text with this model's tokenizer");
    }
  }
  KvCalibration cal;
  cal.n_layers = c.n_layers;
  cal.n_kv_heads = c.n_kv_heads;
  cal.head_dim = c.head_dim;
  const size_t heads = static_cast<size_t>(c.n_layers) * c.n_kv_heads;
  cal.k_amax.assign(heads, 0.0f);                                // [n_layers, n_kv_heads]
  cal.v_amax.assign(heads, 0.0f);                                // [n_layers, n_kv_heads]
  cal.k_channel_amax.assign(heads * c.head_dim, 0.0f);           // [n_layers, n_kv_heads, head_dim]
  cal.k_pre_rope_channel_amax.assign(heads * c.head_dim, 0.0f);  // [n_layers, n_kv_heads, head_dim]
  const int n = static_cast<int>(tokens.size()), window = std::min(ctx, n);
  auto f32 = MakeF32Cache(c, window);
  RecordingCache rec(*f32, cal);
  KV_RETURN_IF_ERROR(rec.Reserve(window));
  Forward fwd(model, rec, pool, run_context > 0 ? run_context : ctx);
  std::vector<float> logits(c.vocab_size);  // [1, vocab] (unused: only the cache writes matter)
  for (int w0 = 0; w0 < n; w0 += window) {
    const int len = std::min(window, n - w0);
    rec.Reset();
    fwd.Run(std::span<const int32_t>(tokens.data() + w0, len), 0, logits.data(), false);
  }
  return cal;
}

}  // namespace kvaudit
