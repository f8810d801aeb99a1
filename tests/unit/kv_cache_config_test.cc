#include <gtest/gtest.h>

#include <fstream>

#include "kv/config/cache_config.h"
#include "model/config.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

ModelConfig SmallConfig(int head_dim = 64) {
  ModelConfig c;
  c.n_layers = 8;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = head_dim;
  c.d_model = 384;
  return c;
}

CacheConfig ParseOk(const std::string& spec) {
  auto p = CacheConfig::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec << ": " << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : CacheConfig::F32();
}

void ExpectRejected(const std::string& spec, const std::string& needle, const ModelConfig& c = SmallConfig(),
                    bool calib = false) {
  auto p = CacheConfig::Parse(spec);
  Status s = p.ok() ? p->Validate(c, calib) : Status(p.error());
  ASSERT_FALSE(s.ok()) << spec << " was accepted";
  EXPECT_EQ(s.error().exit_code(), 2);
  EXPECT_NE(s.error().message.find(needle), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("hint:"), std::string::npos) << s.error().message;
}

TEST(CacheConfigTest, DefaultsAndOverridesResolvePerLayerAndHead) {
  CacheConfig p = ParseOk("k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=f16;layers=5,heads=1:v=q8_0");
  ASSERT_TRUE(p.Validate(SmallConfig(), false).ok());
  EXPECT_EQ(p.ForHead(0, 0).k, KvFormat::kF16);
  EXPECT_EQ(p.ForHead(1, 1).v, KvFormat::kF16);
  EXPECT_EQ(p.ForHead(1, 1).rot, RotationMode::kOn);  // modifiers are inherited by overrides
  EXPECT_EQ(p.ForHead(2, 0).k, KvFormat::kQ4_0);
  EXPECT_EQ(p.ForHead(5, 0).v, KvFormat::kQ4_0);
  EXPECT_EQ(p.ForHead(5, 1).v, KvFormat::kQ8_0);
  EXPECT_EQ(p.ForHead(5, 1).k, KvFormat::kQ4_0);
  EXPECT_EQ(p.spec(), "k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=f16;layers=5,heads=1:v=q8_0");
}

TEST(CacheConfigTest, CanonicalSpecOrdersKeysAndExpandsKv) {
  EXPECT_EQ(ParseOk(" v=q4_0 , k=q8_0 ").spec(), "k=q8_0,v=q4_0");
  EXPECT_EQ(ParseOk("kv=kivi2,recent=64").spec(), "k=kivi2,v=kivi2,recent=64");
  EXPECT_EQ(ParseOk("layers=0:k=f16").spec(), "k=f32,v=f32;layers=0:k=f16");
  EXPECT_TRUE(ParseOk("k=f32,v=f32").IsPlainF32());
  EXPECT_FALSE(ParseOk("k=f32,v=f16").IsPlainF32());
}

// A configuration as an engine runs it when the checkpoint's scales do not load: the scale keys
// gone everywhere, a segment of scale keys alone gone with them, the rest kept as written.
TEST(CacheConfigTest, WithoutScalesDropsEveryScaleKeyAndNothingElse) {
  EXPECT_EQ(ParseOk("k=fp8_e4m3,v=fp8_e4m3,scale=ckpt,scale_by=head").WithoutScales().spec(), "k=fp8_e4m3,v=fp8_e4m3");
  EXPECT_EQ(
      ParseOk("k=nvfp4,v=nvfp4,scale=calib;layers=0-1:k=f16,v=f16;layers=3:scale=ckpt;layers=5:sink=4,scale=calib")
          .WithoutScales()
          .spec(),
      "k=nvfp4,v=nvfp4;layers=0-1:k=f16,v=f16;layers=5:sink=4");
  const CacheConfig plain = ParseOk("k=q4_0,v=q8_0,engine=llama.cpp");
  EXPECT_EQ(plain.WithoutScales(), plain);
}

TEST(CacheConfigTest, FormatDefaults) {
  CacheConfig p = ParseOk("k=kivi2,v=kivi2");
  EXPECT_EQ(p.ForHead(0, 0).Recent(), 128);
  EXPECT_EQ(p.ForHead(0, 0).KiviGroup(), 32);
  EXPECT_EQ(ParseOk("k=int4,v=int4").ForHead(0, 0).IntGroup(), 64);
  EXPECT_EQ(ParseOk("k=q4_0,v=q4_0").ForHead(0, 0).Recent(), 0);
  EXPECT_EQ(ParseOk("k=q4_0,v=q4_0,engine=llama.cpp").attention(), AttentionMode::kLlamaCpp);
}

TEST(CacheConfigTest, SyntaxErrorsAreCleanAndNameTheProblem) {
  ExpectRejected("k=q3_0", "unknown format 'q3_0'");
  ExpectRejected("k=q4_0,bogus=1", "unknown key 'bogus'");
  ExpectRejected("k=q4_0,k=q8_0", "given twice");
  ExpectRejected("k", "not key=value");
  ExpectRejected("", "empty");
  ExpectRejected("k=q4_0;;v=q4_0", "empty segment");
  ExpectRejected("k=q4_0;v=q8_0", "no layers= selector");
  ExpectRejected("k=q4_0;layers=3-1:k=f16", "bad range");
  ExpectRejected("k=q4_0;layers=1:engine=llama.cpp", "engine is global");
  ExpectRejected("k=q4_0,rot=2", "rot=2");
  ExpectRejected("k=q4_0,sink=-1", "sink=-1");
  ExpectRejected("k=int4,group=0", "group=0");
  ExpectRejected("k=q4_0;layers=1", "no ':'");
}

TEST(CacheConfigTest, ModelDependentErrors) {
  ExpectRejected("k=q4_0;layers=0-3:k=f16;layers=3-4:v=f16", "cover the same");
  ExpectRejected("k=q4_0;layers=6-9:k=f16", "outside the model");
  ExpectRejected("k=q4_0;layers=0,heads=2:k=f16", "outside the model's 2 KV heads");
  ExpectRejected("k=q4_0", "multiple of 32", SmallConfig(48));
  ExpectRejected("k=int4,group=48", "does not divide head_dim");
  ExpectRejected("k=q4_0,rot=1", "power-of-two", SmallConfig(96));
  ExpectRejected("k=kivi2,engine=llama.cpp", "llama.cpp has no kivi2");
  ExpectRejected("k=q4_0,sink=4,engine=llama.cpp", "protection");
  ExpectRejected("k=fp8_e4m3,scale=calib", "--kv-calib");
  ExpectRejected("k=kivi2,v=kivi2,recent=48", "multiple of its group");
  ExpectRejected("k=kivi2,v=kivi2,recent=0", "multiple of its group");
  ExpectRejected("k=q4_0,prerope=1,rot=1", "does not commute");
  ExpectRejected("k=q4_0,outliers=64", "not below head_dim", SmallConfig(), /*calib=*/true);
  // The GPU engines' formats: block sizes of 16 (nvfp4) and 32 (q8_KV), no dynamic scale for nvfp4.
  ExpectRejected("k=nvfp4", "multiple of 16", SmallConfig(40));
  ExpectRejected("k=q8_KV", "multiple of 32", SmallConfig(48));
  ExpectRejected("k=nvfp4,v=nvfp4,scale=dynamic", "nvfp4 has no scale=dynamic");
  ExpectRejected("k=nvfp4,scale=calib", "--kv-calib");
  // TurboQuant: a power-of-two head_dim for its Hadamard; no outlier channels or pre-RoPE keys in
  // its own basis; layers=ends needs two layers.
  ExpectRejected("kv=turboquant_4bit_nc", "power of two up to 1024", SmallConfig(96));
  ExpectRejected("k=turboquant_mse4,outliers=2", "outliers= and prerope=1 do not apply", SmallConfig(), true);
  ExpectRejected("k=turboquant_mse3,prerope=1", "outliers= and prerope=1 do not apply");
  ModelConfig one = SmallConfig();
  one.n_layers = 1;
  ExpectRejected("kv=turboquant_3bit_nc", "layers=ends selects no layer", one);
  EXPECT_TRUE(ParseOk("k=turboquant_uniform4,v=turboquant_mse4,prerope=1").Validate(SmallConfig(), false).ok());
  const CacheConfig tq = ParseOk("kv=turboquant_k3v4_nc");
  ASSERT_TRUE(tq.Validate(SmallConfig(), false).ok());
  for (int l = 0; l < 8; ++l) {
    const bool end = l < 2 || l > 5;
    EXPECT_EQ(tq.ForHead(SmallConfig(), l, 1).k, end ? KvFormat::kBF16 : KvFormat::kTurboQuantMse3) << l;
    EXPECT_EQ(tq.ForHead(SmallConfig(), l, 1).v, end ? KvFormat::kBF16 : KvFormat::kTurboQuantUniform4) << l;
  }
  // Same layers but disjoint heads is fine.
  CacheConfig ok = ParseOk("k=q4_0;layers=0,heads=0:k=f16;layers=0,heads=1:k=q8_0");
  EXPECT_TRUE(ok.Validate(SmallConfig(), false).ok());
}

// Protections that cannot apply to a model's sliding or two-RoPE layers are refused, not ignored.
TEST(CacheConfigTest, ProtectionsThatDoNotApplyToSlidingLayersAreRefused) {
  ModelConfig gemma = SmallConfig();  // layers 0-4 sliding (window 64), 5 and 7 global
  gemma.sliding_window = 64;
  gemma.sliding_layers = {1, 1, 1, 1, 1, 0, 1, 0};
  ExpectRejected("k=q4_0,sink=4", "layer 0 head 0: sink=4 on a sliding-window layer (window 64)", gemma);
  // sink= on the global layers only is what the hint asks for.
  EXPECT_TRUE(ParseOk("k=q4_0;layers=5:k=q4_0,sink=4;layers=7:k=q4_0,sink=4").Validate(gemma, false).ok());
  gemma.rope_local = RopeParams{};
  ExpectRejected("k=q4_0,prerope=1", "use two (Gemma 3)", gemma);
}

// layers=global / layers=sliding select by the model's attention kind (ModelConfig::is_sliding).
TEST(CacheConfigTest, LayerKindSelectorsFollowTheModelsSlidingLayers) {
  ModelConfig oss = SmallConfig();  // gpt-oss's pattern: even layers slide
  oss.sliding_window = 128;
  oss.sliding_layers = {1, 0, 1, 0, 1, 0, 1, 0};
  const CacheConfig p = ParseOk("k=f16,v=f16;layers=global:k=q4_0,v=q4_0;layers=sliding,heads=1:v=q8_0");
  EXPECT_EQ(p.spec(), "k=f16,v=f16;layers=global:k=q4_0,v=q4_0;layers=sliding,heads=1:v=q8_0");
  EXPECT_EQ(CacheConfig::Parse(p.spec())->spec(), p.spec());
  ASSERT_TRUE(p.Validate(oss, false).ok()) << p.Validate(oss, false).error().message;
  EXPECT_TRUE(p.HasLayerKinds());
  for (int l = 0; l < 8; ++l) {
    const bool global = l % 2 == 1;
    EXPECT_EQ(p.ForHead(oss, l, 0).k, global ? KvFormat::kQ4_0 : KvFormat::kF16) << l;
    EXPECT_EQ(p.ForHead(oss, l, 1).v, global ? KvFormat::kQ4_0 : KvFormat::kQ8_0) << l;
    EXPECT_EQ(p.ForHead(oss, l, 1).k, global ? KvFormat::kQ4_0 : KvFormat::kF16) << l;
  }
  // Built from values, the same configuration.
  KvSettings q4;
  q4.k = q4.v = KvFormat::kQ4_0;
  KvSettings f16 = q4;
  f16.k = f16.v = KvFormat::kF16;
  EXPECT_EQ(CacheConfig::Uniform(f16).WithLayerKind(LayerKind::kGlobal, q4).spec(),
            "k=f16,v=f16;layers=global:k=q4_0,v=q4_0");
  // A kind that names no layer of the model, and overlaps with a range, are errors.
  ExpectRejected("k=f16;layers=sliding:k=q4_0", "layers=sliding selects no layer: this model has no sliding-window");
  ModelConfig mistral = SmallConfig();  // every layer slides
  mistral.sliding_window = 4096;
  ExpectRejected("k=f16;layers=global:k=q4_0", "every layer of this model slides (window 4096)", mistral);
  ExpectRejected("k=f16;layers=global:k=q4_0;layers=2-3:v=q8_0", "overrides 1 and 2 cover the same layers", oss);
  EXPECT_TRUE(ParseOk("k=f16;layers=global:k=q4_0;layers=2:v=q8_0").Validate(oss, false).ok());
  ExpectRejected("k=f16;layers=local:k=q4_0", "bad range 'local'");
  // One layers= per selector: a range beside a kind (or two ranges) would drop one of them.
  ExpectRejected("k=f16;layers=sliding,layers=0-3:k=q4_0", "'layers=' given twice in one selector");
  ExpectRejected("k=f16;layers=0-1,heads=0,heads=1:k=q4_0", "'heads=' given twice in one selector");
  // sink= on the global layers by kind is what the sliding-layer refusal's hint asks for.
  EXPECT_TRUE(ParseOk("k=q4_0;layers=global:k=q4_0,sink=4").Validate(oss, false).ok());
}

TEST(CacheConfigTest, JsonFileMatchesSpecString) {
  const auto dir = testing::MakeTempDir("cache-config");
  std::ofstream(dir / "p.json") << R"({"k":"q4_0","v":"q4_0","rot":1,
      "overrides":[{"layers":"0-1","k":"f16","v":"f16"},{"layers":5,"heads":1,"v":"q8_0"}]})";
  auto p = CacheConfig::FromArgument("@" + (dir / "p.json").string());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->spec(), "k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=f16;layers=5,heads=1:v=q8_0");
  std::ofstream(dir / "bad.json") << "[1,2]";
  auto bad = CacheConfig::FromArgument("@" + (dir / "bad.json").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.json"), std::string::npos);
  EXPECT_FALSE(CacheConfig::FromArgument("@" + (dir / "missing.json").string()).ok());
  std::ofstream(dir / "kinds.json") << R"({"k":"f16","v":"f16","overrides":[{"layers":"global","k":"q4_0"}]})";
  auto kinds = CacheConfig::FromArgument("@" + (dir / "kinds.json").string());
  ASSERT_TRUE(kinds.ok()) << kinds.error().message;
  EXPECT_EQ(kinds->spec(), "k=f16,v=f16;layers=global:k=q4_0");
}

// Every malformed cache configuration file is one message naming the file and the problem, with a hint.
TEST(CacheConfigTest, JsonFileErrorsNameTheFileAndGiveAHint) {
  const auto dir = testing::MakeTempDir("cache-config-errors");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"k":[1]})", "'k' must be a string, integer or boolean"},
      {R"({"layers":"0-1","k":"f16"})", "'layers' belongs inside an entry of \"overrides\""},
      {R"({"k":"q4_0","overrides":[{"k":"f16"}]})", "an override needs \"layers\""},
      {R"({"k":"q4_0","overrides":{"layers":"0"}})", "\"overrides\" must be an array"},
      {R"({"k":"q4_0","overrides":[3]})", "each override must be an object"},
      {"{", "not a JSON object"},
      {R"({"k":"q3_x","v":"q4_0"})", "q3_x"},  // the spec's own error, prefixed with the file
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto file = dir / ("p" + std::to_string(i) + ".json");
    std::ofstream(file) << cases[i].first;
    const auto r = CacheConfig::FromArgument("@" + file.string());
    ASSERT_FALSE(r.ok()) << cases[i].first;
    const std::string& m = r.error().message;
    EXPECT_EQ(m.rfind(file.string() + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(cases[i].second), std::string::npos) << m;
    EXPECT_NE(m.find("; hint: "), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace kvaudit
