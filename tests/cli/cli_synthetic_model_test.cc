// kvaudit-synth-model (tools/synth_model.cc, docs/synthetic-models.md): random-weight models with
// real shapes and llama.cpp's tensor type mix. The tiny shape is written and run by kvaudit (info,
// score, tokenize); the real shapes only as --dry-run sizes, checked against sizes computed here
// from the shapes and ggml's block sizes and against the published files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "model/model.h"
#include "ops/rope.h"
#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;
using testing::RunCli;
using testing::RunShell;

std::string Vocab() { return Fixture("tokenizers/ggml-vocab-llama-bpe.gguf").string(); }

testing::CliResult Synth(const std::string& args, int timeout_s = 300) {
  const std::string bin = KVAUDIT_SYNTH_BINARY;
  EXPECT_FALSE(bin.empty()) << "kvaudit-synth-model was not built (tools/CMakeLists.txt)";
  return RunShell(bin + " " + args, timeout_s);
}

std::string LastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// The number after `label` ("file bytes: 123 ...") in the tool's output; -1 if absent.
long long Number(const std::string& out, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(label + ": ([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

// A few hundred tokens of the shared eval documents, as a plain text file.
fs::path SmallText(const fs::path& dir) {
  std::ifstream in(Fixture("data/eval-docs.jsonl"));
  std::string line;
  std::getline(in, line);
  const auto j = nlohmann::json::parse(line, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("text")) << line.substr(0, 200);
  const fs::path p = dir / "text.txt";
  std::ofstream(p) << (j.is_object() ? j.value("text", std::string()).substr(0, 1500) : std::string());
  return p;
}

// info --json of a model.
nlohmann::json InfoJson(const fs::path& model) {
  const auto r = RunCli("info --json --model " + model.string(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j.is_discarded() ? nlohmann::json::object() : j;
}

// info --json of a tiny Llama file, with the shapes every such file must have.
nlohmann::json InfoOf(const fs::path& model) {
  const nlohmann::json j = InfoJson(model);
  if (j.empty()) return j;
  const auto& m = j["model"];
  EXPECT_EQ(m["architecture"], "llama");
  EXPECT_EQ(m["layers"], 2);
  EXPECT_EQ(m["hidden"], 256);
  EXPECT_EQ(m["heads"], 4);
  EXPECT_EQ(m["kv_heads"], 2);
  EXPECT_EQ(m["head_dim"], 64);
  EXPECT_EQ(m["ffn"], 512);
  EXPECT_EQ(m["vocab"], 128256);
  EXPECT_EQ(m["rope"]["type"], "llama3");
  EXPECT_EQ(m["tied_embeddings"], false);
  EXPECT_FALSE(j["tokenizer"].is_null());
  return j;
}

std::set<std::string> StoredTypes(const nlohmann::json& info) {
  std::set<std::string> r;
  for (const auto& [k, v] : info["model"]["stored_dtypes"].items()) r.insert(k);
  return r;
}

// score on the small text: finite, and near ln(vocab) (random weights predict almost uniformly).
void ExpectFiniteScore(const fs::path& model, const fs::path& text) {
  const auto r = RunCli("score --model " + model.string() + " --data " + text.string() + " --ctx 128 --threads 2", 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(LastLine(r.out), nullptr, false);
  ASSERT_FALSE(s.is_discarded()) << r.out;
  EXPECT_GE(s["tokens"].get<int>(), 200);
  const double nll = s["mean_nll"].get<double>(), ppl = s["ppl"].get<double>();
  EXPECT_TRUE(std::isfinite(nll) && std::isfinite(ppl)) << r.out;
  EXPECT_NEAR(nll, std::log(128256.0), 2.0) << r.out;
}

// Dequantized weights of a tensor: mean ~0, std ~0.02 (synth_blocks.cc's target).
void ExpectSaneWeights(const GgufFile& g, const std::string& name) {
  const TensorView* t = g.FindTensor(name);
  ASSERT_NE(t, nullptr) << name;
  std::vector<float> w(static_cast<size_t>(t->numel()));
  ASSERT_TRUE(DequantizeToF32(*t, w.data()).ok()) << name;
  double sum = 0, sq = 0;
  for (float x : w) {
    ASSERT_TRUE(std::isfinite(x)) << name;
    sum += x;
    sq += static_cast<double>(x) * x;
  }
  const double mean = sum / w.size(), sd = std::sqrt(sq / w.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002) << name;
  EXPECT_NEAR(sd, 0.02, 0.002) << name;
}

TEST(SynthModelCliTest, TinyQ8_0GgufLoadsAndScores) {
  const fs::path dir = testing::MakeTempDir("synth");
  const fs::path model = dir / "tiny-q8_0.gguf";
  const auto dry = Synth("--shape tiny --type q8_0 --vocab " + Vocab() + " --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_FALSE(fs::exists(model));
  const auto w = Synth("--shape tiny --type q8_0 --vocab " + Vocab() + " --out " + model.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_TRUE(fs::exists(model));
  EXPECT_EQ(static_cast<long long>(fs::file_size(model)), Number(dry.out, "file bytes"));
  // llama.cpp's Q8_0 mix: every matrix q8_0, the embeddings and output included; norms f32.
  EXPECT_EQ(StoredTypes(InfoOf(model)), (std::set<std::string>{"F32", "Q8_0"}));
  auto g = GgufFile::Open(model.string());
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->GetInt("general.file_type").value(), 7);
  ExpectSaneWeights(*g, "blk.0.attn_q.weight");
  ExpectFiniteScore(model, SmallText(dir));
  fs::remove_all(dir);
}

TEST(SynthModelCliTest, TinyQ4_K_MGgufHasLlamaCppMixAndScores) {
  const fs::path dir = testing::MakeTempDir("synth");
  const fs::path model = dir / "tiny-q4_k_m.gguf";
  const auto w = Synth("--shape tiny --type q4_k_m --vocab " + Vocab() + " --out " + model.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(static_cast<long long>(fs::file_size(model)), Number(w.out, "file bytes"));
  EXPECT_EQ(StoredTypes(InfoOf(model)), (std::set<std::string>{"F32", "Q4_K", "Q6_K"}));

  auto g = GgufFile::Open(model.string());
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(g->GetInt("general.file_type").value(), 15);
  // use_more_bits(i, 2) holds for layer 1 only (i >= 7*2/8): attn_v and ffn_down are Q6_K there.
  const std::map<std::string, DType> want = {
      {"token_embd.weight", DType::kQ4_K},        {"output.weight", DType::kQ6_K},
      {"output_norm.weight", DType::kF32},        {"rope_freqs.weight", DType::kF32},
      {"blk.0.attn_q.weight", DType::kQ4_K},      {"blk.0.attn_k.weight", DType::kQ4_K},
      {"blk.0.attn_v.weight", DType::kQ4_K},      {"blk.1.attn_v.weight", DType::kQ6_K},
      {"blk.0.attn_output.weight", DType::kQ4_K}, {"blk.0.ffn_gate.weight", DType::kQ4_K},
      {"blk.0.ffn_up.weight", DType::kQ4_K},      {"blk.0.ffn_down.weight", DType::kQ4_K},
      {"blk.1.ffn_down.weight", DType::kQ6_K},    {"blk.1.attn_norm.weight", DType::kF32},
  };
  for (const auto& [name, type] : want) {
    const TensorView* t = g->FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(GetDTypeInfo(t->dtype).name, GetDTypeInfo(type).name) << name;
  }
  EXPECT_EQ(g->tensors().size(), 4u + 2 * 9);
  EXPECT_EQ(g->FindTensor("rope_freqs.weight")->numel(), 32);
  ExpectSaneWeights(*g, "blk.0.attn_q.weight");    // Q4_K
  ExpectSaneWeights(*g, "blk.1.ffn_down.weight");  // Q6_K
  // Every tokenizer.* key of the vocabulary, with its value.
  auto v = GgufFile::Open(Vocab());
  ASSERT_TRUE(v.ok()) << v.error().message;
  int n = 0;
  for (const auto& [key, value] : v->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    ++n;
    const GgufValue* got = g->Find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_EQ(got->type, value.type) << key;
    EXPECT_EQ(got->elem_type, value.elem_type) << key;
    EXPECT_EQ(got->i, value.i) << key;
    EXPECT_EQ(got->s, value.s) << key;
    EXPECT_EQ(got->ints, value.ints) << key;
    EXPECT_EQ(got->floats, value.floats) << key;
    EXPECT_EQ(got->strings, value.strings) << key;
  }
  EXPECT_GE(n, 5);
  ExpectFiniteScore(model, SmallText(dir));
  fs::remove_all(dir);
}

TEST(SynthModelCliTest, TinyBf16SafetensorsLoadsScoresAndTokenizesAsTheGguf) {
  const fs::path dir = testing::MakeTempDir("synth");
  const fs::path model = dir / "tiny-bf16";
  const auto w = Synth("--shape tiny --type bf16 --format safetensors --vocab " + Vocab() + " --out " + model.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_TRUE(fs::exists(model / f)) << f;
  }
  EXPECT_EQ(static_cast<long long>(fs::file_size(model / "model.safetensors")), Number(w.out, "file bytes"));
  const auto info = InfoOf(model);
  EXPECT_EQ(info["model"]["format"], "safetensors");
  EXPECT_EQ(StoredTypes(info), (std::set<std::string>{"BF16"}));
  const fs::path text = SmallText(dir);
  ExpectFiniteScore(model, text);
  // tokenizer.json, built from the vocabulary's tokens and merges, gives the GGUF tokenizer's ids.
  const fs::path gguf = dir / "tiny-f16.gguf";
  ASSERT_EQ(Synth("--shape tiny --type f16 --vocab " + Vocab() + " --out " + gguf.string()).exit_code, 0);
  const auto a = RunCli("tokenize --model " + model.string() + " --text-file " + text.string());
  const auto b = RunCli("tokenize --model " + gguf.string() + " --text-file " + text.string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_GT(a.out.size(), 200u);
  EXPECT_EQ(a.out, b.out);
  // llama3 RoPE two ways: the GGUF's rope_freqs.weight divisors and config.json's rope_scaling
  // give the same frequencies in kvaudit (ops/rope.cc follows transformers' _compute_llama3_parameters).
  auto cg = LoadModelConfig(gguf.string());
  auto ch = LoadModelConfig(model.string());
  ASSERT_TRUE(cg.ok() && ch.ok());
  ASSERT_FALSE(cg->rope.freq_divisors.empty());
  ASSERT_TRUE(ch->rope.freq_divisors.empty());
  const std::vector<float> fg = RopeInvFreq(cg->rope, 64), fh = RopeInvFreq(ch->rope, 64);
  ASSERT_EQ(fg.size(), fh.size());
  for (size_t i = 0; i < fg.size(); ++i) EXPECT_NEAR(fg[i], fh[i], 1e-5 * fh[i]) << i;
  const double lowest = std::pow(500000.0, -62.0 / 64) / 8;  // wavelength > 8192: divided by the factor, 8
  EXPECT_NEAR(fg.back(), lowest, 1e-4 * lowest);
  fs::remove_all(dir);
}

// Above --max-shard-bytes the weights go to shards named as transformers names them, with
// model.safetensors.index.json; kvaudit loads the set.
TEST(SynthModelCliTest, TinySafetensorsShardsLoad) {
  const fs::path dir = testing::MakeTempDir("synth");
  const fs::path model = dir / "tiny-sharded";
  const auto w = Synth("--shape tiny --type f16 --format safetensors --max-shard-bytes 50000000 --vocab " + Vocab() +
                       " --out " + model.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_FALSE(fs::exists(model / "model.safetensors"));
  ASSERT_TRUE(fs::exists(model / "model.safetensors.index.json"));
  const auto index =
      nlohmann::json::parse(testing::ReadFile((model / "model.safetensors.index.json").string()), nullptr, false);
  ASSERT_TRUE(index.is_object());
  std::set<std::string> files;
  for (const auto& [name, file] : index["weight_map"].items()) files.insert(file.get<std::string>());
  EXPECT_EQ(index["weight_map"].size(), 3u + 2 * 9);
  // output and token_embd (65.7 MB each) exceed 50 MB: each sits in a shard of its own.
  ASSERT_GE(files.size(), 3u);
  int k = 0;
  for (const std::string& f : files) {
    char want[64];
    std::snprintf(want, sizeof(want), "model-%05d-of-%05zu.safetensors", ++k, files.size());
    EXPECT_EQ(f, want);
  }
  long long total = 0;
  for (const std::string& f : files) total += static_cast<long long>(fs::file_size(model / f));
  EXPECT_EQ(total, Number(w.out, "file bytes"));
  EXPECT_EQ(StoredTypes(InfoOf(model)), (std::set<std::string>{"F16"}));
  fs::remove_all(dir);
}

TEST(SynthModelCliTest, DryRunOf8bBf16SafetensorsShardsAt5Gb) {
  const auto r = Synth("--shape llama-3.1-8b --type bf16 --format safetensors --vocab " + Vocab() + " --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Number(r.out, "tensor bytes"), 2LL * 8030261248);  // every parameter in bf16
  std::regex shard("model-0000([1-9])-of-00004\\.safetensors: ([0-9]+) bytes");
  int n = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), shard); it != std::sregex_iterator(); ++it, ++n) {
    EXPECT_LE(std::stoll((*it)[2]), 5'000'000'000LL) << r.out;
  }
  EXPECT_EQ(n, 4) << r.out;  // as meta-llama/Llama-3.1-8B: model-0000{1..4}-of-00004.safetensors
}

TEST(SynthModelCliTest, SameSeedSameBytesOtherSeedDiffers) {
  const fs::path dir = testing::MakeTempDir("synth");
  auto write = [&](const std::string& name, int seed) {
    const fs::path p = dir / name;
    const auto r = Synth("--shape tiny --type q4_k_m --seed " + std::to_string(seed) + " --vocab " + Vocab() +
                         " --out " + p.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return testing::ReadBytes(p);
  };
  const auto a = write("a.gguf", 7), b = write("b.gguf", 7), c = write("c.gguf", 8);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the same seed wrote different bytes";
  ASSERT_EQ(a.size(), c.size());
  EXPECT_FALSE(a == c) << "another seed wrote the same bytes";
  fs::remove_all(dir);
}

// ggml block sizes (ggml-common.h): bytes of n elements.
uint64_t Bytes(const std::string& type, uint64_t n) {
  if (type == "q4_K") return n / 256 * 144;
  if (type == "q6_K") return n / 256 * 210;
  if (type == "q8_0") return n / 32 * 34;
  return n * 4;  // f32
}

// Llama-3.1-8B Q4_K_M tensor bytes from its config.json shapes and llama.cpp's Q4_K_M rule
// (Q6_K: output, and attn_v / ffn_down of the layers i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2).
uint64_t Llama31_8bQ4KmBytes() {
  const uint64_t L = 32, d = 4096, kv = 1024, ff = 14336, V = 128256, hd = 128;
  uint64_t total = Bytes("q4_K", V * d) + Bytes("q6_K", V * d) + Bytes("f32", d) + Bytes("f32", hd / 2);
  for (uint64_t i = 0; i < L; ++i) {
    const bool more = i < L / 8 || i >= 7 * L / 8 || (i - L / 8) % 3 == 2;
    total += 2 * Bytes("f32", d) + 2 * Bytes("q4_K", d * d) + Bytes("q4_K", kv * d) +
             Bytes(more ? "q6_K" : "q4_K", kv * d) + 2 * Bytes("q4_K", ff * d) + Bytes(more ? "q6_K" : "q4_K", ff * d);
  }
  return total;
}

TEST(SynthModelCliTest, DryRunOf8bQ4_K_MMatchesTheShapesAndTheRealFile) {
  const auto r = Synth("--shape llama-3.1-8b --type q4_k_m --vocab " + Vocab() + " --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double expected = static_cast<double>(Llama31_8bQ4KmBytes());
  EXPECT_EQ(expected, 4912898304.0);
  EXPECT_NEAR(static_cast<double>(Number(r.out, "tensor bytes")), expected, 0.01 * expected) << r.out;
  EXPECT_NEAR(static_cast<double>(Number(r.out, "file bytes")), expected, 0.01 * expected) << r.out;
  // The published Q4_K_M file: ~4.9 GB (bartowski/Meta-Llama-3.1-8B-Instruct-GGUF; runyard.dev: 4.57 GiB).
  EXPECT_NEAR(static_cast<double>(Number(r.out, "file bytes")), 4.92e9, 0.01 * 4.92e9) << r.out;
  EXPECT_NE(r.out.find("parameters: 8030261248"), std::string::npos) << r.out;  // Llama-3.1-8B: 8.03B
}

TEST(SynthModelCliTest, DryRunOf1bTiesTheEmbeddingsAndMatchesTheRealFiles) {
  // bartowski/Llama-3.2-1B-Instruct-GGUF: Q4_K_M 0.81 GB, Q8_0 1.32 GB, f16 2.48 GB (two digits).
  for (const auto& [type, gb] :
       std::vector<std::pair<std::string, double>>{{"q4_k_m", 0.81}, {"q8_0", 1.32}, {"f16", 2.48}}) {
    const auto r = Synth("--shape llama-3.2-1b --type " + type + " --vocab " + Vocab() + " --dry-run");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NEAR(static_cast<double>(Number(r.out, "file bytes")), gb * 1e9, 0.006e9) << type << "\n" << r.out;
    EXPECT_EQ(r.out.find("\n  output "), std::string::npos) << "tied embeddings: no output tensor\n" << r.out;
  }
  // Tied: token_embd takes the output tensor's Q6_K under Q4_K_M.
  const auto r = Synth("--shape llama-3.2-1b --type q4_k_m --vocab " + Vocab() + " --dry-run");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\n  token_embd +\\[128256, 2048\\] +Q6_K\n"))) << r.out;
}

// A vocabulary smaller than the shape's is padded as convert_hf_to_gguf.py pads one ("[PAD{i}]",
// type UNUSED), so that llama.cpp's loader, which checks token_embd's rows against the token list,
// takes the file: GPT-2's 50257 tokens under tiny-gpt-oss's 128256 rows.
TEST(SynthModelCliTest, SmallerVocabulariesArePaddedToTheShapesRows) {
  const fs::path dir = testing::MakeTempDir("synth-pad");
  const fs::path model = dir / "tiny-gpt-oss.gguf";
  const auto w = Synth("--shape tiny-gpt-oss --type mxfp4_moe --vocab " +
                       Fixture("tokenizers/ggml-vocab-gpt-2.gguf").string() + " --out " + model.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  auto g = GgufFile::Open(model.string());
  ASSERT_TRUE(g.ok()) << g.error().message;
  const GgufValue* tokens = g->Find("tokenizer.ggml.tokens");
  const GgufValue* types = g->Find("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens && types);
  ASSERT_EQ(tokens->strings.size(), 128256u);
  EXPECT_EQ(tokens->strings[50256], "<|endoftext|>");
  EXPECT_EQ(tokens->strings[50257], "[PAD50257]");
  EXPECT_EQ(tokens->strings.back(), "[PAD128255]");
  ASSERT_EQ(types->ints.size(), 128256u);
  EXPECT_EQ(types->ints.back(), 5);
  EXPECT_EQ(g->FindTensor("token_embd.weight")->shape[0], 128256);
  ExpectFiniteScore(model, SmallText(dir));
  fs::remove_all(dir);
}

// The architectures beyond Llama at test size: written as llama.cpp's loaders want them, loaded by
// kvaudit as their architecture (sliding layers, experts), scored to finite numbers; gpt-oss's
// experts MXFP4 and the rest Q8_0 (mxfp4_moe), the others under llama.cpp's Q4_K_M mix.
TEST(SynthModelCliTest, TinyMoeGemmaAndGptOssLoadAndScore) {
  const fs::path dir = testing::MakeTempDir("synth-arch");
  const std::vector<std::tuple<std::string, std::string, std::string, std::set<std::string>>> cases = {
      {"tiny-qwen3moe", "q4_k_m", "qwen3moe", {"F32", "Q4_K", "Q6_K"}},
      {"tiny-gemma3", "q4_k_m", "gemma3", {"F32", "Q4_K", "Q6_K"}},
      {"tiny-gpt-oss", "mxfp4_moe", "gpt-oss", {"F32", "Q8_0", "MXFP4"}}};
  for (const auto& [shape, type, arch, types] : cases) {
    const fs::path model = dir / (shape + ".gguf");
    const auto w = Synth("--shape " + shape + " --type " + type + " --vocab " + Vocab() + " --out " + model.string());
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const nlohmann::json info = InfoJson(model);
    EXPECT_EQ(info["model"]["architecture"], arch) << info.dump();
    EXPECT_EQ(StoredTypes(info), types) << shape;
    EXPECT_EQ(info["model"]["sliding_layers"].empty(), arch == "qwen3moe") << info.dump();
    EXPECT_EQ(info["model"]["experts"].get<int>() > 0, arch != "gemma3") << info.dump();
    ExpectFiniteScore(model, SmallText(dir));
  }
  fs::remove_all(dir);
}

// The real shapes' sizes: the tensor bytes computed here from each config.json and ggml's block
// sizes, and the files as published (docs/synthetic-models.md).
TEST(SynthModelCliTest, DryRunsOfQwen3MoeGemma3AndGptOssMatchThePublishedFiles) {
  struct Case {
    std::string shape, type;
    double published;  // the size its model card gives, bytes
  };
  // gpt-oss-20b's experts: 24 layers × 32 experts × 3 matrices of 2880 × 2880, MXFP4 (17 B / 32).
  const double oss_experts = 24.0 * 32 * 3 * 2880 * 2880 * 17.0 / 32;
  const std::vector<Case> cases = {{"qwen3-30b-a3b", "q4_k_m", 17.28 * 1073741824.0},
                                   {"gemma-3-12b", "q4_k_m", 6.80 * 1073741824.0},
                                   {"gpt-oss-20b", "mxfp4_moe", 12.1e9}};
  for (const Case& c : cases) {
    const auto r = Synth("--shape " + c.shape + " --type " + c.type + " --vocab " + Vocab() + " --dry-run");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const double file = static_cast<double>(Number(r.out, "file bytes"));
    EXPECT_NEAR(file, c.published, 0.005 * c.published) << c.shape << "\n" << r.out;
    if (c.shape == "gpt-oss-20b") {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(r.out, m, std::regex("MXFP4 +72 tensors +[0-9]+ params +([0-9]+) bytes"))) << r.out;
      EXPECT_EQ(std::stod(m[1]), oss_experts);
    }
  }
}

TEST(SynthModelCliTest, BadFlagsAndVocabAreOneLineErrorsWithExit2) {
  for (const std::string& args : {
           std::string("--shape tiny --type q8_0 --vocab ") + Vocab() + " --out /tmp/x.gguf --bogus",
           std::string("--shape llama-9 --type q8_0 --vocab ") + Vocab() + " --dry-run",
           std::string("--shape tiny --type q3_k --vocab ") + Vocab() + " --dry-run",
           std::string("--shape tiny --type q4_k_m --format safetensors --vocab ") + Vocab() + " --dry-run",
           std::string("--shape tiny --type q8_0 --vocab /nonexistent/vocab.gguf --dry-run"),
           std::string("--shape tiny --type q8_0 --vocab ") + (testing::RepoDir() / "README.md").string() +
               " --dry-run",
           std::string("--shape tiny --type q8_0 --vocab ") + Vocab(),
           std::string("--shape tiny --type mxfp4_moe --vocab ") + Vocab() + " --dry-run",
           std::string("--shape gpt-oss-20b --type q4_k_m --vocab ") + Vocab() + " --dry-run",
           std::string("--shape tiny-gemma3 --type f16 --format safetensors --vocab ") + Vocab() + " --dry-run",
       }) {
    const auto r = Synth(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("kvaudit-synth-model: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("; hint: "), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto help = Synth("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("RANDOM WEIGHTS"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace kvaudit
