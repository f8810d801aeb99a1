// Probe prompt generators (docs/probes.md): deterministic for a seed, exactly the requested token
// length, the fact at the requested depth (token position), chat wraps applied, clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "probe/constraint.h"
#include "probe/exact.h"
#include "probe/haystack.h"
#include "probe/needle.h"
#include "run/text_data.h"
#include "io/gguf.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

const std::vector<int> kLengths = {512, 1024, 2048, 4096};

struct Env {
  std::unique_ptr<Tokenizer> bundled;
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<Tokenizer> llama3;
  std::unique_ptr<GgufFile> spm_gguf;
  std::unique_ptr<Tokenizer> spm;  // SentencePiece: every encoded text gets a dummy-prefix space
  std::unique_ptr<Haystack> haystack;
};

// Loaded once: the bundled tokenizer, the Llama-3 BPE vocabulary, the bundled eval documents.
const Env& E() {
  static const Env* env = [] {
    auto* e = new Env;
    auto tok = Tokenizer::FromHfDir(testing::BundledModelDir().string());
    if (tok.ok()) e->bundled = std::move(*tok);
    auto g = GgufFile::Open(testing::Fixture("tokenizers/ggml-vocab-llama-bpe.gguf").string());
    if (g.ok()) {
      e->gguf = std::make_unique<GgufFile>(std::move(*g));
      auto t = Tokenizer::FromGguf(*e->gguf);
      if (t.ok()) e->llama3 = std::move(*t);
    }
    auto g2 = GgufFile::Open(testing::Fixture("tokenizers/ggml-vocab-llama-spm.gguf").string());
    if (g2.ok()) {
      e->spm_gguf = std::make_unique<GgufFile>(std::move(*g2));
      auto t = Tokenizer::FromGguf(*e->spm_gguf);
      if (t.ok()) e->spm = std::move(*t);
    }
    auto h = Haystack::Load((testing::RepoDir() / "data" / "eval-docs.jsonl").string());
    if (h.ok()) e->haystack = std::make_unique<Haystack>(std::move(*h));
    return e;
  }();
  return *env;
}

class ProbeGenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(E().bundled) << "bundled tokenizer did not load";
    ASSERT_TRUE(E().llama3) << "ggml-vocab-llama-bpe.gguf did not load";
    ASSERT_TRUE(E().spm) << "ggml-vocab-llama-spm.gguf did not load";
    ASSERT_TRUE(E().haystack) << "data/eval-docs.jsonl did not load";
  }
  const Tokenizer& tok() const { return *E().bundled; }
  const Haystack& hay() const { return *E().haystack; }
};

std::string Text(const Tokenizer& t, const std::vector<int32_t>& ids, int begin, int end) {
  return t.Decode(std::span<const int32_t>(ids.data() + begin, static_cast<size_t>(end - begin)));
}

// The depth rule of ProbeInstance, recomputed independently of the generator.
void ExpectAtDepth(const ProbeInstance& p) {
  const int h = p.haystack_end - p.haystack_begin - p.fact_tokens;
  const int want = static_cast<int>(std::lround(p.depth / 100.0 * h));
  EXPECT_EQ(p.fact_token - p.haystack_begin, want) << p.id;
  if (p.depth == 0) {
    EXPECT_EQ(p.fact_token, p.haystack_begin) << p.id;
  }
}

Expected<std::vector<ProbeInstance>> All(const Tokenizer& t, const Haystack& h, const std::string& family,
                                         const std::string& variant, std::vector<int> lengths, std::vector<int> depths,
                                         uint64_t seed, PromptWrap wrap = {}) {
  if (family == "needle") {
    NeedleOptions o;
    o.variant = variant, o.lengths = lengths, o.depths = depths, o.seed = seed, o.wrap = wrap;
    return MakeNeedleProbes(t, h, o);
  }
  if (family == "exact") {
    ExactOptions o;
    o.variant = variant, o.lengths = lengths, o.depths = depths, o.seed = seed, o.wrap = wrap;
    return MakeExactProbes(t, h, o);
  }
  ConstraintOptions o;
  o.variant = variant, o.lengths = lengths, o.seed = seed, o.wrap = wrap;
  return MakeConstraintProbes(t, h, o);
}

struct FamilyVariant {
  std::string family, variant;
};
std::vector<FamilyVariant> Every() {
  std::vector<FamilyVariant> v;
  for (const auto& x : kNeedleVariants) v.push_back({"needle", x});
  for (const auto& x : kExactVariants) v.push_back({"exact", x});
  for (const auto& x : kConstraintVariants) v.push_back({"constraint", x});
  return v;
}

// Every family and variant at every default length and three depths; returns the worst |error|.
int ExpectLengths(const Tokenizer* t, const Haystack& hay) {
  int worst = 0;
  for (const auto& fv : Every()) {
    auto probes = All(*t, hay, fv.family, fv.variant, kLengths, {0, 50, 100}, 7);
    if (!probes.ok()) {
      ADD_FAILURE() << fv.family << "/" << fv.variant << ": " << probes.error().message;
      return -1;
    }
    EXPECT_EQ(probes->size(), fv.family == "constraint" ? 4u : 12u);
    for (const auto& p : *probes) {
      const int err = std::abs(static_cast<int>(p.prompt.size()) - p.length);
      worst = std::max(worst, err);
      EXPECT_LE(err * 100, p.length) << p.id;
      if (t->add_bos_default()) {
        EXPECT_EQ(p.prompt[0], t->bos_id()) << p.id;
      }
      EXPECT_GE(p.fact_token, p.haystack_begin) << p.id;
      EXPECT_LE(p.fact_token + p.fact_tokens, p.haystack_end) << p.id;
      EXPECT_GT(p.max_tokens, 0) << p.id;
      EXPECT_FALSE(p.expected_text.empty()) << p.id;
    }
  }
  return worst;
}

// The assembly is token-exact by construction; docs/probes.md allows 1%.
TEST_F(ProbeGenTest, LengthWithinOnePercentOnTheBundledTokenizer) {
  EXPECT_EQ(ExpectLengths(E().bundled.get(), hay()), 0);
}
TEST_F(ProbeGenTest, LengthWithinOnePercentOnLlama3Bpe) { EXPECT_EQ(ExpectLengths(E().llama3.get(), hay()), 0); }
TEST_F(ProbeGenTest, LengthWithinOnePercentOnLlamaSentencePiece) {
  EXPECT_EQ(ExpectLengths(E().spm.get(), hay()), 0);
  // Pieces carry no dummy-prefix space: the planted line follows the newline directly.
  NeedleOptions o;
  o.lengths = {512};
  o.depths = {50};
  auto p = MakeNeedleProbes(*E().spm, hay(), o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const auto& ids = (*p)[0].prompt;
  const int f = (*p)[0].fact_token;
  const std::string around = E().spm->Decode(std::span<const int32_t>(ids.data() + f - 1, 3));
  EXPECT_EQ(around.find("\n "), std::string::npos) << around;
}

TEST_F(ProbeGenTest, DeterministicForASeedAndCellsIndependent) {
  for (const auto& fv : Every()) {
    auto a = All(tok(), hay(), fv.family, fv.variant, {512, 1024}, {25}, 11);
    auto b = All(tok(), hay(), fv.family, fv.variant, {512, 1024}, {25}, 11);
    auto c = All(tok(), hay(), fv.family, fv.variant, {512, 1024}, {25}, 12);
    auto only = All(tok(), hay(), fv.family, fv.variant, {1024}, {25}, 11);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && only.ok()) << fv.family << "/" << fv.variant;
    ASSERT_EQ(a->size(), 2u);
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].id, (*b)[i].id);
      EXPECT_EQ((*a)[i].prompt, (*b)[i].prompt) << (*a)[i].id;
      EXPECT_EQ((*a)[i].check.expected, (*b)[i].check.expected);
      EXPECT_EQ((*a)[i].id, (*c)[i].id);
      EXPECT_NE((*a)[i].prompt, (*c)[i].prompt) << (*a)[i].id << ": another seed, same prompt";
    }
    // Adding a length does not change another cell.
    EXPECT_EQ((*a)[1].prompt, (*only)[0].prompt) << fv.family << "/" << fv.variant;
  }
  NeedleOptions o;
  o.lengths = {512}, o.depths = {50}, o.per_cell = 3;
  auto n = MakeNeedleProbes(tok(), hay(), o);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)[2].id, "needle/code/L512/d50/i2");
  EXPECT_NE((*n)[0].prompt, (*n)[1].prompt);
}

TEST_F(ProbeGenTest, NeedleSitsAtTheRequestedDepthAndDecodesToTheFact) {
  for (const Tokenizer* t : {E().bundled.get(), E().llama3.get()}) {
    for (const auto& variant : kNeedleVariants) {
      auto probes = All(*t, hay(), "needle", variant, kLengths, kDefaultNeedleDepths, 3);
      ASSERT_TRUE(probes.ok()) << variant << ": " << probes.error().message;
      ASSERT_EQ(probes->size(), 28u);
      for (const auto& p : *probes) {
        ExpectAtDepth(p);
        const std::string fact = Text(*t, p.prompt, p.fact_token, p.fact_token + p.fact_tokens);
        const std::string cue = Text(*t, p.prompt, p.haystack_end, static_cast<int>(p.prompt.size()));
        const std::string& v = p.check.expected;
        EXPECT_EQ(p.check.kind, ProbeCheck::Kind::kPrefix);
        // Completion style: only BOS (and the JSON object's opening) before the haystack.
        const int bos = t->add_bos_default() ? 1 : 0;
        EXPECT_EQ(Text(*t, p.prompt, bos, p.haystack_begin), variant == "json" ? "{\n" : "") << p.id;
        if (variant == "code" || variant == "multikey") {
          EXPECT_EQ(fact, cue + v + "\"\n") << p.id;  // NAME = "value"  ...  NAME = "
          EXPECT_EQ(cue.back(), '"');
        } else if (variant == "prose") {
          EXPECT_EQ(fact, cue + " " + v + ".\n") << p.id;
          EXPECT_EQ(cue.rfind("The ", 0), 0u) << p.id;
        } else {
          // {"key": "   after the object's "end" entry; the planted entry is   "key": "value",
          const std::string close = "  \"end\": null\n}\n";
          ASSERT_EQ(cue.rfind(close, 0), 0u) << p.id << ": " << cue;
          const std::string reopen = cue.substr(close.size());
          EXPECT_EQ(fact, "  " + reopen.substr(1) + v + "\",\n") << p.id;
        }
        // The fact starts a line and the haystack region ends at a line end.
        if (p.fact_token > p.haystack_begin) {
          EXPECT_EQ(Text(*t, p.prompt, p.fact_token - 1, p.fact_token).back(), '\n') << p.id;
        }
        if (p.depth == 100) {
          EXPECT_EQ(p.fact_token + p.fact_tokens, p.haystack_end) << p.id;
        }
        if (variant == "multikey") {
          // Three distractor assignments besides the asked one, all in the haystack region.
          const std::string hay_text = Text(*t, p.prompt, p.haystack_begin, p.haystack_end);
          EXPECT_EQ(hay_text.find(fact), hay_text.rfind(fact)) << p.id;
        }
      }
    }
  }
}

TEST_F(ProbeGenTest, ValueKindsHaveTheirShapes) {
  NeedleOptions o;
  o.lengths = {512};
  o.depths = {50};
  o.per_cell = 4;
  auto all_digits = [](const std::string& s) { return s.find_first_not_of("0123456789") == std::string::npos; };
  for (auto [kind, name] : {std::pair{NeedleValueKind::kNumber, "number"},
                            {NeedleValueKind::kWord, "word"},
                            {NeedleValueKind::kHex, "hex"},
                            {NeedleValueKind::kUuid, "uuid"}}) {
    auto parsed = ParseNeedleValueKind(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
    o.value_kind = kind;
    auto probes = MakeNeedleProbes(tok(), hay(), o);
    ASSERT_TRUE(probes.ok()) << probes.error().message;
    for (const auto& p : *probes) {
      const std::string& v = p.check.expected;
      switch (kind) {
        case NeedleValueKind::kNumber: EXPECT_TRUE(all_digits(v) && v.size() >= 5 && v.size() <= 7) << v; break;
        case NeedleValueKind::kWord:
          EXPECT_EQ(v.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), std::string::npos) << v;
          break;
        case NeedleValueKind::kHex:
          EXPECT_TRUE(v.size() >= 6 && v.size() <= 8 && v.find_first_not_of("0123456789abcdef") == std::string::npos)
              << v;
          break;
        default: EXPECT_EQ(v.size(), 36u) << v; EXPECT_EQ(v[8], '-') << v;
      }
    }
  }
  EXPECT_FALSE(ParseNeedleValueKind("float").ok());
}

TEST_F(ProbeGenTest, ExactSpanAppearsEarlyAndTheCueIsItsOwnFirstTokens) {
  for (const auto& variant : kExactVariants) {
    auto probes = All(tok(), hay(), "exact", variant, {1024, 2048}, {10, 50}, 5);
    ASSERT_TRUE(probes.ok()) << variant << ": " << probes.error().message;
    for (const auto& p : *probes) {
      ExpectAtDepth(p);
      EXPECT_EQ(p.check.kind, ProbeCheck::Kind::kExactSpan);
      const auto& ids = p.prompt;
      const int cue = static_cast<int>(ids.size()) - p.haystack_end;
      ASSERT_GT(cue, 0);
      ASSERT_LT(cue, p.fact_tokens);
      EXPECT_TRUE(std::equal(ids.begin() + p.haystack_end, ids.end(), ids.begin() + p.fact_token)) << p.id;
      const std::string span = Text(tok(), ids, p.fact_token, p.fact_token + p.fact_tokens);
      const std::string cue_text = Text(tok(), ids, p.haystack_end, static_cast<int>(ids.size()));
      EXPECT_EQ(span.rfind(cue_text + p.check.expected + "\n", 0), 0u) << p.id << ": " << span;
      const char closing = p.check.expected.back();
      EXPECT_TRUE(closing == ']' || closing == ':' || closing == '}' || std::isdigit(closing)) << p.id;
      EXPECT_GE(p.max_tokens, 4);
    }
  }
}

TEST_F(ProbeGenTest, ConstraintHeaderFirstAndFillerNeverShowsTheConvention) {
  for (const auto& variant : kConstraintVariants) {
    auto probes = All(tok(), hay(), "constraint", variant, {1024, 4096}, {}, 2);
    ASSERT_TRUE(probes.ok()) << variant << ": " << probes.error().message;
    for (const auto& p : *probes) {
      EXPECT_EQ(p.depth, -1);
      EXPECT_EQ(p.fact_token, p.haystack_begin);
      const std::string header = Text(tok(), p.prompt, p.fact_token, p.fact_token + p.fact_tokens);
      EXPECT_EQ(header.rfind("# Style: ", 0), 0u) << header;
      const std::string filler = Text(tok(), p.prompt, p.fact_token + p.fact_tokens, p.haystack_end);
      const std::string ending = Text(tok(), p.prompt, p.haystack_end, static_cast<int>(p.prompt.size()));
      if (variant == "prefix") {
        EXPECT_EQ(p.check.kind, ProbeCheck::Kind::kRegex);
        EXPECT_EQ(filler.find("\ndef "), std::string::npos) << p.id;
        EXPECT_EQ(ending, "\n\ndef");
        EXPECT_NE(header.find("def " + p.check.pattern.substr(4)), std::string::npos) << p.check.pattern;
      } else if (variant == "quotes") {
        EXPECT_EQ(filler.find_first_of("'\""), std::string::npos) << p.id;
        // The header asks for one quote style and its examples use only that one.
        const bool single = header.find("uses single quotes") != std::string::npos;
        EXPECT_TRUE(single || header.find("uses double quotes") != std::string::npos) << header;
        EXPECT_EQ(header.find(single ? '"' : '\''), std::string::npos) << header;
        EXPECT_EQ(p.check.pattern, single ? R"(^[^"]*$)" : R"(^[^']*$)");
        EXPECT_NE(ending.find("raise ValueError"), std::string::npos);
      } else {
        EXPECT_EQ(filler.find("\n "), std::string::npos) << p.id;
        EXPECT_EQ(filler.find("\n\t"), std::string::npos) << p.id;
        EXPECT_NE(header.find("\n\treturn"), std::string::npos);
        EXPECT_EQ(ending.back(), '\n');
      }
    }
  }
}

// A stand-in chat template: special-token markers around the user text, then the assistant turn.
std::string FakeChat(std::string_view body, std::string_view question, std::string_view answer_prefix) {
  return "<|user|>\n" + std::string(body) + "\n\n" + std::string(question) + "<|end|>\n<|assistant|>\n" +
         std::string(answer_prefix);
}

TEST_F(ProbeGenTest, ChatWrapIsAppliedAroundTheBody) {
  for (const auto& fv : Every()) {
    auto probes = All(tok(), hay(), fv.family, fv.variant, {1024}, {50}, 9, FakeChat);
    ASSERT_TRUE(probes.ok()) << fv.variant << ": " << probes.error().message;
    const auto& p = (*probes)[0];
    ASSERT_EQ(static_cast<int>(p.prompt.size()), 1024) << p.id;
    const std::string head = Text(tok(), p.prompt, 0, p.haystack_begin);
    const std::string tail = Text(tok(), p.prompt, p.haystack_end, static_cast<int>(p.prompt.size()));
    EXPECT_EQ(head, fv.variant == "json" ? "<|user|>\n{\n" : "<|user|>\n") << p.id;
    // The question is shown between the body and the assistant turn.
    const size_t end = tail.find("<|end|>\n<|assistant|>\n");
    ASSERT_NE(end, std::string::npos) << p.id << ": " << tail;
    EXPECT_GT(end, 20u) << p.id << ": " << tail;
    if (fv.variant != "json") {
      EXPECT_EQ(tail.rfind("\n\n", 0), 0u) << p.id << ": " << tail;
    }
    if (fv.family == "needle") {
      ExpectAtDepth(p);
      const std::string fact = Text(tok(), p.prompt, p.fact_token, p.fact_token + p.fact_tokens);
      EXPECT_NE(fact.find(p.check.expected), std::string::npos) << p.id;
    }
    if (fv.family == "constraint") {
      // The constraint becomes an instruction at the start of the user message.
      const std::string rule = Text(tok(), p.prompt, p.fact_token, p.fact_token + p.fact_tokens);
      EXPECT_EQ(rule.rfind("Formatting rule", 0), 0u) << rule;
      EXPECT_EQ(p.check.kind, ProbeCheck::Kind::kEveryLine) << p.id;
      EXPECT_GE(p.max_tokens, 128);
    }
  }
  // A template that drops the body is refused.
  auto bad = All(tok(), hay(), "needle", "code", {1024}, {50}, 9,
                 [](std::string_view, std::string_view q, std::string_view) { return std::string(q); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_NE(bad.error().message.find("exactly once"), std::string::npos) << bad.error().message;
}

TEST_F(ProbeGenTest, ErrorsForShortHaystackBadDepthShortLengthUnknownVariant) {
  auto small = Haystack::FromDocuments({"def f():\n    return 1\n", "x = 2\n"});
  ASSERT_TRUE(small.ok());
  auto e1 = All(tok(), *small, "needle", "code", {1024}, {50}, 0);
  ASSERT_FALSE(e1.ok());
  EXPECT_EQ(e1.error().code, ErrorCode::kBadInput);
  EXPECT_NE(e1.error().message.find("haystack too short"), std::string::npos) << e1.error().message;
  // The hint names the flag that gives the haystack (probe has no --haystack).
  EXPECT_NE(e1.error().message.find("hint: pass more text with --data, or smaller --lengths"), std::string::npos)
      << e1.error().message;
  EXPECT_EQ(e1.error().message.rfind("needle/code/L1024/d50/i0: ", 0), 0u) << e1.error().message;
  EXPECT_EQ(e1.error().message.find('\n'), std::string::npos);

  auto e2 = All(tok(), hay(), "needle", "prose", {1024}, {101}, 0);
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.error().message.find("depth 101"), std::string::npos) << e2.error().message;
  EXPECT_FALSE(All(tok(), hay(), "exact", "number", {1024}, {-1}, 0).ok());

  for (const auto& fv : Every()) {
    auto e3 = All(tok(), hay(), fv.family, fv.variant, {100}, {50}, 0);
    ASSERT_FALSE(e3.ok()) << fv.variant;
    EXPECT_NE(e3.error().message.find("below the minimum of 128"), std::string::npos) << e3.error().message;
  }
  // At the minimum length a wordy chat template leaves too little room for a haystack.
  const std::string long_template(3000, 'x');
  auto e4 = All(tok(), hay(), "constraint", "quotes", {128}, {}, 0,
                [&](std::string_view b, std::string_view q, std::string_view a) {
                  return long_template + std::string(b) + std::string(q) + std::string(a);
                });
  ASSERT_FALSE(e4.ok());
  EXPECT_NE(e4.error().message.find("filler tokens"), std::string::npos) << e4.error().message;

  auto e5 = All(tok(), hay(), "needle", "table", {512}, {50}, 0);
  ASSERT_FALSE(e5.ok());
  EXPECT_NE(e5.error().message.find("code, prose, json, multikey"), std::string::npos);
  EXPECT_FALSE(Haystack::FromDocuments({"", "  \n"}).ok());
}

TEST_F(ProbeGenTest, FillerStreamIsTokenExactAndMovesOn) {
  for (const Tokenizer* t : {E().bundled.get(), E().llama3.get()}) {
    // JSON-shaped lines, the hardest case: a truncated entry must stay an entry, tiny remainders blank.
    FillerStream s(
        hay(), *t, 42, [](std::string_view l) { return !l.empty(); },
        [](std::string_view l, int i) {
          return FillerLine{"  \"k" + std::to_string(i) + "\": \"", std::string(l.substr(0, 40)), "\",\n"};
        });
    for (int n : {1, 2, 3, 5, 8, 13, 40, 97, 300, 1000}) {
      auto ids = s.Take(n);
      ASSERT_TRUE(ids.ok()) << ids.error().message;
      ASSERT_EQ(static_cast<int>(ids->size()), n);
      const std::string text = t->Decode(*ids);
      EXPECT_EQ(text.back(), '\n') << n;
    }
    FillerStream plain(hay(), *t, 43);
    auto a = plain.Take(700);
    auto b = plain.Take(700);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(t->Decode(*a), t->Decode(*b));
  }
  EXPECT_EQ(DefaultProbeLengths(4096), (std::vector<int>{512, 1024, 2048, 4032}));
  EXPECT_EQ(DefaultProbeLengths(2048, 0), (std::vector<int>{512, 1024, 2048}));
  EXPECT_EQ(DefaultProbeLengths(32768), (std::vector<int>{512, 1024, 2048, 4096}));
}

}  // namespace
}  // namespace kvaudit
