// A server's own report of its cache (endpoint/server_report.h): vLLM's cache_config_info gauge
// and kvaudit serve's, read out of a whole exposition text; anything else is no report.
#include "endpoint/server_report.h"

#include <gtest/gtest.h>

namespace kvaudit {
namespace {

TEST(ServerReportTest, ReadsVllmsCacheConfigInfo) {
  // The shape vLLM writes (vllm/v1/metrics/loggers.py log_metrics_info: one label per CacheConfig field).
  const std::string text =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"
      "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
      "# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"fp8\",calculate_kv_scales=\"False\","
      "enable_prefix_caching=\"True\",num_gpu_blocks=\"583\"} 1.0\n";
  const auto r = ParseCacheReport(text);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->metric, "vllm:cache_config_info");
  EXPECT_EQ(r->cache, "fp8");
  EXPECT_EQ(r->labels.at("calculate_kv_scales"), "False");
  EXPECT_EQ(r->labels.size(), 5u);
}

TEST(ServerReportTest, ReadsKvauditServesAndNothingElse) {
  const auto r = ParseCacheReport("kvaudit_queue_depth 0\nkvaudit_cache_config_info{kv=\"k=q8_0,v=q4_0\"} 1\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cache, "k=q8_0,v=q4_0");
  const auto escaped = ParseCacheReport("kvaudit_cache_config_info{kv=\"a\\\"b\\\\c\"} 1\n");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->cache, "a\"b\\c");
  EXPECT_FALSE(ParseCacheReport("llamacpp:prompt_tokens_total 12\n"));                // llama-server: no cache type
  EXPECT_FALSE(ParseCacheReport("vllm:cache_config_info{block_size=\"16\"} 1.0\n"));  // no cache_dtype
  EXPECT_FALSE(ParseCacheReport("vllm:cache_config_info{cache_dtype=\"fp8} 1.0\n"));  // unclosed quote
  EXPECT_FALSE(ParseCacheReport(""));
}

}  // namespace
}  // namespace kvaudit
