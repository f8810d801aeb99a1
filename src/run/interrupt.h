// What an interrupted job says before it goes. Ctrl-C (SIGINT) or SIGTERM during a resumable job
// prints where its journal stands and how to go on:
//   kvaudit: interrupted after 3 of 8 windows of eval (kept in DIR/progress.jsonl); rerun the same
//   command to resume
// then the signal's default action ends the process, so the exit status is the one a shell
// expects (130 for Ctrl-C, 143 for SIGTERM). The count is the journal's own at that moment (its
// complete record lines, what a rerun takes); the journal needs no flushing: each record is
// appended and fsync'ed as it finishes (run/jsonl_journal.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace kvaudit {

// Installs the SIGINT and SIGTERM handlers (once per process; later calls do nothing).
void WatchInterrupts();

// Process groups this process started (the servers of --serve-cmd: endpoint/server_launch.h) that
// the handler kills (SIGKILL to the whole group) before the process goes, so that Ctrl-C or SIGTERM
// leaves none behind. At most kMaxWatchedGroups at once; false when full (the caller refuses to
// start another). Installs the handlers.
inline constexpr int kMaxWatchedGroups = 64;
bool KillGroupOnInterrupt(int pgid);
void ForgetGroupOnInterrupt(int pgid);

// The job the message is about, from its start: its name ("eval"), what a record is, plural
// ("windows"), its journal and the records this run owns. Not for a signal handler; the handler
// reads what this last published.
void SetInterruptContext(std::string_view job, std::string_view records, std::string_view journal, int64_t total);

// The message the handler writes, for the context and the journal as they are (a test can check
// it without a signal). Async-signal-safe: no allocation, open/read/close of the journal, writes
// into buf (always NUL-terminated); returns its length.
size_t FormatInterruptMessage(char* buf, size_t size);

}  // namespace kvaudit
