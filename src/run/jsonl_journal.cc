#include "run/jsonl_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_text.h"

namespace kvaudit {

JsonlJournal::~JsonlJournal() {
  if (fd_ >= 0) ::close(fd_);
}

std::string JsonlJournal::Hint(const std::string& what) {
  return "; hint: use a new --out directory, or --restart to discard the recorded " + what + "s";
}

Status JsonlJournal::WriteLine(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Internal(path_ + ": write failed: " + std::strerror(errno) + "; hint: check free disk space");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) return Internal(path_ + ": fsync failed: " + std::strerror(errno));
  return Status::Ok();
}

namespace {

// Dotted paths of the fingerprint entries that differ, descending into objects (so a custom
// probe's changed check reads "custom.fib.expected"), the keys of `now` first.
void DiffPaths(const nlohmann::json& old, const nlohmann::json& now, const std::string& prefix,
               std::vector<std::string>* out) {
  for (auto it = now.begin(); it != now.end(); ++it) {
    const std::string path = prefix + it.key();
    if (!old.contains(it.key())) {
      out->push_back(path);
    } else if (old[it.key()].is_object() && it.value().is_object()) {
      DiffPaths(old[it.key()], it.value(), path + ".", out);
    } else if (old[it.key()] != it.value()) {
      out->push_back(path);
    }
  }
  for (auto it = old.begin(); it != old.end(); ++it) {
    if (!now.contains(it.key())) out->push_back(prefix + it.key());
  }
}

}  // namespace

std::string JsonlJournal::ChangedKeys(const nlohmann::json& old, const nlohmann::json& now) {
  if (!old.is_object() || !now.is_object()) return "fingerprint";
  std::vector<std::string> paths;
  DiffPaths(old, now, "", &paths);
  if (paths.empty()) return "fingerprint";
  constexpr size_t kShown = 5;
  std::string s;
  for (size_t i = 0; i < paths.size() && i < kShown; ++i) s += (i ? ", " : "") + paths[i];
  if (paths.size() > kShown) s += " and " + std::to_string(paths.size() - kShown) + " more";
  return s;
}

Status JsonlJournal::Append(const nlohmann::json& record) { return WriteLine(JsonText(record) + "\n"); }

namespace {

// The whole file, or "" when it cannot be opened.
std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks the header and parses the records of `content` (complete lines only).
Status ParseJournal(const std::string& content, const std::string& path, const std::string& kind,
                    const nlohmann::json& fingerprint, const std::string& what, std::vector<nlohmann::json>* records) {
  const std::string hint = JsonlJournal::Hint(what);
  if (content.empty()) return Status::Ok();
  std::istringstream lines(content);
  std::string line;
  std::getline(lines, line);
  const auto h = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object() || !h.contains(kind) || !h.contains("fingerprint")) {
    return BadInput(path + ": not a " + kind + " file" + hint);
  }
  if (h[kind] != 1) {
    return BadInput(path + ": written by another kvaudit version (format " + JsonText(h[kind]) + ")" + hint);
  }
  const nlohmann::json& old = h["fingerprint"];
  if (old != fingerprint) {
    return BadInput(path + ": the recorded " + what + "s come from a different run (" +
                    JsonlJournal::ChangedKeys(old, fingerprint) + " changed) and would mix with this one" + hint);
  }
  int line_no = 1;
  while (std::getline(lines, line)) {
    ++line_no;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return BadInput(path + ":" + std::to_string(line_no) + ": damaged " + what + " record" + hint);
    records->push_back(std::move(j));
  }
  return Status::Ok();
}

// A write cut short by a kill (or one still under way) leaves a last line without its newline:
// the complete lines' length (rfind gives npos when there is no newline at all, and npos + 1
// wraps to 0).
size_t CompleteLength(const std::string& content) {
  return content.empty() || content.back() == '\n' ? content.size() : content.rfind('\n') + 1;
}

}  // namespace

Status JsonlJournal::Read(const std::string& path, const std::string& kind, const nlohmann::json& fingerprint,
                          const std::string& what, std::vector<nlohmann::json>* records) {
  records->clear();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return BadInput(path + ": missing; hint: check the directory");
  std::string content = ReadAll(path);
  content.resize(CompleteLength(content));
  return ParseJournal(content, path, kind, fingerprint, what, records);
}

Expected<std::unique_ptr<JsonlJournal>> JsonlJournal::Open(const std::string& path, const std::string& kind,
                                                           const nlohmann::json& fingerprint, const std::string& what,
                                                           std::vector<nlohmann::json>* records) {
  records->clear();
  std::string content = ReadAll(path);
  const size_t keep = CompleteLength(content);
  const bool torn = keep != content.size();
  content.resize(keep);
  // Everything is checked before the file is touched: a refused run leaves it as it was.
  KV_RETURN_IF_ERROR(ParseJournal(content, path, kind, fingerprint, what, records));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Internal(path + ": cannot open: " + std::strerror(errno) + "; hint: check the --out directory");
  std::unique_ptr<JsonlJournal> journal(new JsonlJournal(fd, path));
  if (torn && ::ftruncate(fd, static_cast<off_t>(content.size())) != 0) {
    return Internal(path + ": cannot cut off a torn last line: " + std::strerror(errno));
  }
  const nlohmann::json header = {{kind, 1}, {"fingerprint", fingerprint}};
  if (content.empty()) KV_RETURN_IF_ERROR(journal->WriteLine(JsonText(header) + "\n"));
  return journal;
}

}  // namespace kvaudit
