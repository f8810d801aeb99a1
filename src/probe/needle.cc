#include "probe/needle.h"

#include <algorithm>

#include "probe/words.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

namespace w = probe_words;

std::string MakeValue(NeedleValueKind kind, ProbeRng& rng) {
  switch (kind) {
    case NeedleValueKind::kNumber: return w::Digits(rng, rng.Range(5, 7));
    case NeedleValueKind::kWord: return rng.Pick(w::kValueWords);
    case NeedleValueKind::kHex: return w::Hex(rng, rng.Range(6, 8));
    case NeedleValueKind::kUuid:
      return w::Hex(rng, 8) + "-" + w::Hex(rng, 4) + "-" + w::Hex(rng, 4) + "-" + w::Hex(rng, 4) + "-" +
             w::Hex(rng, 12);
    case NeedleValueKind::kRotate: break;
  }
  KV_CHECK_MSG(false, "MakeValue: kRotate must be resolved first");
  return {};
}

// A JSON string body from a haystack line: no quotes, backslashes, control or non-ASCII bytes, so
// any token-wise truncation of it is still a valid JSON string.
std::string JsonSafe(std::string_view line) {
  const size_t b = line.find_first_not_of(" \t");
  const size_t e = line.find_last_not_of(" \t");
  std::string s;
  if (b == std::string_view::npos) return s;
  for (char c : line.substr(b, e - b + 1)) {
    const auto u = static_cast<unsigned char>(c);
    s += c == '"' ? '\'' : c == '\\' ? '/' : (u < 0x20 || u >= 0x7f) ? ' ' : c;
  }
  return s;
}

bool NotBlank(std::string_view line) { return line.find_first_not_of(" \t") != std::string_view::npos; }

std::string AssignLine(const std::string& name, const std::string& value) { return name + " = \"" + value + "\"\n"; }

// Everything a needle instance plants and asks, before assembly.
struct NeedlePlan {
  ProbeLayout layout;
  std::string value;
  LineFilter keep;
  LineShape shape;
};

NeedlePlan PlanNeedle(const Tokenizer& tok, const std::string& variant, NeedleValueKind kind, int distractors,
                      ProbeRng& rng) {
  NeedlePlan plan;
  plan.value = MakeValue(kind, rng);
  auto& l = plan.layout;
  if (variant == "code") {
    const std::string name = w::Upper(w::SnakeName(rng));
    l.fact = EncodePiece(tok, AssignLine(name, plan.value));
    l.question = "In the code above, which string is assigned to " + name + "?";
    l.answer_prefix = name + " = \"";
  } else if (variant == "prose") {
    const std::string attr = rng.Pick(w::kAttributes);
    const std::string project = rng.Pick(w::kProjects);
    const std::string stem = "The " + attr + " for the " + project + " project is";
    l.fact = EncodePiece(tok, stem + " " + plan.value + ".\n");
    l.question = "What is the " + attr + " for the " + project + " project?";
    l.answer_prefix = stem;
  } else if (variant == "json") {
    std::string key = rng.Pick(w::kProjects) + "_" + rng.Pick(w::kAttributes);
    for (char& c : key) c = c == ' ' ? '_' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    l.open = EncodePiece(tok, "{\n");
    l.fact = EncodePiece(tok, "  \"" + key + "\": \"" + plan.value + "\",\n");
    l.close = EncodePiece(tok, "  \"end\": null\n}\n");
    l.question = "In the JSON object above, what is the value of \"" + key + "\"?";
    l.answer_prefix = "{\"" + key + "\": \"";
    plan.keep = NotBlank;
    // Filler keys "<noun>_<n>" cannot equal the needle's "<project>_<attribute>" key.
    const uint64_t key_salt = rng.Below(w::kNouns.size());
    plan.shape = [key_salt](std::string_view line, int ordinal) {
      const auto& noun = w::kNouns[(key_salt + static_cast<uint64_t>(ordinal) * 7) % w::kNouns.size()];
      return FillerLine{"  \"" + noun + "_" + std::to_string(ordinal) + "\": \"", JsonSafe(line), "\",\n"};
    };
  } else {  // multikey
    const std::string a = rng.Pick(w::kAdjectives), n = rng.Pick(w::kNouns);
    const std::string name = w::Upper(a + "_" + n);
    std::vector<std::string> names = {name}, values = {plan.value};
    while (static_cast<int>(names.size()) < distractors + 1) {
      // Distractors share a word with the asked name where they can: same adjective, same noun, then free.
      const size_t i = names.size();
      const std::string cand = w::Upper(i % 3 == 1   ? a + "_" + rng.Pick(w::kNouns)
                                        : i % 3 == 2 ? rng.Pick(w::kAdjectives) + "_" + n
                                                     : w::SnakeName(rng));
      std::string v = MakeValue(kind, rng);
      if (std::find(names.begin(), names.end(), cand) != names.end()) continue;
      if (std::find(values.begin(), values.end(), v) != values.end()) continue;
      names.push_back(cand);
      values.push_back(v);
      l.distractors.push_back(EncodePiece(tok, AssignLine(cand, v)));
    }
    l.fact = EncodePiece(tok, AssignLine(name, plan.value));
    l.question = "In the code above, which string is assigned to " + name + "?";
    l.answer_prefix = name + " = \"";
  }
  return plan;
}

}  // namespace

Expected<NeedleValueKind> ParseNeedleValueKind(std::string_view name) {
  if (name == "rotate") return NeedleValueKind::kRotate;
  if (name == "number") return NeedleValueKind::kNumber;
  if (name == "word") return NeedleValueKind::kWord;
  if (name == "hex") return NeedleValueKind::kHex;
  if (name == "uuid") return NeedleValueKind::kUuid;
  return BadInput("unknown needle value kind \"" + std::string(name) +
                  "\"; hint: one of rotate, number, word, hex, uuid");
}

Expected<std::vector<ProbeInstance>> MakeNeedleProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                      const NeedleOptions& options) {
  KV_RETURN_IF_ERROR(ValidateProbeVariant("needle", options.variant, kNeedleVariants));
  KV_RETURN_IF_ERROR(ValidateProbeGrid("needle", options.lengths, options.depths, options.per_cell));
  if (options.depths.empty()) return BadInput("needle probes: no depths; hint: pass --depths, e.g. 0,50,100");
  if (options.variant == "multikey" && (options.distractors < 1 || options.distractors > 16)) {
    return BadInput("needle probes: multikey needs 1..16 distractors; hint: --distractors 3");
  }
  std::vector<ProbeInstance> out;
  for (int length : options.lengths) {
    for (int depth : options.depths) {
      for (int i = 0; i < options.per_cell; ++i) {
        ProbeInstance p = NewProbeInstance("needle", options.variant, length, depth, i);
        ProbeRng rng(InstanceSeed(options.seed, p.id));
        // The default mix: numbers and short hex strings. Words and UUIDs are opt-in kinds: a
        // 36-character UUID or an English word inside code tests spelling more than recall (the
        // bundled code model recalls 5-7 digit numbers and 6-8 hex chars at ~70% at 1k tokens,
        // words at ~33%, UUIDs almost never; docs/probes.md).
        static const NeedleValueKind kKinds[] = {NeedleValueKind::kNumber, NeedleValueKind::kHex};
        const NeedleValueKind kind =
            options.value_kind == NeedleValueKind::kRotate ? kKinds[rng.Below(2)] : options.value_kind;
        NeedlePlan plan = PlanNeedle(tokenizer, options.variant, kind, options.distractors, rng);
        FillerStream filler(haystack, tokenizer, rng.Below(~0ull), plan.keep, plan.shape);
        KV_RETURN_IF_ERROR(PlacePrompt(tokenizer, filler, options.wrap, depth, plan.layout, rng, p));
        p.check.kind = ProbeCheck::Kind::kPrefix;
        p.check.expected = plan.value;
        p.expected_text = plan.value;
        p.max_tokens = std::max(16, static_cast<int>(EncodePiece(tokenizer, plan.value).size()) + 8);
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

}  // namespace kvaudit
