// The report page's inline style sheet and script (html_page.cc).
#pragma once

#include <string>

namespace kvaudit::report {

std::string PageCss();     // screen and print styles; the series colours from palette.h
std::string PageScript();  // sortable tables, configuration toggles, copy buttons: conveniences only

}  // namespace kvaudit::report
