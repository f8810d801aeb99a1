// Mixes as specs (decide/search/mix_spec.h): candidates, which K and V candidates can share a layer, the
// compact spec of an assignment, and its round trip through CacheConfig::Parse and MakeCache on
// the bundled model's shape and Llama-3-8B's.
#include <gtest/gtest.h>

#include "decide/search/mix_spec.h"
#include "decide_test_util.h"
#include "kv/make_cache.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

Candidate Cand(const std::string& text, char t) {
  auto c = ParseCandidate(text, t);
  EXPECT_TRUE(c.ok()) << text << ": " << (c.ok() ? "" : c.error().message);
  return c.ok() ? *c : Candidate{};
}

TEST(DecideMixSpecTest, CandidatesAreCanonical) {
  EXPECT_EQ(Cand(" q4_0 , rot=1 ", 'k').text, "q4_0,rot=1");
  // Keys in the order of the --kv grammar's table (docs/formats.md), whatever order they come in.
  EXPECT_EQ(Cand("q4_0,rot=1,sink=4", 'k').text, Cand("q4_0,sink=4,rot=1", 'v').text);
  EXPECT_EQ(Cand("q4_0,rot=1,sink=4", 'k').text, "q4_0,sink=4,rot=1");
  const Candidate e = Cand("q8_0,engine=llama.cpp", 'v');
  EXPECT_EQ(e.text, "q8_0,engine=llama.cpp");
  ASSERT_TRUE(e.attention.has_value());
  EXPECT_EQ(*e.attention, AttentionMode::kLlamaCpp);
  EXPECT_TRUE(e.mods.empty());
  EXPECT_EQ(Cand("q4_0,outliers=4", 'k').mods.outliers, 4);
}

TEST(DecideMixSpecTest, EveryCandidateErrorIsOneLineWithAHint) {
  const std::vector<std::tuple<std::string, char, std::string>> bad = {
      {"", 'k', "empty"},
      {"rot=1", 'k', "'rot=1' is not a format"},
      {"q9_0", 'k', "'q9_0' is not a format"},
      {"q4_0,rot", 'k', "'rot' is not key=value"},
      {"q4_0,=1", 'k', "'=1' is not key=value"},
      {"q4_0,foo=1", 'k', "'foo' is not a modifier"},
      {"q4_0,k=q8_0", 'k', "'k' is not a modifier"},
      {"q4_0,sink=1,sink=2", 'k', "key 'sink' given twice"},
      {"q4_0,rot=2", 'k', "rot=2 is not valid"},
      {"q4_0,sink=-1", 'k', "not a non-negative integer"},
      {"q4_0,outliers=4", 'v', "acts on keys only"},
      {"q4_0,prerope=1", 'v', "acts on keys only"},
      {"q4_0,engine=vllm", 'k', "engine=vllm is not known"},
  };
  for (const auto& [text, tensor, what] : bad) {
    auto c = ParseCandidate(text, tensor);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.error().code, ErrorCode::kBadInput);
    EXPECT_NE(c.error().message.find(what), std::string::npos) << text << ": " << c.error().message;
    EXPECT_EQ(c.error().message.rfind("candidate \"" + text + "\": ", 0), 0u) << c.error().message;
    const std::string& msg = c.error().message;
    EXPECT_NE(msg.find("; hint: "), std::string::npos) << msg;
    EXPECT_EQ(msg.find("; hint: "), msg.rfind("; hint: ")) << "one hint: " << msg;
    EXPECT_EQ(c.error().message.find('\n'), std::string::npos) << c.error().message;
  }
}

bool Share(const std::string& k, const std::string& v, AttentionMode e = AttentionMode::kNative) {
  return ShareLayer(Cand(k, 'k'), Cand(v, 'v'), e).has_value();
}

TEST(DecideMixSpecTest, WhichCandidatesShareALayer) {
  using E = AttentionMode;
  // Modifiers belong to the (layer, head) and act on each quantized tensor of it.
  EXPECT_FALSE(Share("q4_0,rot=1", "q8_0"));  // V would be rotated too
  EXPECT_TRUE(Share("q4_0,rot=1", "q8_0,rot=1"));
  EXPECT_TRUE(Share("q4_0,rot=1", "f16"));  // modifiers do not act on full precision
  EXPECT_FALSE(Share("q4_0,sink=4", "q4_0"));
  EXPECT_TRUE(Share("q4_0,outliers=4", "q8_0"));  // outliers act on keys only
  // group acts on int and KIVI formats only.
  EXPECT_TRUE(Share("int4,group=32", "q4_0"));
  EXPECT_FALSE(Share("int4,group=32", "int4"));  // V's default group is 64
  EXPECT_TRUE(Share("int4,group=32", "int4,group=32"));
  // A KIVI tensor makes the layer's default recent window 128 for the other tensor too.
  EXPECT_FALSE(Share("kivi4", "q4_0"));
  EXPECT_TRUE(Share("kivi4", "kivi2"));
  // Under engine=llama.cpp rot=auto rotates quantized tensors, so rot=0 on K only cannot share.
  EXPECT_TRUE(Share("q4_0,rot=0", "q8_0", E::kNative));
  EXPECT_FALSE(Share("q4_0,rot=0", "q8_0", E::kLlamaCpp));
  // A key both set differently is shared when it acts on one tensor only: K's value is taken.
  auto s = ShareLayer(Cand("fp8_e4m3,scale=calib", 'k'), Cand("q4_0,scale=unit", 'v'), E::kNative);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->scale, Fp8ScaleMode::kCalib);
}

std::string Render(const std::vector<std::pair<std::string, std::string>>& layers,
                   AttentionMode e = AttentionMode::kNative, const std::vector<bool>& sliding = {}) {
  std::vector<Candidate> held;  // [2 · n_layers]
  held.reserve(2 * layers.size());
  std::vector<LayerCandidates> lc;
  for (const auto& [k, v] : layers) {
    held.push_back(Cand(k, 'k'));
    held.push_back(Cand(v, 'v'));
    lc.push_back({&held[held.size() - 2], &held.back()});
  }
  const CacheConfig rendered = RenderMixSpec(lc, e, sliding);
  const Expected<CacheConfig> parsed = CacheConfig::Parse(rendered.spec());
  EXPECT_TRUE(parsed.ok() && *parsed == rendered) << rendered.spec() << " parses back to another configuration";
  return rendered.spec();
}

TEST(DecideMixSpecTest, RenderingIsCompact) {
  using L = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Render(L(8, {"q8_0", "q4_0"})), "k=q8_0,v=q4_0");
  EXPECT_EQ(Render(L(4, {"q8_0", "q4_0"}), AttentionMode::kLlamaCpp), "k=q8_0,v=q4_0,engine=llama.cpp");
  // Defaults: the most common K (q8_0, 6 layers) and V (q8_0, 5 layers); runs of layers that need
  // the same keys are one segment, K and V keys of a layer together.
  L mix(8, {"q8_0", "q8_0"});
  mix[0].first = mix[4].first = "f16";
  mix[3].second = mix[4].second = mix[5].second = "q4_0";
  EXPECT_EQ(Render(mix), "k=q8_0,v=q8_0;layers=0:k=f16;layers=3:v=q4_0;layers=4:k=f16,v=q4_0;layers=5:v=q4_0");
  L runs(8, {"q8_0", "q8_0"});
  runs[3].second = runs[4].second = runs[5].second = "q4_0";
  EXPECT_EQ(Render(runs), "k=q8_0,v=q8_0;layers=3-5:v=q4_0");
  // Protections per layer, K and V together.
  L prot(8, {"q8_0", "q8_0"});
  prot[0] = prot[1] = {"q4_0,rot=1", "q4_0,rot=1"};
  EXPECT_EQ(Render(prot), "k=q8_0,v=q8_0;layers=0-1:k=q4_0,v=q4_0,rot=1");
  // The shortest default wins: with rot=1 on 6 layers as the default the 2 others would need
  // rot=auto written back ("k=q4_0,v=q4_0,rot=1;layers=6-7:k=q8_0,v=q8_0,rot=auto", 52 characters);
  // the plain default takes 45.
  L most(8, {"q4_0,rot=1", "q4_0,rot=1"});
  most[6] = most[7] = {"q8_0", "q8_0"};
  EXPECT_EQ(Render(most), "k=q8_0,v=q8_0;layers=0-5:k=q4_0,v=q4_0,rot=1");
}

TEST(DecideMixSpecTest, KindsRenderAsGlobalAndSlidingSegments) {
  using L = std::vector<std::pair<std::string, std::string>>;
  const std::vector<bool> even_slide = {true, false, true, false, true, false};  // gpt-oss's pattern
  // Only the global layers quantized: one kind segment instead of three single-layer ones.
  L global_q4(6, {"f16", "f16"});
  global_q4[1] = global_q4[3] = global_q4[5] = {"q4_0", "q4_0"};
  EXPECT_EQ(Render(global_q4, AttentionMode::kNative, even_slide), "k=f16,v=f16;layers=global:k=q4_0,v=q4_0");
  // Without the kinds the same assignment is written by ranges (the default tried first, layer 0's
  // pair on the tie of the most common ones, wins a tie of lengths).
  EXPECT_EQ(Render(global_q4), "k=q4_0,v=q4_0;layers=0:k=f16,v=f16;layers=2:k=f16,v=f16;layers=4:k=f16,v=f16");
  // Sliding K at q4_0, the rest q8_0: one kind segment over the default tried first.
  L both(6, {"q8_0", "q8_0"});
  both[0] = both[2] = both[4] = {"q4_0", "q8_0"};
  EXPECT_EQ(Render(both, AttentionMode::kNative, even_slide), "k=q4_0,v=q8_0;layers=global:k=q8_0");
  // A kind whose layers differ renders by ranges.
  L mixed = global_q4;
  mixed[5] = {"q8_0", "q4_0"};
  EXPECT_EQ(Render(mixed, AttentionMode::kNative, even_slide),
            "k=f16,v=f16;layers=1:k=q4_0,v=q4_0;layers=3:k=q4_0,v=q4_0;layers=5:k=q8_0,v=q4_0");
}

TEST(DecideMixSpecTest, PartBytesAreTheCachesOwn) {
  const ModelConfig small = testing::Small64(), llama = testing::Llama3_8B();
  auto bytes = [](const ModelConfig& c, const std::string& text, char t) {
    auto b = PartBytesPerToken(c, Cand(text, t), 1, t, 4096, nullptr);
    EXPECT_TRUE(b.ok()) << text;
    return b.ok() ? *b : 0;
  };
  // Bundled model: 2 heads x 64: f16 256 B; q8_0 2 blocks x 34 B x 2 heads = 136; q4_0 2 x 18 x 2 = 72.
  EXPECT_EQ(bytes(small, "f16", 'k'), 256u);
  EXPECT_EQ(bytes(small, "q8_0", 'v'), 136u);
  EXPECT_EQ(bytes(small, "q4_0", 'k'), 72u);
  // Llama-3-8B: 8 heads x 128: q8_0 4 x 34 x 8 = 1088 (decide_kv_memory_test.cc's figure).
  EXPECT_EQ(bytes(llama, "q8_0", 'k'), 1088u);
  ModelConfig odd = testing::AttentionShape(2, 2, 1, 48, 4096);  // head_dim 48: no 32-element blocks
  auto bad = PartBytesPerToken(odd, Cand("q4_0", 'k'), 0, 'k', 4096, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
}

}  // namespace
}  // namespace kvaudit
