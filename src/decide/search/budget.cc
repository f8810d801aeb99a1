#include "decide/search/budget.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "base/trim.h"
#include "decide/targets/kv_memory.h"

namespace kvaudit {
namespace {

constexpr std::string_view kExamples =
    "e.g. --budget 1800 (bytes per token), 2.5GiB (at the target context) or 0.5xf16";

Error BudgetError(std::string_view text, const std::string& what, std::string_view hint) {
  return BadInput("--budget \"" + std::string(text) + "\": " + what + "; hint: " + std::string(hint));
}

size_t Digits(std::string_view s, size_t i) {
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

}  // namespace

Expected<Budget> ParseBudget(std::string_view text) {
  const std::string_view s = TrimSpace(text);
  if (s.empty()) return BudgetError(text, "empty budget", kExamples);
  // number := digits [ "." digits ]: no signs, exponents or leading dots, so a typo is not a number.
  size_t end = Digits(s, 0);
  if (end == 0) return BudgetError(text, "a budget starts with a number", kExamples);
  const bool fractional = end < s.size() && s[end] == '.';
  if (fractional) {
    const size_t frac_end = Digits(s, end + 1);
    if (frac_end == end + 1)
      return BudgetError(text, "'" + std::string(s.substr(0, end + 1)) + "' is not a number",
                         "write digits after the point, e.g. 2.5GiB");
    end = frac_end;
  }
  Budget b;
  b.text = std::string(text);
  std::from_chars(s.data(), s.data() + end, b.value);
  const std::string_view unit = TrimSpace(s.substr(end));
  if (unit.empty() || unit == "B")
    b.unit = Budget::Unit::kBytesPerToken;
  else if (unit == "MiB")
    b.unit = Budget::Unit::kMiB;
  else if (unit == "GiB")
    b.unit = Budget::Unit::kGiB;
  else if (unit == "xf16")
    b.unit = Budget::Unit::kF16Fraction;
  else if (unit == "GB" || unit == "MB" || unit == "KB" || unit == "kB") {
    return BudgetError(text, "unit '" + std::string(unit) + "' is ambiguous (powers of 10 or of 2)",
                       "kvaudit counts powers of 2: write MiB or GiB, e.g. 2.5GiB");
  } else {
    return BudgetError(text, "unit '" + std::string(unit) + "' is not known",
                       "units: none or B (bytes per token), MiB or GiB (the cache at the target context), xf16 "
                       "(a fraction of the f16 cache)");
  }
  if (b.value == 0) return BudgetError(text, "a budget must be above zero", kExamples);
  if (b.value > kMaxBudgetValue)
    return BudgetError(text, "the number is above 10^12", "give the budget in a larger unit");
  if (b.unit == Budget::Unit::kBytesPerToken && fractional) {
    return BudgetError(text, "bytes per token are a whole number", "round it down, e.g. --budget 1800");
  }
  return b;
}

Expected<uint64_t> BudgetBytesPerToken(const Budget& b, const ModelConfig& config, int target_ctx) {
  KV_CHECK(target_ctx > 0 && b.value > 0 && b.value <= kMaxBudgetValue);
  // long double: GiB × 2^30 needs more than 53 bits before the division for large budgets.
  long double bytes = b.value;
  if (b.unit == Budget::Unit::kMiB) bytes = b.value * 1048576.0L / target_ctx;
  if (b.unit == Budget::Unit::kGiB) bytes = b.value * 1073741824.0L / target_ctx;
  // The f16 cache at the target context: sliding-window layers hold only their window.
  const uint64_t f16 = F16BytesPerTokenAt(config, target_ctx);
  if (b.unit == Budget::Unit::kF16Fraction) bytes = b.value * static_cast<long double>(f16);
  if (bytes < 1) {
    return BudgetError(
        b.text, "allows less than one byte per token for this model at " + std::to_string(target_ctx) + " tokens",
        "raise the budget (the f16 cache is " + std::to_string(f16) + " bytes per token)");
  }
  // Above 2^62 every cache fits; clamping keeps the value in range.
  return bytes >= 4611686018427387904.0L ? uint64_t{1} << 62 : static_cast<uint64_t>(std::floor(bytes));
}

}  // namespace kvaudit
