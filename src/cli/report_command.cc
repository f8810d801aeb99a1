// kvaudit report: result directories -> one self-contained HTML page (or markdown for a
// pull-request comment), report/report.h; docs/report.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "report/report.h"

namespace kvaudit::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> dirs;
  std::string out;
  std::string format = "html";
};

// Without --out: the HTML page goes to DIR/report.html of the one directory given; markdown to stdout.
Expected<std::string> OutputPath(const ReportFlags& f) {
  if (!f.out.empty() || f.format == "md") return f.out;
  if (f.dirs.size() != 1) {
    return BadInput("report: several directories need --out FILE for the page; hint: --out compare.html");
  }
  return (std::filesystem::path(f.dirs[0]) / "report.html").string();
}

}  // namespace

CommandRunner AddReportCommand(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  app.add_option("dirs", f->dirs,
                 "audit, eval, probe, recommend or sensitivity output directories (several: side by side)")
      ->required();
  app.add_option("--out", f->out, "the file to write (default: DIR/report.html for one directory; markdown: stdout)");
  app.add_option("--format", f->format, "html (the page) or md (verdict and main table, for a pull-request comment)")
      ->check(CLI::IsMember({"html", "md"}));
  return [f] {
    report::ReportOptions options;
    options.dirs = f->dirs;
    options.format = f->format == "md" ? report::ReportFormat::kMarkdown : report::ReportFormat::kHtml;
    const Expected<std::string> path = OutputPath(*f);
    if (!path) return ReportError(path.error());
    const Expected<std::string> text = report::RenderReport(options);
    if (!text) return ReportError(text.error());
    if (path->empty()) {
      std::fputs(text->c_str(), stdout);
      return 0;
    }
    const Status written = report::WriteReport(*text, *path);
    if (!written) return ReportError(written.error());
    std::printf("report: %s (%zu bytes)\n", path->c_str(), text->size());
    return 0;
  };
}

}  // namespace kvaudit::cli
