#include "base/thread_pool.h"

#include <algorithm>

#include "base/status.h"

namespace kvaudit {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  KV_CHECK(n_threads >= 1);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::RunOnAll(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n_chunks = (n + grain - 1) / grain;
  const int workers = static_cast<int>(std::min<int64_t>(n_threads_, n_chunks));
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  RunOnAll([&](int t) {
    if (t >= workers) return;
    const int64_t c0 = n_chunks * t / workers, c1 = n_chunks * (t + 1) / workers;
    const int64_t b = c0 * grain, e = std::min(n, c1 * grain);
    if (b < e) fn(b, e);
  });
}

}  // namespace kvaudit
