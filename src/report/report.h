// `kvaudit report` as a library: result directories in, one document out — the self-contained
// HTML page (html_page.h) or a markdown summary for pull-request comments (report_markdown.h).
// Nothing is computed that the results do not hold, except the gate's verdicts for markdown,
// which come from the gate's own code.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit::report {

enum class ReportFormat { kHtml, kMarkdown };

struct ReportOptions {
  std::vector<std::string> dirs;  // audit, eval, probe, recommend or sensitivity output directories
  ReportFormat format = ReportFormat::kHtml;
};

// BadInput when a directory is missing, holds no kvaudit output, or has a broken results.json.
Expected<std::string> RenderReport(const ReportOptions& options);

// Writes the document to path atomically (a temporary file renamed over it).
Status WriteReport(const std::string& text, const std::string& path);

}  // namespace kvaudit::report
