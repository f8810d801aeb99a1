#include "support/llamacpp_golden.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

std::vector<int32_t> ParseIds(const std::string& line) {
  std::istringstream in(line);
  std::vector<int32_t> ids;
  for (int32_t v; in >> v;) ids.push_back(v);
  return ids;
}

std::vector<std::string> Lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

LlamaCppGolden ReadLlamaCppGolden(const std::string& name) {
  LlamaCppGolden g;
  const std::filesystem::path dir = Fixture("golden/llamacpp/" + name);
  g.dir = dir.string();
  const std::vector<std::string> ids = Lines(dir / "ids.txt");
  if (!ids.empty()) g.ids = ParseIds(ids[0]);
  const std::vector<uint8_t> raw = ReadBytes(dir / "logits.f32");
  g.logits.resize(raw.size() / 4);
  if (!raw.empty()) std::memcpy(g.logits.data(), raw.data(), g.logits.size() * 4);
  const std::vector<std::string> greedy = Lines(dir / "greedy.txt");
  if (greedy.size() >= 2) g.prompt = ParseIds(greedy[0]), g.greedy = ParseIds(greedy[1]);
  for (std::string line : Lines(dir / "experts.txt")) {  // "layer L: a,b a,b ..."; absent for dense models
    line = line.substr(line.find(':') + 1);
    std::replace(line.begin(), line.end(), ',', ' ');
    g.experts.push_back(ParseIds(line));
  }
  return g;
}

}  // namespace kvaudit::testing
