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
#include "job/job_run.h"
#include "run/fingerprint.h"
#include "run/jsonl_journal.h"

namespace kvaudit {

// The header key of eval's progress.jsonl (run/jsonl_journal.h).
inline constexpr const char* kProgressKind = "kvaudit_eval_progress";
// eval in the job skeleton (job/job_run.h): its units are windows.
inline const JobKind kEvalJob{"eval", kProgressKind, "window"};

nlohmann::json WindowToJson(const WindowRecord& rec);
// Validates shapes; n_configs is how many configuration blocks the line must hold, attn_cells how
// many attention cells each block has (0: the diagnosis was off and the line must have none).
// Attention cells are written sparsely: [index, k_err2, k_ref2, v_err2, v_ref2, out_err2,
// out_ref2, kl, tv, sink, sink_moved, queries] for every cell with queries > 0.
Expected<WindowRecord> WindowFromJson(const nlohmann::json& j, size_t n_configs, size_t attn_cells = 0);

// The journal's lines (JobRun::Open) as finished windows: those with index < n_windows, ascending,
// each once (later ones stay in the file for a run with a larger --windows). A line of the wrong
// shape is BadInput naming path and line.
Status WindowsFromJournal(const std::vector<nlohmann::json>& lines, const std::string& path, size_t n_configs,
                          size_t n_windows, size_t attn_cells, std::vector<WindowRecord>* done);

// The finished windows of a journal another process may still append to (JsonlJournal::Read):
// `kvaudit merge`. An existing file must carry `fingerprint`; else BadInput naming the changed keys.
Status ReadProgressLog(const std::string& path, const nlohmann::json& fingerprint, size_t n_configs, size_t n_windows,
                       std::vector<WindowRecord>* done, size_t attn_cells = 0);

}  // namespace kvaudit
