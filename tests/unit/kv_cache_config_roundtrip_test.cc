// The spec grammar has one parser and one printer: every configuration prints to its canonical
// spec, and that spec parses back to the same typed value (parse(print(x)) == x), over every
// format and every value of every modifier, with and without overrides, heads and engine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/formats/format_table.h"
#include "kv/config/cache_config.h"

namespace kvaudit {
namespace {

// Parses `text`, checks that it prints as `canonical` and that the print parses to the same value.
void ExpectRoundTrip(const std::string& text, const std::string& canonical) {
  const Expected<CacheConfig> p = CacheConfig::Parse(text);
  ASSERT_TRUE(p.ok()) << text << ": " << p.error().message;
  EXPECT_EQ(p->spec(), canonical) << text;
  const Expected<CacheConfig> again = CacheConfig::Parse(p->spec());
  ASSERT_TRUE(again.ok()) << p->spec();
  EXPECT_TRUE(*again == *p) << text << " -> " << p->spec() << " parses to another configuration";
  EXPECT_EQ(again->spec(), p->spec());
}

const std::vector<std::string>& Modifiers() {
  static const std::vector<std::string> mods = {
      "scale=unit", "scale=calib", "scale=dynamic", "scale=ckpt", "scale_by=layer", "scale_by=head", "group=1",
      "group=64",   "recent=0",    "recent=128",    "sink=0",     "sink=4",         "rot=0",         "rot=1",
      "rot=auto",   "outliers=0",  "outliers=4",    "prerope=0",  "prerope=1"};
  return mods;
}

TEST(KvCacheConfigRoundTrip, EveryFormatAsKAndAsV) {
  for (const FormatRow& k : FormatTable()) {
    for (const FormatRow& v : FormatTable()) {
      const std::string spec = "k=" + std::string(k.name) + ",v=" + std::string(v.name);
      ExpectRoundTrip(spec, spec);
    }
  }
}

TEST(KvCacheConfigRoundTrip, EveryModifierInDefaultsAndOverrides) {
  for (const std::string& mod : Modifiers()) {
    ExpectRoundTrip("k=q4_0,v=q4_0," + mod, "k=q4_0,v=q4_0," + mod);
    ExpectRoundTrip("k=q8_0,v=q4_0;layers=2:k=f16," + mod, "k=q8_0,v=q4_0;layers=2:k=f16," + mod);
    ExpectRoundTrip("k=q8_0,v=q4_0;layers=0-3,heads=1:" + mod, "k=q8_0,v=q4_0;layers=0-3,heads=1:" + mod);
  }
  // Every key at once, written out of order: printed in the canonical order.
  ExpectRoundTrip("prerope=1,outliers=2,rot=0,sink=4,recent=8,group=32,scale_by=head,scale=calib,v=int4,k=fp8_e4m3",
                  "k=fp8_e4m3,v=int4,scale=calib,scale_by=head,group=32,recent=8,sink=4,rot=0,outliers=2,prerope=1");
}

TEST(KvCacheConfigRoundTrip, EngineOverridesAndShorthands) {
  for (const std::string engine : {"", ",engine=native", ",engine=llama.cpp"}) {
    ExpectRoundTrip("k=q8_0,v=q4_0" + engine, "k=q8_0,v=q4_0" + engine);
    ExpectRoundTrip("kv=q4_0" + engine + ";layers=0:kv=f16;layers=5-7,heads=0-1:k=q8_0",
                    "k=q4_0,v=q4_0" + engine + ";layers=0:k=f16,v=f16;layers=5-7,heads=0-1:k=q8_0");
  }
  ExpectRoundTrip("engine=llama.cpp", "engine=llama.cpp");
  ExpectRoundTrip(" layers=1-1:k=q4_0 ", "k=f32,v=f32;layers=1:k=q4_0");  // defaults written out
  // A TurboQuant preset as the defaults is vLLM's: its two formats and the end layers in bf16; in
  // an override only the two formats.
  for (const TurboQuantPreset& p : TurboQuantPresets()) {
    const std::string kv = "k=" + std::string(KvFormatName(p.k)) + ",v=" + std::string(KvFormatName(p.v));
    ExpectRoundTrip("kv=" + std::string(p.name), kv + ";layers=ends:k=bf16,v=bf16");
    ExpectRoundTrip("k=q8_0,v=q8_0;layers=3:kv=" + std::string(p.name), "k=q8_0,v=q8_0;layers=3:" + kv);
  }
  ExpectRoundTrip("k=q4_0,v=q4_0;layers=ends:kv=f16", "k=q4_0,v=q4_0;layers=ends:k=f16,v=f16");
  ExpectRoundTrip("k=q4_0,group=064,sink=-0", "k=q4_0,group=64,sink=0");  // integers in decimal
}

TEST(KvCacheConfigRoundTrip, EngineNativeWrittenIsItsOwnName) {
  // engine=native written is printed, so it is not the configuration that leaves it out.
  EXPECT_FALSE(*CacheConfig::Parse("k=q4_0,v=q4_0") == *CacheConfig::Parse("k=q4_0,v=q4_0,engine=native"));
}

TEST(KvCacheConfigRoundTrip, ErrorsNameTheFlagTheSpecCameFrom) {
  const Expected<CacheConfig> bad = CacheConfig::Parse("k=q3_0", "--baseline");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("--baseline \"k=q3_0\": unknown format 'q3_0'", 0), 0u) << bad.error().message;
  const Expected<CacheConfig> kv = CacheConfig::Parse("k=q3_0");
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.error().message.rfind("--kv \"k=q3_0\"", 0), 0u) << kv.error().message;
}

// The value API decide/ composes configurations with gives what parsing the spec gives.
TEST(KvCacheConfigValues, BuiltEqualsParsed) {
  KvSettings q4;
  q4.k = q4.v = KvFormat::kQ4_0;
  const Expected<KvSettings> rot = KvSettings::Parse("rot=1,sink=4", "--formats");
  ASSERT_TRUE(rot.ok()) << rot.error().message;
  q4.Overlay(*rot);
  KvSettings f16_k;
  f16_k.k = KvFormat::kF16;
  for (const std::optional<AttentionMode> engine :
       {std::optional<AttentionMode>{}, std::optional{AttentionMode::kNative},
        std::optional{AttentionMode::kLlamaCpp}}) {
    const CacheConfig built = CacheConfig::Uniform(q4, engine).WithLayers({2, 3}, f16_k).WithLayers({5, 5}, *rot);
    const std::string suffix = !engine                             ? ""
                               : *engine == AttentionMode::kNative ? ",engine=native"
                                                                   : ",engine=llama.cpp";
    const std::string spec = "k=q4_0,v=q4_0,sink=4,rot=1" + suffix + ";layers=2-3:k=f16;layers=5:sink=4,rot=1";
    EXPECT_EQ(built.spec(), spec);
    const Expected<CacheConfig> parsed = CacheConfig::Parse(spec);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(built == *parsed) << spec;
    EXPECT_EQ(built.attention(), parsed->attention());
    for (int layer = 0; layer < 8; ++layer) EXPECT_EQ(built.ForHead(layer, 1).k, parsed->ForHead(layer, 1).k);
  }
}

TEST(KvCacheConfigValues, SettingsParseOneSegmentAndNameTheirOrigin) {
  const Expected<KvSettings> kv = KvSettings::Parse("kv=q8_0,group=064", "--formats");
  ASSERT_TRUE(kv.ok()) << kv.error().message;
  EXPECT_EQ(kv->Print(), "k=q8_0,v=q8_0,group=64");
  const Expected<KvSettings> engine = KvSettings::Parse("engine=llama.cpp", "--formats");
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error().message.rfind("--formats \"engine=llama.cpp\": engine is global", 0), 0u)
      << engine.error().message;
  EXPECT_FALSE(KvSettings::Parse("rot=2", "--formats").ok());
  EXPECT_FALSE(KvSettings::Parse("sink=4,sink=2", "--formats").ok());
}

}  // namespace
}  // namespace kvaudit
