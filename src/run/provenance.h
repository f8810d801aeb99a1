// Where a result came from, for the run block of every results.json and the report's run metadata
// (docs/report.md section 8): kvaudit's version and commit, the command line, when it started
// (UTC), and the machine (CPU model, logical cores, the SIMD path this binary was built for).
// Process-wide: the CLI records argv once at start; library callers that never do get an empty
// command and the time of the first ProvenanceJson call.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvaudit {

// Records argv (shell-quoted where needed) and the start time. Call once, from main.
void RecordCommandLine(int argc, const char* const* argv);

// {"kvaudit_version", "commit", "command", "started_utc", "machine": {"cpu", "logical_cores", "simd"}}
nlohmann::json ProvenanceJson();

// The kernel path this process runs (base/isa.h): "avx512", "avx2" or "portable".
const char* SimdPath();

// One argument as a POSIX shell would need it written (single quotes where it has specials).
std::string ShellQuote(const std::string& arg);

}  // namespace kvaudit
