// The output directory of a resumable job (--out, --restart): eval and probe today, the commands
// after them tomorrow. DIR/progress.jsonl is the job's journal (run/jsonl_journal.h), DIR/results.json
// its results, replaced atomically so a reader never sees half a file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace kvaudit {

class RunDir {
 public:
  // Creates `dir` and its parents; with `restart`, removes the journal so the job starts over.
  static Expected<RunDir> Prepare(const std::string& dir, bool restart);

  const std::string& dir() const { return dir_; }
  std::string journal_path() const;  // DIR/progress.jsonl
  std::string results_path() const;  // DIR/results.json
  // results.json as the files have always been written: two-space indent, a final newline.
  Status WriteResults(const nlohmann::json& results) const;

 private:
  explicit RunDir(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// DIR/name: the directory of a stage inside a job's --out (sensitivity's proxy/, audit's eval/).
std::string SubDir(const std::string& dir, const std::string& name);
// DIR/results.json is there, readable and not a `merge --partial` result: a stage a staged
// job's shard may take as merged (docs/scale-out.md).
bool HasCompleteResults(const std::string& dir);

// Writes `text` to path.tmp, then renames it over path: readers never see half a file.
Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace kvaudit
