// An append-only JSONL journal that makes long runs resumable (`eval` and `probe`): line 1 is a
// header {<kind>: 1, "fingerprint": {...}} naming what the run depends on; every later line is one
// finished unit of work, written and fsync'ed as it completes. Reopening reads the finished units
// back; a torn last line (killed mid-write) is cut off; a different fingerprint is refused with the
// changed keys named (BadInput, exit 2), so results of different runs never mix.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

class JsonlJournal {
 public:
  ~JsonlJournal();
  JsonlJournal(const JsonlJournal&) = delete;
  JsonlJournal& operator=(const JsonlJournal&) = delete;

  // Opens or creates `path`. kind: the header key (e.g. "kvaudit_eval_progress"); what: the unit
  // name for messages ("window", "probe"). *records: the parsed lines after the header, in file
  // order (each checked to be JSON; the caller validates their shape). Nothing is written unless
  // the file is accepted.
  static Expected<std::unique_ptr<JsonlJournal>> Open(const std::string& path, const std::string& kind,
                                                      const nlohmann::json& fingerprint, const std::string& what,
                                                      std::vector<nlohmann::json>* records);
  // Reads `path` as Open does but never writes it: a torn last line is skipped, not cut off, so
  // another process may be appending to it (`kvaudit merge --partial` reads running shards). A
  // missing file is BadInput.
  static Status Read(const std::string& path, const std::string& kind, const nlohmann::json& fingerprint,
                     const std::string& what, std::vector<nlohmann::json>* records);
  // One line, then fsync: a unit is either wholly recorded or cut off as torn on the next Open.
  Status Append(const nlohmann::json& record);

  // The hint every refusal carries.
  static std::string Hint(const std::string& what);
  // The fingerprint entries that differ, as dotted paths into nested objects ("custom.fib.expected"),
  // at most 5 named: what a refusal tells the user changed.
  static std::string ChangedKeys(const nlohmann::json& old, const nlohmann::json& now);

 private:
  JsonlJournal(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status WriteLine(const std::string& line);
  int fd_ = -1;
  std::string path_;
};

}  // namespace kvaudit
