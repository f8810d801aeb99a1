// The run-time kernel path (base/isa.h): names, CPU detection, KVAUDIT_ISA, forcing a path, the
// same bits from every path's kernels, and that no source still chooses kernels at compile time.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/isa.h"
#include "ops/activation.h"
#include "ops/dot.h"
#include "base/simd.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit {
namespace {

// Sets KVAUDIT_ISA for one scope, restoring the previous value.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) {
    if (const char* old = std::getenv("KVAUDIT_ISA")) saved_ = old, had_ = true;
    setenv("KVAUDIT_ISA", value, 1);
  }
  ~ScopedIsaEnv() { had_ ? setenv("KVAUDIT_ISA", saved_.c_str(), 1) : unsetenv("KVAUDIT_ISA"); }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(BaseIsa, NamesRoundTrip) {
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) EXPECT_EQ(ParseIsa(IsaName(isa)), isa);
  EXPECT_FALSE(ParseIsa("AVX2").has_value());
  EXPECT_FALSE(ParseIsa("sse4").has_value());
  EXPECT_FALSE(ParseIsa("").has_value());
}

TEST(BaseIsa, SupportedPathsAscendFromPortableToTheBest) {
  const std::vector<Isa> paths = SupportedIsas();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), Isa::kPortable);
  EXPECT_EQ(paths.back(), BestSupportedIsa());
  for (size_t i = 1; i < paths.size(); ++i) EXPECT_LT(paths[i - 1], paths[i]);
  EXPECT_TRUE(MissingFeatures(Isa::kPortable).empty());
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(IsaSupported(isa), MissingFeatures(isa).empty()) << IsaName(isa);
  }
  if (IsaSupported(Isa::kAvx512)) {  // a path needs everything the one below needs
    EXPECT_TRUE(IsaSupported(Isa::kAvx2));
  }
}

TEST(BaseIsa, EnvironmentPicksOrRejectsAPath) {
  {
    ScopedIsaEnv env("");
    auto isa = IsaFromEnvironment();
    ASSERT_TRUE(isa.ok());
    EXPECT_EQ(*isa, BestSupportedIsa());
  }
  for (Isa want : SupportedIsas()) {
    ScopedIsaEnv env(IsaName(want));
    auto isa = IsaFromEnvironment();
    ASSERT_TRUE(isa.ok()) << IsaName(want);
    EXPECT_EQ(*isa, want);
  }
  {
    ScopedIsaEnv env("avx-512");
    auto isa = IsaFromEnvironment();
    ASSERT_FALSE(isa.ok());
    EXPECT_EQ(isa.error().exit_code(), 2);
    EXPECT_NE(isa.error().message.find("KVAUDIT_ISA=avx-512: unknown kernel path"), std::string::npos);
    EXPECT_NE(isa.error().message.find("hint: use avx512, avx2 or portable"), std::string::npos);
    EXPECT_EQ(isa.error().message.find('\n'), std::string::npos);
  }
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {  // a path this CPU lacks (none on an AVX-512 machine)
    if (IsaSupported(isa)) continue;
    ScopedIsaEnv env(IsaName(isa));
    auto got = IsaFromEnvironment();
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.error().message.find("this CPU lacks " + MissingFeatures(isa)), std::string::npos);
  }
}

TEST(BaseIsa, ForcingAPathSwitchesTheKernels) {
  const Isa saved = ActiveIsa();
  for (Isa isa : SupportedIsas()) {
    ForceIsaForTesting(isa);
    EXPECT_EQ(ActiveIsa(), isa);
    EXPECT_EQ(Avx512Kernels(), isa == Isa::kAvx512);
    EXPECT_EQ(Avx2MatmulKernels(), isa == Isa::kAvx2);
    EXPECT_EQ(Avx2LlamaCppKernels(), isa >= Isa::kAvx2);
  }
  ForceIsaForTesting(saved);
  EXPECT_EQ(ActiveIsa(), saved);
}

// The canonical order does not depend on the vector width: every path's dot and exp give the bits
// of the portable path (the model-level check is tests/model/model_isa_paths_test.cc).
TEST(BaseIsa, EveryPathGivesThePortableBits) {
  const std::vector<float> a = testing::RandomVector(1000, 1), b = testing::RandomVector(1000, 2);
  auto run = [&] {
    std::vector<float> out;
    for (int64_t n : {1, 15, 16, 17, 100, 1000}) out.push_back(DotF32(a.data(), b.data(), n));
    std::vector<float> e(1000);
    Exp(a.data(), e.data(), 1000);
    out.insert(out.end(), e.begin(), e.end());
    return out;
  };
  const Isa saved = ActiveIsa();
  ForceIsaForTesting(Isa::kPortable);
  const std::vector<float> portable = run();
  ForEachSupportedIsa([&](Isa isa) {
    const std::vector<float> got = run();
    EXPECT_EQ(std::memcmp(got.data(), portable.data(), got.size() * sizeof(float)), 0) << IsaName(isa);
  });
  ForceIsaForTesting(saved);
}

// Kernels are chosen at run time only: a compile-time ISA test (`__AVX512F__`, `__AVX2__`, ...)
// anywhere in src/ would pick code for the build machine, not the user's CPU. Only
// base/isa_passes.h names them (in its comment).
TEST(BaseIsa, NoSourceChoosesKernelsAtCompileTime) {
  const std::filesystem::path src = std::filesystem::path(KVAUDIT_SOURCE_DIR) / "src";
  ASSERT_TRUE(std::filesystem::is_directory(src)) << src;
  const std::regex isa_macro(R"(__(AVX[A-Z0-9_]*|FMA|F16C|BMI2?|SSSE3|SSE3|SSE4_[12])__)");
  int files = 0;
  std::vector<std::string> offenders;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    ++files;
    if (entry.path().filename() == "isa_passes.h") continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int no = 1; std::getline(in, line); ++no) {
      if (std::regex_search(line, isa_macro))
        offenders.push_back(entry.path().string() + ":" + std::to_string(no) + ": " + line);
    }
  }
  EXPECT_GT(files, 100);
  std::ostringstream all;
  for (const std::string& o : offenders) all << o << "\n";
  EXPECT_TRUE(offenders.empty()) << all.str();
}

}  // namespace
}  // namespace kvaudit
