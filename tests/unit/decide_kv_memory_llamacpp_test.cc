// kvaudit's llama.cpp memory model against the KV cache sizes llama.cpp itself printed for the
// attention shapes of gpt-oss-20b, Gemma-3-12B and Qwen3-30B-A3B (tests/data/llamacpp_kv_buffers.tsv,
// written by scripts/llamacpp_kv_buffers.sh; llama.cpp is not needed here). Every row is one of
// llama.cpp's caches (non-SWA, SWA, or the only one): its cells and layers must equal kvaudit's for
// that kind of layer, and its K, V and buffer MiB kvaudit's bytes printed as llama.cpp prints them
// (support/llamacpp_kv_buffers.h). The tiny goldens' rows: tests/golden/decide_kv_memory_golden_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "decide_test_util.h"
#include "support/llamacpp_kv_buffers.h"

namespace kvaudit {
namespace {

ModelConfig ConfigOf(const std::string& model) {
  if (model == "gpt-oss-20b") return testing::GptOss20B();
  if (model == "gemma-3-12b") return testing::Gemma3_12B();
  EXPECT_EQ(model, "qwen3-30b-a3b");
  return testing::Qwen3_30B_A3B();
}

TEST(DecideKvMemoryLlamaCppTest, EveryCacheLlamaCppPrintedHasKvauditsCellsAndBytes) {
  std::map<std::string, int> seen;  // model and --swa-full -> rows
  int rows = 0, exact_bytes = 0;
  for (const testing::KvBufferRow& r : testing::ReadKvBufferRows()) {
    if (r.model.rfind("golden-", 0) == 0) continue;
    exact_bytes += testing::ExpectKvBufferRow(r, ConfigOf(r.model)) ? 1 : 0;
    ++seen[r.model + (r.swa_full ? " --swa-full" : "")], ++rows;
  }
  EXPECT_GE(rows, 60) << "regenerate tests/data/llamacpp_kv_buffers.tsv with scripts/llamacpp_kv_buffers.sh";
  for (const char* key :
       {"gpt-oss-20b", "gpt-oss-20b --swa-full", "gemma-3-12b", "gemma-3-12b --swa-full", "qwen3-30b-a3b"}) {
    EXPECT_GT(seen[key], 0) << key;
  }
  EXPECT_GT(exact_bytes, 0);
}

}  // namespace
}  // namespace kvaudit
