#include "io/dtype.h"

#include <gtest/gtest.h>

namespace kvaudit {
namespace {

TEST(IoDType, NamesRoundTrip) {
  const char* names[] = {"F32",  "F16",  "BF16", "F64",  "I8",     "I16",    "I32",  "I64",
                         "U8",   "BOOL", "Q8_0", "Q4_0", "Q4_1",   "Q5_0",   "Q5_1", "Q4_K",
                         "Q5_K", "Q6_K", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "MXFP4"};
  ASSERT_EQ(std::size(names), static_cast<size_t>(kNumDTypes));
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(GetDTypeInfo(t).name, names[i]);
    ASSERT_TRUE(DTypeFromName(names[i]).has_value()) << names[i];
    EXPECT_EQ(*DTypeFromName(names[i]), t);
  }
  EXPECT_FALSE(DTypeFromName("f32").has_value());  // file formats spell names upper-case
  EXPECT_FALSE(DTypeFromName("F8_E4M3").has_value());
}

TEST(IoDType, BlockLayoutsMatchGgmlCommon) {
  struct Row {
    DType t;
    int elems, bytes;
  };
  const Row rows[] = {{DType::kF32, 1, 4},        {DType::kF16, 1, 2},      {DType::kBF16, 1, 2},
                      {DType::kF64, 1, 8},        {DType::kQ8_0, 32, 34},   {DType::kQ4_0, 32, 18},
                      {DType::kQ4_1, 32, 20},     {DType::kQ5_0, 32, 22},   {DType::kQ5_1, 32, 24},
                      {DType::kQ4_K, 256, 144},   {DType::kQ5_K, 256, 176}, {DType::kQ6_K, 256, 210},
                      {DType::kQ2_K, 256, 84},    {DType::kQ3_K, 256, 110}, {DType::kIQ4_NL, 32, 18},
                      {DType::kIQ4_XS, 256, 136}, {DType::kMXFP4, 32, 17}};
  for (const Row& r : rows) {
    EXPECT_EQ(GetDTypeInfo(r.t).block_elems, r.elems) << GetDTypeInfo(r.t).name;
    EXPECT_EQ(GetDTypeInfo(r.t).block_bytes, r.bytes) << GetDTypeInfo(r.t).name;
    EXPECT_TRUE(GetDTypeInfo(r.t).float_convertible);
  }
  EXPECT_FALSE(GetDTypeInfo(DType::kI32).float_convertible);
}

TEST(IoDType, ByteSize) {
  EXPECT_EQ(*ByteSize(DType::kF32, 10), 40u);
  EXPECT_EQ(*ByteSize(DType::kBF16, 0), 0u);
  EXPECT_EQ(*ByteSize(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(*ByteSize(DType::kQ8_0, 384), 12u * 34u);
  const auto bad = ByteSize(DType::kQ6_K, 384);  // 384-wide rows do not fit K-quants
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code(), 2);
  EXPECT_NE(bad.error().message.find("Q6_K"), std::string::npos);
  EXPECT_FALSE(ByteSize(DType::kF32, -1).ok());
  EXPECT_FALSE(ByteSize(DType::kF32, (int64_t{1} << 62) + 8).ok());  // fuzz find: u64 wrap to 32
  EXPECT_FALSE(ByteSize(DType::kF64, int64_t{1} << 61).ok());
  EXPECT_EQ(*ByteSize(DType::kU8, INT64_MAX), static_cast<uint64_t>(INT64_MAX));
}

}  // namespace
}  // namespace kvaudit
