// The bundled model's GGUF q8_0 and q4_k_m files with their matrices kept packed and read in place
// from the memory map (docs/architecture.md "Weights in memory"): the logits — so every NLL — are
// bitwise those of the same file dequantized to f32 at load; prefill equals decode bit for bit; the
// weights cost their file size (no anonymous copy).
#include <gtest/gtest.h>

#include <malloc.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"

namespace kvaudit {
using ::kvaudit::testing::Fixture;
namespace {

std::unique_ptr<Model> LoadOrDie(const std::string& path, const WeightLoadOptions& options) {
  auto r = Model::Load(path, options);
  KV_CHECK_MSG(r.ok(), r.ok() ? "" : r.error().message.c_str());
  return std::move(r).value();
}

// The first n token ids of eval doc 2 (from the transformers reference file).
std::vector<int32_t> DocIds(int n) {
  auto f = SafetensorsFile::Open(Fixture("golden/kvq-code-16m-reference.safetensors").string());
  KV_CHECK(f.ok());
  const TensorView* t = f->Find("doc2.ids");
  KV_CHECK(t && t->numel() >= n);
  std::vector<int32_t> ids(n);
  std::memcpy(ids.data(), t->data, sizeof(int32_t) * n);
  return ids;
}

// Logits of every position [n, vocab], prefilled in Forward's chunks.
std::vector<float> AllLogits(const Model& m, const std::vector<int32_t>& ids, int threads) {
  ThreadPool pool(threads);
  const int n = static_cast<int>(ids.size()), V = m.config().vocab_size;
  auto cache = MakeF32Cache(m.config(), n);
  Forward fwd(m, *cache, pool);
  std::vector<float> logits(static_cast<size_t>(n) * V);
  fwd.Run(ids, 0, logits.data(), true);
  return logits;
}

// Field `key` of /proc/self/status in bytes (VmRSS, RssAnon, RssFile: "RssAnon:  1234 kB").
uint64_t StatusBytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  ADD_FAILURE() << "no " << key << " in /proc/self/status";
  return 0;
}

// Bytes of the file's 2-D tensors (the matrices).
uint64_t MatrixBytes(const std::string& path) {
  auto g = GgufFile::Open(path);
  KV_CHECK(g.ok());
  uint64_t b = 0;
  for (const TensorView& t : g->tensors()) b += t.shape.size() == 2 ? t.nbytes : 0;
  return b;
}

class PackedWeights : public ::testing::TestWithParam<const char*> {};

TEST_P(PackedWeights, LogitsBitwiseEqualDequantizeAtLoad) {
  const std::string path = Fixture(std::string("models/gguf/") + GetParam()).string();
  const auto packed = LoadOrDie(path, {});
  const auto f32 = LoadOrDie(path, {.dequantize_at_load = true});
  EXPECT_FALSE(packed->weights().mappings.empty());
  EXPECT_TRUE(f32->weights().mappings.empty());
  EXPECT_NE(packed->weights().storage_summary().find("q"), std::string::npos) << packed->weights().storage_summary();
  EXPECT_EQ(f32->weights().storage_summary(), "f32");
  // The packed matrices are the file's own bytes; the f32 copy is 4 bytes per parameter.
  const uint64_t matrix_bytes = MatrixBytes(path);
  uint64_t norms = 0;
  for (const LayerWeights& l : packed->weights().layers) norms += l.attn_norm.bytes() + l.ffn_norm.bytes();
  EXPECT_EQ(packed->weights().bytes(), matrix_bytes + norms + packed->weights().final_norm.bytes());
  EXPECT_GT(f32->weights().bytes(), 3 * matrix_bytes);

  const std::vector<int32_t> ids = DocIds(700);  // > one 512-token chunk
  const std::vector<float> want = AllLogits(*f32, ids, 2);
  const std::vector<float> got1 = AllLogits(*packed, ids, 1), got2 = AllLogits(*packed, ids, 2);
  EXPECT_EQ(std::memcmp(got1.data(), want.data(), want.size() * sizeof(float)), 0) << "1 thread";
  EXPECT_EQ(std::memcmp(got2.data(), want.data(), want.size() * sizeof(float)), 0) << "2 threads";

  // Decode (the gemv path over packed rows) equals the prefill's rows.
  ThreadPool pool(2);
  const int V = packed->config().vocab_size;
  auto cache = MakeF32Cache(packed->config(), 700);
  Forward fwd(*packed, *cache, pool);
  std::vector<float> logits(V);
  fwd.Run(std::span<const int32_t>(ids.data(), 680), 0, logits.data(), false);
  for (int p = 680; p < 700; ++p) {
    fwd.Run(std::span<const int32_t>(&ids[p], 1), p, logits.data(), false);
    ASSERT_EQ(std::memcmp(logits.data(), want.data() + static_cast<size_t>(p) * V, V * sizeof(float)), 0)
        << "position " << p;
  }
}

// Anonymous and file-backed memory this process gained while `path` was loaded with `options`
// and 8 tokens ran (touching every weight once). Freed heap is returned first (malloc_trim), so
// what earlier tests freed cannot hide an allocation.
struct Growth {
  uint64_t anon = 0, file = 0;
};
Growth LoadGrowth(const std::string& path, const WeightLoadOptions& options) {
  malloc_trim(0);
  const uint64_t anon0 = StatusBytes("RssAnon"), file0 = StatusBytes("RssFile");
  const auto m = LoadOrDie(path, options);
  AllLogits(*m, DocIds(8), 2);
  const uint64_t anon = StatusBytes("RssAnon"), file = StatusBytes("RssFile");
  return {anon > anon0 ? anon - anon0 : 0, file > file0 ? file - file0 : 0};
}

TEST_P(PackedWeights, WeightsCostTheFileNotAnonymousMemory) {
  const std::string path = Fixture(std::string("models/gguf/") + GetParam()).string();
  const uint64_t matrix_bytes = MatrixBytes(path);
  const Growth packed = LoadGrowth(path, {});
  const Growth f32 = LoadGrowth(path, {.dequantize_at_load = true});
  std::printf(
      "[packed] %s: matrices %.1f MB; load + 8 tokens: packed +%.1f MB anonymous, +%.1f MB file-backed; "
      "dequantized at load +%.1f MB anonymous\n",
      GetParam(), matrix_bytes / 1e6, packed.anon / 1e6, packed.file / 1e6, f32.anon / 1e6);
  // Dequantized at load, the matrices add 4 bytes per parameter of anonymous memory (~3.7x a q8_0
  // file, ~5x q4_k_m); packed, that copy is absent — what remains is the tokenizer, the norms, the
  // row maps, the cache and Forward's buffers for a 512-token chunk (4-16 MB here, depending on how
  // many of their pages the allocator hands over already touched) — and the mapped matrices are
  // resident file pages once touched.
  EXPECT_GT(f32.anon, packed.anon + 3 * matrix_bytes);
  EXPECT_GT(packed.file, matrix_bytes * 9 / 10);
}

INSTANTIATE_TEST_SUITE_P(BundledGguf, PackedWeights,
                         ::testing::Values("kvq-code-16m-q8_0.gguf", "kvq-code-16m-q4_k_m.gguf"), [](const auto& info) {
                           return std::string(info.param).find("q8_0") != std::string::npos ? "q8_0" : "q4_k_m";
                         });

}  // namespace
}  // namespace kvaudit
