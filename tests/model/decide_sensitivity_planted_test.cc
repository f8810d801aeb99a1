// The planted-sensitivity test: a tiny random-weight Llama written by the test, in
// which layer 2's keys carry four channels ~50× larger than the rest (rows of its k_proj scaled).
// Under q4_0 a 32-channel block takes its scale from its largest value, so the planted channels
// flatten the rest of their blocks — and the planted layer's scores are ~50× larger, so what error
// remains moves its attention most. Sensitivity must rank that layer's K first end to end; the
// proxy must rank it first too, and the auto stage must therefore measure it. (A model test, not
// a unit test: it runs three sensitivity passes of a real forward pass, about 2 s.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "decide/sensitivity/sensitivity.h"
#include "decide/sensitivity/sensitivity_report.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

constexpr int kPlantedLayer = 2;
constexpr int kPlantedPart = 2 * kPlantedLayer;  // AllParts order: L2.K
constexpr float kOutlierScale = 50.0f;

fs::path WriteModel(const std::string& tag, bool planted) {
  testing::TinyLlamaShape shape;  // 4 layers, hidden 128, 2 heads = 2 KV heads × head_dim 64
  // Residual-dominated, as trained models are: unit embeddings, and the matrices that write into
  // the residual stream small. With every weight at std 0.1 instead, layer 0's attention writes
  // ~10x the embeddings into the stream, and any error there dominates the logits (measured: L0.K
  // one at a time 0.089 against the planted L2.K's 0.022), which plants a second, accidental
  // sensitivity.
  shape.embed_std = 1.0f, shape.branch_std = 0.05f;
  return testing::WriteTinyLlama(testing::MakeTempDir(tag), shape, [&](testing::TinyTensors& t) {
    if (!planted) return;
    // Channels 5 and 20 and their RoPE partners (+32), in both KV heads.
    testing::ScaleKeyChannels(t, shape, kPlantedLayer, {5, 37, 20, 52}, kOutlierScale);
  });
}

// Random token ids: the model has no tokenizer, and a random model has no preferred text.
std::vector<std::vector<int32_t>> Windows(int n, int len) { return testing::RandomWindows(n, len, 256, 7); }

// memory_limit: JobOptions' (0: the machine's).
SensitivityResult RunSensitivity(const fs::path& model, const std::string& stage, const fs::path& out,
                                 uint64_t memory_limit = 0) {
  auto runtime = ModelRuntime::Load(model.string(), 2);
  EXPECT_TRUE(runtime.ok()) << runtime.error().message;
  SensitivityOptions o;
  o.model = model.string(), o.data = "random token ids", o.formats = {"q4_0"}, o.stage = stage;
  o.target = "native";  // the planted costs are the native engine's
  o.ctx = 256, o.attn_samples = 32, o.out = out.string(), o.memory_limit = memory_limit;
  auto plan = SensitivityPlan::FromWindows(o, std::move(*runtime), Windows(4, 256));
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  auto r = SensitivitySession(*plan).Run();
  EXPECT_TRUE(r.ok()) << r.error().message;
  return std::move(*r);
}

TEST(SensitivityPlanted, OutlierKeysOfOneLayerRankFirstEndToEndAndByProxy) {
  const fs::path planted = WriteModel("planted", true), plain = WriteModel("plain", false);
  const fs::path out = testing::MakeTempDir("planted-out");
  const SensitivityResult full = RunSensitivity(planted, "full", out / "full");
  ASSERT_EQ(full.candidates.size(), 1u);
  const CandidateResult& c = full.candidates[0];
  std::printf("%s", SensitivityTable(full).c_str());
  const std::vector<int> one = RankOneAtATime(c), proxy = RankProxy(c);
  ASSERT_EQ(one.size(), 8u);  // full: every part end to end
  EXPECT_EQ(c.parts[one[0]].part.name(), "L2.K");
  EXPECT_EQ(c.parts[proxy[0]].part.name(), "L2.K");

  // The planting is the cause: the same model without it gives that part a fraction of the error.
  const SensitivityResult control = RunSensitivity(plain, "full", out / "plain");
  const double kld = c.parts[kPlantedPart].one_at_a_time->summary.overall.kld_mean;
  const double kld_plain = control.candidates[0].parts[kPlantedPart].one_at_a_time->summary.overall.kld_mean;
  std::printf("[planted] L2.K one-at-a-time KLD %.4g planted, %.4g without\n", kld, kld_plain);
  EXPECT_GT(kld, 10 * kld_plain);

  // Auto measures the proxy's top AutoTopK(8) = 4 parts, so it measures L2.K, with the same numbers.
  const SensitivityResult autos = RunSensitivity(planted, "auto", out / "full");  // same DIR: the proxy stage resumes
  const CandidateResult& a = autos.candidates[0];
  EXPECT_EQ(autos.windows_resumed_proxy, 4);
  EXPECT_EQ(autos.top_k, 4);
  EXPECT_EQ(RankOneAtATime(a).size(), 4u);
  ASSERT_TRUE(a.parts[kPlantedPart].one_at_a_time.has_value());
  EXPECT_EQ(a.parts[kPlantedPart].one_at_a_time->summary.overall.kld_mean, kld);
  EXPECT_EQ(a.parts[RankOneAtATime(a)[0]].part.name(), "L2.K");
  fs::remove_all(out), fs::remove_all(planted), fs::remove_all(plain);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A parts stage whose caches do not fit the memory runs its configurations in groups, the baseline
// computed once per group (eval/config_groups.h): the same numbers and the same journal. Forced
// here with a memory limit that fits no configuration beside another: 16 groups of one.
TEST(SensitivityPlanted, PartsStageInGroupsOfOneGivesTheSameNumbers) {
  const fs::path planted = WriteModel("groups", true);
  const fs::path out = testing::MakeTempDir("groups-out");
  const SensitivityResult together = RunSensitivity(planted, "full", out / "together");
  ::testing::internal::CaptureStderr();
  const SensitivityResult grouped = RunSensitivity(planted, "full", out / "grouped", /*memory_limit=*/1);
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(note.find("the 16 configurations' caches need"), std::string::npos) << note;
  EXPECT_NE(note.find("they run in 16 groups of at most 1"), std::string::npos) << note;
  ASSERT_TRUE(together.results.contains("formats"));
  EXPECT_EQ(together.results["formats"], grouped.results["formats"]);
  const std::string journal = ReadFile(out / "together" / "full" / "progress.jsonl");
  EXPECT_GT(journal.size(), 1000u);
  EXPECT_EQ(journal, ReadFile(out / "grouped" / "full" / "progress.jsonl"));
  fs::remove_all(out), fs::remove_all(planted);
}

}  // namespace
}  // namespace kvaudit
