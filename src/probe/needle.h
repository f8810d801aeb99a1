// Needle retrieval probes (docs/probes.md): a fact planted at a depth of a haystack and asked
// for at the end, over a grid of prompt lengths x depths. Scored by ProbeCheck::kPrefix on the value.
//
// Variants:
//  - code:     `NAME = "value"` planted as a line, recalled by ending the prompt with `NAME = "`
//              (the bundled model was trained on such recurring lines);
//  - prose:    "The access code for the Nimbus project is 48213." ... "The access code for the Nimbus
//              project is";
//  - json:     the haystack is a long JSON object (one entry per haystack line) with the needle key
//              inside; recalled by reopening an object with the key: `{"nimbus_access_code": "`;
//  - multikey: several `NAME = "value"` lines, the distractors sharing a word with the asked name,
//              planted at random positions; the asked one sits at the depth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "probe/haystack.h"
#include "probe/instance.h"

namespace kvaudit {

class Tokenizer;

enum class NeedleValueKind { kRotate, kNumber, kWord, kHex, kUuid };
// "rotate" | "number" | "word" | "hex" | "uuid"
Expected<NeedleValueKind> ParseNeedleValueKind(std::string_view name);
inline const std::vector<std::string> kNeedleVariants = {"code", "prose", "json", "multikey"};

struct NeedleOptions {
  std::string variant = "code";
  std::vector<int> lengths = {512, 1024, 2048, 4096};  // prompt tokens, each >= kMinProbeLength
  std::vector<int> depths = kDefaultNeedleDepths;      // percent, 0..100
  int per_cell = 1;                                    // instances per (length, depth)
  uint64_t seed = 0;
  // number: 5-7 digits; word: from a list; hex: 6-8 hex chars; uuid: 8-4-4-4-12 hex;
  // rotate: number or hex per instance, drawn from its seed.
  NeedleValueKind value_kind = NeedleValueKind::kRotate;
  int distractors = 3;  // multikey: facts besides the asked one
  PromptWrap wrap;      // empty = completion style (base models)
};

// Instances in grid order: lengths, then depths, then index. Errors name the instance id.
Expected<std::vector<ProbeInstance>> MakeNeedleProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                      const NeedleOptions& options);

}  // namespace kvaudit
