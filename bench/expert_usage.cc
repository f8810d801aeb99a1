// Which experts a mixture-of-experts GGUF routes to while prefilling a token sequence, and how many
// bytes of its expert tensors that reads. kvaudit maps GGUF weights and reads them in place, so a
// page of an expert that no token is routed to is never resident: peak RSS counts the experts used,
// not the file (BENCHMARKS.md "Real-size mixture-of-experts"). Prefills in chunks of 512 positions
// as `kvaudit score` does; f32 cache.
//   expert_usage MODEL.gguf IDS_FILE [threads]
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"

using namespace kvaudit;

namespace {
std::vector<int32_t> ReadIds(const std::string& path) {
  std::ifstream in(path);
  std::vector<int32_t> ids;  // [n]
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

// Bytes of layer l's expert tensors (blk.l.ffn_*_exps.weight) in the file.
uint64_t ExpertBytes(const GgufFile& g, int l) {
  uint64_t bytes = 0;
  for (const char* role : {"gate", "up", "down"}) {
    const TensorView* t = g.FindTensor("blk." + std::to_string(l) + ".ffn_" + role + "_exps.weight");
    if (t) bytes += t->nbytes;
  }
  return bytes;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: expert_usage MODEL.gguf IDS_FILE [threads]\n");
    return 2;
  }
  auto model = Model::Load(argv[1]);
  auto gguf = GgufFile::Open(argv[1]);
  if (!model.ok() || !gguf.ok()) {
    std::fprintf(stderr, "kvaudit: %s\n", (model.ok() ? gguf.error() : model.error()).message.c_str());
    return 2;
  }
  const ModelConfig& c = (*model)->config();
  const std::vector<int32_t> ids = ReadIds(argv[2]);
  if (c.n_experts == 0 || ids.empty()) {
    std::fprintf(stderr, "kvaudit: needs a mixture-of-experts model and token ids\n");
    return 2;
  }
  ThreadPool pool(argc > 3 ? std::atoi(argv[3]) : 2);
  const int n = static_cast<int>(ids.size());
  auto cache = MakeF32Cache(c, n);
  KV_CHECK(cache->Reserve(n).ok());
  Forward fwd(**model, *cache, pool, n);
  std::vector<std::set<int>> used(c.n_layers);  // [n_layers] expert ids routed to
  fwd.set_route_observer([&](int layer, int, int rows, const int32_t* experts, const float*) {
    for (int i = 0; i < rows * c.n_experts_used; ++i) used[layer].insert(experts[i]);
  });
  std::vector<float> logits(c.vocab_size);  // [vocab] the last position's
  for (int p = 0; p < n; p += 512) {
    const int len = std::min(512, n - p);
    fwd.Run(std::span<const int32_t>(ids.data() + p, len), p, logits.data(), false);
  }
  uint64_t all = 0, read = 0;
  size_t pairs = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const uint64_t bytes = ExpertBytes(*gguf, l);
    all += bytes;
    read += bytes / c.n_experts * used[l].size();  // each expert's slice of a stacked tensor is contiguous
    pairs += used[l].size();
    std::printf("layer %2d: %3zu of %d experts\n", l, used[l].size(), c.n_experts);
  }
  std::printf("%d tokens: %zu of %d (layer, expert) pairs routed to; expert tensors %.0f MB, of which read %.0f MB\n",
              n, pairs, c.n_layers * c.n_experts, all / 1e6, read / 1e6);
  return 0;
}
