// The servers a `--serve-cmd` job starts, as tests see them: each template is wrapped in
// `sh -c 'echo $$ >> PIDS; exec SERVER ...'`, so PIDS lists every server's pid (exec keeps it), and
// a test checks that none is left after the job, whatever way it ended.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kvaudit::testing {

// The wrapper around `server_words` (the server's command line, placeholders included): its pid
// appended to `pids`, then `before` (shell words run ahead of the server: a failure to plant), then
// exec of the server. One word for --serve-cmd.
std::string PidRecordingTemplate(const std::filesystem::path& pids, const std::string& server_words,
                                 const std::string& before = "");
// `kvaudit serve` of the bundled model on {port} with --kv `kv`, as such a template.
std::string KvauditServeTemplate(const std::filesystem::path& pids, const std::string& kv = "k={k},v={v}",
                                 const std::string& before = "");
// The pids recorded so far, in start order.
std::vector<pid_t> RecordedPids(const std::filesystem::path& pids);
// `expected` servers were recorded and each is gone within 10 s (gtest failures otherwise).
void ExpectAllServersGone(const std::filesystem::path& pids, size_t expected);
// `s` double-quoted for RunCli's shell: $ " \ ` escaped, a template's single quotes kept.
std::string ShellQuoted(const std::string& s);

}  // namespace kvaudit::testing
