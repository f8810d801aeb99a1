#include "support/llamacpp_golden.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

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
  g.logits = ReadF32File(dir / "logits.f32");
  const std::vector<std::string> greedy = Lines(dir / "greedy.txt");
  if (greedy.size() >= 2) g.prompt = ParseIds(greedy[0]), g.greedy = ParseIds(greedy[1]);
  for (std::string line : Lines(dir / "experts.txt")) {  // "layer L: a,b a,b ..."; absent for dense models
    line = line.substr(line.find(':') + 1);
    std::replace(line.begin(), line.end(), ',', ' ');
    g.experts.push_back(ParseIds(line));
  }
  return g;
}

std::vector<int32_t> ParseIds(const std::string& line) {
  std::istringstream in(line);
  std::vector<int32_t> ids;
  for (int32_t v; in >> v;) ids.push_back(v);
  return ids;
}

std::vector<float> ReadF32File(const std::filesystem::path& p) {
  const std::vector<uint8_t> raw = ReadBytes(p);
  std::vector<float> out(raw.size() / 4);
  if (!out.empty()) std::memcpy(out.data(), raw.data(), out.size() * 4);
  return out;
}

std::vector<float> GoldenLogits(const Model& m, const std::vector<int32_t>& ids, int context, int threads,
                                bool decode) {
  ThreadPool pool(threads);
  auto cache = MakeF32Cache(m.config(), context);
  Forward fwd(m, *cache, pool, context);
  const size_t V = m.config().vocab_size;
  std::vector<float> out(ids.size() * V);  // [n, vocab]
  if (!decode) {
    fwd.Run(ids, 0, out.data(), /*all_logits=*/true);
    return out;
  }
  for (size_t t = 0; t < ids.size(); ++t)
    fwd.Run(std::span<const int32_t>(&ids[t], 1), static_cast<int>(t), out.data() + t * V, false);
  return out;
}

std::vector<int32_t> GoldenGreedy(const Model& m, std::vector<int32_t> seq, size_t n_new, int context) {
  ThreadPool pool(2);
  auto cache = MakeF32Cache(m.config(), context);
  Forward fwd(m, *cache, pool, context);
  std::vector<float> last(m.config().vocab_size);  // [vocab] of the last position
  fwd.Run(seq, 0, last.data(), false);
  std::vector<int32_t> out;
  while (out.size() < n_new) {
    out.push_back(static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
    seq.push_back(out.back());
    fwd.Run(std::span<const int32_t>(&seq.back(), 1), static_cast<int>(seq.size()) - 1, last.data(), false);
  }
  return out;
}

}  // namespace kvaudit::testing
