// `kvaudit eval` end to end on the bundled model (short windows to stay fast): identical
// configurations, resume after a crash, refusal to mix runs, and bad flags (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kModel = "--model " + testing::BundledModelDir().string() + " --data " +
                           (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " --threads 2 ";

nlohmann::json Results(const fs::path& dir) {
  return nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
}

TEST(EvalCliTest, IdenticalConfigurationGivesZeroKldAndStableKeys) {
  const fs::path out = testing::MakeTempDir("eval-same");
  const auto r = RunCli("eval " + kModel + "--kv k=f32,v=f32 --ctx 256 --windows 2 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);  // no progress bar into a pipe
  const nlohmann::json j = Results(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["ctx"], 256);
  EXPECT_EQ(j["score_from"], 0);
  EXPECT_TRUE(j["model"].is_string());
  EXPECT_EQ(j["kind"], "eval");
  // model_hash is the resume fingerprint's model hash (what kvaudit gate compares).
  const std::string journal = ReadFile((out / "progress.jsonl").string());
  const nlohmann::json header = nlohmann::json::parse(journal.substr(0, journal.find('\n')));
  EXPECT_EQ(j["model_hash"], header["fingerprint"]["model"]);
  EXPECT_EQ(j["model_hash"].get<std::string>().size(), 16u);
  ASSERT_EQ(j["configs"].size(), 1u);
  const nlohmann::json& c = j["configs"][0];
  EXPECT_EQ(c["spec"], "k=f32,v=f32");
  EXPECT_EQ(c["bytes_per_token"], 8192);  // 8 layers × 2 × 2 KV heads × 64 × 4 bytes
  const nlohmann::json& o = c["overall"];
  EXPECT_EQ(o["tokens"], 2 * 255);
  EXPECT_EQ(o["kld_mean"], 0.0);
  EXPECT_EQ(o["kld_ci95"], nlohmann::json::array({0.0, 0.0}));
  EXPECT_EQ(o["kld_p99"], 0.0);
  EXPECT_EQ(o["top1_agree"], 1.0);
  EXPECT_EQ(o["ppl_ratio"], 1.0);
  EXPECT_EQ(o["delta_p_mean"], 0.0);
  ASSERT_EQ(c["buckets"].size(), 5u);  // 1–16, 17–32, 33–64, 65–128, 129–256
  EXPECT_EQ(c["buckets"][1]["from"], 17);
  EXPECT_EQ(c["buckets"][1]["to"], 32);
  EXPECT_EQ(c["buckets"][4]["tokens"], 2 * 127);  // context lengths 129..255
  EXPECT_EQ(c["buckets"][4]["measured_to"], 255);
  EXPECT_EQ(c["buckets"][1]["measured_to"], 32);
  for (const auto& b : c["buckets"]) {
    for (const char* key : {"from", "to", "tokens", "kld_mean", "kld_ci95", "top1_agree", "ppl_ratio"}) {
      EXPECT_TRUE(b.contains(key)) << key;
    }
  }
  EXPECT_EQ(c["safe_up_to"], 255);  // KLD 0 everywhere: safe at every measured context (the longest is 255)
  EXPECT_EQ(c["safe_up_to_is_all_measured"], true);
  EXPECT_FALSE(c.contains("safe_context"));
  // Attention diagnosis: one row per (layer, KV head) with the stable keys; an identical
  // configuration reads exactly what the baseline reads.
  ASSERT_EQ(c["attention"].size(), 16u);
  for (const auto& a : c["attention"]) {
    for (const char* key : {"layer", "kv_head", "k_rel_err", "v_rel_err", "attn_kl", "out_rel_err"}) {
      ASSERT_TRUE(a.contains(key)) << key;
    }
    EXPECT_EQ(a["k_rel_err"], 0.0);
    EXPECT_EQ(a["v_rel_err"], 0.0);
    EXPECT_EQ(a["attn_kl"], 0.0);
    EXPECT_EQ(a["out_rel_err"], 0.0);  // decode-style shadow vs prefill baseline: batch-invariant, bitwise equal
    EXPECT_GT(a["sink_mass"].get<double>(), 0.0);
  }
  EXPECT_EQ(c["attention"][3]["layer"], 1);
  EXPECT_EQ(c["attention"][3]["kv_head"], 1);
  EXPECT_EQ(c["attention_worst"].size(), 5u);
  fs::remove_all(out);
}

TEST(EvalCliTest, ResumeAfterCrashGivesIdenticalResultsAndMismatchIsRefused) {
  const fs::path a = testing::MakeTempDir("eval-full"), b = testing::MakeTempDir("eval-crash");
  const std::string args = "eval " + kModel + "--kv k=q4_0,v=q4_0 --ctx 256 --windows 3 --score-from 128 ";
  const auto full = RunCli(args + "--out " + a.string() + " --jsonl " + (a / "pos.jsonl").string());
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // The crash: the header, window 0, and half of window 1's line (killed mid-write).
  std::ifstream in(a / "progress.jsonl");
  std::string header, w0, w1;
  std::getline(in, header), std::getline(in, w0), std::getline(in, w1);
  ASSERT_FALSE(w1.empty());
  { std::ofstream(b / "progress.jsonl") << header << '\n' << w0 << '\n' << w1.substr(0, w1.size() / 2); }
  const auto resumed = RunCli(args + "--out " + b.string() + " --jsonl " + (b / "pos.jsonl").string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  nlohmann::json ja = Results(a), jb = Results(b);
  EXPECT_EQ(jb["run"]["windows_resumed"], 1);
  ja.erase("run"), jb.erase("run");  // wall time and peak RSS are the only run-dependent keys
  EXPECT_EQ(ja.dump(), jb.dump());
  EXPECT_GT(ja["configs"][0]["overall"]["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(ja["configs"][0]["overall"]["tokens"], 3 * 127);  // positions 128..254 of each window
  EXPECT_EQ(ReadFile((a / "pos.jsonl").string()), ReadFile((b / "pos.jsonl").string()));

  // Another configuration into the same directory: refused, the file untouched; --restart runs.
  const std::string before = ReadFile((a / "progress.jsonl").string());
  const std::string other =
      "eval " + kModel + "--kv k=q8_0,v=q8_0 --ctx 256 --windows 3 --score-from 128 --out " + a.string();
  const auto refused = RunCli(other);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("configs"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--restart"), std::string::npos) << refused.err;
  EXPECT_EQ(ReadFile((a / "progress.jsonl").string()), before);
  const auto restarted = RunCli(other + " --restart");
  EXPECT_EQ(restarted.exit_code, 0) << restarted.err;
  fs::remove_all(a), fs::remove_all(b);
}

// Fidelity orders the formats by their bits, at the logits and inside every layer: f16 < q8_0 <
// q4_0 in mean KLD; per (layer, KV head) the reconstruction and attention-output errors order the
// same way; Hadamard rotation lowers the 4-bit key error (outlier channels spread over the row).
TEST(EvalCliTest, FormatsOrderByBitsAtTheLogitsAndInEveryLayer) {
  const fs::path out = testing::MakeTempDir("eval-order");
  const auto r = RunCli("eval " + kModel +
                        "--kv k=f16,v=f16 --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --kv k=q4_0,v=q4_0,rot=1 --ctx 512 "
                        "--windows 2 --attn-samples 16 --out " +
                        out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Results(out);
  ASSERT_EQ(j["configs"].size(), 4u);
  const nlohmann::json &f16 = j["configs"][0], &q8 = j["configs"][1], &q4 = j["configs"][2], &q4r = j["configs"][3];
  const double k16 = f16["overall"]["kld_mean"], k8 = q8["overall"]["kld_mean"], k4 = q4["overall"]["kld_mean"];
  std::printf("[eval] mean KLD f16 %.3g  q8_0 %.3g  q4_0 %.3g\n", k16, k8, k4);
  EXPECT_GT(k16, 0.0);
  EXPECT_LT(k16, k8);
  EXPECT_LT(k8, k4);
  double k_rot = 0, k_plain = 0;
  for (size_t i = 0; i < 16; ++i) {
    const auto &a16 = f16["attention"][i], &a8 = q8["attention"][i], &a4 = q4["attention"][i];
    for (const char* key : {"k_rel_err", "v_rel_err", "out_rel_err"}) {
      EXPECT_LT(a16[key].get<double>(), a8[key].get<double>()) << key << " layer " << a8["layer"];
      EXPECT_LT(a8[key].get<double>(), a4[key].get<double>()) << key << " layer " << a8["layer"];
    }
    // Known bands on this model: q8_0 keys ~0.6-0.8%, q4_0 keys ~10-13%.
    EXPECT_LT(a8["k_rel_err"].get<double>(), 0.02);
    EXPECT_GT(a4["k_rel_err"].get<double>(), 0.05);
    EXPECT_LT(a4["k_rel_err"].get<double>(), 0.25);
    k_plain += a4["k_rel_err"].get<double>(), k_rot += q4r["attention"][i]["k_rel_err"].get<double>();
  }
  EXPECT_LT(k_rot, 0.9 * k_plain);
  // The memory column is the share of the f16 cache (4096 bytes/token here), as audit prints it.
  EXPECT_NE(r.out.find("bytes/token    of f16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("k=q8_0,v=q8_0                        2176       53% "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("k=q4_0,v=q4_0                        1152       28% "), std::string::npos) << r.out;
  fs::remove_all(out);
}

// --json prints results.json on stdout (and nothing else there); the footer goes to stderr.
TEST(EvalCliTest, JsonPrintsTheResultsDocument) {
  const fs::path out = testing::MakeTempDir("eval-json");
  const auto r = RunCli("eval " + kModel +
                        "--kv k=q8_0,v=q8_0 --ctx 128 --windows 1 --attn-samples 0 --bootstrap-seed 3 --json --out " +
                        out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j, Results(out));
  EXPECT_EQ(j["settings"]["bootstrap_seed"], 3);
  EXPECT_NE(r.err.find("windows resumed"), std::string::npos) << r.err;
  fs::remove_all(out);
}

// --first-window F: the run sees the data's windows from F on, the same tokens a longer run sees
// there (so the same KLD), says so in results.json, and a resume with another start is refused.
TEST(EvalCliTest, FirstWindowSelectsLaterWindowsAndIsPartOfTheFingerprint) {
  const fs::path two = testing::MakeTempDir("eval-two"), one = testing::MakeTempDir("eval-from1");
  const std::string args = "eval " + kModel + "--kv k=q4_0,v=q4_0 --ctx 128 --attn-samples 0 ";
  const auto r2 = RunCli(args + "--windows 2 --jsonl " + (two / "pos.jsonl").string() + " --out " + two.string());
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const auto r1 = RunCli(args + "--windows 1 --first-window 1 --out " + one.string());
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const nlohmann::json j = Results(one);
  EXPECT_EQ(j["data"]["first_window"], 1);
  EXPECT_EQ(j["data"]["windows"], 1);
  EXPECT_EQ(Results(two)["data"]["first_window"], 0);
  double sum = 0;
  int n = 0;
  std::ifstream lines(two / "pos.jsonl");
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json p = nlohmann::json::parse(line);
    if (p["window"] == 1) sum += p["kld"][0].get<double>(), ++n;
  }
  ASSERT_EQ(n, 127);
  EXPECT_EQ(j["configs"][0]["overall"]["tokens"], n);
  EXPECT_NEAR(j["configs"][0]["overall"]["kld_mean"].get<double>(), sum / n, 1e-12 * (sum / n));
  const auto moved = RunCli(args + "--windows 1 --first-window 2 --out " + one.string());
  EXPECT_EQ(moved.exit_code, 2);
  EXPECT_NE(moved.err.find("first_window"), std::string::npos) << moved.err;
  const auto past = RunCli(args + "--first-window 100000 --out " + one.string());
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.err.find("--first-window 100000 is past the data's"), std::string::npos) << past.err;
  fs::remove_all(two), fs::remove_all(one);
}

TEST(EvalCliTest, BadFlagsExitTwoWithHint) {
  const fs::path out = testing::MakeTempDir("eval-bad");
  const std::string base = "eval " + kModel + "--ctx 256 --windows 1 --out " + out.string() + " ";
  for (const std::string& flags :
       {std::string("--kv k=q4_0,v=q4_0 --score-from 255"), std::string("--kv k=q4_0,v=q4_0 --buckets 64,16"),
        std::string("--kv k=q4_0,v=q4_0 --kv k=q4_0,v=q4_0"), std::string("--kv k=q9_9"), std::string(""),
        std::string("--kv k=q4_0,v=q4_0 --seed 3"),  // eval's seed is --bootstrap-seed
        std::string("--kv k=q4_0,v=q4_0 --kv-calib /nonexistent/calib.txt")}) {
    const auto r = RunCli(base + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find("hint"), std::string::npos) << flags << ": " << r.err;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kvaudit
