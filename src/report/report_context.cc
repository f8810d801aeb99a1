#include "report/report_context.h"

#include "report/html_escape.h"

namespace kvaudit::report {

std::string ReportContext::NameOf(const RunDirectory& dir, const std::string& spec) const {
  return compare ? dir.label + " · " + spec : spec;
}

int ReportContext::ColorOf(const RunDirectory& dir, const std::string& spec) const {
  for (const ConfigView& c : eval_configs) {
    if (c.dir == &dir && c.spec == spec) return c.color;
  }
  return static_cast<int>(eval_configs.size());
}

ReportContext MakeContext(std::vector<RunDirectory> dirs) {
  ReportContext ctx;
  ctx.dirs = std::move(dirs);
  ctx.compare = ctx.dirs.size() > 1;
  for (const RunDirectory& d : ctx.dirs) {
    if (!d.eval || !d.eval->doc.contains("configs")) continue;
    const auto& configs = d.eval->doc["configs"];
    for (size_t i = 0; i < configs.size(); ++i) {
      ConfigView v;
      v.dir = &d, v.index = static_cast<int>(i);
      v.spec = configs[i].value("spec", "?");
      v.name = ctx.NameOf(d, v.spec);
      v.color = static_cast<int>(ctx.eval_configs.size());
      ctx.eval_configs.push_back(std::move(v));
    }
  }
  return ctx;
}

std::string AuditConfigPointer(const RunDirectory& dir, const std::string& spec) {
  if (!dir.audit) return "";
  const nlohmann::json& configs = dir.audit->doc.value("configs", nlohmann::json::array());
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].value("spec", "") == spec) return "/configs/" + std::to_string(i);
  }
  return "";
}

std::string MissingNote(const std::string& text) { return "<p class=\"missing\">" + EscapeHtml(text) + "</p>\n"; }

std::string PerDirectory(const ReportContext& ctx, const std::function<bool(const RunDirectory&)>& has,
                         const std::function<std::string(const RunDirectory&)>& render, const std::string& missing) {
  std::string out;
  for (const RunDirectory& d : ctx.dirs) {
    if (has(d)) out += render(d);
  }
  return out.empty() ? MissingNote(missing) : out;
}

std::string PerProbeDirectory(const ReportContext& ctx, const std::function<std::string(const RunDirectory&)>& render) {
  return PerDirectory(
      ctx, [](const RunDirectory& d) { return d.probe.has_value(); }, render,
      "No probe results in these directories; hint: kvaudit probe or kvaudit audit.");
}

std::string DirHeading(const ReportContext& ctx, const RunDirectory& dir, const std::string& what) {
  if (!ctx.compare) return what.empty() ? "" : "<h3>" + EscapeHtml(what) + "</h3>\n";
  return "<h3>" + EscapeHtml(dir.label) + (what.empty() ? "" : ": " + EscapeHtml(what)) + "</h3>\n";
}

}  // namespace kvaudit::report
