// Golden tests: the five tiny random-weight models (llama, llama3 RoPE, qwen2 biases, qwen3 QK-norm,
// mistral) against transformers 5.17 f32 outputs in ../shared/golden/*/reference.safetensors.
// Tolerance: max |Δ| ≤ 1e-4 · max|reference| + 1e-5, for logits and for K/V after RoPE.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/dequantize.h"
#include "io/safetensors.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"

namespace kvaudit {
using ::kvaudit::testing::Fixture;
namespace {

struct Reference {
  std::vector<int32_t> ids;       // [96]
  std::vector<float> logits;      // [96, vocab]
  std::vector<float> k[2], v[2];  // layer 0 and 2: [n_kv_heads, 96, head_dim]
  std::vector<int32_t> greedy;    // [40]
};

std::vector<float> ReadF32(const SafetensorsFile& f, const std::string& name) {
  const TensorView* t = f.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<float> out(t->numel());
  Status s = DequantizeToF32(*t, out.data());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

std::vector<int32_t> ReadI32(const SafetensorsFile& f, const std::string& name) {
  const TensorView* t = f.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->dtype, DType::kI32);
  std::vector<int32_t> out(t->numel());
  std::memcpy(out.data(), t->data, out.size() * 4);
  return out;
}

// max |a − b| / (max|b|·1e-4 + 1e-5): ≤ 1 passes.
double ErrorRatio(const float* a, const float* b, size_t n, double* max_abs_out = nullptr) {
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < n; ++i) {
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(b[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  if (max_abs_out) *max_abs_out = max_diff;
  return max_diff / (1e-4 * max_ref + 1e-5);
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesTransformers) {
  const std::string dir = Fixture("golden/" + GetParam()).string();
  auto ref_file = SafetensorsFile::Open(Fixture("golden/" + GetParam() + "/reference.safetensors").string());
  ASSERT_TRUE(ref_file.ok()) << ref_file.error().message;
  Reference ref;
  ref.ids = ReadI32(*ref_file, "input_ids");
  ref.logits = ReadF32(*ref_file, "logits");
  ref.k[0] = ReadF32(*ref_file, "layer0.k");
  ref.v[0] = ReadF32(*ref_file, "layer0.v");
  ref.k[1] = ReadF32(*ref_file, "layer2.k");
  ref.v[1] = ReadF32(*ref_file, "layer2.v");
  ref.greedy = ReadI32(*ref_file, "greedy_prompt16_new24");

  auto model = Model::Load(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ((*model)->tokenizer(), nullptr);
  const int n = static_cast<int>(ref.ids.size()), V = c.vocab_size, nkv = c.n_kv_heads, hd = c.head_dim;
  ASSERT_EQ(n, 96);
  ASSERT_EQ(ref.logits.size(), static_cast<size_t>(n) * V);

  ThreadPool pool(2);
  auto cache = MakeF32Cache(c, 256);
  Forward fwd(**model, *cache, pool);
  // Capture K/V of layers 0 and last, transposed to the reference layout [n_kv_heads, n, head_dim].
  std::vector<float> k_got[2], v_got[2];
  for (int i = 0; i < 2; ++i) {
    k_got[i].assign(static_cast<size_t>(nkv) * n * hd, NAN);
    v_got[i].assign(k_got[i].size(), NAN);
  }
  fwd.set_kv_observer([&](int layer, int pos0, int nt, const float* k, const float* v) {
    const int slot = layer == 0 ? 0 : layer == c.n_layers - 1 ? 1 : -1;
    if (slot < 0) return;
    for (int t = 0; t < nt; ++t) {
      for (int g = 0; g < nkv; ++g) {
        std::memcpy(&k_got[slot][(static_cast<size_t>(g) * n + pos0 + t) * hd],
                    k + (static_cast<size_t>(t) * nkv + g) * hd, hd * 4);
        std::memcpy(&v_got[slot][(static_cast<size_t>(g) * n + pos0 + t) * hd],
                    v + (static_cast<size_t>(t) * nkv + g) * hd, hd * 4);
      }
    }
  });

  // 1) one prefill of all 96 tokens
  std::vector<float> logits(static_cast<size_t>(n) * V);
  fwd.Run(ref.ids, 0, logits.data(), /*all_logits=*/true);
  double max_abs = 0;
  const double r_prefill = ErrorRatio(logits.data(), ref.logits.data(), logits.size(), &max_abs);
  EXPECT_LE(r_prefill, 1.0) << "prefill logits max |Δ| " << max_abs;
  for (int i = 0; i < 2; ++i) {
    EXPECT_LE(ErrorRatio(k_got[i].data(), ref.k[i].data(), ref.k[i].size()), 1.0) << "K of layer slot " << i;
    EXPECT_LE(ErrorRatio(v_got[i].data(), ref.v[i].data(), ref.v[i].size()), 1.0) << "V of layer slot " << i;
  }
  std::printf("[golden %s] prefill max|dlogit| %.3g (ratio to tolerance %.3f)\n", GetParam().c_str(), max_abs,
              r_prefill);

  // 2) token-by-token decode of the same ids
  fwd.set_kv_observer(nullptr);
  cache->Reset();
  std::vector<float> dec(static_cast<size_t>(n) * V);
  for (int t = 0; t < n; ++t)
    fwd.Run(std::span<const int32_t>(&ref.ids[t], 1), t, dec.data() + static_cast<size_t>(t) * V, false);
  const double r_decode = ErrorRatio(dec.data(), ref.logits.data(), dec.size(), &max_abs);
  EXPECT_LE(r_decode, 1.0) << "decode logits max |Δ| " << max_abs;

  // 3) greedy: prefill 16, then 24 argmax tokens
  ASSERT_EQ(ref.greedy.size(), 40u);
  cache->Reset();
  std::vector<int32_t> seq(ref.greedy.begin(), ref.greedy.begin() + 16);
  std::vector<float> last(V);
  fwd.Run(seq, 0, last.data(), false);
  while (seq.size() < 40) {
    const int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    seq.push_back(next);
    fwd.Run(std::span<const int32_t>(&seq.back(), 1), static_cast<int>(seq.size()) - 1, last.data(), false);
  }
  EXPECT_EQ(seq, ref.greedy);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenTest, ::testing::Values("llama", "llama3-rope", "qwen2", "qwen3", "mistral"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace kvaudit
