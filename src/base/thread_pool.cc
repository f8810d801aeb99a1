#include "base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "base/status.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvaudit {

namespace {
// How long a waiter spins before blocking: longer than the gap between the jobs of one token
// (a few µs) and far shorter than a scheduler tick, so a busy pool never sleeps and an idle one
// burns at most this much CPU per wait.
constexpr auto kSpin = std::chrono::microseconds(50);

inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spins until pred() or kSpin has passed; returns pred()'s last value. After the first ~2 µs it
// yields between checks: on an oversubscribed machine (other builds on the 2 cores) the thread we
// wait for may be runnable but not running, and a pure spin would burn its time slice.
template <class P>
bool SpinFor(P&& pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    if (i < 256) {
      CpuRelax();
    } else {
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() > deadline) return pred();
    }
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  KV_CHECK(n_threads >= 1);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinFor(ready)) {
      // Publishers bump generation_ under mu_, so checking under the lock cannot miss a wake-up.
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    (*job_)(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Lock so the notify cannot fall between the caller's predicate check and its sleep.
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::RunOnAll(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  // All workers finished the previous job (pending_ reached 0), so nobody reads job_ now.
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  fn(0);
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinFor(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, done);
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
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

void ThreadPool::ForEachItem(int n_items, const std::function<void(int, int)>& fn) {
  if (n_items <= 0) return;
  std::atomic<int> next{0};
  auto work = [&](int thread) {
    for (int i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n_items;) fn(i, thread);
  };
  if (n_threads_ == 1 || n_items == 1) {
    work(0);
  } else {
    RunOnAll(work);
  }
}

}  // namespace kvaudit
