// The bundled model's GGUF conversions (llama.cpp's own writer and quantizer) and the llama.cpp
// vocabulary files: everything opens, every tensor dequantizes, quantized weights stay close to f16;
// and the MXFP4 expert tensors of llama.cpp's gpt-oss-mxfp4 golden.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "quant/quant_type.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

std::optional<GgufFile> OpenOrFail(const std::string& rel) {
  auto g = GgufFile::Open(testing::Fixture(rel).string());
  if (!g.ok()) {
    ADD_FAILURE() << g.error().message;
    return std::nullopt;
  }
  return std::move(*g);
}

std::vector<float> Dequantized(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const Status s = DequantizeToF32(t, out.data());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

// sqrt(sum (a-b)^2 / sum b^2)
double RelRms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class IoGgufModel : public ::testing::TestWithParam<const char*> {};

TEST_P(IoGgufModel, OpensAndDequantizesEveryTensor) {
  const auto opened = OpenOrFail(std::string("models/gguf/kvq-code-16m-") + GetParam() + ".gguf");
  ASSERT_TRUE(opened.has_value());
  const GgufFile& g = *opened;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("llama.block_count"), 8);
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 384);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count_kv"), 2);
  EXPECT_NEAR(*g.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  const auto tokens = g.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(tokens->size(), 8192u);
  EXPECT_EQ((*tokens)[0], "<|endoftext|>");
  EXPECT_TRUE(g.GetStringArray("tokenizer.ggml.merges").ok());
  std::set<std::string> types;
  int64_t params = 0;
  for (const TensorView& t : g.tensors()) {
    types.insert(std::string(GetDTypeInfo(t.dtype).name));
    params += t.numel();
    const auto v = Dequantized(t);
    for (float x : v) ASSERT_TRUE(std::isfinite(x)) << t.name;
  }
  EXPECT_NEAR(static_cast<double>(params), 15.7e6, 0.3e6);
  std::string seen;
  for (const auto& s : types) seen += s + " ";
  RecordProperty("dtypes", seen);
  const TensorView* emb = g.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{8192, 384}));
}

INSTANTIATE_TEST_SUITE_P(Files, IoGgufModel, ::testing::Values("f16", "q8_0", "q4_k_m"));

TEST(IoGgufQuantized, CloseToF16) {
  const auto f16 = OpenOrFail("models/gguf/kvq-code-16m-f16.gguf");
  ASSERT_TRUE(f16.has_value());
  struct Case {
    const char* file;
    double max_rel_rms;
  };
  for (const Case c : {Case{"q8_0", 0.01}, Case{"q4_k_m", 0.08}}) {
    const auto q = OpenOrFail(std::string("models/gguf/kvq-code-16m-") + c.file + ".gguf");
    ASSERT_TRUE(q.has_value());
    std::map<std::string, double> worst;  // dtype -> largest relative RMS error over its tensors
    for (const TensorView& a : q->tensors()) {
      const TensorView* b = f16->FindTensor(a.name);
      ASSERT_NE(b, nullptr) << a.name;
      ASSERT_EQ(a.shape, b->shape) << a.name;
      if (a.dtype == DType::kF32) continue;  // norms stay f32 in every file
      const double err = RelRms(Dequantized(a), Dequantized(*b));
      EXPECT_LT(err, c.max_rel_rms) << c.file << " " << a.name << " (" << GetDTypeInfo(a.dtype).name << ")";
      EXPECT_GT(err, 0.0) << a.name << ": a quantized tensor should differ from f16";
      double& w = worst[std::string(GetDTypeInfo(a.dtype).name)];
      w = std::max(w, err);
    }
    for (const auto& [dtype, err] : worst) RecordProperty(std::string(c.file) + ":" + dtype, std::to_string(err));
    EXPECT_EQ(worst.size(), std::string(c.file) == "q8_0" ? 1u : 4u);
  }
}

// The expert tensors of llama.cpp's gpt-oss-mxfp4 golden (golden/llamacpp/README.md: f32 N(0, 0.1²)
// draws quantized by gguf-py's MXFP4) read as MXFP4, [n_expert, n_out, n_in] = [4, 64, 64] of
// 17-byte blocks, and decode to finite values with the draws' spread. Quantizing the decoded values
// again writes the file's bytes: our dequantizer and quantizer agree with the file's encoder on
// every block. (The model itself, arch gpt-oss, is not loaded here.)
TEST(IoGgufMxfp4, GptOssExpertTensorsDecode) {
  const auto opened = OpenOrFail("golden/llamacpp/gpt-oss-mxfp4/model.gguf");
  ASSERT_TRUE(opened.has_value());
  const GgufFile& g = *opened;
  int mxfp4 = 0;
  for (const TensorView& t : g.tensors()) {
    const bool expert = t.name.find("_exps.weight") != std::string::npos;
    EXPECT_EQ(t.dtype, expert ? DType::kMXFP4 : DType::kF32) << t.name;
    if (!expert) continue;
    ++mxfp4;
    EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 64, 64})) << t.name;
    EXPECT_EQ(t.nbytes, 4u * 64 * 64 / 32 * 17) << t.name;
    const std::vector<float> v = Dequantized(t);
    double sum = 0, sum2 = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << t.name;
      sum += x;
      sum2 += double{x} * x;
    }
    const double mean = sum / v.size(), std = std::sqrt(sum2 / v.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.01) << t.name;
    EXPECT_NEAR(std, 0.1, 0.015) << t.name;
    std::vector<uint8_t> again(t.nbytes);  // [nbytes]
    GetQuantTraits(QuantType::kMXFP4).quantize_ref(v.data(), again.data(), t.numel());
    EXPECT_EQ(std::memcmp(again.data(), t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_EQ(mxfp4, 9);  // 3 layers x gate, up, down
}

TEST(IoGgufVocab, LlamaCppVocabFilesOpen) {
  for (const char* v : {"llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2"}) {
    const auto g = OpenOrFail(std::string("tokenizers/ggml-vocab-") + v + ".gguf");
    ASSERT_TRUE(g.has_value()) << v;
    const auto tokens = g->GetStringArray("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << v << ": " << tokens.error().message;
    EXPECT_GT(tokens->size(), 1000u) << v;
    EXPECT_TRUE(g->GetString("tokenizer.ggml.model").ok()) << v;
  }
}

}  // namespace
}  // namespace kvaudit
