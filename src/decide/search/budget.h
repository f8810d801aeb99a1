// The memory budget of a recommendation (bytes per token, GiB at the target context, or a fraction
// of f16), as the `--budget` flag of recommend and audit takes it (docs/cli.md, "--budget").
// kvaudit's own accounting (decide/targets/spec_memory.h): a cache's bytes at the target context
// over the context, sliding-window layers holding their window (docs/formats.md), not an engine's
// padded layout (decide/targets/kv_memory.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "model/config.h"

namespace kvaudit {

struct Budget {
  enum class Unit {
    kBytesPerToken,  // "1800", "1800B"
    kMiB,            // "700MiB": the whole cache at the target context
    kGiB,            // "2.5GiB": the same
    kF16Fraction,    // "0.5xf16": this fraction of the model's f16 cache
  };
  Unit unit = Unit::kBytesPerToken;
  double value = 0;  // > 0, at most kMaxBudgetValue
  std::string text;  // as given
};

constexpr double kMaxBudgetValue = 1e12;

// Errors (exit 2), one line each with a hint: empty; no number first; a malformed number; an
// unknown unit (GB, MB and KB get their binary spelling as the hint); a fractional byte count; zero;
// a number above kMaxBudgetValue.
Expected<Budget> ParseBudget(std::string_view text);

// The bytes per token the budget allows for this model at target_ctx tokens, rounded down (a budget
// is a limit); NxF16 is N times F16BytesPerTokenAt(config, target_ctx). Errors (exit 2): it allows less than one byte
// per token.
Expected<uint64_t> BudgetBytesPerToken(const Budget& budget, const ModelConfig& config, int target_ctx);

}  // namespace kvaudit
