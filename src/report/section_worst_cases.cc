// Section 7: the worst cases, as a reader checks them: what was expected, what the baseline cache
// produced and what the configuration produced, side by side, the configuration's output marked
// from its first character that departs from the baseline's. Then drift (greedy continuations
// compared with the baseline's, and the KL along the baseline's path) and variance (sampled
// outputs' spread) per configuration and length.
#include "report/html_escape.h"
#include "report/sections.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

// Bytes of a and b in common from the start, backed off to a UTF-8 character boundary.
size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  while (n > 0 && n < b.size() && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80) --n;
  return n;
}

// The configuration's output with its first divergent piece (up to the next space or newline) in <mark>.
std::string MarkDivergence(const std::string& baseline, const std::string& config) {
  const size_t start = CommonPrefix(baseline, config);
  if (start >= config.size()) return EscapeHtml(config);
  size_t end = config.find_first_of(" \n\t", start + 1);
  if (end == std::string::npos) end = config.size();
  return EscapeHtml(config.substr(0, start)) + "<mark>" + EscapeHtml(config.substr(start, end - start)) + "</mark>" +
         EscapeHtml(config.substr(end));
}

std::string WorstCases(const RunDirectory& d, const ResultsFile& f) {
  const json& cases = f.doc.value("worst_cases", json::array());
  if (cases.empty()) return MissingNote("No cache-induced failures: no worst cases to show.");
  std::string out = "<div class=\"cases\">\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string b = Pointer({"worst_cases", std::to_string(i)});
    const json& c = cases[i];
    out += "<div class=\"case\"><h4>" + ValueSpan(d, f, b + "/id", ValueFormat::kText) + " under <code>" +
           ValueSpan(d, f, b + "/config", ValueFormat::kText) +
           "</code></h4>\n<table class=\"sxs\"><thead><tr><th>expected</th>"
           "<th>baseline</th><th>configuration</th></tr></thead><tbody><tr><td><pre>" +
           ValueSpan(d, f, b + "/expected", ValueFormat::kText) + "</pre></td><td><pre>" +
           ValueSpan(d, f, b + "/baseline_output", ValueFormat::kText) + "</pre></td><td><pre>" +
           MarkDivergence(c.value("baseline_output", ""), c.value("config_output", "")) +
           "</pre></td></tr></tbody></table>\n"
           "<p class=\"note\">first wrong token: " +
           ValueSpan(d, f, b + "/first_wrong_token", ValueFormat::kInt) + "; " +
           ValueSpan(d, f, b + "/detail", ValueFormat::kText) + "</p></div>\n";
  }
  return out + "</div>\n";
}

struct Column {
  const char* key;
  const char* header;
  ValueFormat format;
};

std::string Table(const RunDirectory& d, const ResultsFile& f, const char* key, std::initializer_list<Column> columns) {
  const json& rows = f.doc.value(key, json::array());
  std::string out =
      std::string("<table class=\"sortable\" id=\"") + key + "-" + std::to_string(d.index) + "\"><thead><tr>";
  for (const Column& c : columns) out += std::string("<th>") + c.header + "</th>";
  out += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    out += "<tr>";
    for (const Column& c : columns) out += ValueCell(d, f, Pointer({key, std::to_string(i), c.key}), c.format);
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string WorstCasesDirSection(const ReportContext& ctx, const RunDirectory& d) {
  const ResultsFile& f = *d.probe;
  std::string out = DirHeading(ctx, d, "") + "<h3>Worst cases (cache-induced failures)</h3>\n" + WorstCases(d, f);
  out += "<h3>Drift of greedy continuations</h3>\n";
  out += f.doc.value("drift", json::array()).empty()
             ? MissingNote("The drift family did not run.")
             : Table(d, f, "drift",
                     {{"config", "configuration", ValueFormat::kText},
                      {"length", "prompt length", ValueFormat::kInt},
                      {"n", "n", ValueFormat::kInt},
                      {"identical", "identical to baseline", ValueFormat::kInt},
                      {"first_divergence_mean", "first divergence (tokens, mean)", ValueFormat::kSig},
                      {"edit_distance_mean", "edit distance (mean)", ValueFormat::kSig},
                      {"kl_mean", "KL on baseline path (mean)", ValueFormat::kSig},
                      {"kl_max", "KL max", ValueFormat::kSig},
                      {"baseline_repetition", "repetition, baseline", ValueFormat::kPercent},
                      {"config_repetition", "repetition, configuration", ValueFormat::kPercent}});
  out += "<h3>Variance of sampled outputs</h3>\n";
  out += f.doc.value("variance", json::array()).empty()
             ? MissingNote("The variance family did not run.")
             : Table(d, f, "variance",
                     {{"config", "configuration", ValueFormat::kText},
                      {"length", "prompt length", ValueFormat::kInt},
                      {"n", "n", ValueFormat::kInt},
                      {"samples", "samples", ValueFormat::kInt},
                      {"baseline_distinct", "distinct, baseline", ValueFormat::kSig},
                      {"config_distinct", "distinct, configuration", ValueFormat::kSig},
                      {"baseline_spread", "spread, baseline", ValueFormat::kSig},
                      {"config_spread", "spread, configuration", ValueFormat::kSig},
                      {"identical_pairs", "identical same-seed pairs", ValueFormat::kInt},
                      {"pairs", "pairs", ValueFormat::kInt}});
  return out;
}

std::string WorstCasesBody(const ReportContext& ctx) {
  return PerProbeDirectory(ctx, [&](const RunDirectory& d) { return WorstCasesDirSection(ctx, d); });
}

}  // namespace

const Section kWorstCasesSection = {
    "worst-cases", "Worst cases", "Worst cases, drift and variance",
    "Outputs the cache broke, with the first place the configuration departs from the baseline marked. Drift: "
    "how far greedy continuations of the same prompt stay identical to the baseline's; variance: whether "
    "sampling spreads more under the configuration than under the baseline.",
    WorstCasesBody};

}  // namespace kvaudit::report
