// Dialect detection from canned /v1/models and /props bodies (endpoint/dialect.h), the --dialect
// flag, and the capability table's rows that the client's behaviour depends on.
#include <gtest/gtest.h>

#include "endpoint/dialect.h"

namespace kvaudit {
namespace {

using nlohmann::json;

json Models(const std::string& owned_by) {
  return {{"object", "list"}, {"data", json::array({{{"id", "m"}, {"object", "model"}, {"owned_by", owned_by}}})}};
}

Expected<Dialect> Detect(const std::optional<json>& models, const std::optional<json>& props,
                         std::string* why = nullptr) {
  return DetectDialect(models, props, "http://h:1", why);
}

TEST(EndpointDialectTest, OwnedByNamesTheServer) {
  std::string why;
  auto k = Detect(Models("kvaudit"), std::nullopt, &why);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, Dialect::kKvaudit);
  EXPECT_EQ(why, "GET /v1/models: owned_by 'kvaudit'");
  EXPECT_EQ(*Detect(Models("vllm"), std::nullopt), Dialect::kVllm);
  EXPECT_EQ(*Detect(Models("llamacpp"), std::nullopt), Dialect::kLlamaServer);
}

TEST(EndpointDialectTest, PropsNamesLlamaServerWhenModelsDoNot) {
  std::string why;
  const json props = {{"default_generation_settings", {{"n_ctx", 4096}}}, {"total_slots", 1}};
  auto d = Detect(std::nullopt, props, &why);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, Dialect::kLlamaServer);
  EXPECT_EQ(why, "GET /props: default_generation_settings");
  EXPECT_EQ(*Detect(Models("someone"), props), Dialect::kLlamaServer);
}

TEST(EndpointDialectTest, AnythingElseIsRefusedNotGuessed) {
  for (const auto& models : {std::optional<json>(Models("openai")), std::optional<json>(Models("sglang")),
                             std::optional<json>(json{{"data", json::array()}}), std::optional<json>()}) {
    auto d = Detect(models, json{{"something", 1}});
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("cannot tell which server this is"), std::string::npos) << d.error().message;
    EXPECT_NE(d.error().message.find("hint: name it with --dialect"), std::string::npos);
  }
  auto none = Detect(Models("x"), std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("owned_by 'x', no /props"), std::string::npos) << none.error().message;
}

TEST(EndpointDialectTest, FlagValues) {
  auto a = ParseDialectFlag("auto");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  for (Dialect d : {Dialect::kKvaudit, Dialect::kVllm, Dialect::kLlamaServer, Dialect::kOpenAI}) {
    auto p = ParseDialectFlag(DialectName(d));
    ASSERT_TRUE(p.ok() && p->has_value()) << DialectName(d);
    EXPECT_EQ(**p, d);
  }
  auto bad = ParseDialectFlag("tgi");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--dialect 'tgi' is not a dialect; hint: auto, kvaudit, vllm, llama-server or openai");
}

TEST(EndpointDialectTest, CapabilityTable) {
  const Capabilities k = CapabilitiesOf(Dialect::kKvaudit), v = CapabilitiesOf(Dialect::kVllm),
                     l = CapabilitiesOf(Dialect::kLlamaServer), o = CapabilitiesOf(Dialect::kOpenAI);
  EXPECT_EQ(k.prompt_logprobs, Support::kYes);
  EXPECT_EQ(v.prompt_logprobs, Support::kYes);
  EXPECT_EQ(l.prompt_logprobs, Support::kNo);
  EXPECT_EQ(o.prompt_logprobs, Support::kNo);
  EXPECT_EQ(k.tokenize_shape, "content");
  EXPECT_EQ(v.tokenize_shape, "prompt");
  EXPECT_EQ(l.tokenize_shape, "content");
  EXPECT_EQ(o.tokenize, Support::kNo);
  EXPECT_EQ(k.ids_from, "logprobs-token-ids");
  EXPECT_EQ(v.ids_from, "logprobs-token-ids");
  EXPECT_EQ(l.ids_from, "native-tokens");
  EXPECT_EQ(o.ids_from, "");
  EXPECT_EQ(k.max_top_logprobs, 20);
  EXPECT_EQ(v.max_top_logprobs, -1);  // the deployment's --max-logprobs: unknown from the client
  EXPECT_EQ(o.seed, Support::kUnknown);
  EXPECT_STREQ(SupportName(o.echo_logprobs), "unknown");
}

}  // namespace
}  // namespace kvaudit
