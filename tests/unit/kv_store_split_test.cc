// Every TensorStore's fused reads are split-invariant (batch invariance, docs/architecture.md): Dot
// over [t0, t1) gives bitwise the scores of any split of the range, and WeightedSum over [t0, t1)
// into acc gives bitwise the same acc as the pieces applied one after another (sequential in t),
// for every row format, the sink / recent protections, and KIVI keys and values.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kv/store/kivi_store.h"
#include "kv/store/row_store.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

constexpr int kHd = 64, kN = 300;

std::vector<float> RandomRows(int n, uint32_t seed) { return testing::NormalRows(n, kHd, seed); }  // [n, kHd]

struct StoreCase {
  KvFormat f;
  int sink, recent, group;  // group: KIVI / int group size (0 = default)
};

std::unique_ptr<TensorStore> Make(const StoreCase& c, bool is_key) {
  StoreSpec s;
  s.is_key = is_key;
  s.head_dim = kHd;
  s.max_positions = kN;
  s.head.k = s.head.v = c.f;
  s.head.sink = c.sink;
  s.head.recent = c.recent;
  if (c.group > 0) s.head.group = c.group;
  return IsKivi(c.f) ? MakeKiviStore(s) : MakeRowStore(s);
}

class StoreSplit : public ::testing::TestWithParam<StoreCase> {};

TEST_P(StoreSplit, DotAndWeightedSumAreSplitInvariant) {
  const auto x = RandomRows(kN, 1), q = RandomRows(1, 2), w = RandomRows(kN / kHd + 1, 3);
  for (bool is_key : {true, false}) {
    auto st = Make(GetParam(), is_key);
    for (int t0 = 0; t0 < kN; t0 += 100) st->Append(t0, std::min(100, kN - t0), x.data() + t0 * kHd, kHd, nullptr, 0);
    const int p = kN - 1;
    for (auto [a, b] : {std::pair{0, kN}, std::pair{37, 290}, std::pair{256, 300}}) {
      std::vector<float> whole(b - a), split(b - a);
      st->Dot(q.data(), p, a, b, whole.data());
      std::vector<float> acc_whole(kHd, 0.25f), acc_split(kHd, 0.25f);
      st->WeightedSum(w.data(), p, a, b, acc_whole.data());
      for (int cut : {a + 1, (a + b) / 2, b - 3}) {
        st->Dot(q.data(), p, a, cut, split.data());
        st->Dot(q.data(), p, cut, b, split.data() + (cut - a));
        EXPECT_EQ(std::memcmp(whole.data(), split.data(), sizeof(float) * (b - a)), 0)
            << KvFormatName(GetParam().f) << " key " << is_key << " [" << a << "," << b << ") cut " << cut;
        std::fill(acc_split.begin(), acc_split.end(), 0.25f);
        st->WeightedSum(w.data(), p, a, cut, acc_split.data());
        st->WeightedSum(w.data() + (cut - a), p, cut, b, acc_split.data());
        EXPECT_EQ(std::memcmp(acc_whole.data(), acc_split.data(), sizeof(float) * kHd), 0)
            << KvFormatName(GetParam().f) << " key " << is_key << " [" << a << "," << b << ") cut " << cut;
      }
    }
  }
}

std::string Name(const ::testing::TestParamInfo<StoreCase>& info) { return "case" + std::to_string(info.index); }

INSTANTIATE_TEST_SUITE_P(
    AllStores, StoreSplit,
    ::testing::Values(StoreCase{KvFormat::kF32, 0, 0, 0}, StoreCase{KvFormat::kF16, 0, 0, 0},
                      StoreCase{KvFormat::kBF16, 0, 0, 0}, StoreCase{KvFormat::kFp8E4M3, 0, 0, 0},
                      StoreCase{KvFormat::kFp8E5M2, 0, 0, 0}, StoreCase{KvFormat::kQ8_0, 0, 0, 0},
                      StoreCase{KvFormat::kQ4_0, 0, 0, 0}, StoreCase{KvFormat::kQ4_1, 0, 0, 0},
                      StoreCase{KvFormat::kQ5_0, 0, 0, 0}, StoreCase{KvFormat::kQ5_1, 0, 0, 0},
                      StoreCase{KvFormat::kIq4Nl, 0, 0, 0}, StoreCase{KvFormat::kInt8, 0, 0, 0},
                      StoreCase{KvFormat::kInt4, 0, 0, 32}, StoreCase{KvFormat::kQ4_0, 4, 0, 0},
                      StoreCase{KvFormat::kQ4_0, 0, 64, 0}, StoreCase{KvFormat::kKivi2, 0, 128, 32},
                      StoreCase{KvFormat::kKivi4, 0, 64, 32}, StoreCase{KvFormat::kKivi2, 0, 48, 16},
                      StoreCase{KvFormat::kKivi4, 0, 64, 64}, StoreCase{KvFormat::kKivi2, 0, 24, 8},
                      StoreCase{KvFormat::kKivi4, 0, 16, 4}),
    Name);

}  // namespace
}  // namespace kvaudit
