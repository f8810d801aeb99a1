// KVAUDIT_ISA from the command line's point of view (base/isa.h): `info` says which kernel path
// runs and which this CPU has; a forced path runs and is reported (info, results.json's machine
// block); an unknown name is one line and exit 2 before anything else happens.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/isa.h"
#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

using testing::CliResult;
using testing::RunShell;

std::string Binary() { return KVAUDIT_BINARY; }
const std::string kModel = " --model " + testing::BundledModelDir().string();

CliResult RunWithIsa(const std::string& isa, const std::string& args) {
  return RunShell("KVAUDIT_ISA=" + isa + " " + Binary() + " " + args);
}

TEST(CliKernelPath, InfoReportsTheForcedPathAndTheSupportedOnes) {
  for (Isa isa : SupportedIsas()) {
    const CliResult r = RunWithIsa(IsaName(isa), "info" + kModel + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("kernels"), IsaName(isa));
    const nlohmann::json& supported = j.at("kernels_supported");
    ASSERT_EQ(supported.size(), SupportedIsas().size());
    EXPECT_EQ(supported.front(), IsaName(BestSupportedIsa()));
    EXPECT_EQ(supported.back(), "portable");
    const CliResult text = RunWithIsa(IsaName(isa), "info" + kModel);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(std::string("kernels: ") + IsaName(isa) + " (chosen at run time, forced by KVAUDIT_ISA"),
              std::string::npos)
        << text.out;
  }
  const CliResult best = RunWithIsa("", "info" + kModel);
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(
      best.out.find(std::string("kernels: ") + IsaName(BestSupportedIsa()) + " (chosen at run time; this CPU runs "),
      std::string::npos)
      << best.out;
}

TEST(CliKernelPath, UnknownPathIsOneLineAndExit2) {
  const CliResult r = RunWithIsa("avx1024", "formats");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err,
            "kvaudit: error: KVAUDIT_ISA=avx1024: unknown kernel path; hint: use avx512, avx2 or portable, "
            "or unset it to pick the CPU's best\n");
}

// A quantized cache too, so the row codecs' kernels run (k=q4_0 through the llama.cpp emulation).
TEST(CliKernelPath, ScoreGivesTheSameNllOnEveryPath) {
  const std::string text = (testing::MakeTempDir("cli-kernel-path") / "text.txt").string();
  {
    std::ofstream out(text);
    for (int i = 0; i < 12; ++i) out << "def add_" << i << "(a, b):\n    return a + b * " << i << "\n\n";
  }
  std::string first;
  for (Isa isa : SupportedIsas()) {
    const CliResult r = RunWithIsa(
        IsaName(isa), "score" + kModel + " --data " + text + " --ctx 128 --kv 'k=q4_0,v=q8_0,engine=llama.cpp' --json");
    ASSERT_EQ(r.exit_code, 0) << IsaName(isa) << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    j.erase("run");  // provenance: timestamps and the machine block differ
    if (first.empty()) first = j.dump();
    EXPECT_EQ(j.dump(), first) << IsaName(isa);
  }
}

}  // namespace
}  // namespace kvaudit
