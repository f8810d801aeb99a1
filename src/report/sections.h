// The report's sections, one file each (section_*.cc), each a row of the page's table (the order of
// kPageSections in html_page.cc is the order the page shows them, and gives their numbers). A
// section's body is the content of its <section> element; a section whose data is not in the
// directories says what is missing and how to get it, so a partial run renders what is there.
#pragma once

#include <string>

#include "report/report_context.h"

namespace kvaudit::report {

struct Section {
  const char* id;           // the element's id and the table of contents' anchor
  const char* toc_label;    // the table of contents' link text (HTML)
  const char* title;        // the heading, after the section's number
  const char* how_to_read;  // the intro paragraph under the heading
  std::string (*body)(const ReportContext& ctx);
};

extern const Section kVerdictSection;      // PASS/FAIL, safe-up-to, what to deploy
extern const Section kMemorySection;       // memory vs fidelity table
extern const Section kCurvesSection;       // KLD and top-1 vs context length
extern const Section kAttentionSection;    // layer x KV head heatmaps
extern const Section kSensitivitySection;  // sensitivity per layer, Pareto front
extern const Section kProbesSection;       // needle grids, attribution
extern const Section kWorstCasesSection;   // worst cases, drift, variance
extern const Section kRunInfoSection;      // model, version, machine, time

}  // namespace kvaudit::report
