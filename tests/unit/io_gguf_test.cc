#include "io/gguf.h"

#include <gtest/gtest.h>

#include "base/half.h"
#include "io/dequantize.h"
#include "support/fixtures.h"
#include "unit/io_builders.h"

namespace kvaudit {
namespace {

using testing::Bytes;
using testing::GgufBuilder;
using testing::MakeTempDir;
using testing::WriteBytes;

constexpr uint32_t kGgmlF32 = 0, kGgmlQ8_0 = 8;

// A small valid file: metadata of several types, f32 "w" ne={3, 2} and q8_0 "q" ne={32, 2}.
GgufBuilder Valid() {
  GgufBuilder b;
  b.Str("general.architecture", "llama").U32("llama.context_length", 4096).F32("eps", 1e-5f);
  b.Bool("flag", true).I32("neg", -7).U64("big", 1ull << 40);
  b.StrArray("tokenizer.ggml.tokens", {"<s>", "a", std::string("b\0c", 3)});
  b.I32Array("ids", {1, -2, 3}).F32Array("scores", {0.5f, -1.0f});
  b.AddTensor("w", {3, 2}, kGgmlF32, testing::PodBytes(std::vector<float>{1, 2, 3, 4, 5, 6}));
  Bytes q(68, 1);
  const uint16_t d = F32ToF16(0.5f);
  std::memcpy(&q[0], &d, 2);
  std::memcpy(&q[34], &d, 2);
  b.AddTensor("q", {32, 2}, kGgmlQ8_0, q);
  return b;
}

// Writes the bytes, opens them, expects a clean one-line bad-input error naming the file and `where`
// ("key 'x'" / "tensor 'y'") and containing `what`.
void ExpectRejected(const Bytes& bytes, const std::string& where, const std::string& what) {
  const auto p = WriteBytes(MakeTempDir("gguf") / "bad.gguf", bytes);
  auto g = GgufFile::Open(p.string());
  ASSERT_FALSE(g.ok());
  const std::string& msg = g.error().message;
  EXPECT_EQ(g.error().exit_code(), 2);
  EXPECT_EQ(msg.rfind(p.string() + ": ", 0), 0u) << msg;
  if (!where.empty()) {
    EXPECT_NE(msg.find("(" + where + ")"), std::string::npos) << msg;
  }
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_NE(msg.find("; hint: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(IoGguf, ReadsValidFile) {
  const auto p = WriteBytes(MakeTempDir("gguf") / "ok.gguf", Valid().Build());
  auto g = GgufFile::Open(p.string());
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(*g->GetString("general.architecture"), "llama");
  EXPECT_EQ(*g->GetInt("llama.context_length"), 4096);
  EXPECT_EQ(*g->GetInt("neg"), -7);
  EXPECT_EQ(*g->GetInt("big"), int64_t{1} << 40);
  EXPECT_FLOAT_EQ(static_cast<float>(*g->GetFloat("eps")), 1e-5f);
  EXPECT_EQ(*g->GetFloat("llama.context_length"), 4096.0);  // integers widen to float
  EXPECT_TRUE(*g->GetBool("flag"));
  EXPECT_EQ(*g->GetStringArray("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"<s>", "a", std::string("b\0c", 3)}));
  EXPECT_EQ(*g->GetIntArray("ids"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(*g->GetFloatArray("scores"), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(*g->GetFloatArray("ids"), (std::vector<double>{1, -2, 3}));
  ASSERT_EQ(g->tensors().size(), 2u);
  const TensorView* w = g->FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));  // ne reversed: outermost first
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 32, 0u);
  std::vector<float> wv(6), qv(64);
  ASSERT_TRUE(DequantizeToF32(*w, wv.data()).ok());
  EXPECT_EQ(wv, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const TensorView* q = g->FindTensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(q->nbytes, 68u);
  ASSERT_TRUE(DequantizeToF32(*q, qv.data()).ok());
  EXPECT_EQ(qv[63], 0.5f);
  EXPECT_EQ(g->FindTensor("nope"), nullptr);
}

TEST(IoGguf, AcceptsV2AndCustomAlignment) {
  GgufBuilder b = Valid();
  b.version = 2;
  b.alignment = 64;
  b.U32("general.alignment", 64);
  const Bytes bytes = b.Build();
  auto g = GgufFile::Parse(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->version(), 2u);
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ((g->FindTensor("q")->data - bytes.data()) % 64, 0);
}

TEST(IoGguf, VocabOnlyFileWithoutTensors) {
  GgufBuilder b;
  b.StrArray("tokenizer.ggml.tokens", {"x"});
  const Bytes bytes = b.Build();
  auto g = GgufFile::Parse(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(g->tensors().empty());
}

TEST(IoGguf, GettersNameTheKey) {
  const Bytes bytes = Valid().Build();
  auto g = GgufFile::Parse(bytes.data(), bytes.size(), "model.gguf");
  ASSERT_TRUE(g.ok());
  const auto missing = g->GetInt("llama.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code(), 2);
  EXPECT_NE(missing.error().message.find("model.gguf: missing"), std::string::npos);
  EXPECT_NE(missing.error().message.find("key 'llama.block_count'"), std::string::npos);
  const auto wrong = g->GetString("llama.context_length");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("key 'llama.context_length'"), std::string::npos);
  EXPECT_NE(wrong.error().message.find("is u32, expected string"), std::string::npos);
  EXPECT_FALSE(g->GetStringArray("ids").ok());
  EXPECT_FALSE(g->GetBool("neg").ok());
}

TEST(IoGguf, RejectsEmptyFile) { ExpectRejected({}, "", "not a GGUF file"); }
TEST(IoGguf, RejectsBadMagic) {
  GgufBuilder b = Valid();
  b.magic[3] = 'X';
  ExpectRejected(b.Build(), "", "not a GGUF file");
}
TEST(IoGguf, RejectsVersion1) {
  GgufBuilder b = Valid();
  b.version = 1;
  ExpectRejected(b.Build(), "", "GGUF v1 is not supported");
}
TEST(IoGguf, RejectsUnknownVersion) {
  GgufBuilder b = Valid();
  b.version = 99;
  ExpectRejected(b.Build(), "", "unsupported GGUF version 99");
}
TEST(IoGguf, RejectsTruncatedHeader) {
  Bytes bytes = Valid().Build();
  bytes.resize(12);
  ExpectRejected(bytes, "", "truncated header");
}
TEST(IoGguf, RejectsAbsurdKvCount) {
  GgufBuilder b = Valid();
  b.n_kv_override = 1ull << 60;
  ExpectRejected(b.Build(), "", "metadata count");
}
TEST(IoGguf, RejectsAbsurdTensorCount) {
  GgufBuilder b = Valid();
  b.n_tensors_override = 1ull << 60;
  ExpectRejected(b.Build(), "", "tensor count");
}
TEST(IoGguf, RejectsKeyLongerThanFile) {
  GgufBuilder b;
  b.n_kv_override = 1;
  Bytes bytes = b.Build();
  testing::AppendPod<uint64_t>(&bytes, 1ull << 40);  // key length
  bytes.resize(bytes.size() + 16, 'k');
  ExpectRejected(bytes, "", "truncated metadata key #0");
}
TEST(IoGguf, RejectsStringValueLongerThanFile) {
  GgufBuilder b;
  Bytes payload;
  testing::AppendPod<uint64_t>(&payload, ~uint64_t{0});
  payload.resize(payload.size() + 8, 'x');
  b.kvs.push_back({"general.name", 8, payload});
  ExpectRejected(b.Build(), "key 'general.name'", "truncated string value");
}
TEST(IoGguf, RejectsArrayLongerThanFile) {
  GgufBuilder b;
  Bytes payload;
  testing::AppendPod<uint32_t>(&payload, 4);  // u32 elements
  testing::AppendPod<uint64_t>(&payload, 1ull << 50);
  b.kvs.push_back({"tokenizer.ggml.token_type", 9, payload});
  ExpectRejected(b.Build(), "key 'tokenizer.ggml.token_type'", "exceeds the file");
}
TEST(IoGguf, RejectsNestedArray) {
  GgufBuilder b;
  Bytes payload;
  testing::AppendPod<uint32_t>(&payload, 9);
  testing::AppendPod<uint64_t>(&payload, 0);
  b.kvs.push_back({"nested", 9, payload});
  ExpectRejected(b.Build(), "key 'nested'", "nested arrays");
}
TEST(IoGguf, RejectsUnknownValueType) {
  GgufBuilder b;
  b.Scalar<uint32_t>("weird", 13, 0);
  ExpectRejected(b.Build(), "key 'weird'", "unknown metadata value type 13");
}
TEST(IoGguf, RejectsDuplicateKey) {
  GgufBuilder b = Valid();
  b.U32("llama.context_length", 2048);
  ExpectRejected(b.Build(), "key 'llama.context_length'", "duplicate metadata key");
}
TEST(IoGguf, RejectsNonPowerOfTwoAlignment) {
  GgufBuilder b = Valid();
  b.U32("general.alignment", 48);
  ExpectRejected(b.Build(), "key 'general.alignment'", "power of two");
}
TEST(IoGguf, RejectsZeroAlignment) {
  GgufBuilder b = Valid();
  b.U32("general.alignment", 0);
  ExpectRejected(b.Build(), "key 'general.alignment'", "power of two");
}
TEST(IoGguf, RejectsTooManyDims) {
  GgufBuilder b = Valid();
  b.AddTensor("t5", {1, 1, 1, 1, 1}, kGgmlF32, Bytes(4));
  ExpectRejected(b.Build(), "tensor 't5'", "5 dimensions");
}
TEST(IoGguf, RejectsOverflowingShape) {
  GgufBuilder b = Valid();
  b.AddTensor("huge", {1ull << 32, 1ull << 32}, kGgmlF32, Bytes(4));
  ExpectRejected(b.Build(), "tensor 'huge'", "overflows");
}
TEST(IoGguf, RejectsOverflowingShapeWithZeroDim) {  // fuzz find: numel() overflowed (UBSan)
  GgufBuilder b = Valid();
  b.AddTensor("z", {0, 1ull << 40, 1ull << 40}, kGgmlF32, Bytes());
  ExpectRejected(b.Build(), "tensor 'z'", "overflows");
}
TEST(IoGguf, RejectsByteSizeOverflow) {  // fuzz find: 2^62+8 f32 elements "needed" 32 bytes
  GgufBuilder b;
  b.AddTensor("a", {(1ull << 62) + 8}, kGgmlF32, Bytes(32));
  ExpectRejected(b.Build(), "tensor 'a'", "overflow");
}
TEST(IoGguf, RejectsUnknownTensorType) {
  GgufBuilder b = Valid();
  b.AddTensor("iq", {256}, 16 /* IQ2_XXS */, Bytes(66));
  ExpectRejected(b.Build(), "tensor 'iq'", "unsupported ggml type id 16");
}
TEST(IoGguf, RejectsRowNotMultipleOfBlock) {
  GgufBuilder b = Valid();
  b.AddTensor("k", {384, 1}, 12 /* Q4_K */, Bytes(216));
  ExpectRejected(b.Build(), "tensor 'k'", "ne[0] = 384 is not a multiple of the Q4_K block size 256");
}
TEST(IoGguf, RejectsMisalignedOffset) {
  GgufBuilder b = Valid();
  b.tensors[1].offset = 36;
  ExpectRejected(b.Build(), "tensor 'q'", "not a multiple of the alignment 32");
}
TEST(IoGguf, RejectsDataBeyondFile) {
  GgufBuilder b = Valid();
  b.tensors[1].offset = 1ull << 40;
  ExpectRejected(b.Build(), "tensor 'q'", "beyond the end of the file");
}
TEST(IoGguf, RejectsTruncatedData) {
  Bytes bytes = Valid().Build();
  bytes.resize(bytes.size() - 1);
  ExpectRejected(bytes, "tensor 'q'", "beyond the end of the file");
}
TEST(IoGguf, RejectsOverlappingTensors) {
  GgufBuilder b = Valid();
  b.tensors[1].offset = 0;  // q placed on top of w
  ExpectRejected(b.Build(), "tensor 'q'", "overlaps tensor 'w'");
}
TEST(IoGguf, RejectsDuplicateTensorName) {
  GgufBuilder b = Valid();
  b.AddTensor("w", {3, 2}, kGgmlF32, Bytes(24));
  ExpectRejected(b.Build(), "tensor 'w'", "duplicate tensor name");
}
TEST(IoGguf, RejectsTruncatedTensorInfo) {
  GgufBuilder b = Valid();
  b.tensors.clear();
  b.n_tensors_override = 1;
  Bytes bytes = b.Build();
  testing::AppendStr(&bytes, "cut");
  testing::AppendPod<uint32_t>(&bytes, 2);
  testing::AppendPod<uint64_t>(&bytes, 4);
  bytes.resize(bytes.size() + 12);  // enough to pass the count cap, not for the whole info
  ExpectRejected(bytes, "tensor 'cut'", "truncated tensor info");
}

}  // namespace
}  // namespace kvaudit
