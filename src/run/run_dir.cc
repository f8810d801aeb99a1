#include "run/run_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_text.h"

namespace kvaudit {

namespace fs = std::filesystem;

Expected<RunDir> RunDir::Prepare(const std::string& dir, bool restart) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return BadInput(dir + ": cannot create the output directory: " + ec.message() + "; hint: check --out");
  RunDir out(dir);
  if (restart) {
    fs::remove(out.journal_path(), ec);
    if (ec)
      return BadInput(out.journal_path() + ": cannot remove for --restart: " + ec.message() +
                      "; hint: check the permissions of --out");
  }
  return out;
}

std::string RunDir::journal_path() const { return (fs::path(dir_) / "progress.jsonl").string(); }
std::string RunDir::results_path() const { return (fs::path(dir_) / "results.json").string(); }

Status RunDir::WriteResults(const nlohmann::json& results) const {
  return WriteFileAtomically(results_path(), JsonText(results, 2) + "\n");
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  // Per process: the shards of a staged job may rewrite the same merged stage's results.json
  // at once (each resumes it wholly); each renames its own complete file over it.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return Internal(tmp + ": write failed; hint: check free disk space");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Internal(path + ": cannot replace: " + ec.message());
  return Status::Ok();
}

bool HasCompleteResults(const std::string& dir) {
  std::ifstream in(SubDir(dir, "results.json"), std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && !j.contains("partial");
}

std::string SubDir(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace kvaudit
