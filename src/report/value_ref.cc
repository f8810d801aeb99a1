#include "report/value_ref.h"

#include <cmath>
#include <cstdio>

#include "report/html_escape.h"
#include "report/number_format.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

std::string SortKey(const json* v) {
  if (!v || v->is_null()) return "";
  if (v->is_boolean()) return v->get<bool>() ? "1" : "0";
  if (v->is_number()) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", v->get<double>());
    return buf;
  }
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

}  // namespace

std::string VerdictWord(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.is_boolean() && v.get<bool>() ? "PASS" : "FAIL";
}

const char* FormatName(ValueFormat f) {
  switch (f) {
    case ValueFormat::kSig: return "sig";
    case ValueFormat::kPercent: return "pct";
    case ValueFormat::kInt: return "int";
    case ValueFormat::kBytes: return "bytes";
    case ValueFormat::kGib: return "gib";
    case ValueFormat::kText: return "text";
    case ValueFormat::kPassFail: return "passfail";
  }
  return "text";
}

const json* Lookup(const ResultsFile& file, const std::string& pointer) {
  const json::json_pointer ptr(pointer);
  if (!file.doc.contains(ptr)) return nullptr;
  return &file.doc.at(ptr);
}

std::string FormatValue(const json* v, ValueFormat format) {
  if (!v || v->is_null()) return "–";
  if (format == ValueFormat::kText) return EscapeHtml(v->is_string() ? v->get<std::string>() : v->dump());
  if (format == ValueFormat::kPassFail) return VerdictWord(*v);
  if (!v->is_number()) return EscapeHtml(v->is_string() ? v->get<std::string>() : v->dump());
  const double x = v->get<double>();
  switch (format) {
    case ValueFormat::kPercent: return FormatFixed(100.0 * x, 1) + "\u00a0%";  // no break inside "53.1 %"
    case ValueFormat::kInt: return std::isfinite(x) ? std::to_string(static_cast<long long>(std::llround(x))) : "–";
    case ValueFormat::kBytes: return std::to_string(static_cast<long long>(std::llround(x))) + "\u00a0B";
    case ValueFormat::kGib: return FormatSig(x, 4) + "\u00a0GiB";
    default: return FormatSig(x, 4);
  }
}

std::string ValueSpan(const RunDirectory& dir, const ResultsFile& file, const std::string& pointer,
                      ValueFormat format) {
  const json* v = Lookup(file, pointer);
  std::string css = "v";
  if (format == ValueFormat::kPassFail && v) {
    const std::string word = VerdictWord(*v);
    css += word == "PASS" ? " pass" : word == "INCONCLUSIVE" ? " inconclusive" : " fail";
  }
  return "<span class=\"" + css + "\" data-src=\"" + std::to_string(dir.index) + "|" + EscapeHtml(file.file) + "|" +
         EscapeHtml(pointer) + "\" data-format=\"" + FormatName(format) + "\">" + FormatValue(v, format) + "</span>";
}

std::string ValueCell(const RunDirectory& dir, const ResultsFile& file, const std::string& pointer,
                      ValueFormat format) {
  return "<td data-sort=\"" + EscapeHtml(SortKey(Lookup(file, pointer))) + "\">" +
         ValueSpan(dir, file, pointer, format) + "</td>";
}

std::string SafeUpToCell(const RunDirectory& dir, const ResultsFile& file, const std::string& base) {
  const json* v = Lookup(file, base + "/safe_up_to");
  const json* all = Lookup(file, base + "/safe_up_to_is_all_measured");
  if (!v || !v->is_number()) return "<td data-sort=\"0\">none (fails from the first bucket)</td>";
  const bool everything = all && all->is_boolean() && all->get<bool>();
  return "<td data-sort=\"" + std::to_string(v->get<long long>()) + "\">" + (everything ? "≥ " : "") +
         ValueSpan(dir, file, base + "/safe_up_to", ValueFormat::kInt) + (everything ? " (all measured)" : "") +
         "</td>";
}

std::string Pointer(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) {
    out += '/';
    for (char c : p) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  }
  return out;
}

}  // namespace kvaudit::report
