#include "report/report_markdown.h"

#include "decide/gate/gate_markdown.h"
#include "decide/gate/gate_run.h"
#include "report/number_format.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

using nlohmann::json;

// A markdown cell: '|' would end it, a newline the row.
std::string Md(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : (c == '\n' || c == '\r') ? std::string(" ") : std::string(1, c);
  return out;
}

std::string Plain(const ResultsFile& f, const std::string& pointer, ValueFormat format) {
  const json* v = Lookup(f, pointer);
  if (format == ValueFormat::kText) return v && v->is_string() ? Md(v->get<std::string>()) : "–";
  return FormatValue(v, format);
}

std::string Verdicts(const RunDirectory& d) {
  if (!d.audit) return "";
  GateOptions gate;
  gate.results = {d.path};
  gate.policy = d.audit->doc.value("policy", std::string("balanced"));
  Expected<GateReport> report = RunGate(gate);
  if (!report) return "Verdicts unavailable: " + Md(report.error().message) + "\n\n";
  std::string out = GateMarkdown(*report);
  return out.back() == '\n' ? out + "\n" : out + "\n\n";
}

std::string MemoryTable(const ReportContext& ctx) {
  if (ctx.eval_configs.empty()) return "";
  std::string out = std::string("| ") + (ctx.compare ? "run | " : "") +
                    "configuration | bytes/token | mean KLD (nats) | 95% CI | top-1 agree | ΔPPL | safe up to |\n|" +
                    (ctx.compare ? "---|" : "") + "---|---|---|---|---|---|---|\n";
  for (const ConfigView& c : ctx.eval_configs) {
    const ResultsFile& e = *c.dir->eval;
    const std::string b = Pointer({"configs", std::to_string(c.index)});
    const std::string audit = AuditConfigPointer(*c.dir, c.spec);  // the policy's verdict where judged
    const json* safe = audit.empty() ? Lookup(e, b + "/safe_up_to") : Lookup(*c.dir->audit, audit + "/safe_up_to");
    out += "| " + (ctx.compare ? Md(c.dir->label) + " | " : "") + "`" + Md(c.spec) + "` | " +
           Plain(e, b + "/bytes_per_token", ValueFormat::kBytes) + " | " +
           Plain(e, b + "/overall/kld_mean", ValueFormat::kSig) + " | [" +
           Plain(e, b + "/overall/kld_ci95/0", ValueFormat::kSig) + ", " +
           Plain(e, b + "/overall/kld_ci95/1", ValueFormat::kSig) + "] | " +
           Plain(e, b + "/overall/top1_agree", ValueFormat::kPercent) + " | " +
           Plain(e, b + "/overall/delta_ppl", ValueFormat::kSig) + " | " +
           (safe && safe->is_number() ? std::to_string(safe->get<long long>()) : "none") + " |\n";
  }
  return out + "\n";
}

std::string Recommendation(const RunDirectory& d) {
  if (!d.recommend) return "";
  const ResultsFile& r = *d.recommend;
  const json* rec = Lookup(r, "/recommended");
  if (!rec || rec->is_null())
    return "**Recommendation:** nothing under the budget of " +
           Plain(r, "/budget/bytes_per_token", ValueFormat::kBytes) + " per token passes.\n\n";
  return "**Recommendation** under " + Plain(r, "/budget/bytes_per_token", ValueFormat::kBytes) + " per token: `" +
         Plain(r, "/recommended/spec", ValueFormat::kText) + "` (" +
         Plain(r, "/recommended/bytes_per_token", ValueFormat::kBytes) + " per token, " +
         Plain(r, "/recommended/f16_fraction", ValueFormat::kPercent) + " of f16), verified on held-out windows.\n\n";
}

}  // namespace

std::string RenderMarkdown(const ReportContext& ctx) {
  std::string out;
  for (const RunDirectory& d : ctx.dirs) {
    if (ctx.compare) out += "### " + Md(d.label) + "\n\n";
    out += Verdicts(d) + Recommendation(d);
    for (const std::string& m : d.missing) out += "- " + Md(m) + "\n";
    if (!d.missing.empty()) out += "\n";
  }
  out += MemoryTable(ctx);
  if (!ctx.eval_configs.empty()) {
    out += "Safe up to: the policy's verdict where an audit judged the configuration, else the eval's KLD threshold.\n";
  }
  return out.empty() ? "No results to summarise.\n" : out;
}

}  // namespace kvaudit::report
