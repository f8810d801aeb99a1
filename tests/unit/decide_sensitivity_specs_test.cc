// The configurations of a sensitivity run (decide/sensitivity/sensitivity_specs.h): --formats parsing, the
// spec strings of one-at-a-time / leave-one-out per layer and tensor (with protections, against
// f32 and f16 baselines, read back through the --kv grammar), and the auto stage's selection.
#include <gtest/gtest.h>

#include "decide/sensitivity/sensitivity_specs.h"
#include "kv/config/cache_config.h"

namespace kvaudit {
namespace {

void ExpectFormatsError(const std::vector<std::string>& args, const std::string& needle) {
  auto r = ParseCandidates(args);
  ASSERT_FALSE(r.ok()) << args[0];
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("hint: "), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(SensitivitySpecs, FormatsListAttachesProtectionsToTheFormatBefore) {
  auto r = ParseCandidates({"q8_0,q4_0,sink=4,rot=1,kivi2", "int4,group=32"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].name(), "q8_0");
  EXPECT_EQ((*r)[1].name(), "q4_0,sink=4,rot=1");  // canonical key order: sink before rot
  EXPECT_EQ((*r)[2].name(), "kivi2");
  EXPECT_EQ((*r)[3].name(), "int4,group=32");
  EXPECT_EQ((*r)[1].protections.rot, RotationMode::kOn);
  EXPECT_EQ((*r)[1].protections.sink, 4);
}

TEST(SensitivitySpecs, FormatsErrorsAreOneLineNamingTheFlag) {
  ExpectFormatsError({"q8_0,q9_0"}, "--formats: unknown format 'q9_0'");
  ExpectFormatsError({"rot=1,q4_0"}, "'rot=1' comes before any format");
  ExpectFormatsError({"q4_0,k=q8_0"}, "'k=q8_0' is not a protection of q4_0");
  ExpectFormatsError({"q4_0,engine=llama.cpp"}, "'engine=llama.cpp' is not a protection");
  ExpectFormatsError({"q4_0,rot=1,rot=0"}, "'rot' given twice for q4_0");
  ExpectFormatsError({"q4_0", "q4_0"}, "candidate q4_0 given twice");
  ExpectFormatsError({"q4_0,,q8_0"}, "empty entry");
  ExpectFormatsError({}, "no candidate format");
}

// The specs of one valid candidate (a failure is recorded and gives empty specs).
CandidateSpecs SpecsFor(const std::string& candidate, const std::string& baseline, int n_layers) {
  auto c = ParseCandidates({candidate});
  EXPECT_TRUE(c.ok()) << candidate;
  auto base = CacheConfig::Parse(baseline);
  EXPECT_TRUE(base.ok()) << baseline;
  auto s = c.ok() && base.ok() ? MakeCandidateSpecs(*base, (*c)[0], n_layers) : Expected<CandidateSpecs>(c.error());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? *s : CandidateSpecs{};
}

TEST(SensitivitySpecs, OneAtATimeAndLeaveOneOutPerLayerAndTensor) {
  const CandidateSpecs specs = SpecsFor("q4_0", "k=f32,v=f32", 4);
  const CandidateSpecs* s = &specs;
  EXPECT_EQ(s->all_quantized.spec(), "k=q4_0,v=q4_0");
  EXPECT_EQ(s->k_only.spec(), "k=q4_0,v=f32");
  EXPECT_EQ(s->v_only.spec(), "k=f32,v=q4_0");
  ASSERT_EQ(s->one_at_a_time.size(), 8u);
  ASSERT_EQ(s->leave_one_out.size(), 8u);
  EXPECT_EQ(s->one_at_a_time[6].spec(), "k=f32,v=f32;layers=3:k=q4_0");  // part 6 = L3.K
  EXPECT_EQ(s->one_at_a_time[7].spec(), "k=f32,v=f32;layers=3:v=q4_0");  // part 7 = L3.V
  EXPECT_EQ(s->leave_one_out[6].spec(), "k=q4_0,v=q4_0;layers=3:k=f32");
  EXPECT_EQ(s->leave_one_out[1].spec(), "k=q4_0,v=q4_0;layers=0:v=f32");
  // Read back through the grammar: exactly the part is quantized (one at a time) or not (leave one out).
  const std::vector<CachePart> parts = AllParts(4);
  for (size_t i = 0; i < parts.size(); ++i) {
    // The printed specs parse back to the same configurations.
    auto one = CacheConfig::Parse(s->one_at_a_time[i].spec());
    auto loo = CacheConfig::Parse(s->leave_one_out[i].spec());
    ASSERT_TRUE(one.ok() && loo.ok());
    EXPECT_TRUE(*one == s->one_at_a_time[i] && *loo == s->leave_one_out[i]) << s->one_at_a_time[i].spec();
    for (int layer = 0; layer < 4; ++layer) {
      for (int head = 0; head < 2; ++head) {
        const bool here = layer == parts[i].layer;
        const bool k_part = here && parts[i].tensor == KvTensor::kK, v_part = here && parts[i].tensor == KvTensor::kV;
        EXPECT_EQ(one->ForHead(layer, head).k, k_part ? KvFormat::kQ4_0 : KvFormat::kF32) << s->one_at_a_time[i].spec();
        EXPECT_EQ(one->ForHead(layer, head).v, v_part ? KvFormat::kQ4_0 : KvFormat::kF32) << s->one_at_a_time[i].spec();
        EXPECT_EQ(loo->ForHead(layer, head).k, k_part ? KvFormat::kF32 : KvFormat::kQ4_0) << s->leave_one_out[i].spec();
        EXPECT_EQ(loo->ForHead(layer, head).v, v_part ? KvFormat::kF32 : KvFormat::kQ4_0) << s->leave_one_out[i].spec();
      }
    }
  }
}

TEST(SensitivitySpecs, ProtectionsGoWithTheQuantizedPartAndTheBaselineFormatIsRestored) {
  const CandidateSpecs specs = SpecsFor("q4_0,rot=1,sink=4", "k=f16,v=f16", 2);
  const CandidateSpecs* s = &specs;
  ASSERT_EQ(s->leave_one_out.size(), 4u);
  EXPECT_EQ(s->all_quantized.spec(), "k=q4_0,v=q4_0,sink=4,rot=1");
  EXPECT_EQ(s->k_only.spec(), "k=q4_0,v=f16,sink=4,rot=1");
  EXPECT_EQ(s->one_at_a_time[2].spec(), "k=f16,v=f16;layers=1:k=q4_0,sink=4,rot=1");
  EXPECT_EQ(s->leave_one_out[3].spec(), "k=q4_0,v=q4_0,sink=4,rot=1;layers=1:v=f16");
  const CacheConfig* loo = &s->leave_one_out[3];
  EXPECT_EQ(loo->ForHead(1, 0).v, KvFormat::kF16);
  EXPECT_EQ(loo->ForHead(1, 0).k, KvFormat::kQ4_0);
  EXPECT_EQ(loo->ForHead(1, 0).rot, RotationMode::kOn);  // layer 1's K keeps its protection
}

TEST(SensitivitySpecs, BaselineMustBeUniformAndDifferFromTheCandidate) {
  auto c = ParseCandidates({"q8_0"});
  ASSERT_TRUE(c.ok());
  auto mixed = MakeCandidateSpecs(CacheConfig::Parse("k=f32,v=f32;layers=0:k=f16").value(), (*c)[0], 2);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("has per-layer overrides"), std::string::npos) << mixed.error().message;
  auto same = MakeCandidateSpecs(CacheConfig::Parse("k=q8_0,v=q8_0").value(), (*c)[0], 2);
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message.find("--formats q8_0 is the baseline"), std::string::npos) << same.error().message;
  // A protection's value is checked by the --kv grammar when --formats is read.
  ExpectFormatsError({"q8_0", "q4_0,rot=7"}, "--formats \"rot=7\": rot=7 is not valid");
  ExpectFormatsError({"int4,group=0"}, "--formats \"group=0\": group=0");
}

TEST(SensitivitySpecs, AutoStageMeasuresAQuarterOfThePartsAndAtLeastFour) {
  EXPECT_EQ(AutoTopK(16), 4);   // the bundled model: 8 layers × K, V
  EXPECT_EQ(AutoTopK(17), 5);   // ⌈17 / 4⌉
  EXPECT_EQ(AutoTopK(64), 16);  // a 32-layer model
  EXPECT_EQ(AutoTopK(2), 2);    // never more than there are
  // Largest first; equal scores keep part order.
  EXPECT_EQ(TopParts({0.1, 0.5, 0.3, 0.5, 0.2}, 3), (std::vector<int>{1, 3, 2}));
  EXPECT_EQ(TopParts({0.1, 0.2}, 4), (std::vector<int>{1, 0}));
  EXPECT_TRUE(TopParts({0.1, 0.2}, 0).empty());
  EXPECT_EQ(AllParts(2)[3].name(), "L1.V");
}

}  // namespace
}  // namespace kvaudit
