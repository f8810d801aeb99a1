// The format table is the one place a format is described (kv/formats/format_table.h): these tests
// hold its rows to the codecs and llama.cpp traits they point at, so a new row that is
// inconsistent fails here rather than in an end-to-end run.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "kv/formats/format_table.h"
#include "unit/kv_block_test_util.h"

namespace kvaudit {
namespace {

TEST(KvFormatTable, OneRowPerFormatNamesUniqueAndFoundByName) {
  std::set<std::string> names;
  for (const FormatRow& r : FormatTable()) {
    EXPECT_EQ(&Format(r.id), &r) << r.name;
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << "duplicate name " << r.name;
    ASSERT_EQ(KvFormatFromName(r.name), r.id) << r.name;
    EXPECT_FALSE(r.layout.empty() || r.deployed_by.empty()) << r.name;
  }
  EXPECT_FALSE(KvFormatFromName("q4_K").has_value());
  EXPECT_FALSE(KvFormatFromName("").has_value());
}

TEST(KvFormatTable, CodecsMatchTheirRowsAndFamilies) {
  for (const FormatRow& r : FormatTable()) {
    SCOPED_TRACE(std::string(r.name));
    if (r.family == FormatFamily::kKivi) {
      EXPECT_EQ(r.codec, nullptr);  // KIVI groups keys along tokens: not a per-row codec
      EXPECT_EQ(CodecFor(r.id, false), nullptr);
      continue;
    }
    ASSERT_NE(r.codec, nullptr);
    EXPECT_EQ(r.codec().name, r.name);
    EXPECT_EQ(CodecFor(r.id, false), &r.codec());
    EXPECT_EQ(r.dynamic_codec != nullptr, r.family == FormatFamily::kFp8);
    if (r.dynamic_codec != nullptr) {
      EXPECT_EQ(CodecFor(r.id, true), &r.dynamic_codec());
    }
    // A code holds code_bits; scales and metadata only add to that.
    EXPECT_GE(BitsPerElement(r.id, 64, false, 128), r.code_bits);
    const int block = r.codec().block_elems;
    EXPECT_EQ(FormatBlockElems(r.id), block > 1 ? block : 0);
    if (r.family == FormatFamily::kGgmlBlock) {
      EXPECT_EQ(block, 32);
    }
    EXPECT_EQ(r.codec_ref().name, r.name);
    EXPECT_EQ(r.codec_ref().quantize, r.codec().quantize);  // the twin differs in its kernels only
    // A per-tensor scale is what scale=calib derives: fp8 and nvfp4 have one.
    EXPECT_EQ(HasTensorScale(r.id),
              r.family == FormatFamily::kFp8 || r.id == KvFormat::kNvfp4 || r.id == KvFormat::kNvfp4FourOverSix);
  }
  EXPECT_DOUBLE_EQ(BitsPerElement(KvFormat::kKivi2, 32, false, 128), 3.0);
  EXPECT_DOUBLE_EQ(BitsPerElement(KvFormat::kQ4_0, 64, false, 128), 4.5);
  EXPECT_DOUBLE_EQ(BitsPerElement(KvFormat::kFp8E4M3, 64, true, 128), 9.0);
}

// The spec fuzzer's dictionary (scripts/fuzz_smoke.sh) names every format, so its mutations reach
// each row's codec and validation.
TEST(KvFormatTable, SpecFuzzDictionaryNamesEveryFormat) {
  std::ifstream in(std::string(KVAUDIT_SOURCE_DIR) + "/tests/fuzz/kv_spec.dict");
  ASSERT_TRUE(in.good());
  std::set<std::string> entries;
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= 2 && line.front() == '"' && line.back() == '"') entries.insert(line.substr(1, line.size() - 2));
  }
  for (const FormatRow& r : FormatTable()) EXPECT_TRUE(entries.count(std::string(r.name))) << r.name;
}

TEST(KvFormatTable, LlamaCppTypesAreTheFloatAndBlockFormats) {
  for (const FormatRow& r : FormatTable()) {
    SCOPED_TRACE(std::string(r.name));
    const bool llama = r.family == FormatFamily::kFloat || r.family == FormatFamily::kGgmlBlock;
    ASSERT_EQ(HasLlamaCppType(r.id), llama);
    if (!llama) continue;
    const ggml::GgmlType& t = r.ggml();
    EXPECT_NE(t.from_float, nullptr);
    EXPECT_EQ(t.to_codes != nullptr, r.family == FormatFamily::kGgmlBlock);
    EXPECT_EQ(t.vec_dot == ggml::VecDotKind::kFloat, r.family == FormatFamily::kFloat);
  }
}

// The expanded codes of every block format reproduce its dequantizer: value = d·code (+ m for the
// affine types), the relation llama.cpp's integer vec_dot relies on.
TEST(KvFormatTable, ExpandedCodesReproduceTheDequantizer) {
  constexpr int n = 128;
  const std::vector<float> x = block_test::Gaussian(n, 7);
  for (const FormatRow& r : FormatTable()) {
    if (r.family != FormatFamily::kGgmlBlock) continue;
    SCOPED_TRACE(std::string(r.name));
    const RowCodec& c = r.codec();
    std::vector<uint8_t> row(c.row_bytes(n, {}));
    r.ggml().from_float(x.data(), row.data(), n);
    std::vector<float> y(n);
    c.dequantize(row.data(), y.data(), n, {});
    std::vector<int8_t> codes(n);
    std::vector<float> d(n / 32), m(n / 32);
    r.ggml().to_codes(row.data(), n, {codes.data(), d.data(), m.data()});
    const bool affine = r.ggml().vec_dot == ggml::VecDotKind::kAffine;
    for (int i = 0; i < n; ++i) {
      const float value = affine ? d[i / 32] * codes[i] + m[i / 32] : d[i / 32] * codes[i];
      ASSERT_NEAR(value, y[i], 1e-6f * std::fabs(y[i]) + 1e-7f) << "element " << i;
    }
  }
}

// llama.cpp writes q8_0 K/V rows with its x86 quantizer, every other type with the reference one,
// which is the codec's quantize.
TEST(KvFormatTable, FromFloatIsTheCodecQuantizerButForQ8_0) {
  constexpr int n = 256;
  const std::vector<float> x = block_test::Gaussian(n, 11);
  for (const FormatRow& r : FormatTable()) {
    if (!HasLlamaCppType(r.id) || r.id == KvFormat::kQ8_0) continue;
    SCOPED_TRACE(std::string(r.name));
    const RowCodec& c = r.codec();
    std::vector<uint8_t> a(c.row_bytes(n, {})), b(a.size());
    r.ggml().from_float(x.data(), a.data(), n);
    c.quantize(x.data(), b.data(), n, {});
    EXPECT_EQ(a, b);
  }
}

}  // namespace
}  // namespace kvaudit
