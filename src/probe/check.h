// How a probe's generated text is scored. One ProbeCheck per probe instance; the same
// check scores the baseline's and each configuration's output, so a pass/fail pair differs only
// because the cache differs.
//
// Kinds (docs/probes.md has the exact rules):
//  - kPrefix: the output, leading spaces/tabs stripped, starts with `expected` and the next
//    character (if any) does not continue a word (not [A-Za-z0-9_-]); used for needle values and
//    for the custom "expected" field.
//  - kExactSpan: the output starts with `expected` exactly (no stripping); used for structured
//    reproduction (code/JSON spans), where whitespace is part of the answer.
//  - kRegex: PCRE2 pattern found anywhere in the output.
//  - kContains: `expected` occurs anywhere in the output.
//  - kJsonValid: the first JSON object or array in the output parses completely.
//  - kJsonEquals: that value's element at `json_path` equals `json_value`; json_path is a JSON
//    pointer ("/a/b/0") or a dotted path ("a.b[0]").
//  - kEveryLine: every output line matching `line_filter` (PCRE2) also matches `pattern`, and at
//    least `min_lines` lines match the filter (a constraint must be exercised to count as kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace kvaudit {

class Tokenizer;

struct ProbeCheck {
  enum class Kind { kPrefix, kExactSpan, kRegex, kContains, kJsonValid, kJsonEquals, kEveryLine };
  Kind kind = Kind::kPrefix;
  std::string expected;       // kPrefix, kExactSpan, kContains
  std::string pattern;        // kRegex, kEveryLine (PCRE2, UTF)
  std::string line_filter;    // kEveryLine
  int min_lines = 1;          // kEveryLine
  std::string json_path;      // kJsonEquals
  nlohmann::json json_value;  // kJsonEquals

  // One-line human description, e.g. `prefix "0x3fa9"` (reports, worst-case listings).
  std::string Describe() const;
  // Patterns compile, paths parse: a user's custom probe is rejected before anything runs.
  Status Validate() const;
};

struct ProbeScore {
  bool pass = false;
  // Index into the produced token ids of the first token whose text departs from the expected
  // text (kPrefix / kExactSpan); -1 when it passed or does not apply.
  int first_wrong_token = -1;
  std::string detail;  // why it failed, one line (empty on pass)
};

// produced_ids: the generated tokens; text: their decoded text (tokenizer.Decode(produced_ids)).
// tokenizer maps a character offset of `text` back to a token index (first_wrong_token).
ProbeScore ScoreProbe(const ProbeCheck& check, std::span<const int32_t> produced_ids, const std::string& text,
                      const Tokenizer& tokenizer);

// The JSON span kJsonValid / kJsonEquals look at: from the first '{' or '[' of `text` to the
// bracket that closes it, skipping brackets inside JSON strings (with their escapes). Brackets
// are counted, not matched by type: a mismatch such as "{]" is left for the strict parse to
// reject. nullopt when there is no opening bracket or it is never closed.
struct TextSpan {
  size_t begin = 0, end = 0;  // byte offsets, end exclusive
};
std::optional<TextSpan> FindFirstJsonSpan(std::string_view text);

// Index of the produced token whose decoded text holds byte `offset` of
// tokenizer.Decode(produced_ids); an offset at or past the end maps to the first token that adds
// no text there (an end-of-sequence token), else -1. Prefix decodes, not per-token ones, so a
// UTF-8 character split across byte-level tokens counts from the token that starts it.
int TokenAtOffset(std::span<const int32_t> produced_ids, size_t offset, const Tokenizer& tokenizer);

}  // namespace kvaudit
