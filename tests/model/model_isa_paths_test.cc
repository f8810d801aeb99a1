// One binary, three kernel paths (base/isa.h): the bundled model's logits — bf16 safetensors and
// the GGUF f16 / q8_0 / q4_k_m files with their matrices packed — are the same bits on every path
// this CPU runs, in prefill and in decode, on 1 and 2 threads. (Each path is also checked against
// the scalar twins kernel by kernel in tests/unit, and pinned by hashes in kv_cross_build_bits_test.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/isa.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

constexpr int kTokens = 96;  // prefilled in one call
constexpr int kDecoded = 8;  // then one token per call

// [kTokens + kDecoded, vocab] logits: a prefill of kTokens, then kDecoded single-token steps.
std::vector<float> PrefillThenDecode(const Model& m, int threads) {
  ThreadPool pool(threads);
  const int V = m.config().vocab_size, n = kTokens + kDecoded;
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 7919 + 13) % V;
  auto cache = MakeF32Cache(m.config(), n);
  Forward fwd(m, *cache, pool);
  std::vector<float> logits(static_cast<size_t>(n) * V);
  fwd.Run(std::span<const int32_t>(ids.data(), kTokens), 0, logits.data(), true);
  for (int i = kTokens; i < n; ++i)
    fwd.Run(std::span<const int32_t>(ids.data() + i, 1), i, logits.data() + static_cast<size_t>(i) * V, true);
  return logits;
}

void ExpectSameBitsOnEveryPath(const Model& m) {
  const Isa saved = ActiveIsa();
  ForceIsaForTesting(Isa::kPortable);
  const std::vector<float> portable = PrefillThenDecode(m, 1);
  ForEachSupportedIsa([&](Isa isa) {
    for (int threads : {1, 2}) {
      const std::vector<float> got = PrefillThenDecode(m, threads);
      ASSERT_EQ(got.size(), portable.size());
      EXPECT_EQ(std::memcmp(got.data(), portable.data(), got.size() * sizeof(float)), 0)
          << IsaName(isa) << ", " << threads << " threads: logits differ from the portable path's";
    }
  });
  ForceIsaForTesting(saved);
}

TEST(ModelIsaPaths, BundledSafetensorsSameBitsOnEveryPath) { ExpectSameBitsOnEveryPath(testing::BundledModel()); }

class ModelIsaPathsGguf : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelIsaPathsGguf, PackedWeightsSameBitsOnEveryPath) {
  auto loaded = Model::Load(testing::Fixture(std::string("models/gguf/") + GetParam()).string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ExpectSameBitsOnEveryPath(**loaded);
}

INSTANTIATE_TEST_SUITE_P(Files, ModelIsaPathsGguf,
                         ::testing::Values("kvq-code-16m-f16.gguf", "kvq-code-16m-q8_0.gguf",
                                           "kvq-code-16m-q4_k_m.gguf"));

}  // namespace
}  // namespace kvaudit
