#include "cli/common.h"

#include <charconv>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/json_text.h"

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
      return BadInput(path + ": token " + std::to_string(ids.size()) + " id " + word + " is out of range [0, " +
                      std::to_string(vocab) + "); hint: ids must come from this model's vocabulary");
    }
    ids.push_back(static_cast<int32_t>(value));
    i = j;
  }
  if (ids.empty()) return BadInput(path + ": no token ids; hint: --ids-file takes whitespace-separated token ids");
  return ids;
}

int PrintResults(const std::string& table, const nlohmann::json& results, const std::string& footer, bool json) {
  if (json) {
    std::fputs((JsonText(results, 2) + "\n").c_str(), stdout);
    std::fprintf(stderr, "kvaudit: %s", footer.c_str());
  } else {
    std::fputs(table.c_str(), stdout);
    std::fputs(footer.c_str(), stdout);
  }
  return 0;
}

int PrintStagedShardDone(const ShardSpec& shard, const ShardRound& round, const std::string& computed, double wall_s,
                         const std::string& manifest_path) {
  std::string stages;
  for (const std::string& s : round.stages) stages += (stages.empty() ? "" : ", ") + s;
  if (round.stages.empty()) {
    std::printf(
        "shard %s: nothing left to shard (every stage is merged); finish with this command without --shard "
        "and with --out MERGED\n",
        shard.Text().c_str());
    return 0;
  }
  std::printf(
      "shard %s: stages %s (%s) recorded in %.1f s; manifest %s; when the %d shards have finished: kvaudit "
      "merge DIR... --out MERGED, then %s\n",
      shard.Text().c_str(), stages.c_str(), computed.c_str(), wall_s, manifest_path.c_str(), shard.count,
      round.more_rounds ? "run the shards again with --merged MERGED (the next stage needs this one merged)"
                        : "this command without --shard and with --out MERGED");
  return 0;
}

int PrintShardDone(const ShardSpec& shard, int units, const std::string& unit_name, double wall_s,
                   const std::string& manifest_path) {
  std::printf(
      "shard %s: %d %s recorded in %.1f s; manifest %s; combine the %d shards with kvaudit merge DIR... --out DIR\n",
      shard.Text().c_str(), units, unit_name.c_str(), wall_s, manifest_path.c_str(), shard.count);
  return 0;
}

}  // namespace kvaudit::cli
