// engine=llama.cpp's weight products (ops/ggml/llamacpp_matmul.h) against llama.cpp's own, product
// by product: llamacpp_matmul_dump (scripts/llamacpp_matmul_dump.cc, built beside llama-server by
// scripts/build_llamacpp.sh) runs llama.cpp on each bundled GGUF and on requantizations of the f16
// one that llama-quantize makes at test time (kRequantized) — one 37-token prefill
// (tinyBLAS, the repacked gemm and its leftover gemv row) and two single-token decodes (vec_dot,
// gemv) — and records every weight product's inputs and outputs. Fed the same activation rows, the
// emulation must give the same bits for every product, and cover every weight type these files
// hold; kvaudit's exact products must not (else this test could not see a difference). On a host
// with AVX-512 (an AVX-512 llama.cpp build) f32/f16 sums are held to a bound: see
// ReferenceIsAvx512Build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/dequantize.h"
#include "kv/config/cache_config.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "io/gguf.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "ops/matmul.h"
#include "support/fixtures.h"
#include "support/llama_server.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

struct Product {
  std::string weight;
  uint32_t ggml_type = 0;
  int64_t k = 0, m = 0, n = 0;
  std::vector<float> x, y;  // [n, k] activations, [n, m] llama.cpp's outputs
};

std::vector<Product> ReadDump(const std::string& path) {
  std::vector<Product> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return ADD_FAILURE() << "cannot open " << path, out;
  uint32_t len = 0;
  while (std::fread(&len, 4, 1, f) == 1) {
    Product p;
    p.weight.resize(len);
    bool ok = std::fread(p.weight.data(), 1, len, f) == len && std::fread(&p.ggml_type, 4, 1, f) == 1 &&
              std::fread(&p.k, 8, 1, f) == 1 && std::fread(&p.m, 8, 1, f) == 1 && std::fread(&p.n, 8, 1, f) == 1;
    p.x.resize(static_cast<size_t>(p.n * p.k));
    p.y.resize(static_cast<size_t>(p.n * p.m));
    ok = ok && std::fread(p.x.data(), 4, p.x.size(), f) == p.x.size() &&
         std::fread(p.y.data(), 4, p.y.size(), f) == p.y.size();
    if (!ok) {
      ADD_FAILURE() << path << ": truncated record " << out.size();
      break;
    }
    out.push_back(std::move(p));
  }
  std::fclose(f);
  return out;
}

// Floats of a and b that differ in their bits.
int64_t BitMismatches(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], 4) != 0;
  return bad;
}

constexpr int kPrefill = 37, kDecodes = 2;

// scripts/build_llamacpp.sh builds llama.cpp with GGML_NATIVE: on a host with AVX-512F its f32/f16
// products and flash-attention f16 dots sum in 16 lanes, not the 8 of the AVX2 build kvaudit
// emulates (ops/ggml/vec_dot.h kEmulatedBuild), so there those are held to a bound instead of bits.
bool ReferenceIsAvx512Build() { return __builtin_cpu_supports("avx512f"); }
bool FloatSums(QuantType t) { return t == QuantType::kF32 || t == QuantType::kF16; }
// The bound where the bits cannot be equal: relative to the largest |value| of the compared rows.
constexpr double kAvx512Bound = 1e-3;

double MaxAbs(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, std::fabs(double(f)));
  return m;
}
double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// The files made from the bundled f16 GGUF by llama-quantize at test time (about 5 s in all, most
// of it iq4_nl's quantizer): every weight of the model has rows % 8 == 0, so q4_0 and iq4_nl take
// the repacked gemm/gemv and q4_1/q5_1 their vec_dot. q4_0 is --pure: token_embd and the tied
// output matrix (which llama.cpp repacks too) are q4_0 as well. iq4_nl keeps ffn_down in iq4_nl.
// Only the 1024-column ffn_down rows can hold a K-quant here (d_model 384 is not a multiple of
// 256): --pure Q2_K gives them q2_K, Q3_K_S q3_K, Q5_K_S q5_K, IQ4_XS iq4_xs (and one q5_K; its
// 37-row prefill takes iq4_xs's IQ panel), each beside q4_0 / q5_1 / iq4_nl / q8_0 fallbacks.
struct Requantized {
  const char* variant;
  const char* options;  // llama-quantize's flags before the files
  const char* type;     // its type argument
};
constexpr Requantized kRequantized[] = {
    {"q4_0", "--pure", "Q4_0"}, {"iq4_nl", "--tensor-type ffn_down=iq4_nl", "IQ4_NL"},
    {"q4_1", "", "Q4_1"},       {"q5_1", "", "Q5_1"},
    {"q2_k", "--pure", "Q2_K"}, {"q3_k_s", "", "Q3_K_S"},
    {"q5_k_s", "", "Q5_K_S"},   {"iq4_xs", "", "IQ4_XS"}};

// The GGUF of this variant: a bundled file, or a requantization written into dir ("" on failure).
std::string GgufOf(const std::string& variant, const std::filesystem::path& dir) {
  for (const Requantized& r : kRequantized) {
    if (variant != r.variant) continue;
    const auto quantize = testing::LlamaCppTool("llama-quantize");
    if (quantize.empty()) return "";
    const std::string f16 = testing::Fixture("models/gguf/kvq-code-16m-f16.gguf").string();
    const std::string out = (dir / (variant + ".gguf")).string();
    const testing::CliResult run =
        testing::RunShell(quantize.string() + " " + r.options + " " + f16 + " " + out + " " + r.type, 120);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.exit_code == 0 ? out : "";
  }
  return testing::Fixture("models/gguf/kvq-code-16m-" + variant + ".gguf").string();
}

// The GGUF of this variant and llama.cpp's products on it (the tools run once per variant).
struct Dumped {
  std::string gguf;
  std::vector<Product> products;
};
const Dumped& DumpOf(const std::string& variant) {
  static std::map<std::string, Dumped> done;
  if (done.count(variant)) return done[variant];
  Dumped& d = done[variant];
  const std::filesystem::path dir = testing::MakeTempDir("ggml-products");
  d.gguf = GgufOf(variant, dir);
  const auto tool = testing::LlamaCppTool("llamacpp_matmul_dump");
  if (tool.empty() || d.gguf.empty()) return d;
  const std::string dump = (dir / "products.bin").string();
  const testing::CliResult run = testing::RunShell(
      tool.string() + " " + d.gguf + " " + dump + " " + std::to_string(kPrefill) + " " + std::to_string(kDecodes), 300);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code == 0) d.products = ReadDump(dump);
  std::filesystem::remove(dump);  // ~10 MB; the GGUF stays for the forward-pass test
  return d;
}

class LlamaCppArithmetic : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppArithmetic, EveryProductIsLlamaCppsBitForBit) {
  const Dumped& d = DumpOf(GetParam());
  const std::string& gguf = d.gguf;
  const std::vector<Product>& products = d.products;
  ASSERT_GT(products.size(), 20u);

  auto file = GgufFile::Open(gguf);
  ASSERT_TRUE(file.ok()) << file.error().message;
  ThreadPool pool(2);
  std::map<std::string, int> covered, differs_from_exact;  // per weight type name
  std::map<int64_t, int> batches;                          // products per activation row count
  for (const Product& p : products) {
    const TensorView* t = file->FindTensor(p.weight);
    ASSERT_NE(t, nullptr) << p.weight;
    const auto type = QuantTypeOfDType(t->dtype);
    ASSERT_TRUE(type.has_value()) << p.weight;
    ASSERT_EQ(t->rows(), p.m) << p.weight;
    ASSERT_EQ(t->cols(), p.k) << p.weight;
    WeightMatrix w;
    w.AddExternalPart({t->data, *type, t->rows(), t->cols(), nullptr});
    if (!ggml::Covers(w.view())) {
      ADD_FAILURE() << p.weight << " (" << QuantTypeName(*type) << ") is outside the emulation";
      continue;
    }
    std::vector<float> ours(p.y.size()), exact(p.y.size());  // [n, m]
    ggml::LlamaCppMatMul(p.x.data(), p.n, w, ours.data(), pool);
    MatMul(p.x.data(), p.n, w, exact.data(), pool);
    if (ReferenceIsAvx512Build() && FloatSums(*type)) {
      EXPECT_LE(MaxDiff(ours, p.y), kAvx512Bound * MaxAbs(p.y)) << p.weight << " (AVX-512 llama.cpp build)";
    } else {
      EXPECT_EQ(BitMismatches(ours, p.y), 0) << p.weight << " (" << QuantTypeName(*type) << "), " << p.n << " rows";
    }
    const std::string name = QuantTypeName(*type);
    ++covered[name];
    differs_from_exact[name] += BitMismatches(exact, p.y) > 0;
    ++batches[p.n];
  }
  // Both kinds of kernel were seen: the prefill batch and the single-token decodes.
  EXPECT_GT(batches[kPrefill], 0);
  EXPECT_GT(batches[1], 0);
  for (const auto& [name, count] : covered) {
    std::printf("[%s] %s: %d products equal llama.cpp's; exact f32 differs in %d\n", GetParam().c_str(), name.c_str(),
                count, differs_from_exact[name]);
    EXPECT_GT(differs_from_exact[name], 0)
        << name << ": the exact products equal llama.cpp's too: the check sees nothing";
  }
}

// The whole engine=llama.cpp forward pass against llama.cpp's logits (the output products of the
// same run: f16 cache, flash attention, the dump tool's ids; a 37-token prefill and two decodes):
// llama.cpp's weight products, RMSNorm, RoPE table and rotation, SwiGLU and flash attention, so
// every logit has llama.cpp's bits (measured: max |Δlogit| 0 on all seven files, 2026-12-06).
TEST_P(LlamaCppArithmetic, ForwardPassLandsOnLlamaCppsLogits) {
  const Dumped& d = DumpOf(GetParam());
  auto model = Model::Load(d.gguf);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  std::vector<const Product*> outputs;  // llama.cpp's logits: the products of the output matrix
  for (const Product& p : d.products) {
    if (p.m == c.vocab_size) outputs.push_back(&p);
  }
  ASSERT_EQ(outputs.size(), 1u + kDecodes);
  std::vector<int32_t> ids;  // the dump tool's: id i = 1 + (i·7919) mod (vocab − 1)
  for (int i = 0; i < kPrefill + kDecodes; ++i)
    ids.push_back(1 + static_cast<int32_t>((i * 7919LL) % (c.vocab_size - 1)));
  auto built = MakeCache(c, *CacheConfig::Parse("k=f16,v=f16,engine=llama.cpp"), nullptr, 256);
  ASSERT_TRUE(built.ok()) << built.error().message;
  ThreadPool pool(2);
  Forward fwd(**model, **built, pool, 256);
  std::vector<float> logits(static_cast<size_t>(kPrefill) * c.vocab_size);  // [kPrefill, vocab]
  fwd.Run(std::span<const int32_t>(ids.data(), kPrefill), 0, logits.data(), /*all_logits=*/true);
  double worst = 0, top = 0;
  int argmax_differs = 0;
  auto compare = [&](const float* ours, const float* theirs, int64_t rows) {
    for (int64_t t = 0; t < rows; ++t) {
      const float* a = ours + t * c.vocab_size;
      const float* b = theirs + t * c.vocab_size;
      for (int v = 0; v < c.vocab_size; ++v) {
        worst = std::max(worst, std::fabs(double(a[v]) - b[v]));
        top = std::max(top, std::fabs(double(b[v])));
      }
      argmax_differs += std::max_element(a, a + c.vocab_size) - a != std::max_element(b, b + c.vocab_size) - b;
    }
  };
  compare(logits.data(), outputs[0]->y.data(), kPrefill);
  for (int i = 0; i < kDecodes; ++i) {
    fwd.Run(std::span<const int32_t>(&ids[kPrefill + i], 1), kPrefill + i, logits.data(), false);
    compare(logits.data(), outputs[1 + i]->y.data(), 1);
  }
  std::printf("[%s] engine=llama.cpp vs llama.cpp: max |Δlogit| %.3g of max |logit| %.3g, argmax differs at %d of %d\n",
              GetParam().c_str(), worst, top, argmax_differs, kPrefill + kDecodes);
  EXPECT_EQ(argmax_differs, 0);
  if (ReferenceIsAvx512Build()) {
    EXPECT_LE(worst, kAvx512Bound * top) << "AVX-512 llama.cpp build: its f16 dots sum in 16 lanes";
  } else {
    EXPECT_EQ(worst, 0.0) << "the emulated AVX2 build: every logit must have llama.cpp's bits";
  }
}

INSTANTIATE_TEST_SUITE_P(BundledGgufs, LlamaCppArithmetic, ::testing::Values("f16", "q8_0", "q4_k_m"));
INSTANTIATE_TEST_SUITE_P(Requantized, LlamaCppArithmetic,
                         ::testing::Values("q4_0", "iq4_nl", "q4_1", "q5_1", "q2_k", "q3_k_s", "q5_k_s", "iq4_xs"));

}  // namespace
}  // namespace kvaudit
