// Every fuzz seed (tests/fuzz/corpus) and every malformed or crash-repro file (tests/data/malformed)
// goes through both parsers as an ordinary test: a parser must accept or cleanly reject, never
// crash (run this under the asan preset). Seeds are valid for their own format; malformed files
// named gguf_* / st_* must be rejected by that parser. Regenerate: tests/fuzz/make_corpus.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

using testing::FilesIn;

void DequantizeAll(const std::vector<TensorView>& ts) {
  for (const TensorView& t : ts) {
    if (!GetDTypeInfo(t.dtype).float_convertible) continue;
    std::vector<float> out(static_cast<size_t>(t.numel()));
    const Status s = DequantizeToF32(t, out.data());
    EXPECT_TRUE(s.ok()) << s.error().message;
  }
}

void ExpectCleanError(const Error& e, const std::string& label) {
  EXPECT_EQ(e.exit_code(), 2) << e.message;
  EXPECT_EQ(e.message.rfind(label + ": ", 0), 0u) << e.message;
  EXPECT_NE(e.message.find("hint: "), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
}

// Runs both parsers; returns whether each accepted the bytes.
std::pair<bool, bool> RunBoth(const fs::path& p) {
  const std::vector<uint8_t> bytes = testing::ReadBytes(p);
  const std::string label = p.filename().string();
  auto g = GgufFile::Parse(bytes.data(), bytes.size(), label);
  if (g.ok())
    DequantizeAll(g->tensors());
  else
    ExpectCleanError(g.error(), label);
  auto st = SafetensorsFile::Parse(bytes.data(), bytes.size(), label);
  if (st.ok())
    DequantizeAll(st->tensors());
  else
    ExpectCleanError(st.error(), label);
  return {g.ok(), st.ok()};
}

TEST(IoMalformedCorpus, GgufSeedsAreValid) {
  for (const auto& p : FilesIn(testing::RepoDir() / "tests/fuzz/corpus/gguf")) {
    SCOPED_TRACE(p.string());
    EXPECT_TRUE(RunBoth(p).first);
  }
}

TEST(IoMalformedCorpus, SafetensorsSeedsAreValid) {
  for (const auto& p : FilesIn(testing::RepoDir() / "tests/fuzz/corpus/safetensors")) {
    SCOPED_TRACE(p.string());
    EXPECT_TRUE(RunBoth(p).second);
  }
}

TEST(IoMalformedCorpus, MalformedFilesAreRejectedCleanly) {
  for (const auto& p : FilesIn(testing::RepoDir() / "tests/data/malformed")) {
    SCOPED_TRACE(p.string());
    const auto [gguf_ok, st_ok] = RunBoth(p);
    const std::string name = p.filename().string();
    if (name.rfind("gguf_", 0) == 0) {
      EXPECT_FALSE(gguf_ok);
    }
    if (name.rfind("st_", 0) == 0) {
      EXPECT_FALSE(st_ok);
    }
  }
}

TEST(IoMalformedCorpus, MalformedFilesThroughOpen) {
  for (const auto& p : FilesIn(testing::RepoDir() / "tests/data/malformed")) {
    SCOPED_TRACE(p.string());
    auto g = GgufFile::Open(p.string());
    auto st = SafetensorsFile::Open(p.string());
    if (!g.ok()) ExpectCleanError(g.error(), p.string());
    if (!st.ok()) ExpectCleanError(st.error(), p.string());
  }
}

}  // namespace
}  // namespace kvaudit
