#include "run/provenance.h"

#include "base/isa.h"

#include <cctype>
#include <chrono>
#include <ctime>
#include <fstream>
#include <mutex>
#include <string_view>
#include <thread>

#ifndef KVAUDIT_VERSION
#define KVAUDIT_VERSION "unknown"
#endif
#ifndef KVAUDIT_COMMIT
#define KVAUDIT_COMMIT "unknown"
#endif

namespace kvaudit {
namespace {

struct ProcessRecord {
  std::once_flag started_once;
  std::string command;
  std::string started_utc;
};

ProcessRecord& Record() {
  static ProcessRecord record;
  return record;
}

std::string UtcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void MarkStarted() {
  std::call_once(Record().started_once, [] { Record().started_utc = UtcNow(); });
}

// "model name : Intel(R) Xeon(R) ..." from /proc/cpuinfo; "unknown" elsewhere.
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

}  // namespace

std::string ShellQuote(const std::string& arg) {
  if (arg.empty()) return "''";
  bool plain = true;
  for (char c : arg) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./-_").find(c) != std::string_view::npos;
    plain = plain && safe;
  }
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void RecordCommandLine(int argc, const char* const* argv) {
  MarkStarted();
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + ShellQuote(argv[i]);
  Record().command = std::move(command);
}

const char* SimdPath() { return IsaName(ActiveIsa()); }

nlohmann::json ProvenanceJson() {
  MarkStarted();
  const unsigned cores = std::thread::hardware_concurrency();
  return {{"kvaudit_version", KVAUDIT_VERSION},
          {"commit", KVAUDIT_COMMIT},
          {"command", Record().command},
          {"started_utc", Record().started_utc},
          {"machine", {{"cpu", CpuModel()}, {"logical_cores", cores}, {"simd", SimdPath()}}}};
}

}  // namespace kvaudit
