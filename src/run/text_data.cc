#include "run/text_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvaudit {
namespace {

Expected<std::string> ReadWhole(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return BadInput(p.string() + ": cannot open file; hint: check the path");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<std::vector<std::string>> ParseJsonl(const std::string& path, const std::string& content) {
  std::vector<std::string> docs;
  std::istringstream lines(content);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const std::string where = path + ":" + std::to_string(line_no);
    if (j.is_discarded()) return BadInput(where + ": not valid JSON; hint: one JSON object per line");
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) {
      return BadInput(where + ": no string field \"text\"; hint: each line needs {\"text\": \"...\"}");
    }
    docs.push_back(j["text"].get<std::string>());
  }
  return docs;
}

}  // namespace

Expected<std::vector<std::string>> LoadDocuments(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> docs;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      KV_ASSIGN_OR_RETURN(std::string text, ReadWhole(f));
      if (!text.empty()) docs.push_back(std::move(text));
    }
  } else {
    KV_ASSIGN_OR_RETURN(std::string content, ReadWhole(path));
    if (fs::path(path).extension() == ".jsonl") {
      KV_ASSIGN_OR_RETURN(docs, ParseJsonl(path, content));
    } else if (!content.empty()) {
      docs.push_back(std::move(content));
    }
  }
  bool any = false;
  for (const auto& d : docs) any = any || !d.empty();
  if (!any)
    return BadInput(
        path +
        ": no text found (empty file or folder); hint: pass text, a folder of text files, or JSONL with \"text\"");
  return docs;
}

std::string JoinDocuments(const std::vector<std::string>& docs) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i) out += "\n\n";
    out += docs[i];
  }
  return out;
}

}  // namespace kvaudit
