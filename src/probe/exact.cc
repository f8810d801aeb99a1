#include "probe/exact.h"

#include <algorithm>

#include "probe/words.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

namespace w = probe_words;

struct Span {
  std::string text;      // the span, one line, without its newline
  std::string after;     // planted right after it ("\n" and, for a def, a body line)
  size_t cue_chars = 0;  // the cue covers at least this many leading characters of text
  std::string question;  // for chat models
  LineFilter keep;
};

// Distinct picks from `make` until n are gathered.
template <class F>
std::vector<std::string> Distinct(int n, F make) {
  std::vector<std::string> out;
  while (static_cast<int>(out.size()) < n) {
    std::string s = make();
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  }
  return out;
}

Span Identifiers(ProbeRng& rng) {
  const auto names = Distinct(rng.Range(6, 10), [&] {
    switch (rng.Below(3)) {
      case 0: return rng.Pick(w::kNouns);
      case 1: return rng.Pick(w::kVerbs) + "_" + rng.Pick(w::kNouns);
      default: return w::SnakeName(rng);
    }
  });
  Span s;
  s.text = "__all__ = [";
  s.cue_chars = s.text.size();
  for (size_t i = 0; i < names.size(); ++i) s.text += (i ? ", '" : "'") + names[i] + "'";
  s.text += "]";
  s.after = "\n";
  s.question = "Repeat the __all__ list from the code above exactly.";
  // Another module's __all__ in the filler would make the cue ambiguous.
  s.keep = [](std::string_view line) { return line.find("__all__") == std::string_view::npos; };
  return s;
}

Span Signature(ProbeRng& rng) {
  static const std::vector<std::string> kReturns = {"bool",           "int", "str", "bytes", "list[str]",
                                                    "dict[str, int]", "None"};
  const std::string fname = rng.Pick(w::kVerbs) + "_" + rng.Pick(w::kNouns);
  const int n_pos = rng.Range(1, 2), n_kw = rng.Range(1, 3);
  const auto params = Distinct(n_pos + n_kw, [&] { return rng.Pick(w::kNouns); });
  std::string args = "self";
  for (int i = 0; i < n_pos + n_kw; ++i) {
    args += ", ";
    if (i == n_pos) args += "*, ";
    std::string type, value;
    switch (rng.Below(6)) {
      case 0: type = "str", value = "'" + rng.Pick(w::kValueWords) + "'"; break;
      case 1: type = "int", value = std::to_string(rng.Range(1, 4096)); break;
      case 2: type = "float", value = std::to_string(rng.Range(0, 9)) + "." + std::to_string(rng.Range(1, 99)); break;
      case 3: type = "bool", value = rng.Below(2) ? "True" : "False"; break;
      case 4: type = "list[str] | None", value = "None"; break;
      default: type = "dict[str, int] | None", value = "None"; break;
    }
    args += params[i] + ": " + type;
    if (i >= n_pos) args += " = " + value;
  }
  Span s;
  s.text = "def " + fname + "(";
  s.cue_chars = s.text.size();
  s.text += args + ") -> " + rng.Pick(kReturns) + ":";
  s.after = "\n    ...\n";
  s.question = "Repeat the signature of " + fname + " from the code above exactly.";
  return s;
}

Span JsonRecord(ProbeRng& rng) {
  const std::string name = w::SnakeName(rng);
  const auto tags = Distinct(rng.Range(2, 3), [&] { return rng.Pick(w::kValueWords); });
  std::string team = rng.Pick(w::kProjects);
  team[0] = static_cast<char>(team[0] - 'A' + 'a');
  Span s;
  s.text = "{\"name\": \"" + name + "\"";
  s.cue_chars = s.text.size();
  s.text += ", \"id\": " + w::Digits(rng, 7) + ", \"tags\": [";
  for (size_t i = 0; i < tags.size(); ++i) s.text += (i ? ", \"" : "\"") + tags[i] + "\"";
  s.text += "], \"active\": " + std::string(rng.Below(2) ? "true" : "false") + ", \"ratio\": 0." +
            std::to_string(rng.Range(10, 99)) + ", \"owner\": {\"team\": \"" + team +
            "\", \"level\": " + std::to_string(rng.Range(1, 9)) + "}}";
  s.after = "\n";
  s.question = "Repeat the JSON record whose name is \"" + name + "\" from above exactly.";
  return s;
}

Span Number(ProbeRng& rng) {
  const std::string name = w::Upper(w::SnakeName(rng));
  Span s;
  s.text = name + " = ";
  s.cue_chars = s.text.size();
  s.text += w::Digits(rng, rng.Range(20, 28));
  s.after = "\n";
  s.question = "Repeat the number assigned to " + name + " above exactly.";
  return s;
}

}  // namespace

Expected<std::vector<ProbeInstance>> MakeExactProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                     const ExactOptions& options) {
  KV_RETURN_IF_ERROR(ValidateProbeVariant("exact", options.variant, kExactVariants));
  KV_RETURN_IF_ERROR(ValidateProbeGrid("exact", options.lengths, options.depths, options.per_cell));
  if (options.depths.empty()) return BadInput("exact probes: no depths; hint: pass --depths, e.g. 10");
  std::vector<ProbeInstance> out;
  for (int length : options.lengths) {
    for (int depth : options.depths) {
      for (int i = 0; i < options.per_cell; ++i) {
        ProbeInstance p = NewProbeInstance("exact", options.variant, length, depth, i);
        ProbeRng rng(InstanceSeed(options.seed, p.id));
        const Span span = options.variant == "identifiers"   ? Identifiers(rng)
                          : options.variant == "signature"   ? Signature(rng)
                          : options.variant == "json_record" ? JsonRecord(rng)
                                                             : Number(rng);
        ProbeLayout layout;
        layout.fact = EncodePiece(tokenizer, span.text + span.after);
        // The cue is the span's own first tokens (as planted), covering at least cue_chars.
        size_t cue = 0;
        std::string cue_text;
        while (cue < layout.fact.size() && cue_text.size() < span.cue_chars) {
          cue_text = tokenizer.Decode(std::span<const int32_t>(layout.fact.data(), ++cue));
        }
        if (cue_text.size() >= span.text.size() || span.text.compare(0, cue_text.size(), cue_text) != 0) {
          return Internal(p.id + ": the span's first tokens do not decode to its start (" + cue_text + ")");
        }
        layout.answer_prefix = cue_text;
        layout.answer_ids.assign(layout.fact.begin(), layout.fact.begin() + static_cast<std::ptrdiff_t>(cue));
        layout.question = span.question;
        FillerStream filler(haystack, tokenizer, rng.Below(~0ull), span.keep);
        KV_RETURN_IF_ERROR(PlacePrompt(tokenizer, filler, options.wrap, depth, layout, rng, p));
        p.check.kind = ProbeCheck::Kind::kExactSpan;
        p.check.expected = span.text.substr(cue_text.size());
        p.expected_text = p.check.expected;
        const int rest = static_cast<int>(EncodePiece(tokenizer, span.text).size() - cue);
        p.max_tokens = std::max(rest, 1) + 4;
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

}  // namespace kvaudit
