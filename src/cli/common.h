// Shared pieces of the subcommand mains: loading inputs and reporting errors as one line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace CLI { class App; }

namespace kvaudit::cli {

// Prints "kvaudit: error: <message>" on stderr; returns the exit code (2 for bad input).
int ReportError(const Error& error);

Expected<std::string> ReadTextFile(const std::string& path);  // an empty file is an error
// Whitespace-separated token ids; each must be an integer in [0, vocab).
Expected<std::vector<int32_t>> ReadIdsFile(const std::string& path, int32_t vocab);

// The bundled eval documents (default data of eval and probe): <repo>/data/eval-docs.jsonl, beside
// the bundled model's folder.
std::string DefaultDataPath();
// Peak resident set size of this process in MB (getrusage ru_maxrss).
double PeakRssMb();
// Writes `text` to path.tmp, then renames it over path: readers never see half a file.
Status WriteFileAtomically(const std::string& path, const std::string& text);

// Worker threads: 0 means all hardware threads.
int ResolveThreads(int requested);

// The flags every model-running subcommand shares, declared once (house style: same flag, same meaning).
struct ModelFlags {
  std::string model = KVAUDIT_DEFAULT_MODEL;  // the bundled model in the source tree
  int threads = 0;
  void Add(CLI::App& app);
};

}  // namespace kvaudit::cli
