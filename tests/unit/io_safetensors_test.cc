#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/half.h"
#include "io/dequantize.h"
#include "support/fixtures.h"
#include "unit/io_builders.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::Bytes;
using testing::MakeSafetensors;
using testing::MakeTempDir;
using testing::WriteBytes;
using testing::WriteText;

// A two-tensor file: "a" f32 [2, 3] at [0, 24), "b" bf16 [4] at [24, 32).
const char* kHeader = R"({"__metadata__": {"format": "pt"},)"
                      R"( "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},)"
                      R"( "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]}})";

Bytes ValidData() {
  Bytes data = testing::PodBytes(std::vector<float>{1, 2, 3, 4, 5, 6});
  for (float v : {0.5f, -1.0f, 2.0f, 8.0f}) testing::AppendPod<uint16_t>(&data, F32ToBF16(v));
  return data;
}

// Writes a file with this header and ValidData(), opens it, expects a clean bad-input error that
// names the file and (if given) the tensor.
void ExpectRejected(const std::string& header, const std::string& tensor, const std::string& what = "",
                    std::optional<uint64_t> len = std::nullopt, Bytes data = ValidData()) {
  const auto p = WriteBytes(MakeTempDir("st") / "bad.safetensors", MakeSafetensors(header, data, len));
  auto st = SafetensorsFile::Open(p.string());
  ASSERT_FALSE(st.ok());
  const std::string& msg = st.error().message;
  EXPECT_EQ(st.error().exit_code(), 2);
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  if (!tensor.empty()) {
    EXPECT_NE(msg.find("tensor '" + tensor + "'"), std::string::npos) << msg;
  }
  if (!what.empty()) {
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
  EXPECT_NE(msg.find("hint:"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
}

std::string OneTensor(const std::string& body) { return R"({"t": )" + body + "}"; }

TEST(IoSafetensors, ReadsValidFile) {
  const auto p = WriteBytes(MakeTempDir("st") / "ok.safetensors", MakeSafetensors(kHeader, ValidData()));
  auto st = SafetensorsFile::Open(p.string());
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(st->tensors().size(), 2u);
  EXPECT_EQ(st->metadata().at("format"), "pt");
  const TensorView* a = st->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->rows(), 2);
  std::vector<float> av(6), bv(4);
  ASSERT_TRUE(DequantizeToF32(*a, av.data()).ok());
  EXPECT_EQ(av, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(DequantizeToF32(*st->Find("b"), bv.data()).ok());
  EXPECT_EQ(bv, (std::vector<float>{0.5f, -1.0f, 2.0f, 8.0f}));
  EXPECT_EQ(st->Find("missing"), nullptr);
}

TEST(IoSafetensors, EmptyHeaderAndZeroSizeTensors) {
  const Bytes b = MakeSafetensors(R"({"z": {"dtype": "F16", "shape": [0, 8], "data_offsets": [0, 0]}})", {});
  auto st = SafetensorsFile::Parse(b.data(), b.size(), "mem");
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->Find("z")->numel(), 0);
  const Bytes e = MakeSafetensors("{}  ", {});  // writers pad the header with spaces
  EXPECT_TRUE(SafetensorsFile::Parse(e.data(), e.size(), "mem").ok());
}

TEST(IoSafetensors, RejectsFileShorterThanLength) {
  const auto p = WriteText(MakeTempDir("st") / "tiny.safetensors", "abc");
  auto st = SafetensorsFile::Open(p.string());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code(), 2);
  EXPECT_NE(st.error().message.find(p.string()), std::string::npos);
}
TEST(IoSafetensors, RejectsHeaderLengthBeyondFile) { ExpectRejected(kHeader, "", "exceeds the file", 1u << 30); }
TEST(IoSafetensors, RejectsHugeHeaderLength) { ExpectRejected(kHeader, "", "exceeds the file", ~uint64_t{0}); }
TEST(IoSafetensors, RejectsNonJsonHeader) { ExpectRejected(R"({"a": {"dtype": )", "", "not valid JSON"); }
TEST(IoSafetensors, RejectsNonObjectHeader) { ExpectRejected("[1, 2, 3]", "", "not a JSON object"); }
TEST(IoSafetensors, RejectsEntryNotObject) { ExpectRejected(OneTensor("7"), "t"); }
TEST(IoSafetensors, RejectsMissingField) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [1]})"), "t", "data_offsets");
}
TEST(IoSafetensors, RejectsUnknownDtype) {
  ExpectRejected(OneTensor(R"({"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]})"), "t", "F8_E4M3");
}
TEST(IoSafetensors, RejectsBlockDtype) {
  ExpectRejected(OneTensor(R"({"dtype": "Q4_K", "shape": [256], "data_offsets": [0, 144]})"), "t", "Q4_K");
}
TEST(IoSafetensors, RejectsNonStringDtype) {
  ExpectRejected(OneTensor(R"({"dtype": 3, "shape": [1], "data_offsets": [0, 4]})"), "t", "dtype");
}
TEST(IoSafetensors, RejectsNegativeShape) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [-1, 2], "data_offsets": [0, 8]})"), "t", "shape");
}
TEST(IoSafetensors, RejectsNonIntegerShape) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})"), "t", "shape");
}
TEST(IoSafetensors, RejectsOverflowingShape) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]})"), "t",
                 "overflow");
}
TEST(IoSafetensors, RejectsOverflowingShapeWithZeroDim) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]})"), "t",
                 "overflow");
}
TEST(IoSafetensors, RejectsByteSizeOverflow) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [4611686018427387912], "data_offsets": [0, 32]})"), "t",
                 "impossible size");
}
TEST(IoSafetensors, RejectsOffsetsBeyondData) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [16], "data_offsets": [0, 64]})"), "t", "outside");
}
TEST(IoSafetensors, RejectsReversedOffsets) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [0], "data_offsets": [8, 4]})"), "t", "outside");
}
TEST(IoSafetensors, RejectsMalformedOffsets) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})"), "t", "data_offsets");
}
TEST(IoSafetensors, RejectsByteCountMismatch) {
  ExpectRejected(OneTensor(R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]})"), "t", "need 24");
}
TEST(IoSafetensors, RejectsOverlappingTensors) {
  ExpectRejected(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                 R"( "b": {"dtype": "F32", "shape": [4], "data_offsets": [12, 28]}})",
                 "b", "overlaps tensor 'a'");
}
TEST(IoSafetensors, RejectsDuplicateTensorName) {
  ExpectRejected(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                 R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                 "a", "duplicate");
}
TEST(IoSafetensors, RejectsNonStringMetadata) {
  ExpectRejected(R"({"__metadata__": {"format": 1}})", "", "__metadata__");
  ExpectRejected(R"({"__metadata__": []})", "", "__metadata__");
}

// --- SafetensorsSet -------------------------------------------------------------------------

// Two shards: s1 holds "a", s2 holds "b"; the index maps them.
fs::path ShardedDir(const std::string& weight_map) {
  const auto dir = MakeTempDir("stset");
  const Bytes d = testing::PodBytes(std::vector<float>{1, 2});
  WriteBytes(dir / "s1.safetensors",
             MakeSafetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", d));
  WriteBytes(dir / "s2.safetensors",
             MakeSafetensors(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", d));
  WriteText(dir / "model.safetensors.index.json", R"({"metadata": {}, "weight_map": )" + weight_map + "}");
  return dir;
}

void ExpectSetRejected(const fs::path& dir, const std::string& must_contain1, const std::string& must_contain2) {
  auto set = SafetensorsSet::OpenDir(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().exit_code(), 2);
  EXPECT_NE(set.error().message.find(must_contain1), std::string::npos) << set.error().message;
  EXPECT_NE(set.error().message.find(must_contain2), std::string::npos) << set.error().message;
}

TEST(IoSafetensorsSet, SingleFile) {
  const auto dir = MakeTempDir("stset");
  WriteBytes(dir / "model.safetensors", MakeSafetensors(kHeader, ValidData()));
  auto set = SafetensorsSet::OpenDir(dir.string());
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->names(), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(set->Find("b"), nullptr);
  EXPECT_EQ(set->Find("b")->dtype, DType::kBF16);
}

TEST(IoSafetensorsSet, ShardedIndex) {
  auto set = SafetensorsSet::OpenDir(ShardedDir(R"({"a": "s1.safetensors", "b": "s2.safetensors"})").string());
  ASSERT_TRUE(set.ok()) << set.error().message;
  SafetensorsSet moved = std::move(*set);  // pointers into the shards survive a move
  ASSERT_NE(moved.Find("a"), nullptr);
  ASSERT_NE(moved.Find("b"), nullptr);
  float v[2];
  ASSERT_TRUE(DequantizeToF32(*moved.Find("b"), v).ok());
  EXPECT_EQ(v[1], 2.0f);
}

TEST(IoSafetensorsSet, MissingShardIsNamed) {
  ExpectSetRejected(ShardedDir(R"({"a": "s1.safetensors", "b": "s3.safetensors"})"), "s3.safetensors", "tensor 'b'");
}
TEST(IoSafetensorsSet, TensorAbsentFromItsShard) {
  ExpectSetRejected(ShardedDir(R"({"a": "s2.safetensors"})"), "tensor 'a'", "s2.safetensors");
}
TEST(IoSafetensorsSet, IndexWithoutWeightMap) {
  const auto dir = ShardedDir("{}");
  WriteText(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  ExpectSetRejected(dir, "model.safetensors.index.json", "weight_map");
}
TEST(IoSafetensorsSet, IndexNotJson) {
  const auto dir = ShardedDir("{}");
  WriteText(dir / "model.safetensors.index.json", "{weight_map");
  ExpectSetRejected(dir, "model.safetensors.index.json", "JSON");
}
TEST(IoSafetensorsSet, ShardPathEscapingDirectory) {
  ExpectSetRejected(ShardedDir(R"({"a": "../s1.safetensors"})"), "tensor 'a'", "plain file name");
}
TEST(IoSafetensorsSet, NeitherFilePresent) {
  const auto dir = MakeTempDir("stset");
  ExpectSetRejected(dir, dir.string(), "hint:");
}
TEST(IoSafetensorsSet, BadShardNamesShardFile) {
  const auto dir = ShardedDir(R"({"a": "s1.safetensors", "b": "s2.safetensors"})");
  WriteText(dir / "s2.safetensors", "garbage!garbage!");
  ExpectSetRejected(dir, "s2.safetensors", "exceeds the file");
}

// --- real files -----------------------------------------------------------------------------

void ExpectAllConvertible(const std::vector<TensorView>& ts) {
  for (const TensorView& t : ts) {
    if (!GetDTypeInfo(t.dtype).float_convertible) continue;
    std::vector<float> out(static_cast<size_t>(t.numel()));
    const Status s = DequantizeToF32(t, out.data());
    EXPECT_TRUE(s.ok()) << s.error().message;
  }
}

TEST(IoSafetensorsReal, GoldenLlama) {
  auto st = SafetensorsFile::Open(testing::Fixture("golden/llama/model.safetensors").string());
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_GT(st->tensors().size(), 10u);
  ExpectAllConvertible(st->tensors());
  auto ref = SafetensorsFile::Open(testing::Fixture("golden/llama/reference.safetensors").string());
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  ASSERT_NE(ref->Find("logits"), nullptr);
  EXPECT_EQ(ref->Find("logits")->shape, (std::vector<int64_t>{96, 256}));
  EXPECT_EQ(ref->Find("input_ids")->dtype, DType::kI32);
}

TEST(IoSafetensorsReal, BundledShardedModel) {
  const auto dir = testing::BundledModelDir();
  auto set = SafetensorsSet::OpenDir(dir.string());
  ASSERT_TRUE(set.ok()) << set.error().message;
  std::ifstream in(dir / "model.safetensors.index.json");
  const auto index = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(index.is_discarded());
  EXPECT_EQ(set->names().size(), index["weight_map"].size());
  const TensorView* emb = set->Find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kBF16);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{8192, 384}));
  std::vector<float> row(384);
  ASSERT_TRUE(DequantizeRowsToF32(*emb, 100, 1, row.data()).ok());
  double ss = 0;
  for (float v : row) ss += v * v;
  EXPECT_GT(ss, 0.0);
}

}  // namespace
}  // namespace kvaudit
