// A number or word of a results.json as the report shows it: formatted for reading, and tagged
// with where it came from, data-src="<dir index>|<file>|<JSON pointer (RFC 6901)>" and
// data-format, so the browser test reads the page back and compares every tagged value with the
// file itself, and a reader can find the key a number came from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/report_inputs.h"

namespace kvaudit::report {

enum class ValueFormat {
  kSig,       // 4 significant digits: 0.01234
  kPercent,   // a fraction 0..1 shown as 53.6 %
  kInt,       // a count or a context length
  kBytes,     // bytes per token: 2176 B
  kGib,       // GiB: 0.00208 GiB (4 significant digits)
  kText,      // a string, escaped
  kPassFail,  // a verdict: a word (PASS, FAIL, INCONCLUSIVE), or a boolean: PASS / FAIL
};

const char* FormatName(ValueFormat f);
// A kPassFail value as shown: the word itself, or PASS / FAIL for a boolean (results before verdicts
// had three outcomes).
std::string VerdictWord(const nlohmann::json& v);  // "sig", "pct", "int", "bytes", "gib", "text", "passfail"

// The value at pointer in file, or nullptr when absent.
const nlohmann::json* Lookup(const ResultsFile& file, const std::string& pointer);

// The formatted text of a value ("–" for null or absent).
std::string FormatValue(const nlohmann::json* value, ValueFormat format);

// <span class="v" data-src=... data-format=...>text</span>
std::string ValueSpan(const RunDirectory& dir, const ResultsFile& file, const std::string& pointer, ValueFormat format);

// <td data-sort="raw">span</td>: a sortable table cell (raw: the number, or the text).
std::string ValueCell(const RunDirectory& dir, const ResultsFile& file, const std::string& pointer, ValueFormat format);

// The safe context of a configuration entry at base (its safe_up_to and safe_up_to_is_all_measured,
// eval's and audit's keys): "≥ N (all measured)", "N", or "none (fails from the first bucket)".
std::string SafeUpToCell(const RunDirectory& dir, const ResultsFile& file, const std::string& base);

// "/configs/3/overall/kld_mean" from parts.
std::string Pointer(std::initializer_list<std::string> parts);

}  // namespace kvaudit::report
