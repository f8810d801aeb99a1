// Mixture-of-experts goldens: the tiny random-weight qwen3moe and Mixtral-style ('llama' with
// experts) GGUFs of ../shared/golden/llamacpp against llama.cpp's CPU logits (f32 KV cache, flash
// attention off; golden/llamacpp/README.md). Checks: logits of all 96 positions within 1e-4 with
// the same argmax, the experts llama.cpp chose (experts.txt), the greedy continuation through the
// decode path, prefill = decode and 1 thread = 2 threads bitwise, the same model written as a
// Hugging Face directory (config.json + safetensors) giving bitwise the GGUF's logits, and the
// same model with MXFP4 experts computing packed as dequantized at load, bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "kv/config/cache_config.h"
#include "kv/f32_cache.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/weights.h"
#include "quant/quant_type.h"
#include "support/fixtures.h"
#include "support/llamacpp_golden.h"
#include "support/tiny_llama.h"
#include "unit/io_builders.h"

namespace kvaudit {
using ::kvaudit::testing::Fixture;
namespace {

namespace fs = std::filesystem;
constexpr int kPositions = 96, kVocab = 256;

struct RunResult {
  std::vector<float> logits;                  // [n, vocab]
  std::vector<std::vector<int32_t>> experts;  // [layer][n * n_experts_used]
};

// All logits of ids, in one prefill (decode = false) or one token per Run; with a cache spec (e.g.
// "k=f32,v=f32,engine=llama.cpp"), that cache and its engine's arithmetic, else kvaudit's f32 cache.
RunResult RunModel(const Model& model, const std::vector<int32_t>& ids, int threads, bool decode,
                   const std::string& spec = "") {
  const ModelConfig& c = model.config();
  ThreadPool pool(threads);
  std::unique_ptr<KvCache> cache;
  if (spec.empty()) {
    cache = MakeF32Cache(c, 256);
  } else {
    auto built = MakeCache(c, *CacheConfig::Parse(spec), nullptr, 256);
    if (!built.ok()) return ADD_FAILURE() << built.error().message, RunResult{};
    cache = std::move(*built);
  }
  Forward fwd(model, *cache, pool);
  const int n = static_cast<int>(ids.size()), k = c.n_experts_used;
  RunResult r;
  r.logits.resize(static_cast<size_t>(n) * c.vocab_size);
  r.experts.assign(c.n_layers, std::vector<int32_t>(static_cast<size_t>(n) * k, -1));
  fwd.set_route_observer([&](int layer, int pos0, int nt, const int32_t* experts, const float*) {
    std::copy(experts, experts + nt * k, r.experts[layer].begin() + pos0 * k);
  });
  if (!decode) {
    fwd.Run(ids, 0, r.logits.data(), /*all_logits=*/true);
    return r;
  }
  for (int t = 0; t < n; ++t) {
    fwd.Run(std::span<const int32_t>(&ids[t], 1), t, r.logits.data() + static_cast<size_t>(t) * c.vocab_size, false);
  }
  return r;
}

int ArgMax(const float* row, int n) { return static_cast<int>(std::max_element(row, row + n) - row); }

class MoeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeGoldenTest, MatchesLlamaCppLogitsAndExperts) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  ASSERT_EQ(g.logits.size(), static_cast<size_t>(kPositions) * kVocab);
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  ASSERT_TRUE(c.is_moe());
  EXPECT_EQ(c.n_experts, 4);
  EXPECT_EQ(c.n_experts_used, 2);
  EXPECT_EQ(c.expert_ff, 64);
  // gpt-oss: a softmax over the k raw logits chosen (no renormalisation step); the others
  // renormalise the top-k of a softmax over all experts.
  EXPECT_EQ(c.norm_topk, GetParam() != "gpt-oss");
  EXPECT_EQ(c.moe_softmax_after_topk, GetParam() == "gpt-oss");

  const RunResult r = RunModel(**model, g.ids, 2, /*decode=*/false);
  double max_abs = 0;
  for (size_t i = 0; i < r.logits.size(); ++i)
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(r.logits[i]) - g.logits[i]));
  EXPECT_LE(max_abs, 1e-4);
  for (int t = 0; t < kPositions; ++t) {
    EXPECT_EQ(ArgMax(&r.logits[t * kVocab], kVocab), ArgMax(&g.logits[t * kVocab], kVocab)) << "position " << t;
  }
  std::printf("[moe golden %s] max|dlogit| %.3g\n", GetParam().c_str(), max_abs);
  ASSERT_EQ(g.experts.size(), static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(r.experts[l], g.experts[l]) << "layer " << l;
}

TEST_P(MoeGoldenTest, GreedyContinuationThroughDecode) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.prompt.size(), 16u);
  ASSERT_EQ(g.greedy.size(), 16u);
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ThreadPool pool(2);
  auto cache = MakeF32Cache((*model)->config(), 256);
  Forward fwd(**model, *cache, pool);
  std::vector<int32_t> seq = g.prompt;
  std::vector<float> last(kVocab);
  fwd.Run(seq, 0, last.data(), false);  // the prompt as one batch, as llama.cpp decoded it
  while (seq.size() < 32) {
    seq.push_back(ArgMax(last.data(), kVocab));  // lowest id on ties
    fwd.Run(std::span<const int32_t>(&seq.back(), 1), static_cast<int>(seq.size()) - 1, last.data(), false);
  }
  EXPECT_EQ(std::vector<int32_t>(seq.begin() + 16, seq.end()), g.greedy);
}

// A job plans its memory from Forward::ActivationBytes before it builds a Forward: the figure is
// what one holds, expert buffers included.
TEST_P(MoeGoldenTest, ActivationBytesAreTheBuffersAForwardHolds) {
  auto model = Model::Load(testing::ReadLlamaCppGolden(GetParam()).dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ThreadPool pool(1);
  auto cache = MakeF32Cache((*model)->config(), 256);
  const Forward fwd(**model, *cache, pool);
  EXPECT_EQ(fwd.activation_bytes(), Forward::ActivationBytes((*model)->config()));
  EXPECT_GT(MoeFfn::BufferBytes((*model)->config(), Forward::kMaxChunk), 0u);
}

// Bitwise: prefill = token-by-token decode; 1 thread = 2 threads; in place = converted at load.
TEST_P(MoeGoldenTest, PrefillDecodeThreadsAndLoadPathsAgreeBitwise) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const RunResult prefill = RunModel(**model, g.ids, 2, false);
  const RunResult decode = RunModel(**model, g.ids, 2, true);
  const RunResult one_thread = RunModel(**model, g.ids, 1, false);
  EXPECT_EQ(std::memcmp(prefill.logits.data(), decode.logits.data(), prefill.logits.size() * 4), 0);
  EXPECT_EQ(prefill.experts, decode.experts);
  EXPECT_EQ(std::memcmp(prefill.logits.data(), one_thread.logits.data(), prefill.logits.size() * 4), 0);
  WeightLoadOptions f32;
  f32.dequantize_at_load = true;
  auto converted = Model::Load(g.dir + "/model.gguf", f32);
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  EXPECT_TRUE(converted->get()->weights().mappings.empty());
  const RunResult conv = RunModel(**converted, g.ids, 2, false);
  EXPECT_EQ(std::memcmp(prefill.logits.data(), conv.logits.data(), prefill.logits.size() * 4), 0);
}

// ---------------------------------------------------------------- the same model as safetensors

// The GGUF tensor `name` as f32 values, in its stored (outermost-first) shape.
std::vector<float> GgufF32(const GgufFile& g, const std::string& name, std::vector<int64_t>* shape) {
  const TensorView* t = g.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<float> v(t->numel());
  EXPECT_TRUE(DequantizeToF32(*t, v.data()).ok()) << name;
  *shape = t->shape;
  return v;
}

// config.json of the Hugging Face model equal to the GGUF's config c.
nlohmann::json HfConfig(const ModelConfig& c, bool mixtral) {
  nlohmann::json j = {{"model_type", mixtral ? "mixtral" : "qwen3_moe"},
                      {"hidden_size", c.d_model},
                      {"num_hidden_layers", c.n_layers},
                      {"num_attention_heads", c.n_heads},
                      {"num_key_value_heads", c.n_kv_heads},
                      {"head_dim", c.head_dim},
                      {"intermediate_size", c.d_ff},
                      {"vocab_size", c.vocab_size},
                      {"max_position_embeddings", c.max_ctx},
                      {"rms_norm_eps", c.rms_eps},
                      {"rope_theta", c.rope.theta},
                      {"tie_word_embeddings", c.tied_embeddings},
                      {"num_experts_per_tok", c.n_experts_used}};
  if (mixtral) {
    j["num_local_experts"] = c.n_experts;
  } else {
    j["num_experts"] = c.n_experts;
    j["moe_intermediate_size"] = c.expert_ff;
    j["norm_topk_prob"] = true;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = nlohmann::json::array();
  }
  return j;
}

// One layer's tensors under their Hugging Face names. GGUF 'llama' Q/K rows are permuted for
// llama.cpp's interleaved RoPE (convert_hf_to_gguf.py LlamaModel.permute); HF's are not.
void AddHfLayer(const GgufFile& gg, const ModelConfig& c, bool mixtral, int i, std::vector<testing::F32Tensor>& out) {
  const std::string b = "blk." + std::to_string(i) + ".", p = "model.layers." + std::to_string(i) + ".";
  auto add = [&](const std::string& gguf, const std::string& hf) {
    testing::F32Tensor t{hf, {}, {}};
    t.values = GgufF32(gg, b + gguf + ".weight", &t.shape);
    if (mixtral && (gguf == "attn_q" || gguf == "attn_k"))
      UnpermuteGgufQk(t.values.data(), gguf == "attn_q" ? c.n_heads : c.n_kv_heads, c.head_dim, c.d_model);
    out.push_back(std::move(t));
  };
  add("attn_norm", p + "input_layernorm.weight");
  add("attn_q", p + "self_attn.q_proj.weight");
  add("attn_k", p + "self_attn.k_proj.weight");
  add("attn_v", p + "self_attn.v_proj.weight");
  add("attn_output", p + "self_attn.o_proj.weight");
  if (!mixtral) add("attn_q_norm", p + "self_attn.q_norm.weight"), add("attn_k_norm", p + "self_attn.k_norm.weight");
  add("ffn_norm", p + "post_attention_layernorm.weight");
  const std::string moe = p + (mixtral ? "block_sparse_moe." : "mlp.");
  add("ffn_gate_inp", moe + "gate.weight");
  const char* roles[3][3] = {{"gate", "w1", "gate_proj"}, {"up", "w3", "up_proj"}, {"down", "w2", "down_proj"}};
  for (const auto& role : roles) {
    std::vector<int64_t> shape;  // [n_expert, rows, cols]
    const std::vector<float> all = GgufF32(gg, b + "ffn_" + role[0] + "_exps.weight", &shape);
    ASSERT_EQ(shape.size(), 3u);
    const size_t per = static_cast<size_t>(shape[1] * shape[2]);
    for (int64_t e = 0; e < shape[0]; ++e) {
      out.push_back({moe + "experts." + std::to_string(e) + "." + role[mixtral ? 1 : 2] + ".weight",
                     {shape[1], shape[2]},
                     std::vector<float>(all.begin() + e * per, all.begin() + (e + 1) * per)});
    }
  }
}

// Writes the GGUF model as a Hugging Face directory (config.json + model.safetensors).
fs::path WriteHfCopy(const std::string& gguf_path, const ModelConfig& c, bool mixtral) {
  auto gg = GgufFile::Open(gguf_path);
  EXPECT_TRUE(gg.ok());
  const fs::path dir = testing::MakeTempDir("moe-hf");
  std::ofstream(dir / "config.json") << HfConfig(c, mixtral).dump(2);
  std::vector<testing::F32Tensor> tensors;
  auto add = [&](const std::string& gguf, const std::string& hf) {
    testing::F32Tensor t{hf, {}, {}};
    t.values = GgufF32(*gg, gguf, &t.shape);
    tensors.push_back(std::move(t));
  };
  add("token_embd.weight", "model.embed_tokens.weight");
  add("output_norm.weight", "model.norm.weight");
  if (!c.tied_embeddings) add("output.weight", "lm_head.weight");
  for (int i = 0; i < c.n_layers; ++i) AddHfLayer(*gg, c, mixtral, i, tensors);
  testing::WriteF32Safetensors(dir / "model.safetensors", tensors);
  return dir;
}

// gpt-oss as published (its experts MXFP4 in the file: ../shared/golden/llamacpp/gpt-oss-mxfp4): the
// native engine computes with each MXFP4 weight's exact value, kept packed, bitwise as the same
// weights dequantized to f32 at load (the exact f32 reference); prefill = decode. llama.cpp's own
// logits for this file come from q8_0-quantized activations (the goldens' README), which only
// engine=llama.cpp's weight arithmetic reproduces, so they are not compared here.
TEST(MoeGoldenMxfp4, GptOssPublishedExpertsComputeAsTheirExactValues) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden("gpt-oss-mxfp4");
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  auto packed = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  EXPECT_NE((*packed)->weights().storage_summary().find("mxfp4"), std::string::npos)
      << (*packed)->weights().storage_summary();
  WeightLoadOptions f32;
  f32.dequantize_at_load = true;
  auto exact = Model::Load(g.dir + "/model.gguf", f32);
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  const RunResult a = RunModel(**packed, g.ids, 2, false);
  const RunResult b = RunModel(**exact, g.ids, 2, false);
  const RunResult d = RunModel(**packed, g.ids, 1, true);
  EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * 4), 0);
  EXPECT_EQ(std::memcmp(a.logits.data(), d.logits.data(), a.logits.size() * 4), 0);
  EXPECT_EQ(a.experts, b.experts);
  for (float x : a.logits) ASSERT_TRUE(std::isfinite(x));
}

// The same file under engine=llama.cpp, which computes llama.cpp's weight arithmetic: each routed
// row's activations quantized to q8_0 and dotted with the MXFP4 experts as llama.cpp's repacked
// gemv does (MUL_MAT_ID: ops/ggml/llamacpp_matmul.h), the f32 router and attention products as its
// vec_dot and tinyBLAS sum them. It lands on llama.cpp's logits (the exact engine is ~1 logit away)
// with the same experts at every position and layer. Not bitwise: the golden ran with flash
// attention off, engine=llama.cpp computes llama.cpp's flash-attention kernel, and ggml's softmax
// of the routing weights sums in double.
TEST(MoeGoldenMxfp4, GptOssUnderLlamaCppArithmeticLandsOnLlamaCppsLogitsAndExperts) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden("gpt-oss-mxfp4");
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  const std::string spec = "k=f32,v=f32,engine=llama.cpp";
  const RunResult lcpp = RunModel(**model, g.ids, 2, false, spec);
  const RunResult exact = RunModel(**model, g.ids, 2, false);
  double lcpp_max = 0, exact_max = 0;
  for (size_t i = 0; i < g.logits.size(); ++i) {
    lcpp_max = std::max(lcpp_max, std::fabs(static_cast<double>(lcpp.logits[i]) - g.logits[i]));
    exact_max = std::max(exact_max, std::fabs(static_cast<double>(exact.logits[i]) - g.logits[i]));
  }
  std::printf("[gpt-oss-mxfp4] max|dlogit| engine=llama.cpp %.3g, exact %.3g\n", lcpp_max, exact_max);
  EXPECT_LE(lcpp_max, 1e-3);
  EXPECT_GT(exact_max, 0.1);  // the difference the q8_0 activations make, which only this path has
  ASSERT_EQ(g.experts.size(), static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(lcpp.experts[l], g.experts[l]) << "layer " << l;
  // Threads split output rows, never a sum: 1 thread = 2 threads, bitwise. (Not prefill = decode:
  // llama.cpp's f32 products are tinyBLAS in a batch and vec_dot for one row, as here.)
  const RunResult one = RunModel(**model, g.ids, 1, false, spec);
  EXPECT_EQ(std::memcmp(lcpp.logits.data(), one.logits.data(), lcpp.logits.size() * 4), 0);
}

// The architectures whose Hugging Face layout kvaudit reads.
class MoeGoldenHfTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeGoldenHfTest, HuggingFaceCopyGivesBitwiseTheGgufLogits) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  auto gguf = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  const bool mixtral = GetParam() == "mixtral";
  const fs::path dir = WriteHfCopy(g.dir + "/model.gguf", (*gguf)->config(), mixtral);
  auto hf = Model::Load(dir.string());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  EXPECT_EQ(hf->get()->config().arch, mixtral ? Arch::kMixtral : Arch::kQwen3Moe);
  EXPECT_EQ(hf->get()->weights().n_params, gguf->get()->weights().n_params);
  const RunResult a = RunModel(**gguf, g.ids, 2, false);
  const RunResult b = RunModel(**hf, g.ids, 2, false);
  EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * 4), 0);
  EXPECT_EQ(a.experts, b.experts);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// ---------------------------------------------------------------- MXFP4 experts

// One scalar metadata value of type t as GGUF stores it (gguf.md: little-endian, bool one byte,
// strings u64 length + bytes).
void AppendGgufScalar(testing::Bytes* b, GgufType t, int64_t i, double f, const std::string& s) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool: return testing::AppendPod(b, static_cast<uint8_t>(i));
    case GgufType::kU16:
    case GgufType::kI16: return testing::AppendPod(b, static_cast<uint16_t>(i));
    case GgufType::kU32:
    case GgufType::kI32: return testing::AppendPod(b, static_cast<uint32_t>(i));
    case GgufType::kU64:
    case GgufType::kI64: return testing::AppendPod(b, static_cast<uint64_t>(i));
    case GgufType::kF32: return testing::AppendPod(b, static_cast<float>(f));
    case GgufType::kF64: return testing::AppendPod(b, f);
    case GgufType::kString: return testing::AppendStr(b, s);
    case GgufType::kArray: break;
  }
  ADD_FAILURE() << "nested array";
}

// The golden GGUF with its expert tensors (blk.N.ffn_{gate,up,down}_exps, f32 there) requantized
// to MXFP4 by quantize_row_mxfp4_ref, every other tensor and metadata value as stored.
fs::path WriteWithMxfp4Experts(const std::string& gguf_path) {
  auto gg = GgufFile::Open(gguf_path);
  EXPECT_TRUE(gg.ok());
  testing::GgufBuilder b;
  for (const auto& [key, v] : gg->metadata()) {
    testing::Bytes payload;
    if (v.type == GgufType::kArray) {
      testing::AppendPod(&payload, static_cast<uint32_t>(v.elem_type));
      const size_t n = v.elem_type == GgufType::kString                                   ? v.strings.size()
                       : (v.elem_type == GgufType::kF32 || v.elem_type == GgufType::kF64) ? v.floats.size()
                                                                                          : v.ints.size();
      testing::AppendPod(&payload, static_cast<uint64_t>(n));
      for (size_t j = 0; j < n; ++j) {
        AppendGgufScalar(&payload, v.elem_type, v.ints.empty() ? 0 : v.ints[j], v.floats.empty() ? 0 : v.floats[j],
                         v.strings.empty() ? "" : v.strings[j]);
      }
    } else {
      AppendGgufScalar(&payload, v.type, v.i, v.f, v.s);
    }
    b.kvs.push_back({key, static_cast<uint32_t>(v.type), std::move(payload)});
  }
  const QuantTraits& mx = GetQuantTraits(QuantType::kMXFP4);
  for (const TensorView& t : gg->tensors()) {
    const std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());  // innermost first
    if (t.name.find("_exps.weight") == std::string::npos) {
      b.AddTensor(t.name, ne, 0, testing::Bytes(t.data, t.data + t.nbytes));
      EXPECT_EQ(t.dtype, DType::kF32) << t.name;
      continue;
    }
    std::vector<float> f(static_cast<size_t>(t.numel()));  // [n_expert, rows, cols]
    EXPECT_TRUE(DequantizeToF32(t, f.data()).ok()) << t.name;
    testing::Bytes q(f.size() / mx.block_elems * mx.block_bytes);  // [n_expert, rows, cols / 32 blocks]
    mx.quantize_ref(f.data(), q.data(), t.numel());
    b.AddTensor(t.name, ne, 39 /* GGML_TYPE_MXFP4 */, std::move(q));
  }
  return testing::WriteBytes(testing::MakeTempDir("moe-mxfp4") / "model.gguf", b.Build());
}

// The same model with MXFP4 experts: loaded packed (each expert a view of its slice of the mapped
// MXFP4 tensor) it computes bitwise as dequantized at load (logits and chosen experts), in a
// prefill, token by token and on 1 thread. Its logits stay near the f32 golden's (a loose bound
// on the relative RMS: MXFP4's ~11% error on the random expert weights, through the routing).
TEST_P(MoeGoldenTest, Mxfp4ExpertsKeptPackedEqualDequantizedAtLoad) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  const fs::path path = WriteWithMxfp4Experts(g.dir + "/model.gguf");
  auto packed = Model::Load(path.string());
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  WeightLoadOptions f32;
  f32.dequantize_at_load = true;
  auto converted = Model::Load(path.string(), f32);
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  const ModelWeights& w = (*packed)->weights();
  const ModelConfig& c = (*packed)->config();
  EXPECT_EQ(w.storage_summary(), "f32+mxfp4");
  EXPECT_FALSE(w.mappings.empty());
  EXPECT_EQ(w.source_dtypes.at("MXFP4"), int64_t{3} * c.n_layers * c.n_experts * c.expert_ff * c.d_model);
  EXPECT_EQ(converted->get()->weights().storage_summary(), "f32");

  const RunResult want = RunModel(**converted, g.ids, 2, false);
  const RunResult prefill = RunModel(**packed, g.ids, 2, false);
  const RunResult decode = RunModel(**packed, g.ids, 2, true);
  const RunResult one_thread = RunModel(**packed, g.ids, 1, false);
  for (const RunResult* r : {&prefill, &decode, &one_thread}) {
    EXPECT_EQ(std::memcmp(r->logits.data(), want.logits.data(), want.logits.size() * 4), 0);
    EXPECT_EQ(r->experts, want.experts);
  }
  double max_abs = 0, diff2 = 0, golden2 = 0;
  for (size_t i = 0; i < want.logits.size(); ++i) {
    const double d = static_cast<double>(want.logits[i]) - g.logits[i];
    max_abs = std::max(max_abs, std::fabs(d));
    diff2 += d * d;
    golden2 += static_cast<double>(g.logits[i]) * g.logits[i];
  }
  const double rel_rms = std::sqrt(diff2 / golden2);
  std::printf("[moe golden %s, mxfp4 experts] vs the f32 golden: max|dlogit| %.3g, relative RMS %.3g\n",
              GetParam().c_str(), max_abs, rel_rms);
  EXPECT_LT(rel_rms, 0.3);  // measured 0.18 (qwen3moe), 0.14 (mixtral)
  std::error_code ec;
  fs::remove_all(path.parent_path(), ec);
}

INSTANTIATE_TEST_SUITE_P(Models, MoeGoldenTest, ::testing::Values("qwen3moe", "mixtral", "gpt-oss"));
INSTANTIATE_TEST_SUITE_P(Models, MoeGoldenHfTest, ::testing::Values("qwen3moe", "mixtral"));

}  // namespace
}  // namespace kvaudit
