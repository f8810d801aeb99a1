// Structured exactness probes (docs/probes.md): a code or JSON span appears early in the
// prompt (at a depth, like a needle), filler follows, and the prompt ends with the span's first few
// tokens; the model must reproduce the rest exactly. Scored by ProbeCheck::kExactSpan (expected =
// the span after the cue, through its closing delimiter); the scorer reports the first wrong token.
//
// Variants: identifiers (`__all__ = ['a', 'b_c', ...]`), signature (a `def` with annotations,
// defaults and keyword-only parameters), json_record (one JSON object on a line, nested), number
// (`NAME = <20-28 digits>`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "probe/haystack.h"
#include "probe/instance.h"

namespace kvaudit {

class Tokenizer;

inline const std::vector<std::string> kExactVariants = {"identifiers", "signature", "json_record", "number"};

struct ExactOptions {
  std::string variant = "identifiers";
  std::vector<int> lengths = {512, 1024, 2048, 4096};
  std::vector<int> depths = {10, 50};  // where the span sits, percent of the haystack
  int per_cell = 1;
  uint64_t seed = 0;
  PromptWrap wrap;  // empty = completion style
};

Expected<std::vector<ProbeInstance>> MakeExactProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                     const ExactOptions& options);

}  // namespace kvaudit
