#include "support/llamacpp_kv_buffers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "decide/targets/target_settings.h"
#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

// As llama.cpp prints a size (src/llama-kv-cache.cpp: "%7.2f" of (float)bytes / (1024.0f * 1024.0f)).
std::string LlamaCppMib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<float>(bytes) / (1024.0f * 1024.0f));
  return buf;
}

}  // namespace

std::string KvBufferRow::What() const {
  return model + " -c " + std::to_string(ctx) + " " + type + (swa_full ? " --swa-full " : " ") + cache;
}

std::vector<KvBufferRow> ReadKvBufferRows() {
  std::ifstream in(RepoDir() / "tests/data/llamacpp_kv_buffers.tsv");
  EXPECT_TRUE(in.good()) << "tests/data/llamacpp_kv_buffers.tsv";
  std::vector<KvBufferRow> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {  // the column names
      header = false;
      continue;
    }
    std::istringstream s(line);
    KvBufferRow r;
    int full = 0;
    s >> r.model >> r.ctx >> r.type >> full >> r.cache >> r.cells >> r.layers >> r.k_mib >> r.v_mib >> r.buffer_mib;
    EXPECT_FALSE(s.fail()) << line;
    r.swa_full = full != 0;
    rows.push_back(r);
  }
  return rows;
}

bool ExpectKvBufferRow(const KvBufferRow& r, const ModelConfig& c) {
  const std::string what = r.What();
  auto spec = CacheConfig::Parse("k=" + r.type + ",v=" + r.type);
  EXPECT_TRUE(spec.ok()) << what;
  if (!spec.ok()) return false;
  const TargetSettings s = SettingsForTarget(DeployTarget::kLlamaCpp, *spec, c, r.ctx);
  EXPECT_TRUE(s.exact) << what;
  EXPECT_EQ(s.memory_variants.empty(), c.n_sliding_layers() == 0) << what;
  if (r.swa_full && s.memory_variants.empty()) return false;
  const KvMemory& m = r.swa_full ? s.memory_variants.front().memory : s.memory;
  const bool sliding = r.cache == "swa";
  EXPECT_EQ(r.cache == "all", c.n_sliding_layers() == 0) << what;
  EXPECT_EQ(m.LayersOf(sliding), r.layers) << what;
  for (const LayerMemory& l : m.layers) {
    if (l.sliding != sliding) continue;
    EXPECT_EQ(l.cells, static_cast<uint64_t>(r.cells)) << what << "\n" << m.layout;
  }
  const uint64_t k = m.KBytesOf(sliding), v = m.BytesOf(sliding) - k;
  EXPECT_EQ(LlamaCppMib(k), r.k_mib) << what << ": K " << k << " B";
  EXPECT_EQ(LlamaCppMib(v), r.v_mib) << what << ": V " << v << " B";
  EXPECT_EQ(LlamaCppMib(k + v), r.buffer_mib) << what << ": the CPU KV buffer";
  const double printed = std::stod(r.k_mib) * 1048576.0;
  if (printed != std::floor(printed)) return false;
  EXPECT_EQ(static_cast<uint64_t>(printed), k) << what;
  return true;
}

}  // namespace kvaudit::testing
