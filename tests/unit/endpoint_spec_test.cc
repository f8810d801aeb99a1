// Endpoint specs (endpoint/endpoint_spec.h) and API key sources (endpoint/api_key.h): what each
// accepts, and the one line each mistake gets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include <unistd.h>

#include "endpoint/api_key.h"
#include "endpoint/endpoint_spec.h"

namespace kvaudit {
namespace {

TEST(EndpointSpecTest, NameDefaultsToHostPort) {
  auto s = ParseEndpointSpec("http://127.0.0.1:8001");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "127.0.0.1:8001");
  EXPECT_EQ(s->scheme, "http");
  EXPECT_EQ(s->host, "127.0.0.1");
  EXPECT_EQ(s->port, 8001);
  EXPECT_EQ(s->base_path, "");
  EXPECT_EQ(s->Url("/v1/completions"), "http://127.0.0.1:8001/v1/completions");
}

TEST(EndpointSpecTest, NamedWithBasePathAndOpenAisV1Suffix) {
  auto s = ParseEndpointSpec("q4_0.tp-2=http://gpu-box:8000/proxy/llm/v1/");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "q4_0.tp-2");
  EXPECT_EQ(s->host, "gpu-box");
  EXPECT_EQ(s->base_path, "/proxy/llm");  // "/v1" dropped: the client adds it
  EXPECT_EQ(s->Url("/tokenize"), "http://gpu-box:8000/proxy/llm/tokenize");
  auto eq_in_path = ParseEndpointSpec("http://h:1/a=b");
  ASSERT_TRUE(eq_in_path.ok()) << eq_in_path.error().message;
  EXPECT_EQ(eq_in_path->base_path, "/a=b");
}

TEST(EndpointSpecTest, HttpsFollowsTheBuild) {
  auto s = ParseEndpointSpec("https://api.example.com:443");
  EXPECT_EQ(s.ok(), HttpsAvailable());
  if (s.ok()) {
    EXPECT_EQ(s->origin(), "https://api.example.com:443");
  }
}

TEST(EndpointSpecTest, MistakesAreOneLineNamingTheFlag) {
  const std::pair<const char*, const char*> cases[] = {
      {"q 4=http://h:1", "is not [A-Za-z0-9._-]+"},
      {"=http://h:1", "is not [A-Za-z0-9._-]+"},
      {"ftp://h:1", "must start with http://"},
      {"h:1", "must start with http://"},
      {"http://h", "has no port"},
      {"http://h:0", "not in 1..65535"},
      {"http://h:70000", "not in 1..65535"},
      {"http://h:8x", "not in 1..65535"},
      {"http://:80", "is not a name"},
      {"http://[::1]:80", "is not a name"},
      {"http://user:pw@h:80", "credentials in the URL"},
      {"http://h:80/x?y=1", "query or fragment"},
  };
  for (const auto& [text, want] : cases) {
    auto s = ParseEndpointSpec(text, "--baseline-endpoint");
    ASSERT_FALSE(s.ok()) << text;
    const std::string& m = s.error().message;
    EXPECT_NE(m.find(want), std::string::npos) << text << " -> " << m;
    EXPECT_EQ(m.rfind("--baseline-endpoint '", 0), 0u) << m;
    EXPECT_NE(m.find("; hint: "), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(s.error().exit_code(), 2);
  }
}

std::function<const char*(const char*)> Env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

std::filesystem::path WriteFile(const std::string& name, const std::string& text) {
  const auto p =
      std::filesystem::temp_directory_path() / ("kvaudit_api_key_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p;
}

TEST(EndpointApiKeyTest, DefaultVariableOrNoKey) {
  auto none = LoadApiKey({}, Env({}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  auto key = LoadApiKey({}, Env({{"KVAUDIT_API_KEY", "  sk-abc \n"}}));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "sk-abc");
}

TEST(EndpointApiKeyTest, NamedVariableMustBeSet) {
  auto key = LoadApiKey({"VLLM_KEY", ""}, Env({{"VLLM_KEY", "k1"}, {"KVAUDIT_API_KEY", "other"}}));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "k1");
  auto unset = LoadApiKey({"VLLM_KEY", ""}, Env({}));
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(
      unset.error().message.find("--api-key-env VLLM_KEY: the variable is unset or empty; hint: export VLLM_KEY="),
      std::string::npos)
      << unset.error().message;
}

TEST(EndpointApiKeyTest, FileFirstLineTrimmed) {
  const auto f = WriteFile("ok", "  secret-key\t\r\nsecond line\n");
  auto key = LoadApiKey({"", f.string()}, Env({{"KVAUDIT_API_KEY", "env"}}));
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(*key, "secret-key");  // the file wins over the default variable
  const auto empty = WriteFile("empty", "\nkey-on-line-2\n");
  auto bad = LoadApiKey({"", empty.string()}, Env({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("has an empty first line"), std::string::npos);
  auto missing = LoadApiKey({"", "/nonexistent/kvaudit/key"}, Env({}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot read the API key file '/nonexistent/kvaudit/key'"), std::string::npos);
  auto both = LoadApiKey({"X", f.string()}, Env({{"X", "y"}}));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("both given"), std::string::npos);
  std::filesystem::remove(f);
  std::filesystem::remove(empty);
}

TEST(EndpointApiKeyTest, ControlCharactersAreRefused) {
  auto bad = LoadApiKey({}, Env({{"KVAUDIT_API_KEY",
                                  "zqxw\x01"
                                  "zqxw"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("control character"), std::string::npos);
  EXPECT_EQ(bad.error().message.find("zqxw"), std::string::npos);  // the key itself is never echoed
}

}  // namespace
}  // namespace kvaudit
