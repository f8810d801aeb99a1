// engine=llama.cpp on the architectures whose attention llama.cpp computes with extra steps
// (../shared/golden/llamacpp): Gemma 2's softcap and Gemma's Q scaled before attention, gpt-oss's
// sinks. With an f32 cache the emulated flash attention must land on llama.cpp's own logits as
// closely as the native engine does (gpt-oss 1e-4; Gemma 3e-3, the f16 GELU table being the
// difference); and without its softcap or sinks it would not: the same check with them removed
// from the config fails by far more, so the check sees them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/llamacpp_golden.h"

namespace kvaudit {
namespace {

// Max |logit − llama.cpp's| over the golden's 96 positions, under `spec`, for model m with config c
// (the model's own, or an edited copy).
double MaxDiff(const Model& m, const ModelConfig& c, const testing::LlamaCppGolden& g, const std::string& spec) {
  auto cfg = CacheConfig::Parse(spec);
  EXPECT_TRUE(cfg.ok());
  auto cache = MakeCache(c, *cfg, nullptr, 256);
  EXPECT_TRUE(cache.ok()) << cache.error().message;
  ThreadPool pool(2);
  Forward fwd(m, **cache, pool);
  std::vector<float> logits(g.ids.size() * static_cast<size_t>(c.vocab_size));  // [96, vocab]
  fwd.Run(g.ids, 0, logits.data(), /*all_logits=*/true);
  double worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::fabs(double(logits[i]) - g.logits[i]));
  return worst;
}

class LlamaCppEngineArch : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppEngineArch, EmulatedFlashAttentionMatchesLlamaCpp) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), 96u);
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Model& m = **model;
  const bool gemma = GetParam() != "gpt-oss";
  const double bound = gemma ? 3e-3 : 1e-4;
  const double native = MaxDiff(m, m.config(), g, "k=f32,v=f32");
  const double emulated = MaxDiff(m, m.config(), g, "k=f32,v=f32,engine=llama.cpp");
  std::printf("[%s] native %.3g, engine=llama.cpp %.3g\n", GetParam().c_str(), native, emulated);
  EXPECT_LE(native, bound);
  EXPECT_LE(emulated, bound);

  // The same engine without the step llama.cpp's kernel adds is far off.
  ModelConfig without = m.config();
  if (GetParam() == "gpt-oss") without.attn_sinks.clear();
  if (GetParam() == "gemma2") without.attn_softcap = 0;
  if (GetParam() != "gemma3") {
    EXPECT_GT(MaxDiff(m, without, g, "k=f32,v=f32,engine=llama.cpp"), 10 * bound);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, LlamaCppEngineArch, ::testing::Values("gemma2", "gemma3", "gpt-oss"),
                         [](const auto& info) { return info.param == "gpt-oss" ? "gpt_oss" : info.param; });

}  // namespace
}  // namespace kvaudit
