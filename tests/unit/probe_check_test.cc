// Hand-made cases for every probe check kind (docs/probes.md), scored with the bundled model's real
// byte-level BPE tokenizer so first_wrong_token is checked against true token boundaries.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "probe/check.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using Kind = ProbeCheck::Kind;

class ProbeCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tok = Tokenizer::FromHfDir(testing::BundledModelDir().string());
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    tokenizer_ = std::move(*tok).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }

  // Scores `output` as if the model had produced exactly its tokenization (no BOS).
  static ProbeScore Score(const ProbeCheck& check, const std::string& output) {
    const std::vector<int32_t> ids = tokenizer_->Encode(output, /*add_bos=*/false);
    EXPECT_EQ(tokenizer_->Decode(ids), output);
    return ScoreProbe(check, ids, output, *tokenizer_);
  }
  static ProbeCheck Text(Kind kind, std::string expected) {
    ProbeCheck c;
    c.kind = kind;
    c.expected = std::move(expected);
    return c;
  }
  static ProbeCheck Pattern(Kind kind, std::string pattern) {
    ProbeCheck c;
    c.kind = kind;
    c.pattern = std::move(pattern);
    return c;
  }
  static ProbeCheck OfKind(Kind kind) {
    ProbeCheck c;
    c.kind = kind;
    return c;
  }
  static ProbeCheck JsonEquals(std::string path, json value) {
    ProbeCheck c;
    c.kind = Kind::kJsonEquals;
    c.json_path = std::move(path);
    c.json_value = std::move(value);
    return c;
  }

  static const Tokenizer* tokenizer_;
};

const Tokenizer* ProbeCheckTest::tokenizer_ = nullptr;

TEST_F(ProbeCheckTest, PrefixStripsLeadingBlanksAndNeedsAWordBoundary) {
  const ProbeCheck c = Text(Kind::kPrefix, "123");
  EXPECT_TRUE(Score(c, "123").pass);
  EXPECT_TRUE(Score(c, "123\" and more").pass);
  EXPECT_TRUE(Score(c, "  \t123.").pass);
  EXPECT_TRUE(Score(c, "123 4").pass);
  // "1234" holds "123" but the value goes on: tokens " ", "123", "4" → the "4" token is wrong.
  const ProbeScore s = Score(c, " 1234");
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.first_wrong_token, 2);
  EXPECT_NE(s.detail.find("continues the value"), std::string::npos) << s.detail;
  EXPECT_FALSE(Score(c, "123_x").pass);
  EXPECT_FALSE(Score(c, "123-b").pass);
  EXPECT_FALSE(Score(c, "\n123").pass);  // only spaces and tabs are stripped
  EXPECT_FALSE(Score(c, "12").pass);
}

TEST_F(ProbeCheckTest, PrefixFirstWrongTokenIsTheTokenHoldingTheFirstDifferentByte) {
  // "The value is "0x3fa9"" tokenizes as The| value| is| "|0|x|3|fa|9|" (bundled vocabulary).
  const ProbeCheck c = Text(Kind::kPrefix, "The value is \"0x3fb1\"");
  const ProbeScore s = Score(c, "The value is \"0x3fa9\"");
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.first_wrong_token, 7);  // "fa": byte 'a' is where "fb1" departs
  EXPECT_NE(s.detail.find("byte 18"), std::string::npos) << s.detail;
}

TEST_F(ProbeCheckTest, FirstWrongTokenCountsBytesAcrossSplitUtf8Characters) {
  // "é€😀": é is one token, € (E2 82 AC) three byte tokens, 😀 (F0 9F 98 80) four more.
  const std::string out = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  const std::vector<int32_t> ids = tokenizer_->Encode(out, false);
  ASSERT_EQ(ids.size(), 8u);
  // Expected "é₿" (E2 82 BF): the first two bytes of € agree; its third byte (token 3) departs.
  ProbeScore s = ScoreProbe(Text(Kind::kExactSpan, "\xC3\xA9\xE2\x82\xBF"), ids, out, *tokenizer_);
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.first_wrong_token, 3);
  // Expected "é€x": departs at the first byte of 😀, token 4.
  s = ScoreProbe(Text(Kind::kExactSpan, "\xC3\xA9\xE2\x82\xACx"), ids, out, *tokenizer_);
  EXPECT_EQ(s.first_wrong_token, 4);
  for (size_t byte = 0; byte < out.size(); ++byte) {
    const int want = byte < 2 ? 0 : byte < 5 ? static_cast<int>(byte) - 1 : static_cast<int>(byte) - 1;
    EXPECT_EQ(TokenAtOffset(ids, byte, *tokenizer_), want) << "byte " << byte;
  }
}

TEST_F(ProbeCheckTest, ShortOutputBlamesTheStopToken) {
  std::vector<int32_t> ids = tokenizer_->Encode("12", false);
  const size_t n_text = ids.size();
  ids.push_back(tokenizer_->eos_id());  // the model stopped
  ProbeScore s = ScoreProbe(Text(Kind::kPrefix, "123"), ids, "12", *tokenizer_);
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.first_wrong_token, static_cast<int>(n_text));
  EXPECT_NE(s.detail.find("ends after 2 of 3"), std::string::npos) << s.detail;
  // Out of tokens with no stop token: nothing to blame.
  ids.pop_back();
  EXPECT_EQ(ScoreProbe(Text(Kind::kPrefix, "123"), ids, "12", *tokenizer_).first_wrong_token, -1);
  // Empty output.
  s = ScoreProbe(Text(Kind::kPrefix, "123"), {}, "", *tokenizer_);
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.first_wrong_token, -1);
}

TEST_F(ProbeCheckTest, ExactSpanKeepsWhitespace) {
  const ProbeCheck c = Text(Kind::kExactSpan, "def f(x):\n    return x\n");
  EXPECT_TRUE(Score(c, "def f(x):\n    return x\n\nprint(1)").pass);
  EXPECT_TRUE(Score(c, "def f(x):\n    return x\nfoo").pass);  // no word-boundary rule
  const ProbeScore s = Score(c, "def f(x):\n   return x\n");
  EXPECT_FALSE(s.pass);
  EXPECT_GE(s.first_wrong_token, 0);
  EXPECT_FALSE(Score(c, " def f(x):\n    return x\n").pass);  // no stripping
  EXPECT_FALSE(Score(c, "").pass);
}

TEST_F(ProbeCheckTest, ContainsAndRegexSearchAnywhere) {
  EXPECT_TRUE(Score(Text(Kind::kContains, "KEY_7"), "x = 1\nKEY_7 = 2").pass);
  EXPECT_FALSE(Score(Text(Kind::kContains, "KEY_7"), "KEY_8").pass);
  EXPECT_FALSE(Score(Text(Kind::kContains, "a"), "").pass);
  EXPECT_EQ(Score(Text(Kind::kContains, "a"), "b").first_wrong_token, -1);

  EXPECT_TRUE(Score(Pattern(Kind::kRegex, R"(\b0x[0-9a-f]{4}\b)"), "value: 0x3fa9.").pass);
  EXPECT_FALSE(Score(Pattern(Kind::kRegex, R"(\b0x[0-9a-f]{4}\b)"), "value: 0x3fa95").pass);
  EXPECT_TRUE(Score(Pattern(Kind::kRegex, "^b$"), "a\nb").pass == false);  // no multiline by default
  EXPECT_TRUE(Score(Pattern(Kind::kRegex, "(?m)^b$"), "a\nb").pass);
  EXPECT_TRUE(Score(Pattern(Kind::kRegex, R"(\w+é)"), "café").pass);  // UTF + UCP
  EXPECT_FALSE(Score(Pattern(Kind::kRegex, "x"), "").pass);
  // Invalid UTF-8 in the output (a cut multi-byte character) is matched around, not an error.
  const std::string cut = "ok \xE2\x82";
  EXPECT_TRUE(ScoreProbe(Pattern(Kind::kRegex, "ok"), {}, cut, *tokenizer_).pass);
}

TEST_F(ProbeCheckTest, JsonValidTakesTheFirstBalancedSpan) {
  const ProbeCheck c = OfKind(Kind::kJsonValid);
  EXPECT_TRUE(Score(c, "Here: {\"a\": 1} and more text }").pass);
  EXPECT_TRUE(Score(c, "[1, [2, {\"b\": []}]]").pass);
  // Braces and escaped quotes inside strings do not count.
  const std::string tricky = R"(x {"a": "}{", "b": "q\"}", "c": {"d": ["]"]}} tail)";
  const auto span = FindFirstJsonSpan(tricky);
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(tricky.substr(span->begin, span->end - span->begin), R"({"a": "}{", "b": "q\"}", "c": {"d": ["]"]}})");
  EXPECT_TRUE(Score(c, tricky).pass);

  ProbeScore s = Score(c, "no json here");
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.detail.find("no JSON object or array"), std::string::npos) << s.detail;
  s = Score(c, "{\"a\": [1, 2");
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.detail.find("never closed"), std::string::npos) << s.detail;
  s = Score(c, "{\"a\": 1,}");  // strict: no trailing comma
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.detail.find("does not parse"), std::string::npos) << s.detail;
  EXPECT_FALSE(Score(c, "{'a': 1}").pass);
  EXPECT_FALSE(Score(c, "{\"a\": 1]").pass);  // counted, not matched: the parse rejects it
  EXPECT_FALSE(Score(c, "").pass);
}

TEST_F(ProbeCheckTest, JsonEqualsDottedAndPointerPaths) {
  const std::string out = R"(Result: {"a": {"b": [{"c": 42}, {"c": "42", "d.e": 1.5}], "x/y": true}} done)";
  EXPECT_TRUE(Score(JsonEquals("a.b[0].c", 42), out).pass);
  EXPECT_TRUE(Score(JsonEquals("/a/b/0/c", 42), out).pass);
  EXPECT_TRUE(Score(JsonEquals("a.b[0].c", 42.0), out).pass);  // numbers compare by value
  EXPECT_TRUE(Score(JsonEquals("a.b[1].c", "42"), out).pass);
  EXPECT_TRUE(Score(JsonEquals("/a/b/1/d.e", 1.5), out).pass);  // a key with '.' needs a pointer
  EXPECT_TRUE(Score(JsonEquals("/a/x~1y", true), out).pass);
  EXPECT_TRUE(Score(JsonEquals("a.b[0]", json{{"c", 42}}), out).pass);
  EXPECT_TRUE(
      Score(JsonEquals("", json::parse(R"({"a": {"b": [{"c": 42}, {"c": "42", "d.e": 1.5}], "x/y": true}})")), out)
          .pass);
  EXPECT_TRUE(Score(JsonEquals("[1]", "b"), R"(["a", "b"])").pass);

  ProbeScore s = Score(JsonEquals("a.b[1].c", 42), out);  // string "42" is not the number 42
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.detail.find("got \"42\", want 42"), std::string::npos) << s.detail;
  EXPECT_FALSE(Score(JsonEquals("a.b[0].c", "42"), out).pass);
  s = Score(JsonEquals("a.b[5].c", 42), out);
  EXPECT_NE(s.detail.find("past the end"), std::string::npos) << s.detail;
  s = Score(JsonEquals("a.z", 42), out);
  EXPECT_NE(s.detail.find("no key \"z\""), std::string::npos) << s.detail;
  EXPECT_FALSE(Score(JsonEquals("a[0]", 42), out).pass);    // a is an object
  EXPECT_FALSE(Score(JsonEquals("/a/b/x", 42), out).pass);  // b is an array
  EXPECT_FALSE(Score(JsonEquals("a", 1), "a = 1").pass);
}

TEST_F(ProbeCheckTest, EveryLineNeedsInScopeLinesAndAllOfThemToMatch) {
  ProbeCheck c = Pattern(Kind::kEveryLine, "^[a-z_]+ = \\d+$");
  c.line_filter = " = ";
  c.min_lines = 2;
  EXPECT_TRUE(Score(c, "a = 1\n# note\nb_c = 22\n").pass);
  ProbeScore s = Score(c, "a = 1\nB = 2\n");
  EXPECT_FALSE(s.pass);
  EXPECT_NE(s.detail.find("line 2"), std::string::npos) << s.detail;
  s = Score(c, "a = 1\n# nothing else\n");
  EXPECT_FALSE(s.pass);  // the constraint was exercised once, fewer than min_lines
  EXPECT_NE(s.detail.find("1 line(s) in scope"), std::string::npos) << s.detail;
  EXPECT_TRUE(Score(c, "a = 1\r\nb = 2\r\n").pass);  // CRLF lines
  c.line_filter.clear();                             // every line in scope
  EXPECT_FALSE(Score(c, "a = 1\n\nb = 2").pass);     // the empty line breaks the rule
  c.min_lines = 0;
  EXPECT_TRUE(Score(c, "").pass);
}

TEST_F(ProbeCheckTest, ValidateRejectsBadPatternsAndPaths) {
  EXPECT_TRUE(Text(Kind::kPrefix, "x").Validate().ok());
  EXPECT_FALSE(Text(Kind::kPrefix, "").Validate().ok());
  EXPECT_FALSE(Text(Kind::kContains, "").Validate().ok());
  EXPECT_TRUE(Pattern(Kind::kRegex, "a(b|c)+").Validate().ok());
  const Status bad = Pattern(Kind::kRegex, "a(b").Validate();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_NE(bad.error().message.find("does not compile at offset 3"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("hint:"), std::string::npos);
  EXPECT_EQ(bad.error().message.find('\n'), std::string::npos);
  EXPECT_FALSE(Pattern(Kind::kRegex, "").Validate().ok());
  // A failing compile at score time is a failure with the reason, never a crash.
  EXPECT_FALSE(Score(Pattern(Kind::kRegex, "(["), "x").pass);

  ProbeCheck every = Pattern(Kind::kEveryLine, "x");
  every.line_filter = "*";
  EXPECT_FALSE(every.Validate().ok());
  every.line_filter = "";
  every.min_lines = -1;
  EXPECT_FALSE(every.Validate().ok());

  for (const char* good : {"", "a", "a.b", "a.b[0].c", "[0]", "[0][1]", "a[10].b", "/a/b/0", "/", "/a~0b/c~1d"}) {
    EXPECT_TRUE(JsonEquals(good, 1).Validate().ok()) << good;
  }
  for (const char* bad_path :
       {"a..b", ".a", "a.", "a[", "a[x]", "a[-1]", "a[01]", "a]", "a[0]b", "a.[0]", "/a~2", "/a~"}) {
    const Status st = JsonEquals(bad_path, 1).Validate();
    EXPECT_FALSE(st.ok()) << bad_path;
    if (!st.ok()) {
      EXPECT_NE(st.error().message.find("hint:"), std::string::npos) << st.error().message;
    }
  }
}

TEST_F(ProbeCheckTest, DescribeIsOneLine) {
  EXPECT_EQ(Text(Kind::kPrefix, "0x3fa9").Describe(), "prefix \"0x3fa9\"");
  EXPECT_EQ(Text(Kind::kExactSpan, "a\nb").Describe(), "exact span \"a\\nb\"");
  EXPECT_EQ(Text(Kind::kContains, "k").Describe(), "contains \"k\"");
  EXPECT_EQ(Pattern(Kind::kRegex, "a+").Describe(), "regex /a+/");
  EXPECT_EQ(OfKind(Kind::kJsonValid).Describe(), "valid JSON");
  EXPECT_EQ(JsonEquals("a.b[0]", "x").Describe(), "JSON a.b[0] == \"x\"");
  ProbeCheck every = Pattern(Kind::kEveryLine, "^\\s");
  every.line_filter = "\\S";
  every.min_lines = 3;
  EXPECT_EQ(every.Describe(), "every line matching /\\S/ matches /^\\s/ (at least 3)");
  EXPECT_EQ(Text(Kind::kPrefix, std::string(100, 'x')).Describe(), "prefix \"" + std::string(60, 'x') + "...\"");
}

}  // namespace
}  // namespace kvaudit
