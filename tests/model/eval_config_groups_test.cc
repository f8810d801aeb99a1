// Configurations run in groups (eval/config_groups.h) give bitwise the records of one run of all
// of them: on the bundled model, with native and engine=llama.cpp caches (whose logits depend on
// the chunk: the groups keep the whole run's), a window skipped as a resumed run skips it, and a
// frozen baseline of top-k rows in place of the baseline cache.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "eval/runner.h"
#include "kv/config/cache_config.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "run/kv_configs.h"
#include "run/topk_row.h"
#include "support/bundled_model.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

const Model& Bundled() { return testing::BundledModel(); }

const std::vector<std::string> kSpecs = {"k=q8_0,v=q8_0", "k=q4_0,v=q4_0,engine=llama.cpp", "k=f16,v=q4_1",
                                         "k=q8_0,v=q4_0,engine=llama.cpp"};

std::unique_ptr<KvCache> Cache(const std::string& spec, int max_pos) {
  auto cache = MakeCache(Bundled().config(), CacheConfig::Parse(spec).value(), nullptr, max_pos);
  EXPECT_TRUE(cache.ok()) << spec;
  EXPECT_TRUE((*cache)->Reserve(max_pos).ok());
  return std::move(*cache);
}

template <class T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void ExpectSameRecords(const std::vector<WindowRecord>& a, const std::vector<WindowRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t w = 0; w < a.size(); ++w) {
    EXPECT_EQ(a[w].window, b[w].window);
    EXPECT_EQ(a[w].first_pos, b[w].first_pos);
    EXPECT_EQ(a[w].tokens, b[w].tokens);
    EXPECT_TRUE(SameBits(a[w].nll_base, b[w].nll_base)) << "window " << w;
    ASSERT_EQ(a[w].configs.size(), b[w].configs.size());
    for (size_t c = 0; c < a[w].configs.size(); ++c) {
      const WindowRecord::Config &x = a[w].configs[c], &y = b[w].configs[c];
      EXPECT_TRUE(SameBits(x.kld, y.kld) && SameBits(x.nll, y.nll) && SameBits(x.dp, y.dp)) << w << " " << c;
      EXPECT_TRUE(SameBits(x.top1, y.top1) && SameBits(x.top5_drop, y.top5_drop)) << w << " " << c;
    }
  }
}

struct Runs {
  std::vector<WindowRecord> together, grouped;
};

Runs RunBoth(const std::vector<ConfigGroup>& groups, const std::vector<bool>& skip, FidelityRunOptions run,
             bool frozen) {
  constexpr int kMaxPos = 200;
  const auto windows = testing::RandomWindows(3, kMaxPos, Bundled().config().vocab_size, 11);
  ThreadPool pool(2);
  std::unique_ptr<KvCache> base = frozen ? nullptr : Cache("k=f32,v=f32", kMaxPos);
  Runs r;
  std::vector<std::unique_ptr<KvCache>> owned;
  std::vector<KvCache*> all{base.get()};
  for (const std::string& s : kSpecs) owned.push_back(Cache(s, kMaxPos)), all.push_back(owned.back().get());
  auto keep = [](std::vector<WindowRecord>* out) {
    return [out](WindowRecord&& rec) {
      out->push_back(std::move(rec));
      return Status::Ok();
    };
  };
  EXPECT_TRUE(RunFidelity(Bundled(), all, pool, windows, skip, run, keep(&r.together)).ok());
  owned.clear();  // the grouped run builds its own
  int built = 0;
  const ConfigCacheMaker make = [&](size_t i) -> Expected<std::unique_ptr<KvCache>> {
    ++built;
    return Cache(kSpecs.at(i), kMaxPos);
  };
  EXPECT_TRUE(
      RunFidelityInGroups(Bundled(), base.get(), make, groups, pool, windows, skip, run, keep(&r.grouped)).ok());
  int windows_run = 0;
  for (bool s : skip) windows_run += s ? 0 : 1;
  EXPECT_EQ(built, windows_run * static_cast<int>(kSpecs.size()));  // each group's caches built per window
  return r;
}

TEST(EvalConfigGroups, GroupsGiveBitwiseTheRecordsOfOneRun) {
  FidelityRunOptions run;
  run.chunk = 64, run.score_from = 10, run.context = 200;
  const Runs r = RunBoth({{0, 1}, {1, 2}, {3, 1}}, {false, true, false}, run, false);
  ASSERT_EQ(r.together.size(), 2u);
  EXPECT_EQ(r.together[1].window, 2);
  ExpectSameRecords(r.together, r.grouped);
  // The quantized caches differ from the baseline: the comparison is not of zeros.
  double kld = 0;
  for (double x : r.together[0].configs[1].kld) kld += x;
  EXPECT_GT(kld, 0);
}

TEST(EvalConfigGroups, GroupsOfOneAgainstAFrozenBaseline) {
  FidelityRunOptions run;
  run.chunk = 64, run.context = 200;
  // The frozen rows: the f32 baseline's own top 20 of each position, from a run with it.
  constexpr int kMaxPos = 200;
  const auto windows = testing::RandomWindows(3, kMaxPos, Bundled().config().vocab_size, 11);
  ThreadPool pool(2);
  std::unique_ptr<KvCache> base = Cache("k=f32,v=f32", kMaxPos);
  std::vector<std::vector<float>> logits;  // [window][(n - 1) · vocab]
  const int vocab = Bundled().config().vocab_size;
  for (const auto& ids : windows) {
    base->Reset();
    Forward fwd(Bundled(), *base, pool, kMaxPos);
    logits.emplace_back(static_cast<size_t>(ids.size() - 1) * vocab);
    fwd.Run(std::span<const int32_t>(ids.data(), ids.size() - 1), 0, logits.back().data(), true);
  }
  run.reference_rows = [&](size_t w) {
    std::vector<TopKRow> rows;  // [n - 1]
    for (size_t i = 0; i + 1 < windows[w].size(); ++i) {
      rows.push_back(TopKRowOf({logits[w].data() + i * vocab, static_cast<size_t>(vocab)}, windows[w][i + 1], 20));
    }
    return rows;
  };
  const Runs r = RunBoth({{0, 1}, {1, 1}, {2, 1}, {3, 1}}, {false, false, false}, run, true);
  ExpectSameRecords(r.together, r.grouped);
}

// What a group plan counts: each cache at the window length rounded up to whole 256-position
// chunks (what its reservation holds), plus one run's activations and chunk of logits; the budget
// is the limit less the baseline's and an eighth.
TEST(EvalConfigGroups, MemoryCountsEachCacheItsRunAndTheBaseline) {
  KvConfigOptions o;
  o.kv = {"k=q8_0,v=q8_0", "k=q4_0,v=q4_0"};
  ThreadPool pool(1);
  auto configs = KvConfigs::Prepare(Bundled(), o, pool);
  ASSERT_TRUE(configs.ok()) << configs.error().message;
  const ModelConfig& c = Bundled().config();
  constexpr uint64_t kLimit = uint64_t{1} << 30;
  auto m = MeasureConfigMemory(*configs, c, 300, 64, false, 0, kLimit);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const uint64_t run = Forward::ActivationBytes(c) + 64ull * static_cast<uint64_t>(c.vocab_size) * 4;
  EXPECT_EQ(run, CacheRunBytes(c, 64));
  const auto per_token = [&](size_t i) { return configs->MakeCache(i, 300, 0).value()->bytes_per_token(); };
  EXPECT_EQ(m->baseline_bytes, per_token(0) * 512 + run);  // 300 positions: 2 chunks of 256
  ASSERT_EQ(m->config_bytes.size(), 2u);
  EXPECT_EQ(m->config_bytes[0], per_token(1) * 512 + run);
  EXPECT_EQ(m->config_bytes[1], per_token(2) * 512 + run);
  EXPECT_LT(m->config_bytes[1], m->config_bytes[0]);  // q4_0 holds less than q8_0
  EXPECT_EQ(m->limit, kLimit);
  EXPECT_EQ(m->budget, kLimit - m->baseline_bytes - kLimit / 8);
  // A frozen baseline holds nothing here; the machine's memory when no limit is given.
  auto frozen = MeasureConfigMemory(*configs, c, 300, 64, true, 0, kLimit);
  ASSERT_TRUE(frozen.ok());
  EXPECT_EQ(frozen->baseline_bytes, 0u);
  EXPECT_EQ(frozen->budget, kLimit - kLimit / 8);
  auto machine = MeasureConfigMemory(*configs, c, 300, 64, false, 0, 0);
  ASSERT_TRUE(machine.ok());
  EXPECT_GT(machine->limit, 0u);
}

}  // namespace
}  // namespace kvaudit
