#include "cli/common.h"

#include <sys/resource.h>

#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace kvaudit::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "kvaudit: error: %s\n", error.message.c_str());
  return error.exit_code();
}

Expected<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open file; hint: check the path");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.empty()) return BadInput(path + ": file is empty; hint: pass a file with text to score");
  return text;
}

Expected<std::vector<int32_t>> ReadIdsFile(const std::string& path, int32_t vocab) {
  KV_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + j, value);
    const std::string word = text.substr(i, j - i);
    if (ec != std::errc() || end != text.data() + j) {
      return BadInput(path + ": token " + std::to_string(ids.size()) + " '" + word +
                      "' is not an integer; hint: --ids-file takes whitespace-separated token ids");
    }
    if (value < 0 || value >= vocab) {
      return BadInput(path + ": token " + std::to_string(ids.size()) + " id " + word +
                      " is out of range [0, " + std::to_string(vocab) + "); hint: ids must come from this model's vocabulary");
    }
    ids.push_back(static_cast<int32_t>(value));
    i = j;
  }
  if (ids.empty()) return BadInput(path + ": no token ids; hint: --ids-file takes whitespace-separated token ids");
  return ids;
}

int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void ModelFlags::Add(CLI::App& app) {
  app.add_option("--model", model, "Hugging Face model directory or .gguf file")->capture_default_str();
  app.add_option("--threads", threads, "worker threads (0 = all cores)")->capture_default_str();
}

std::string DefaultDataPath() {
  return (std::filesystem::path(KVAUDIT_DEFAULT_MODEL) / ".." / ".." / "data" / "eval-docs.jsonl").lexically_normal().string();
}

double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return Internal(tmp + ": write failed; hint: check free disk space");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal(path + ": cannot replace: " + ec.message());
  return Status::Ok();
}

}  // namespace kvaudit::cli
