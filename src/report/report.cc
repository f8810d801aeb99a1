#include "report/report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "report/html_page.h"
#include "report/report_context.h"
#include "report/report_markdown.h"

namespace kvaudit::report {

Expected<std::string> RenderReport(const ReportOptions& options) {
  if (options.dirs.empty()) return BadInput("report: no result directory given; hint: kvaudit report DIR");
  std::vector<RunDirectory> dirs;
  for (size_t i = 0; i < options.dirs.size(); ++i) {
    KV_ASSIGN_OR_RETURN(RunDirectory d, LoadRunDirectory(options.dirs[i], static_cast<int>(i)));
    dirs.push_back(std::move(d));
  }
  LabelRunDirectories(dirs);
  const ReportContext ctx = MakeContext(std::move(dirs));
  return options.format == ReportFormat::kHtml ? RenderHtmlPage(ctx) : RenderMarkdown(ctx);
}

Status WriteReport(const std::string& text, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return BadInput("report: cannot write " + path + "; hint: check that its directory exists and is writable");
    out << text;
    if (!out.flush()) return Internal("report: writing " + tmp + " failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal("report: cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace kvaudit::report
