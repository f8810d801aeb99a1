// Constraint retention probes (docs/probes.md): a convention stated at the very start of the
// prompt must still hold in what the model writes at the end.
//
// Completion style (base code models): a header comment declares the convention and two short
// example functions follow it; the filler is haystack code with every line that would show the
// convention (or break it) left out, so the header is the only evidence; the prompt ends where the
// model must exercise the convention. Chat style: the convention is an output-format instruction at
// the start of the user message and the question asks for code.
//
// Variants and checks:
//  - prefix: function names start with a prefix ("kvq_" ...). Completion ends with "\n\ndef", so
//            kRegex `^\s*kvq_`; chat: kEveryLine over `def` lines.
//  - quotes: string literals use single (or, drawn per instance, double) quotes. Ends inside a
//            function at `raise ValueError`; kEveryLine: every line with a string literal has no
//            quote character of the other kind.
//  - indent: blocks are indented with tabs. Ends after a `def ...:` line; kEveryLine: every indented
//            line is indented with tabs only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "probe/haystack.h"
#include "probe/instance.h"

namespace kvaudit {

class Tokenizer;

inline const std::vector<std::string> kConstraintVariants = {"prefix", "quotes", "indent"};

struct ConstraintOptions {
  std::string variant = "prefix";
  std::vector<int> lengths = {512, 1024, 2048, 4096};
  int per_cell = 1;
  uint64_t seed = 0;
  PromptWrap wrap;  // empty = completion style
};

// depth is -1 in the instances; the stated constraint is the fact, at the start of the haystack region.
Expected<std::vector<ProbeInstance>> MakeConstraintProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                          const ConstraintOptions& options);

}  // namespace kvaudit
