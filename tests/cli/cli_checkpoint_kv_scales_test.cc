// A quantized checkpoint's k_scale/v_scale end to end: `info` names them (text and JSON), `score`
// with scale=ckpt quantizes with them (scales 1.0 give scale=unit's numbers, other scales others),
// and scale=ckpt on a model without them is one line and exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

using testing::RunCli;

std::string TinyModel(const std::string& tag, float k_scale, float v_scale) {
  testing::TinyLlamaShape s;
  s.layers = 2, s.hidden = 64, s.heads = 2, s.kv_heads = 2, s.head_dim = 32, s.ffn = 64, s.vocab = 64, s.ctx = 64;
  std::vector<testing::F32Tensor> scales;
  for (int l = 0; l < 2 && k_scale > 0; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    scales.push_back({p + "k_scale", {}, {k_scale}});
    scales.push_back({p + "v_scale", {}, {v_scale}});
  }
  return testing::WriteTinyLlama(testing::MakeTempDir(tag), s, {}, scales).string();
}

// The last stdout line of `score` over a fixed id file: {"tokens":n,"mean_nll":x,"ppl":y}.
std::string Score(const std::string& model, const std::string& spec, const std::string& ids) {
  const auto r = RunCli("score --model " + model + " --ids-file " + ids + " --kv " + spec);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t end = r.out.find_last_not_of('\n');
  const size_t start = r.out.rfind('\n', end);
  return r.out.substr(start == std::string::npos ? 0 : start + 1, end + 1);
}

TEST(CheckpointKvScalesCli, InfoNamesThemAndScoreQuantizesWithThem) {
  const std::string unit_scales = TinyModel("ckpt-unit", 1.0f, 1.0f);
  const auto info = RunCli("info --model " + unit_scales);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("checkpoint kv scales: model.layers.N.self_attn.k_scale / v_scale, per layer"),
            std::string::npos)
      << info.out;
  const auto json = RunCli("info --json --model " + unit_scales);
  const nlohmann::json j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["model"]["kv_scales"]["per"], "layer");
  EXPECT_EQ(j["model"]["kv_scales"]["k"], nlohmann::json({1.0, 1.0}));

  const std::string ids = (testing::MakeTempDir("ckpt-ids") / "ids.txt").string();
  {
    std::string text;
    for (int i = 0; i < 48; ++i) text += std::to_string((i * 7 + 3) % 64) + " ";
    std::ofstream(ids) << text;
  }
  const std::string fp8 = "k=fp8_e4m3,v=fp8_e4m3";
  EXPECT_EQ(Score(unit_scales, fp8 + ",scale=ckpt", ids), Score(unit_scales, fp8, ids));
  // Scales of 1/256 put this model's K/V (|x| up to a few units) beyond e4m3's 448: they saturate.
  const std::string small_scales = TinyModel("ckpt-small", 1.0f / 256, 1.0f / 256);
  EXPECT_NE(Score(small_scales, fp8 + ",scale=ckpt", ids), Score(small_scales, fp8, ids));

  const auto none =
      RunCli("score --model " + TinyModel("ckpt-none", 0, 0) + " --ids-file " + ids + " --kv " + fp8 + ",scale=ckpt");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("scale=ckpt: this checkpoint has no k_scale/v_scale tensors; hint: use scale=unit"),
            std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace kvaudit
