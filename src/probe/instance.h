// One generated probe prompt (docs/probes.md) and what the generators share: the prompt wrapper for
// chat models, the default length grid, per-instance seeds and integer draws that are the same on
// every standard library (std distributions are implementation-defined, so they are not used).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "probe/check.h"

namespace kvaudit {

struct ProbeInstance {
  std::string family;           // "needle" | "exact" | "constraint"
  std::string variant;          // needle: code|prose|json|multikey; exact: identifiers|signature|json_record|number;
                                // constraint: prefix|quotes|indent
  std::string id;               // stable, e.g. "needle/code/L1024/d50/i3"
  int length = 0;               // requested prompt length in tokens (the grid cell); prompt.size() == length
  int depth = -1;               // fact depth in percent (needle, exact); -1 for constraint
  std::vector<int32_t> prompt;  // token ids, BOS first when the tokenizer's add_bos_default()
  // The planted fact / span / constraint header: prompt[fact_token, fact_token + fact_tokens).
  int fact_token = -1;
  int fact_tokens = 0;
  // The haystack region (filler, distractors and the fact): prompt[haystack_begin, haystack_end).
  // Depth is measured in it: fact_token - haystack_begin == round(depth / 100 * H), where
  // H = haystack_end - haystack_begin - fact_tokens.
  int haystack_begin = 0;
  int haystack_end = 0;
  ProbeCheck check;           // how the generated continuation is scored
  int max_tokens = 16;        // generation budget for the answer
  std::string expected_text;  // for reports: the value, the span's rest, or the rule in words
};

// Renders the prompt text around the body. Completion style (an empty PromptWrap) is
// body + answer_prefix: a base model continues the text, so the question is not shown. A chat model
// passes a function that renders its chat template with body and question in the user message and
// answer_prefix after the assistant header. The wrap must contain `body` verbatim exactly once: the
// generators tokenize the text before and after it separately, so the body's token ids (and the
// fact's position) stay exact.
using PromptWrap =
    std::function<std::string(std::string_view body, std::string_view question, std::string_view answer_prefix)>;

// The smallest prompt the generators accept; below it the haystack is too thin to mean anything.
inline constexpr int kMinProbeLength = 128;

// Default lengths stop this far below the context: the longest answer budget (an exact span, a
// chat-model constraint reply) must fit after the prompt.
inline constexpr int kProbeAnswerReserve = 256;

// The default length grid: 512, 1024, 2048, 4096 ... capped at n_ctx - reserve (room for the
// answer).
std::vector<int> DefaultProbeLengths(int n_ctx, int reserve = 64);
inline const std::vector<int> kDefaultNeedleDepths = {0, 10, 25, 50, 75, 90, 100};

// "family/variant/L<length>[/d<depth>]/i<index>"; depth < 0 is left out.
std::string ProbeId(std::string_view family, std::string_view variant, int length, int depth, int index);
// An instance of one grid cell before its prompt is laid out: family, variant, length, depth and
// the id they make with the index.
ProbeInstance NewProbeInstance(std::string_view family, std::string_view variant, int length, int depth, int index);
// Lengths >= kMinProbeLength, depths in 0..100, per_cell >= 1, at least one of each (BadInput).
Status ValidateProbeGrid(std::string_view family, const std::vector<int>& lengths, const std::vector<int>& depths,
                         int per_cell);
// BadInput naming the known variants unless variant is one of them.
Status ValidateProbeVariant(std::string_view family, std::string_view variant, const std::vector<std::string>& known);

// A seed for one instance from the run's seed and the instance id (which names family, variant,
// length, depth and index), so adding a grid cell never changes another cell's instances.
uint64_t InstanceSeed(uint64_t seed, std::string_view instance_id);

// Integer draws on std::mt19937_64 with our own (unbiased, rejection) range reduction.
class ProbeRng {
 public:
  explicit ProbeRng(uint64_t seed) : gen_(seed) {}
  uint64_t Below(uint64_t n);  // uniform in [0, n); n > 0
  int Range(int lo, int hi);   // uniform in [lo, hi]
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace kvaudit
