// Custom probe JSONL (docs/probes.md): a good file parses into checks; every malformed line is
// reported with its line number in one BadInput error (exit 2) before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "probe/custom.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

using Kind = ProbeCheck::Kind;

// The error message's lines.
std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string ErrorOf(const std::string& text) {
  auto r = ParseCustomProbes(text, "p.jsonl");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(r.error().exit_code(), 2);
  return r.error().message;
}

TEST(ProbeCustomTest, GoodFileGivesOneProbePerLine) {
  const std::string text =
      "{\"id\": \"needle\", \"prompt\": \"KEY = \\\"7f3a\\\"\\n...\\nKEY = \\\"\", \"expected\": \"7f3a\"}\n"
      "\n"
      "{\"id\": \"has-def\", \"prompt\": \"Write f\", \"contains\": \"def f(\", \"max_tokens\": 128}\r\n"
      "   \n"
      "{\"id\": \"hex\", \"prompt\": \"p\", \"regex\": \"0x[0-9a-f]{4}\\\\b\"}\n"
      "{\"id\": \"json\", \"prompt\": \"p\", \"json_valid\": true, \"max_tokens\": 4096}\n"
      "{\"id\": \"eq\", \"prompt\": \"p\", \"json_equals\": {\"path\": \"a.b[0]\", \"value\": {\"c\": [1, 2]}}}\n"
      "{\"id\": \"ptr\", \"prompt\": \"p\", \"json_equals\": {\"path\": \"/a/0\", \"value\": null}, \"max_tokens\": 1}";
  auto r = ParseCustomProbes(text, "p.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = *r;
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].id, "needle");
  EXPECT_EQ(p[0].prompt, "KEY = \"7f3a\"\n...\nKEY = \"");
  EXPECT_EQ(p[0].check.kind, Kind::kPrefix);
  EXPECT_EQ(p[0].check.expected, "7f3a");
  EXPECT_EQ(p[0].max_tokens, kDefaultProbeMaxTokens);
  EXPECT_EQ(p[0].line, 1);
  EXPECT_EQ(p[1].check.kind, Kind::kContains);
  EXPECT_EQ(p[1].check.expected, "def f(");
  EXPECT_EQ(p[1].max_tokens, 128);
  EXPECT_EQ(p[1].line, 3);
  EXPECT_EQ(p[2].check.kind, Kind::kRegex);
  EXPECT_EQ(p[2].check.pattern, "0x[0-9a-f]{4}\\b");
  EXPECT_EQ(p[2].line, 5);
  EXPECT_EQ(p[3].check.kind, Kind::kJsonValid);
  EXPECT_EQ(p[3].max_tokens, 4096);
  EXPECT_EQ(p[4].check.kind, Kind::kJsonEquals);
  EXPECT_EQ(p[4].check.json_path, "a.b[0]");
  EXPECT_EQ(p[4].check.json_value, nlohmann::json::parse(R"({"c": [1, 2]})"));
  EXPECT_TRUE(p[5].check.json_value.is_null());
  EXPECT_EQ(p[5].max_tokens, 1);
}

TEST(ProbeCustomTest, EveryProblemIsListedWithItsLineNumber) {
  const std::string text =
      "{\"id\": \"ok1\", \"prompt\": \"p\", \"expected\": \"x\"}\n"                  // 1 good
      "{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\"\n"                     // 2 malformed JSON
      "\n"                                                                           // 3 blank
      "{\"id\": \"b\", \"expected\": \"x\"}\n"                                       // 4 no prompt
      "{\"id\": \"c\", \"prompt\": \"p\", \"expected\": \"x\", \"regex\": \"y\"}\n"  // 5 two checks
      "\n"                                                                           // 6 blank
      "{\"id\": \"d\", \"prompt\": \"p\", \"regex\": \"a(b\"}\n"                     // 7 bad regex
      "{\"id\": 5, \"prompt\": [\"p\"], \"contains\": 3, \"max_tokens\": \"64\"}\n"  // 8 wrong types
      "{\"id\": \"ok1\", \"prompt\": \"p\", \"contains\": \"x\"}\n"                  // 9 duplicate id
      "{\"id\": \"e\", \"prompt\": \"p\", \"expcted\": \"x\"}\n"  // 10 typo → unknown key, no check
      "{\"id\": \"f\", \"prompt\": \"p\", \"json_equals\": {\"path\": \"a..b\", \"value\": 1}}\n"  // 11 bad path
      "{\"id\": \"g\", \"prompt\": \"p\", \"json_valid\": false}\n"                                // 12
      "{\"id\": \"h\", \"prompt\": \"p\", \"expected\": \"x\", \"max_tokens\": 5000}\n"            // 13
      "[1, 2]\n"                                                                                   // 14 not an object
      "{\"id\": \"i\", \"prompt\": \"\", \"expected\": \"\"}\n";                                   // 15 empty strings
  const std::string message = ErrorOf(text);
  const std::vector<std::string> lines = Lines(message);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "12 malformed probe line(s) in p.jsonl") << message;
  auto has = [&](const std::string& prefix, const std::string& part) {
    for (const auto& l : lines) {
      if (l.rfind(prefix, 0) == 0 && l.find(part) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("p.jsonl:2: ", "not valid JSON (parse error at column 43: ")) << message;
  EXPECT_TRUE(has("p.jsonl:4: ", "no \"prompt\"")) << message;
  EXPECT_TRUE(has("p.jsonl:5: ", "2 checks \"expected\" and \"regex\"")) << message;
  EXPECT_TRUE(has("p.jsonl:7: ", "does not compile")) << message;
  EXPECT_TRUE(has("p.jsonl:8: ", "\"id\" is a number")) << message;
  EXPECT_TRUE(has("p.jsonl:8: ", "\"prompt\" is an array")) << message;
  EXPECT_TRUE(has("p.jsonl:8: ", "\"max_tokens\" is a string")) << message;
  EXPECT_TRUE(has("p.jsonl:8: ", "\"contains\" is a number")) << message;
  EXPECT_TRUE(has("p.jsonl:9: ", "duplicate id \"ok1\" (first on line 1)")) << message;
  EXPECT_TRUE(has("p.jsonl:10: ", "unknown key \"expcted\"; hint: did you mean \"expected\"?")) << message;
  EXPECT_TRUE(has("p.jsonl:10: ", "no check")) << message;
  EXPECT_TRUE(has("p.jsonl:11: ", "JSON path \"a..b\" has an empty key")) << message;
  EXPECT_TRUE(has("p.jsonl:12: ", "\"json_valid\" is false")) << message;
  EXPECT_TRUE(has("p.jsonl:13: ", "\"max_tokens\" is 5000, outside 1..4096")) << message;
  EXPECT_TRUE(has("p.jsonl:14: ", "not an object")) << message;
  EXPECT_TRUE(has("p.jsonl:15: ", "\"prompt\" is empty")) << message;
  EXPECT_TRUE(has("p.jsonl:15: ", "expected text is empty")) << message;
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind("p.jsonl:", 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find("hint:"), std::string::npos) << lines[i];
  }
  // Good line 1 is not mentioned.
  EXPECT_FALSE(has("p.jsonl:1: ", ""));
}

TEST(ProbeCustomTest, LineNumbersCountBlankLinesAndCrLf) {
  const std::string message = ErrorOf("\r\n\n  \n{\"id\": \"a\", \"prompt\": \"p\"}\r\n");
  EXPECT_EQ(Lines(message).at(1).rfind("p.jsonl:4: no check", 0), 0u) << message;
}

TEST(ProbeCustomTest, MoreSubtleTypeErrors) {
  std::string m = ErrorOf(R"({"id": "a", "prompt": "p", "expected": "x", "max_tokens": 12.5})");
  EXPECT_NE(m.find("\"max_tokens\" is a number with a fraction"), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "expected": "x", "max_tokens": 0})");
  EXPECT_NE(m.find("outside 1..4096"), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "json_equals": {"path": "a", "valu": 1}})");
  EXPECT_NE(m.find("unknown key \"valu\" in \"json_equals\""), std::string::npos) << m;
  EXPECT_NE(m.find("no \"value\" in \"json_equals\""), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "json_equals": {"value": 1}})");
  EXPECT_NE(m.find("no \"path\""), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "json_equals": "a.b"})");
  EXPECT_NE(m.find("\"json_equals\" is a string"), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "regex": ["x"]})");
  EXPECT_NE(m.find("\"regex\" is an array"), std::string::npos) << m;
  m = ErrorOf(R"({"id": "a", "prompt": "p", "expected": "x", "zzz_other": 1})");
  EXPECT_NE(m.find("unknown key \"zzz_other\"; hint: keys are id, prompt"), std::string::npos) << m;
}

TEST(ProbeCustomTest, EmptyFileAndManyErrorsAndFiles) {
  EXPECT_NE(ErrorOf("\n\n").find("no probes"), std::string::npos);
  std::string many;
  for (int i = 0; i < 80; ++i) many += "{bad\n";
  const std::vector<std::string> lines = Lines(ErrorOf(many));
  EXPECT_EQ(lines.front(), "80 malformed probe line(s) in p.jsonl");
  EXPECT_EQ(lines.size(), 52u);
  EXPECT_EQ(lines.back(), "... and 30 more problem(s)");

  const auto dir = testing::MakeTempDir("probe-custom");
  const auto path = (dir / "probes.jsonl").string();
  {
    std::ofstream out(path);
    out << "{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\"}\n{\"id\": \"a\"}\n";
  }
  auto r = LoadCustomProbes(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Lines(r.error().message).at(0), "1 malformed probe line(s) in " + path);
  EXPECT_EQ(Lines(r.error().message).at(1).rfind(path + ":2: ", 0), 0u);
  auto missing = LoadCustomProbes((dir / "nope.jsonl").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kBadInput);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
