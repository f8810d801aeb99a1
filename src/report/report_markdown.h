// `kvaudit report --format md`: the verdict and the main table as markdown for a pull-request
// comment. An audit's verdicts are the gate's own markdown (decide/gate/gate_markdown.h, the same text
// `kvaudit gate --markdown` writes), re-judged from the directory by its policy.
#pragma once

#include <string>

#include "report/report_context.h"

namespace kvaudit::report {

std::string RenderMarkdown(const ReportContext& ctx);

}  // namespace kvaudit::report
