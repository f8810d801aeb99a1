// `kvaudit serve --shadow-rate 1` end to end (docs/serve.md "Shadow fidelity"): a q4_0 cache shows
// drift from its f32 shadow in every context bucket the request covered; an f32 cache shows none
// at all (KLD sums exactly 0, top-1 agreement at every position), which also checks that the
// served logits the monitor records are exactly those generation computed. --shadow-log writes
// one line per shadowed request.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "support/fixtures.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using testing::ServeProcess;

// ~40 prompt tokens + 24 generated: positions in the buckets 1-16, 17-32 and 33-64.
const std::string kPrompt =
    "import os\nimport sys\n\n\ndef read_lines(path):\n    with open(path) as f:\n        return f.read().split(";

// The value of the sample `name` (with its labels) in the exposition text; NaN when absent.
double Sample(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + name.size() + 2));
}

// /metrics once kvaudit_shadow_requests_total reaches n (the shadow runs after the answer), 30 s at most.
std::string MetricsAfterShadows(ServeProcess& s, int n) {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text = s.Get("/metrics").body;
    if (Sample(text, "kvaudit_shadow_requests_total") >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return text;
}

struct ShadowRun {
  std::string metrics;
  size_t tokens = 0;  // prompt + completion of the first request
  json first;
};

ShadowRun ServeAndShadow(const std::string& kv, const std::string& log) {
  ShadowRun run;
  auto s = ServeProcess::Start({"--kv", kv, "--ctx", "512", "--shadow-rate", "1", "--shadow-log", log});
  if (!s) return run;
  const auto r = s->Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body;
  run.first = r.json;
  run.tokens = r.json["usage"]["total_tokens"].get<size_t>();
  // A streamed one is shadowed too.
  const auto streamed =
      s->Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 8}, {"stream", true}, {"seed", 1}});
  EXPECT_EQ(streamed.status, 200) << streamed.body;
  run.metrics = MetricsAfterShadows(*s, 2);
  EXPECT_EQ(Sample(run.metrics, "kvaudit_shadow_requests_total"), 2) << run.metrics;
  return run;
}

const std::vector<std::string> kBuckets = {"1-16", "17-32", "33-64"};

TEST(CliServeShadowTest, Q4CacheDriftsInEveryBucketTheRequestCovered) {
  const auto dir = testing::MakeTempDir("serve_shadow_q4");
  const ShadowRun run = ServeAndShadow("k=q4_0,v=q4_0", (dir / "shadow.jsonl").string());
  ASSERT_GT(run.tokens, 40u) << run.first.dump();
  ASSERT_LE(run.tokens, 65u);
  for (const std::string& b : kBuckets) {
    const std::string label = "{context=\"" + b + "\"}";
    EXPECT_GT(Sample(run.metrics, "kvaudit_shadow_kld_sum" + label), 0) << b << "\n" << run.metrics;
    EXPECT_GT(Sample(run.metrics, "kvaudit_shadow_kld_count" + label), 0) << b;
    EXPECT_GE(Sample(run.metrics, "kvaudit_shadow_positions_total" + label),
              Sample(run.metrics, "kvaudit_shadow_top1_agree_total" + label))
        << b;
  }
  EXPECT_EQ(run.metrics.find("context=\"65-128\""), std::string::npos) << run.metrics;
  EXPECT_GT(Sample(run.metrics, "kvaudit_shadow_cpu_seconds_total"), 0);
  // The log: one line per shadowed request; the first is the greedy request's.
  std::ifstream in(dir / "shadow.jsonl");
  std::string line;
  std::vector<json> lines;
  while (std::getline(in, line)) lines.push_back(json::parse(line, nullptr, false));
  ASSERT_EQ(lines.size(), 2u);
  const json& first = lines[0];
  EXPECT_EQ(first["id"], run.first["id"]);
  EXPECT_EQ(first["prompt_tokens"], run.first["usage"]["prompt_tokens"]);
  EXPECT_EQ(first["completion_tokens"], run.first["usage"]["completion_tokens"]);
  ASSERT_EQ(first["buckets"].size(), 3u) << first.dump();
  EXPECT_EQ(first["buckets"][0]["context"], "1-16");
  EXPECT_EQ(first["buckets"][0]["positions"], 16);
  EXPECT_GT(first["buckets"][2]["mean_kld"].get<double>(), 0);
  EXPECT_GT(first["shadow_seconds"].get<double>(), 0);
  EXPECT_GT(first["request_seconds"].get<double>(), 0);
}

TEST(CliServeShadowTest, F32CacheIsExactlyItsShadow) {
  const auto dir = testing::MakeTempDir("serve_shadow_f32");
  const ShadowRun run = ServeAndShadow("k=f32,v=f32", (dir / "shadow.jsonl").string());
  ASSERT_GT(run.tokens, 40u);
  double positions = 0;
  for (const std::string& b : kBuckets) {
    const std::string label = "{context=\"" + b + "\"}";
    EXPECT_EQ(Sample(run.metrics, "kvaudit_shadow_kld_sum" + label), 0) << b << "\n" << run.metrics;
    EXPECT_EQ(Sample(run.metrics, "kvaudit_shadow_delta_nll_sum" + label), 0) << b;
    const double n = Sample(run.metrics, "kvaudit_shadow_positions_total" + label);
    EXPECT_GT(n, 0) << b;
    EXPECT_EQ(Sample(run.metrics, "kvaudit_shadow_top1_agree_total" + label), n) << b;
    positions += n;
  }
  // Both requests' positions ≥ 1: (tokens - 1) of the first and the streamed one's.
  EXPECT_GE(positions, static_cast<double>(run.tokens - 1));
}

}  // namespace
}  // namespace kvaudit
