// --target (src/decide/targets/measure_target.h): names, the default, what a spec becomes under a
// target, and the line that says what was measured.
#include <gtest/gtest.h>

#include "decide/sensitivity/job_target.h"
#include "decide/targets/measure_target.h"
#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::Small64;

CacheConfig Spec(const std::string& s) {
  auto c = CacheConfig::Parse(s);
  EXPECT_TRUE(c.ok()) << s;
  return c.ok() ? *c : CacheConfig::F32();
}

std::string Under(const std::string& target, const std::string& spec) {
  auto t = TargetNamed(target);
  EXPECT_TRUE(t.ok()) << target;
  auto c = UnderTarget(**t, Spec(spec), "--kv");
  return c.ok() ? c->spec() : "error: " + c.error().message;
}

TEST(MeasureTargetTest, NamesAreTheOnesUsersKnowCaseInsensitiveWithDidYouMean) {
  for (const char* name : {"llama.cpp", "ollama", "vllm", "sglang", "tensorrt-llm", "transformers", "native"}) {
    auto t = TargetNamed(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ((*t)->name, name);
  }
  EXPECT_EQ((*TargetNamed("vLLM"))->name, "vllm");
  EXPECT_EQ((*TargetNamed("ollama"))->attention, AttentionMode::kLlamaCpp);  // ollama runs llama-server
  auto bad = TargetNamed("llamacpp");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code(), 2);
  EXPECT_NE(bad.error().message.find("--target llamacpp: not a target; hint: did you mean llama.cpp?"),
            std::string::npos)
      << bad.error().message;
  auto far = TargetNamed("tgi");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().message.find("did you mean"), std::string::npos) << far.error().message;
  EXPECT_NE(far.error().message.find("targets: llama.cpp, ollama, vllm"), std::string::npos);
}

TEST(MeasureTargetTest, DefaultIsLlamaCppOnlyWhenEveryConfigurationIsALlamaCppCacheType) {
  EXPECT_EQ(DefaultTarget({Spec("k=q8_0,v=q4_0"), Spec("k=q4_0,v=q4_0"), Spec("k=iq4_nl,v=q5_1")}).name, "llama.cpp");
  EXPECT_EQ(DefaultTarget({Spec("k=q4_0,v=q4_0,rot=0"), Spec("k=q4_0,v=q4_0;layers=0-1:k=f16,v=f16")}).name,
            "llama.cpp");
  EXPECT_EQ(DefaultTarget({Spec("k=q8_0,v=q4_0"), Spec("k=kivi2,v=kivi2")}).name, "native");
  EXPECT_EQ(DefaultTarget({Spec("k=fp8_e4m3,v=fp8_e4m3")}).name, "native");
  EXPECT_EQ(DefaultTarget({Spec("k=q4_0,v=q4_0,sink=4")}).name, "native");  // llama.cpp has no sinks
  EXPECT_EQ(DefaultTarget({Spec("k=q4_0,v=q4_0,engine=native")}).name, "native");
}

TEST(MeasureTargetTest, APlainSpecTakesTheTargetsEngineAndAWrittenOneIsKept) {
  EXPECT_EQ(Under("llama.cpp", "k=q8_0,v=q4_0"), "k=q8_0,v=q4_0,engine=llama.cpp");
  EXPECT_EQ(Under("ollama", "k=q8_0,v=q8_0"), "k=q8_0,v=q8_0,engine=llama.cpp");
  EXPECT_EQ(Under("llama.cpp", "k=q8_0,v=q4_0,rot=0"), "k=q8_0,v=q4_0,rot=0,engine=llama.cpp");
  EXPECT_EQ(Under("llama.cpp", "k=q8_0,v=q4_0,engine=native"), "k=q8_0,v=q4_0,engine=native");
  EXPECT_EQ(Under("llama.cpp", "k=q4_0,v=q4_0;layers=0-1:k=f16,v=f16"),
            "k=q4_0,v=q4_0,engine=llama.cpp;layers=0-1:k=f16,v=f16");
  EXPECT_EQ(Under("native", "k=q8_0,v=q4_0"), "k=q8_0,v=q4_0");
  EXPECT_EQ(Under("vllm", "k=fp8_e4m3,v=fp8_e4m3"), "k=fp8_e4m3,v=fp8_e4m3");
  // The spec under the target parses back to the same configuration (one printer, one parser).
  const CacheConfig c = Spec(Under("llama.cpp", "k=q8_0,v=q4_0"));
  EXPECT_EQ(c.attention(), AttentionMode::kLlamaCpp);
  EXPECT_EQ(c.ForHead(0, 0).rot, RotationMode::kAuto);
}

TEST(MeasureTargetTest, AFormatTheTargetLacksIsOneLineNamingItsFormats) {
  EXPECT_EQ(Under("vllm", "k=q4_0,v=q4_0"),
            "error: --kv \"k=q4_0,v=q4_0\": q4_0 is not a cache format of --target vllm (f32, f16, bf16, fp8_e4m3, "
            "fp8_e5m2, nvfp4, nvfp4_4over6, int8_per_token_head, fp8_per_token_head, turboquant_mse4, turboquant_mse3, "
            "turboquant_uniform4, turboquant_uniform3); hint: use one of those, or "
            "--target native to measure kvaudit's own formats");
  EXPECT_NE(Under("ollama", "k=q5_0,v=q5_0").find("q5_0 is not a cache format of --target ollama (f16, q8_0, q4_0)"),
            std::string::npos);
  EXPECT_NE(Under("llama.cpp", "k=kivi2,v=kivi2").find("kivi2 is not a cache format of --target llama.cpp"),
            std::string::npos);
  EXPECT_NE(Under("llama.cpp", "k=q4_0,v=q4_0;layers=3:k=int8").find("int8 is not a cache format"), std::string::npos);
  EXPECT_EQ(Under("native", "k=kivi2,v=kivi2"), "k=kivi2,v=kivi2");
}

// recommend's candidates without --formats follow the target: an engine without q8_0 gets its own
// quantized formats instead of an error about a flag the user never gave.
TEST(MeasureTargetTest, DefaultCandidatesAreTheTargetsOwn) {
  const std::vector<std::string> llamacpp = {"q8_0,q4_0"};
  EXPECT_EQ(DefaultCandidateFormats(""), llamacpp);
  EXPECT_EQ(DefaultCandidateFormats("llama.cpp"), llamacpp);
  EXPECT_EQ(DefaultCandidateFormats("ollama"), llamacpp);
  EXPECT_EQ(DefaultCandidateFormats("native"), llamacpp);
  EXPECT_EQ(DefaultCandidateFormats("vllm"),
            std::vector<std::string>{"fp8_e4m3,fp8_e5m2,nvfp4,nvfp4_4over6,int8_per_token_head,fp8_per_token_head,"
                                     "turboquant_mse4,turboquant_mse3,turboquant_uniform4,turboquant_uniform3"});
  EXPECT_EQ(DefaultCandidateFormats("SGLang"), std::vector<std::string>{"fp8_e4m3,fp8_e5m2,nvfp4,fp4_mx_block16"});
  const auto vllm = CandidateConfigs({}, "vllm");
  ASSERT_TRUE(vllm.ok()) << vllm.error().message;
  ASSERT_EQ(vllm->size(), 10u);
  EXPECT_EQ((*vllm)[0].spec(), "k=fp8_e4m3,v=fp8_e4m3");
  // With a calibration, fp8 and nvfp4 also come with checkpoint scales: fp8 without scales stays
  // a configuration of its own, judged beside the calibrated one.
  const auto calib = CandidateConfigs({}, "vllm", {.calib = true});
  ASSERT_TRUE(calib.ok()) << calib.error().message;
  std::vector<std::string> specs;
  for (const CacheConfig& c : *calib) specs.push_back(c.spec());
  EXPECT_EQ(specs, (std::vector<std::string>{
                       "k=fp8_e4m3,v=fp8_e4m3", "k=fp8_e4m3,v=fp8_e4m3,scale=calib", "k=fp8_e5m2,v=fp8_e5m2",
                       "k=nvfp4,v=nvfp4", "k=nvfp4,v=nvfp4,scale=calib", "k=nvfp4_4over6,v=nvfp4_4over6",
                       "k=nvfp4_4over6,v=nvfp4_4over6,scale=calib", "k=int8_per_token_head,v=int8_per_token_head",
                       "k=fp8_per_token_head,v=fp8_per_token_head", "k=turboquant_mse4,v=turboquant_mse4",
                       "k=turboquant_mse3,v=turboquant_mse3", "k=turboquant_uniform4,v=turboquant_uniform4",
                       "k=turboquant_uniform3,v=turboquant_uniform3"}));
  // The checkpoint's own scales likewise; per-KV-head ones only for fp8 (nvfp4 has one per layer).
  EXPECT_EQ(DefaultCandidateFormats("sglang", {.ckpt = true}),
            std::vector<std::string>{"fp8_e4m3,fp8_e4m3,scale=ckpt,fp8_e5m2,nvfp4,nvfp4,scale=ckpt,fp4_mx_block16"});
  EXPECT_EQ(DefaultCandidateFormats("sglang", {.ckpt = true, .ckpt_per_head = true}),
            std::vector<std::string>{"fp8_e4m3,fp8_e4m3,scale=ckpt,scale_by=head,fp8_e5m2,nvfp4,fp4_mx_block16"});
  CheckpointKvScales per_head;
  per_head.per_layer = 2;
  const ScaleSources s = ScaleSourcesOf(false, per_head);
  EXPECT_TRUE(s.ckpt && s.ckpt_per_head && !s.calib);
  EXPECT_FALSE(ScaleSourcesOf(true, CheckpointKvScales{}).ckpt);
}

TEST(MeasureTargetTest, TheMeasuredLineSaysWhatTheEngineRuns) {
  const ModelConfig m = Small64();  // head_dim 64: llama.cpp rotates quantized K and V
  const Target& llama = LlamaCppTarget();
  EXPECT_EQ(
      MeasuredLine(llama, Spec("k=q8_0,v=q4_0,engine=llama.cpp"), m, 256)
          .rfind("measured as llama-server runs it: -ctk q8_0 -ctv q4_0 -fa on, rotation on (engine=llama.cpp: ", 0),
      0u);
  EXPECT_NE(MeasuredLine(llama, Spec("k=q8_0,v=q4_0,rot=0,engine=llama.cpp"), m, 256)
                .find("-ctk q8_0 -ctv q4_0 -fa on, rotation off (LLAMA_ATTN_ROT_DISABLE=1)"),
            std::string::npos);
  EXPECT_NE(MeasuredLine(llama, Spec("k=f16,v=f16,engine=llama.cpp"), m, 256)
                .find("-ctk f16 -ctv f16, no rotation (full-precision cache)"),
            std::string::npos);
  EXPECT_NE(MeasuredLine(**TargetNamed("ollama"), Spec("k=q8_0,v=q8_0,engine=llama.cpp"), m, 256)
                .find("measured as ollama runs it: OLLAMA_KV_CACHE_TYPE=q8_0"),
            std::string::npos);
  // Not one llama.cpp setting: said plainly.
  EXPECT_NE(MeasuredLine(llama, Spec("k=q4_0,v=q4_0,engine=llama.cpp;layers=0-1:k=f16,v=f16"), m, 256)
                .find("llama.cpp does not run it as measured: llama.cpp has one K type and one V type for all layers"),
            std::string::npos);
  EXPECT_EQ(MeasuredLine(NativeTarget(), Spec("k=q8_0,v=q4_0"), m, 256),
            "measured with kvaudit's native reference engine, no engine emulated (--target native): k=q8_0,v=q4_0");
  const std::string vllm = MeasuredLine(**TargetNamed("vllm"), Spec("k=fp8_e4m3,v=fp8_e4m3"), m, 256);
  EXPECT_NE(vllm.find("measured as vLLM stores it: --kv-cache-dtype fp8_e4m3"), std::string::npos) << vllm;
  EXPECT_NE(vllm.find("the engine's kernels are not emulated"), std::string::npos) << vllm;
}

}  // namespace
}  // namespace kvaudit
