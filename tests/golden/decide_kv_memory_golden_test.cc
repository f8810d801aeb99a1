// The tiny llama.cpp goldens' GGUFs (../shared/golden/llamacpp: gemma2, gemma3, gpt-oss), read by
// kvaudit's own loader, against the KV caches llama.cpp printed for those very files
// (tests/data/llamacpp_kv_buffers.tsv, f16: their head_dim 16 takes no 32-element blocks): the
// sliding layers kvaudit reads from the file are the ones llama.cpp sizes for the window.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "io/gguf.h"
#include "support/fixtures.h"
#include "support/llamacpp_kv_buffers.h"

namespace kvaudit {
namespace {

TEST(DecideKvMemoryGoldenTest, TheGoldensCachesAreLlamaCppsOwn) {
  std::set<std::string> seen;
  for (const testing::KvBufferRow& r : testing::ReadKvBufferRows()) {
    if (r.model.rfind("golden-", 0) != 0) continue;
    const std::string folder = r.model.substr(7);
    auto gguf = GgufFile::Open(testing::Fixture("golden/llamacpp/" + folder + "/model.gguf").string());
    ASSERT_TRUE(gguf.ok()) << gguf.error().message;
    auto config = ConfigFromGguf(*gguf);
    ASSERT_TRUE(config.ok()) << config.error().message;
    testing::ExpectKvBufferRow(r, *config);
    seen.insert(folder + (r.swa_full ? " --swa-full" : ""));
  }
  EXPECT_EQ(seen.size(), 6u) << "gemma2, gemma3, gpt-oss with and without --swa-full";
}

}  // namespace
}  // namespace kvaudit
