// What every section of the report reads: the loaded directories and the configurations they
// hold, each with the name and palette colour it has in every table and chart of the page.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "report/report_inputs.h"

namespace kvaudit::report {

struct ConfigView {
  const RunDirectory* dir = nullptr;
  int index = 0;     // in the directory's eval configs[]
  std::string spec;  // canonical spec
  std::string name;  // spec, or "label · spec" when several directories are compared
  int color = 0;     // palette index, the same in every chart
};

struct ReportContext {
  ReportContext() = default;
  ReportContext(ReportContext&&) = default;      // moving keeps dirs' elements where they are
  ReportContext(const ReportContext&) = delete;  // ConfigView points into dirs

  std::vector<RunDirectory> dirs;
  bool compare = false;                  // more than one directory
  std::vector<ConfigView> eval_configs;  // directory order, then configs[] order

  std::string NameOf(const RunDirectory& dir, const std::string& spec) const;
  int ColorOf(const RunDirectory& dir, const std::string& spec) const;  // an eval config's colour, else the next free
};

ReportContext MakeContext(std::vector<RunDirectory> dirs);

// The pointer of the audit's configs[] entry for spec ("/configs/2"), "" when dir has no audit or
// the audit did not judge spec.
std::string AuditConfigPointer(const RunDirectory& dir, const std::string& spec);

// <p class="missing">text</p>: what a section cannot show and why.
std::string MissingNote(const std::string& text);
// The body of a section drawn per directory: render(dir) for every directory that has(dir), or
// the missing note when none has.
std::string PerDirectory(const ReportContext& ctx, const std::function<bool(const RunDirectory&)>& has,
                         const std::function<std::string(const RunDirectory&)>& render, const std::string& missing);

// PerDirectory over the directories with probe results (sections 6 and 7).
std::string PerProbeDirectory(const ReportContext& ctx, const std::function<std::string(const RunDirectory&)>& render);

// "<h3>label</h3>" when comparing several directories, else "".
std::string DirHeading(const ReportContext& ctx, const RunDirectory& dir, const std::string& what);

}  // namespace kvaudit::report
