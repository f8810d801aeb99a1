// A fixed pool of worker threads with static, deterministic work splitting.
// Determinism rule (house style): a task's result must not depend on the thread count, so work is
// split into index ranges whose per-element arithmetic is the same whichever thread runs it.
//
// Hand-off: a decoded token issues ~40 jobs of a few microseconds each, so waking workers through
// a condition variable (a futex syscall and a scheduler wake-up, 5-50 µs each) would dominate.
// Workers and the caller therefore spin on an atomic for a bounded time (kSpin) before blocking;
// an idle pool still sleeps, so it costs nothing between batches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvaudit {

class ThreadPool {
 public:
  // n_threads >= 1; the calling thread is worker 0, so n_threads - 1 threads are started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(thread_index) once on every worker (0..size()-1) and waits for all of them.
  // Not re-entrant: fn must not call RunOnAll/ParallelFor on the same pool.
  void RunOnAll(const std::function<void(int)>& fn);

  // Splits [0, n) into size() contiguous chunks (aligned to `grain`) and runs
  // fn(begin, end) on each; chunk boundaries depend on the thread count, so fn must compute each
  // index independently of where its chunk starts.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Runs fn(item, thread) for items [0, n_items), claimed dynamically (balances uneven items such
  // as causal attention tiles). fn must compute an item the same way whichever thread runs it, so
  // results do not depend on the thread count.
  void ForEachItem(int n_items, const std::function<void(int item, int thread)>& fn);

 private:
  void WorkerLoop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;  // guards sleeping; the job itself is published through generation_
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // bumped (release) after job_ is set
  std::atomic<int> pending_{0};          // workers still running the current job
  std::atomic<bool> stop_{false};
};

// fn(begin, end) over [0, n): split across the pool's threads (ParallelFor) when there is a pool and
// more than one index, else one call on the calling thread (a decode's single row: no hand-off).
inline void ForRows(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr && n > 1) {
    pool->ParallelFor(n, 1, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace kvaudit
