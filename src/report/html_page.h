// The report page: one self-contained HTML5 document (styles, script and every chart inline; no
// fonts, images or scripts fetched, so it opens offline from file:// and archives as one file).
// The script only adds conveniences (sorting tables, hiding configurations, copying settings); the
// page reads and prints the same without it.
#pragma once

#include <string>

#include "report/report_context.h"

namespace kvaudit::report {

std::string RenderHtmlPage(const ReportContext& ctx);

}  // namespace kvaudit::report
