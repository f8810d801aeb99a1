// The traits table is the one definition of each number format: io's DType and the KV cache's
// KvFormat map onto its rows one to one, with the same names and sizes, and the cache writes
// the bytes of the row's reference quantizer.
#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/dequantize.h"
#include "io/dtype.h"
#include "io/gguf.h"
#include "kv/formats/format_table.h"
#include "quant/quant_type.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(QuantType, EveryBlockTypeHasItsFunctions) {
  for (int i = 0; i < kNumQuantTypes; ++i) {
    const QuantTraits& r = kQuantTable[i];
    EXPECT_EQ(r.block_elems > 1, r.dequantize_ref != nullptr) << r.name << ": a block type decodes, f32/f16 do not";
    // A KV format quantizes and has codes; mxfp4 (weights only) quantizes for tests and synthetic
    // weights, without codes.
    const bool weights_quantizer = r.id == QuantType::kMXFP4;
    EXPECT_EQ(r.quantize_ref != nullptr, r.to_codes != nullptr || weights_quantizer) << r.name;
  }
}

// A GGUF tensor of each block type reads as that format: ggml.h's enum ggml_type ids.
TEST(QuantType, EveryBlockTypeHasItsGgufTypeId) {
  const struct {
    uint32_t ggml_id;
    QuantType q;
  } rows[] = {{2, QuantType::kQ4_0},  {3, QuantType::kQ4_1},  {6, QuantType::kQ5_0},    {7, QuantType::kQ5_1},
              {8, QuantType::kQ8_0},  {10, QuantType::kQ2_K}, {11, QuantType::kQ3_K},   {12, QuantType::kQ4_K},
              {13, QuantType::kQ5_K}, {14, QuantType::kQ6_K}, {20, QuantType::kIQ4_NL}, {23, QuantType::kIQ4_XS},
              {39, QuantType::kMXFP4}};
  std::set<QuantType> seen;
  for (const auto& r : rows) {
    const std::optional<DType> d = DTypeFromGgmlType(r.ggml_id);
    ASSERT_TRUE(d.has_value()) << r.ggml_id;
    EXPECT_EQ(QuantTypeOfDType(*d), r.q) << r.ggml_id;
    EXPECT_EQ(Upper(QuantTypeName(r.q)), GetDTypeInfo(*d).name);
    seen.insert(r.q);
  }
  for (int i = 0; i < kNumQuantTypes; ++i) {
    const auto q = static_cast<QuantType>(i);
    EXPECT_EQ(seen.count(q), IsBlockType(q) ? 1u : 0u) << QuantTypeName(q);
  }
  EXPECT_EQ(GetDTypeInfo(DType::kMXFP4).name, "MXFP4");
  EXPECT_FALSE(DTypeFromGgmlType(40).has_value());  // NVFP4: not read
}

TEST(QuantType, EveryDTypeWithAFormatHasItsNameAndSizes) {
  std::set<QuantType> seen;
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType d = static_cast<DType>(i);
    const DTypeInfo& info = GetDTypeInfo(d);
    const std::optional<QuantType> q = QuantTypeOfDType(d);
    if (!q) continue;
    const QuantTraits& t = GetQuantTraits(*q);
    EXPECT_EQ(Upper(t.name), info.name);
    EXPECT_EQ(t.block_elems, info.block_elems) << t.name;
    EXPECT_EQ(t.block_bytes, info.block_bytes) << t.name;
    EXPECT_TRUE(seen.insert(*q).second) << t.name << " is the format of two DTypes";
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kNumQuantTypes)) << "a QuantType no file type maps to";
}

TEST(QuantType, EveryKvBlockFormatIsItsTraitsRow) {
  int block_formats = 0;
  for (const FormatRow& f : FormatTable()) {
    if (f.family != FormatFamily::kGgmlBlock) continue;
    ++block_formats;
    const QuantTraits* row = nullptr;
    for (const QuantTraits& t : kQuantTable) {
      if (t.name == f.name) row = &t;
    }
    ASSERT_NE(row, nullptr) << f.name << " has no traits row";
    ASSERT_NE(row->quantize_ref, nullptr) << f.name << ": a KV block format quantizes with its row's reference";
    EXPECT_EQ(FormatBlockElems(f.id), row->block_elems);
    EXPECT_EQ(f.codec().row_bytes(256, CodecParams{}),
              static_cast<uint64_t>(256 / row->block_elems * row->block_bytes));
    EXPECT_EQ(f.ggml().to_codes, row->to_codes) << f.name;
    // The cache's bytes are the format's: the codec writes what the reference quantizer writes.
    const std::vector<float> x = testing::NormalRows(1, 256, 5);
    std::vector<uint8_t> a(f.codec().row_bytes(256, CodecParams{})), b(a.size());  // [row bytes]
    f.codec().quantize(x.data(), a.data(), 256, CodecParams{});
    row->quantize_ref(x.data(), b.data(), 256);
    EXPECT_EQ(a, b) << f.name;
  }
  EXPECT_EQ(block_formats, 6);
}

}  // namespace
}  // namespace kvaudit
