// What a report is drawn from: one kvaudit output directory (audit, eval, probe, recommend or
// sensitivity), its results.json files read as JSON, and what is missing from it. An interrupted
// run (no results.json yet) is loaded from what its finished stages wrote; a directory that holds
// no kvaudit output at all is bad input (one line, exit 2).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit::report {

// One results.json: its document and where it came from (shown in the report and used by
// data-src attributes, which name values as "<dir index>|<file>|<JSON pointer>").
struct ResultsFile {
  std::string file;  // relative to the directory: "results.json", "eval/results.json"
  nlohmann::json doc;
};

struct RunDirectory {
  int index = 0;         // position on the command line (0-based)
  std::string path;      // as given
  std::string label;     // shown beside every configuration when several directories are compared
  std::string kind;      // "audit", "eval", "probe", "recommend", "sensitivity"
  bool complete = true;  // false: the run was interrupted (its results.json is not written)
  std::optional<ResultsFile> audit, eval, probe, recommend, sensitivity;
  std::vector<std::string> missing;  // one sentence per part that is not there, with the hint to get it
};

// Reads DIR. Errors: not a directory, no kvaudit output in it, a results.json that is not JSON or
// names an unknown kind.
Expected<RunDirectory> LoadRunDirectory(const std::string& path, int index);

// Labels directories for comparison: their last path component, made unique with the index.
void LabelRunDirectories(std::vector<RunDirectory>& dirs);

}  // namespace kvaudit::report
