// Engine settings of kvaudit specs (src/decide/targets/target_settings.h, docs/deployment.md): which
// engine runs which spec exactly, with which flags, and what it offers instead.
#include <gtest/gtest.h>

#include <algorithm>

#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::Dump;
using testing::Has;
using testing::SettingsOf;
using E = DeployTarget;

void ExpectExact(const TargetSettings& s, const std::vector<std::string>& flags) {
  EXPECT_TRUE(s.exact) << Dump(s);
  EXPECT_TRUE(s.why_not.empty()) << Dump(s);
  EXPECT_TRUE(s.approximations.empty()) << Dump(s);
  EXPECT_EQ(s.flags, flags) << Dump(s);
}

void ExpectNotExact(const TargetSettings& s, const std::string& why, const std::string& first_approx) {
  EXPECT_FALSE(s.exact) << Dump(s);
  EXPECT_NE(s.why_not.find(why), std::string::npos) << Dump(s);
  ASSERT_FALSE(s.approximations.empty()) << Dump(s);
  EXPECT_EQ(s.approximations.front().spec(), first_approx) << Dump(s);
  EXPECT_EQ(s.settings_for, first_approx);
  EXPECT_FALSE(s.flags.empty());
}

// llama.cpp rotates quantized caches by default (PR #21038); a native spec measured them
// unrotated, so its exact settings switch the rotation off.
TEST(DecideTargetSettingsTest, LlamaCppUniformTypes) {
  ExpectExact(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q8_0"),
              {"-ctk q8_0", "-ctv q8_0", "-fa on", "LLAMA_ATTN_ROT_DISABLE=1"});
  ExpectExact(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q4_0"),
              {"-ctk q8_0", "-ctv q4_0", "-fa on", "LLAMA_ATTN_ROT_DISABLE=1"});
  ExpectExact(SettingsOf(E::kLlamaCpp, "k=f16,v=f16"), {"-ctk f16", "-ctv f16"});
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0");
  EXPECT_EQ(s.measure_spec, "k=q4_0,v=q4_0,rot=0,engine=llama.cpp");
  EXPECT_EQ(s.command_example,
            "LLAMA_ATTN_ROT_DISABLE=1 llama-server -m model.gguf -c 32768 -ctk q4_0 -ctv q4_0 -fa on");
}

TEST(DecideTargetSettingsTest, LlamaCppRotationIsItsDefaultUnderEngineLlamaCpp) {
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,engine=llama.cpp");
  ExpectExact(s, {"-ctk q4_0", "-ctv q4_0", "-fa on"});
  EXPECT_EQ(s.measure_spec, "k=q4_0,v=q4_0,engine=llama.cpp");
  // Native rot=1 rotates the whole head: llama.cpp's K blocks are the head (128), its V blocks 64.
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,rot=1"), "64-element", "k=q4_0,v=q4_0,engine=llama.cpp");
  // At head_dim 64 both are the whole head: exact, with rotation left on.
  ExpectExact(SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,rot=1", testing::Small64(), 4096),
              {"-ctk q4_0", "-ctv q4_0", "-fa on"});
  // Rotation of K only: V stays f16.
  ExpectExact(SettingsOf(E::kLlamaCpp, "k=q8_0,v=f16,rot=1"), {"-ctk q8_0", "-ctv f16", "-fa on"});
}

TEST(DecideTargetSettingsTest, LlamaCppLacksFp8IntGroupAndKivi) {
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=fp8_e4m3,v=fp8_e4m3"), "fp8_e4m3 is not a cache type of llama.cpp",
                 "k=q8_0,v=q8_0");
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=int4,v=int4"), "int4", "k=q4_0,v=q4_0");
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=kivi2,v=kivi2"), "kivi2", "k=q4_0,v=q4_0");
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=fp8_e4m3,v=fp8_e4m3");
  EXPECT_EQ(s.flags, (std::vector<std::string>{"-ctk q8_0", "-ctv q8_0", "-fa on", "LLAMA_ATTN_ROT_DISABLE=1"}));
  EXPECT_TRUE(Has(s.ApproximationSpecs(), "k=q8_0,v=q8_0,engine=llama.cpp"))
      << Dump(s);  // llama.cpp's default, rotated
}

// A per-layer mix: layer 0's K in f16, everything else q8_0.
TEST(DecideTargetSettingsTest, PerLayerMixIsExactInIkLlamaCppOnly) {
  const std::string mix = "k=q8_0,v=q8_0;layers=0:k=f16";
  const TargetSettings l = SettingsOf(E::kLlamaCpp, mix);
  ExpectNotExact(l, "one K type and one V type for all layers", "k=q8_0,v=q8_0");
  EXPECT_TRUE(Has(l.ApproximationSpecs(), "k=f16,v=q8_0")) << Dump(l);  // never less precise than the mix
  ExpectExact(SettingsOf(E::kIkLlamaCpp, mix), {"-ctk q8_0", "-ctk-first f16,1", "-ctv q8_0", "-fa on"});
  ExpectExact(SettingsOf(E::kIkLlamaCpp, "k=q8_0,v=q4_0;layers=30-31:k=f16,v=q8_0"),
              {"-ctk q8_0", "-ctk-last f16,2", "-ctv q4_0", "-ctv-last q8_0,2", "-fa on"});
  // Five runs of K types: more than first/default/last can say.
  const TargetSettings ik = SettingsOf(E::kIkLlamaCpp, "k=q8_0,v=q8_0;layers=5:k=f16;layers=10:k=f16");
  ExpectNotExact(ik, "first N and the last M layers", "k=q8_0,v=q8_0");
  EXPECT_FALSE(SettingsOf(E::kVllm, mix).exact);
  EXPECT_FALSE(SettingsOf(E::kOllama, mix).exact);
}

// A choice measured under llama.cpp's own arithmetic (--target llama.cpp) has stand-ins measured
// the same way, rotation as the choice had it: the verified stand-in is what llama.cpp and ollama run.
TEST(DecideTargetSettingsTest, StandInsOfALlamaCppMeasurementAreLlamaCppMeasurements) {
  const TargetSettings mix = SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,engine=llama.cpp;layers=1-3:k=q8_0");
  ExpectNotExact(mix, "one K type and one V type for all layers", "k=q4_0,v=q4_0,engine=llama.cpp");
  EXPECT_TRUE(Has(mix.ApproximationSpecs(), "k=q8_0,v=q4_0,engine=llama.cpp")) << Dump(mix);
  for (const std::string& a : mix.ApproximationSpecs()) {
    if (a == "k=f16,v=f16") continue;  // full precision: the last resort of every engine
    EXPECT_NE(a.find("engine=llama.cpp"), std::string::npos) << a;
  }
  const TargetSettings ollama = SettingsOf(E::kOllama, "k=q8_0,v=q4_0,engine=llama.cpp");
  ExpectNotExact(ollama, "one type for K and V", "k=q8_0,v=q8_0,engine=llama.cpp");
  const TargetSettings off = SettingsOf(E::kOllama, "k=q8_0,v=q4_0,engine=llama.cpp,rot=0");
  ExpectNotExact(off, "one type for K and V", "k=q8_0,v=q8_0,rot=0,engine=llama.cpp");
}

TEST(DecideTargetSettingsTest, IkLlamaCppHadamardFlags) {
  ExpectExact(SettingsOf(E::kIkLlamaCpp, "k=q4_0,v=q4_0"), {"-ctk q4_0", "-ctv q4_0", "-fa on"});
  ExpectExact(SettingsOf(E::kIkLlamaCpp, "k=q4_0,v=q4_0,rot=1"),
              {"-ctk q4_0", "-ctv q4_0", "-fa on", "-khad", "-vhad"});
  ExpectExact(SettingsOf(E::kIkLlamaCpp, "k=q4_0,v=f16,rot=1"), {"-ctk q4_0", "-ctv f16", "-fa on", "-khad"});
  // Mainline's 64-element V blocks are not ik_llama.cpp's whole-head transform at head_dim 128.
  EXPECT_FALSE(SettingsOf(E::kIkLlamaCpp, "k=q4_0,v=q4_0,engine=llama.cpp").exact);
  // ik_llama.cpp turns -khad off when the default K type is f16.
  EXPECT_FALSE(SettingsOf(E::kIkLlamaCpp, "k=f16,v=f16,rot=1;layers=0:k=q4_0").exact);
}

TEST(DecideTargetSettingsTest, OllamaHasOneTypeForKeysAndValues) {
  ExpectExact(SettingsOf(E::kOllama, "k=q8_0,v=q8_0"), {"OLLAMA_KV_CACHE_TYPE=q8_0", "OLLAMA_FLASH_ATTENTION=1",
                                                        "OLLAMA_CONTEXT_LENGTH=32768", "LLAMA_ATTN_ROT_DISABLE=1"});
  ExpectExact(SettingsOf(E::kOllama, "k=f16,v=f16"), {"OLLAMA_KV_CACHE_TYPE=f16", "OLLAMA_CONTEXT_LENGTH=32768"});
  const TargetSettings s = SettingsOf(E::kOllama, "k=q8_0,v=q4_0");
  ExpectNotExact(s, "one type for K and V", "k=q8_0,v=q8_0");
  EXPECT_TRUE(Has(s.ApproximationSpecs(), "k=q4_0,v=q4_0")) << Dump(s);
  ExpectNotExact(SettingsOf(E::kOllama, "k=q5_1,v=q5_1"), "f16, q8_0, q4_0", "k=q4_0,v=q4_0");
  ExpectNotExact(SettingsOf(E::kOllama, "k=fp8_e4m3,v=fp8_e4m3"), "fp8_e4m3", "k=q8_0,v=q8_0");
}

TEST(DecideTargetSettingsTest, VllmDtypesScalesAndSkippedLayers) {
  ExpectExact(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3"), {"--kv-cache-dtype fp8_e4m3", "--max-model-len 32768"});
  ExpectExact(SettingsOf(E::kVllm, "k=fp8_e5m2,v=fp8_e5m2"), {"--kv-cache-dtype fp8_e5m2", "--max-model-len 32768"});
  ExpectExact(SettingsOf(E::kVllm, "k=f16,v=f16"),
              {"--kv-cache-dtype auto", "--dtype float16", "--max-model-len 32768"});
  ExpectExact(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,scale=calib"),
              {"--kv-cache-dtype fp8_e4m3", "--max-model-len 32768"});
  ExpectExact(
      SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3;layers=0-1:k=bf16,v=bf16"),
      {"--kv-cache-dtype fp8_e4m3", "--kv-cache-dtype-skip-layers 0 1", "--dtype bfloat16", "--max-model-len 32768"});
  // q8_0's nearest vLLM dtype: int8 codes under one scale per token and head.
  ExpectNotExact(SettingsOf(E::kVllm, "k=q8_0,v=q8_0"), "q8_0 is not a vLLM KV cache dtype",
                 "k=int8_per_token_head,v=int8_per_token_head");
  ExpectNotExact(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,scale=dynamic"), "scale=dynamic",
                 "k=fp8_e4m3,v=fp8_e4m3,scale=calib");
  ExpectNotExact(SettingsOf(E::kVllm, "k=fp8_e4m3,v=f16"), "one dtype", "k=f16,v=f16");
  // That mix keeps layer 0 unquantized where vLLM can: a skipped layer.
  ExpectNotExact(SettingsOf(E::kVllm, "k=q8_0,v=q8_0;layers=0:k=f16"), "one dtype",
                 "k=int8_per_token_head,v=int8_per_token_head;layers=0:k=f16,v=f16");
}

// The dtypes of vLLM's CacheDType beyond fp8 (vllm/config/cache.py @002f10e0), with their
// conditions, and what vLLM does silently next to each flag.
TEST(DecideTargetSettingsTest, VllmNvfp4AndPerTokenHeadDtypes) {
  ExpectExact(SettingsOf(E::kVllm, "k=nvfp4,v=nvfp4"), {"--kv-cache-dtype nvfp4", "--max-model-len 32768"});
  ExpectExact(SettingsOf(E::kVllm, "k=nvfp4_4over6,v=nvfp4_4over6,scale=calib"),
              {"--kv-cache-dtype nvfp4_4over6", "--max-model-len 32768"});
  ExpectExact(SettingsOf(E::kVllm, "k=int8_per_token_head,v=int8_per_token_head"),
              {"--kv-cache-dtype int8_per_token_head", "--attention-backend TRITON_ATTN", "--max-model-len 32768"});
  // nvfp4's global scale is one per layer: no per-head scales.
  EXPECT_NE(SettingsOf(E::kVllm, "k=nvfp4,v=nvfp4,scale=calib,scale_by=head").why_not.find("per-tensor nvfp4"),
            std::string::npos);
  EXPECT_NE(SettingsOf(E::kVllm, "k=fp4_mx_block16,v=fp4_mx_block16").why_not.find("not a vLLM KV cache dtype"),
            std::string::npos);
  // Silent defaults: scale 1.0 without checkpoint scales, and what a calibrated spec becomes when
  // they do not load; per-token-head ignores them; auto may be fp8.
  const TargetSettings unit = SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3");
  ASSERT_EQ(unit.silent_defaults.size(), 1u) << Dump(unit);
  EXPECT_NE(unit.silent_defaults[0].find("scale 1.0 (what was measured, scale=unit)"), std::string::npos);
  const TargetSettings calib = SettingsOf(E::kVllm, "k=nvfp4,v=nvfp4,scale=calib");
  ASSERT_EQ(calib.silent_defaults.size(), 1u) << Dump(calib);
  EXPECT_NE(calib.silent_defaults[0].find("runs at scale 1.0 instead of the calibrated scales"), std::string::npos);
  EXPECT_NE(SettingsOf(E::kVllm, "k=fp8_per_token_head,v=fp8_per_token_head").silent_defaults.at(0).find("ignore"),
            std::string::npos);
  EXPECT_NE(SettingsOf(E::kVllm, "k=bf16,v=bf16").silent_defaults.at(0).find("auto is fp8_e4m3"), std::string::npos);
}

// vLLM's TurboQuant presets: K and V differ, the end layers stay unquantized whatever the flags
// say (so kv=<preset> is exact and the same formats on every layer are not), k8v4's keys carry no
// scale; only vLLM has them.
TEST(DecideTargetSettingsTest, VllmTurboQuantPresets) {
  const TargetSettings tq = SettingsOf(E::kVllm, "kv=turboquant_4bit_nc");
  ExpectExact(tq, {"--kv-cache-dtype turboquant_4bit_nc", "--dtype bfloat16", "--max-model-len 32768"});
  ASSERT_FALSE(tq.silent_defaults.empty()) << Dump(tq);
  EXPECT_NE(tq.silent_defaults[0].find("keeps layers 0 1 30 31"), std::string::npos) << Dump(tq);
  EXPECT_TRUE(std::any_of(tq.notes.begin(), tq.notes.end(), [](const std::string& n) {
    return n.find("first prefill chunk") != std::string::npos;
  })) << Dump(tq);
  // A further unquantized layer is the skip flag's; the end layers are TurboQuant's own.
  ExpectExact(SettingsOf(E::kVllm, "kv=turboquant_3bit_nc;layers=5:k=bf16,v=bf16"),
              {"--kv-cache-dtype turboquant_3bit_nc", "--kv-cache-dtype-skip-layers 5", "--dtype bfloat16",
               "--max-model-len 32768"});
  const TargetSettings k8 = SettingsOf(E::kVllm, "kv=turboquant_k8v4");
  ExpectExact(k8, {"--kv-cache-dtype turboquant_k8v4", "--dtype bfloat16", "--max-model-len 32768"});
  EXPECT_NE(k8.silent_defaults.at(1).find("float8e4b15"), std::string::npos) << Dump(k8);
  ExpectNotExact(SettingsOf(E::kVllm, "k=turboquant_mse3,v=turboquant_uniform4"), "keeps layers 0 1 30 31",
                 "k=turboquant_mse3,v=turboquant_uniform4;layers=ends:k=bf16,v=bf16");
  EXPECT_NE(SettingsOf(E::kVllm, "k=fp8_e4m3,v=turboquant_uniform4,scale=calib;layers=ends:k=bf16,v=bf16")
                .why_not.find("without a scale"),
            std::string::npos);
  EXPECT_NE(SettingsOf(E::kVllm, "kv=turboquant_4bit_nc;layers=4:k=fp8_e4m3,v=fp8_e4m3").why_not.find("one"),
            std::string::npos);
  ExpectNotExact(SettingsOf(E::kVllm, "k=turboquant_mse4,v=turboquant_mse4"), "not a vLLM KV cache dtype",
                 "k=turboquant_mse4,v=turboquant_uniform4;layers=ends:k=bf16,v=bf16");
  EXPECT_FALSE(SettingsOf(E::kSglang, "kv=turboquant_4bit_nc").exact);
  // The memory: vLLM's slot per token and head at head_dim 128 is 66 + 68 bytes on 28 layers,
  // the model dtype's 256 + 256 on the four end layers.
  EXPECT_EQ(tq.memory.bytes_per_token, 8u * (28 * (66 + 68) + 4 * (256 + 256)));
}

// scale=ckpt: the checkpoint's own k_scale/v_scale, which vLLM and SGLang load as they are; if a
// loader drops them the cache runs at 1.0, said next to the flags.
TEST(DecideTargetSettingsTest, CheckpointScales) {
  ModelConfig c = testing::Llama3_8B();
  c.kv_scales.per_layer = 1;
  c.kv_scales.k.assign(32, 0.02f), c.kv_scales.v.assign(32, 0.01f);
  c.kv_scales.source = "model.layers.N.self_attn.k_scale / v_scale";
  const TargetSettings v = SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,scale=ckpt", c);
  ExpectExact(v, {"--kv-cache-dtype fp8_e4m3", "--max-model-len 32768"});
  EXPECT_TRUE(std::any_of(v.notes.begin(), v.notes.end(), [](const std::string& n) {
    return n.rfind("scale=ckpt: the checkpoint's own", 0) == 0;
  })) << Dump(v);
  EXPECT_NE(v.silent_defaults.at(0).find("runs at scale 1.0 instead"), std::string::npos) << Dump(v);
  ExpectExact(SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3,scale=ckpt", c),
              {"--kv-cache-dtype fp8_e4m3", "--context-length 32768"});  // no scale file: the checkpoint's
  EXPECT_NE(SettingsOf(E::kVllm, "k=fp8_e5m2,v=fp8_e5m2,scale=ckpt", c).why_not.find("checkpoint scales"),
            std::string::npos);
}

TEST(DecideTargetSettingsTest, SglangAndTensorRtLlm) {
  ExpectExact(SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3"), {"--kv-cache-dtype fp8_e4m3", "--context-length 32768"});
  ExpectExact(SettingsOf(E::kSglang, "k=bf16,v=bf16"), {"--kv-cache-dtype bf16", "--context-length 32768"});
  ExpectExact(
      SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3,scale=calib"),
      {"--kv-cache-dtype fp8_e4m3", "--quantization-param-path kv_cache_scales.json", "--context-length 32768"});
  EXPECT_NE(SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3,scale=calib,scale_by=head").why_not.find("per-tensor"),
            std::string::npos);
  EXPECT_NE(SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3;layers=0:k=f16,v=f16").why_not.find("every layer or of none"),
            std::string::npos);
  ExpectExact(SettingsOf(E::kTensorRtLlm, "k=f16,v=f16"), {"kv_cache_config=KvCacheConfig(dtype=\"auto\")"});
  ExpectNotExact(SettingsOf(E::kTensorRtLlm, "k=fp8_e4m3,v=fp8_e4m3,scale=calib"), "quantize the weights",
                 "k=f16,v=f16");
  ExpectNotExact(SettingsOf(E::kTensorRtLlm, "k=nvfp4,v=nvfp4"), "quantize the weights", "k=f16,v=f16");
  // SGLang's fp4 dtypes (server_args.py @001067ff).
  ExpectExact(SettingsOf(E::kSglang, "k=fp4_mx_block16,v=fp4_mx_block16"),
              {"--kv-cache-dtype fp4_mx_block16", "--context-length 32768"});
  const TargetSettings nv = SettingsOf(E::kSglang, "k=nvfp4,v=nvfp4,scale=calib");
  ExpectExact(nv, {"--kv-cache-dtype nvfp4", "--context-length 32768"});  // its scales: the checkpoint's
  EXPECT_TRUE(std::any_of(nv.silent_defaults.begin(), nv.silent_defaults.end(), [](const std::string& d) {
    return d.find("multiplied by 6 on SM100") != std::string::npos;
  })) << Dump(nv);
}

TEST(DecideTargetSettingsTest, TransformersQuantizedCache) {
  const TargetSettings s = SettingsOf(E::kTransformers, "k=int4,v=int4,recent=1");
  ExpectExact(s, {"cache_implementation=\"quantized\"",
                  "cache_config={\"backend\": \"quanto\", \"nbits\": 4, \"axis_key\": 0, \"axis_value\": 0, "
                  "\"q_group_size\": 64, \"residual_length\": 1}"});
  ExpectExact(SettingsOf(E::kTransformers, "k=f16,v=f16"), {"torch_dtype=torch.float16"});
  ExpectNotExact(SettingsOf(E::kTransformers, "k=int4,v=int4"), "newest token", "k=int4,v=int4,recent=1");
  ExpectNotExact(SettingsOf(E::kTransformers, "k=int4,v=int4,group=32,recent=64"), "cycles",
                 "k=int4,v=int4,group=32,recent=1");
  ExpectNotExact(SettingsOf(E::kTransformers, "k=kivi2,v=kivi2"), "kivi2", "k=int4,v=int4,recent=1");
  ExpectNotExact(SettingsOf(E::kTransformers, "k=int8,v=int8"), "hqq", "k=int4,v=int4,recent=1");
  ExpectNotExact(SettingsOf(E::kTransformers, "k=q4_0,v=q4_0"), "q4_0", "k=int4,v=int4,recent=1");
}

TEST(DecideTargetSettingsTest, KvauditProtectionsAreInNoEngine) {
  for (const char* spec : {"k=q4_0,v=q4_0,sink=4", "k=q4_0,v=q4_0,recent=128", "k=q8_0,v=q8_0,outliers=8",
                           "k=fp8_e4m3,v=fp8_e4m3,sink=4", "k=int4,v=int4,recent=1,sink=4"}) {
    for (DeployTarget e : AllTargets()) {
      const TargetSettings s = SettingsOf(e, spec);
      EXPECT_FALSE(s.exact) << spec << "\n" << Dump(s);
      EXPECT_FALSE(s.approximations.empty()) << spec << "\n" << Dump(s);
    }
  }
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,sink=4"), "sink=4: sinks", "k=q4_0,v=q4_0");
  ExpectNotExact(SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0,recent=128"), "recent=128", "k=q4_0,v=q4_0");
  ExpectNotExact(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,outliers=8"), "outliers=8", "k=fp8_e4m3,v=fp8_e4m3");
  EXPECT_FALSE(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,rot=1").exact);
}

// Every approximation is a spec the engine runs exactly, and none is the spec itself.
TEST(DecideTargetSettingsTest, ApproximationsAreExactInTheirEngine) {
  for (const char* spec : {"k=q8_0,v=q4_0,sink=4", "k=kivi4,v=kivi4", "k=int8,v=q5_0;layers=3-4:k=f16,v=f16",
                           "k=fp8_e5m2,v=fp8_e4m3,scale=dynamic", "k=q4_1,v=iq4_nl,rot=1,outliers=4"}) {
    const std::string canonical = CacheConfig::Parse(spec)->spec();
    for (DeployTarget e : AllTargets()) {
      const TargetSettings s = SettingsOf(e, spec);
      for (const std::string& a : s.ApproximationSpecs()) {
        EXPECT_NE(a, canonical);
        EXPECT_TRUE(SettingsOf(e, a).exact) << spec << " -> " << a << "\n" << Dump(SettingsOf(e, a));
      }
    }
  }
}

TEST(DecideTargetSettingsTest, SettingsForCoversEveryEngineAndRejectsBadInput) {
  auto p = CacheConfig::Parse("k=q8_0,v=q4_0");
  ASSERT_TRUE(p.ok());
  auto all = SettingsFor(*p, testing::Llama3_8B(), 32768);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), AllTargets().size());
  for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ((*all)[i].target, AllTargets()[i]);
  auto bad_ctx = SettingsFor(*p, testing::Llama3_8B(), 0);
  ASSERT_FALSE(bad_ctx.ok());
  EXPECT_NE(bad_ctx.error().message.find("hint:"), std::string::npos);
  ModelConfig odd = testing::Llama3_8B();
  odd.head_dim = 48;  // q8_0's 32-element blocks do not divide it
  auto bad_spec = SettingsFor(*p, odd, 32768);
  ASSERT_FALSE(bad_spec.ok());
  EXPECT_EQ(bad_spec.error().exit_code(), 2);
}

}  // namespace
}  // namespace kvaudit
