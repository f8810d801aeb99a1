// The report's sections, one file each (section_*.cc), in the order the page shows them. Each
// returns a <section> element; a section whose data is not in the directories says what is
// missing and how to get it, so a partial run renders what is there.
#pragma once

#include <string>

#include "report/report_context.h"

namespace kvaudit::report {

std::string RenderVerdictSection(const ReportContext& ctx);      // 1: PASS/FAIL, safe-up-to, what to deploy
std::string RenderMemorySection(const ReportContext& ctx);       // 2: memory vs fidelity table
std::string RenderCurvesSection(const ReportContext& ctx);       // 3: KLD and top-1 vs context length
std::string RenderAttentionSection(const ReportContext& ctx);    // 4: layer x KV head heatmaps
std::string RenderSensitivitySection(const ReportContext& ctx);  // 5: sensitivity per layer, Pareto front
std::string RenderProbesSection(const ReportContext& ctx);       // 6: needle grids, attribution
std::string RenderWorstCasesSection(const ReportContext& ctx);   // 7: worst cases, drift, variance
std::string RenderRunInfoSection(const ReportContext& ctx);      // 8: model, version, machine, time

}  // namespace kvaudit::report
