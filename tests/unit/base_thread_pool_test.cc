#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/thread_pool.h"

namespace kvaudit {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.ParallelFor(n, 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(ThreadPoolTest, RunOnAllRunsEachWorkerOnceAndIsReusable) {
  ThreadPool pool(4);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::atomic<int>> seen(4);
    pool.RunOnAll([&](int t) { seen[static_cast<size_t>(t)]++; });
    for (auto& s : seen) EXPECT_EQ(s.load(), 1);
  }
}

}  // namespace
}  // namespace kvaudit

namespace kvaudit {
namespace {

TEST(ThreadPoolTest, ForEachItemRunsEveryItemOnceWithAValidThreadIndex) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 3, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.ForEachItem(n, [&](int item, int thread) {
        hits[static_cast<size_t>(item)]++;
        if (thread < 0 || thread >= threads) bad_thread++;
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "threads=" << threads << " n=" << n;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

}  // namespace
}  // namespace kvaudit
