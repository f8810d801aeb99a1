#include "run/run_dir.h"

#include <filesystem>
#include <fstream>

namespace kvaudit {

namespace fs = std::filesystem;

Expected<RunDir> RunDir::Prepare(const std::string& dir, bool restart) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return BadInput(dir + ": cannot create the output directory: " + ec.message() + "; hint: check --out");
  RunDir out(dir);
  if (restart) {
    fs::remove(out.journal_path(), ec);
    if (ec) return BadInput(out.journal_path() + ": cannot remove for --restart: " + ec.message() + "; hint: check the permissions of --out");
  }
  return out;
}

std::string RunDir::journal_path() const { return (fs::path(dir_) / "progress.jsonl").string(); }
std::string RunDir::results_path() const { return (fs::path(dir_) / "results.json").string(); }

Status RunDir::WriteResults(const nlohmann::json& results) const {
  return WriteFileAtomically(results_path(), results.dump(2) + "\n");
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return Internal(tmp + ": write failed; hint: check free disk space");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Internal(path + ": cannot replace: " + ec.message());
  return Status::Ok();
}

std::string SubDir(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace kvaudit
