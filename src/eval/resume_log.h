// DIR/progress.jsonl: the append-only record that makes `kvaudit eval` resumable. Line 1 is a
// header with the run's fingerprint; each later line is one finished window (a WindowRecord:
// every per-position value, doubles printed round-trip exact), written and fsync'ed as the window
// completes. A rerun reads the finished windows back bit for bit, so results.json comes out
// identical; a run with another model, data or configuration refuses to mix (exit 2).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "eval/fidelity_metrics.h"
#include "run/fingerprint.h"
#include "run/jsonl_journal.h"

namespace kvaudit {

// The header key of eval's progress.jsonl (run/jsonl_journal.h).
inline constexpr const char* kProgressKind = "kvaudit_eval_progress";

nlohmann::json WindowToJson(const WindowRecord& rec);
// Validates shapes; n_configs is how many configuration blocks the line must hold, attn_cells how
// many attention cells each block has (0: the diagnosis was off and the line must have none).
// Attention cells are written sparsely: [index, k_err2, k_ref2, v_err2, v_ref2, out_err2,
// out_ref2, kl, tv, sink, sink_moved, queries] for every cell with queries > 0.
Expected<WindowRecord> WindowFromJson(const nlohmann::json& j, size_t n_configs, size_t attn_cells = 0);

class ProgressLog {
 public:
  ProgressLog(const ProgressLog&) = delete;
  ProgressLog& operator=(const ProgressLog&) = delete;

  // Opens (or creates) `path`. An existing file must carry `fingerprint` (an object) in its header:
  // otherwise BadInput naming the differing keys, with the hint to use a new --out or --restart.
  // Finished windows with index < n_windows are returned in *done, ascending, each once (later
  // ones stay in the file for a run with a larger --windows). A torn last
  // line (killed mid-write) is cut off; damage anywhere else is an error.
  static Expected<std::unique_ptr<ProgressLog>> Open(const std::string& path, const nlohmann::json& fingerprint,
                                                     size_t n_configs, size_t n_windows,
                                                     std::vector<WindowRecord>* done, size_t attn_cells = 0);
  // The finished windows as Open returns them, without writing the file (JsonlJournal::Read): for
  // reading a journal another process may still append to.
  static Status Read(const std::string& path, const nlohmann::json& fingerprint, size_t n_configs, size_t n_windows,
                     std::vector<WindowRecord>* done, size_t attn_cells = 0);
  // One line, then fsync, so a window is either wholly recorded or cut off as torn.
  Status Append(const WindowRecord& rec);

 private:
  explicit ProgressLog(std::unique_ptr<JsonlJournal> journal) : journal_(std::move(journal)) {}
  std::unique_ptr<JsonlJournal> journal_;
};

}  // namespace kvaudit
