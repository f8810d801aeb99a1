// The completion workers of `kvaudit serve --parallel N`: N threads, each owning its own KV cache
// (built once at start, Reset by every run: run/cache_generator.h), its own thread pool and
// generator, fed by one bounded FIFO queue. A full queue refuses the task (the server answers
// 503) instead of holding connections open without bound.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "run/cache_generator.h"
#include "run/kv_configs.h"

namespace kvaudit::serve {

struct Worker {
  std::unique_ptr<ThreadPool> pool;
  BuiltCache cache;
  std::unique_ptr<CacheGenerator> generator;
  // The shadow monitor's k=f32,v=f32 cache on the same compute threads (serve/shadow.h); only
  // built with --shadow-rate > 0.
  BuiltCache shadow_cache;
  std::unique_ptr<CacheGenerator> shadow;
};

struct WorkerPoolOptions {
  std::string kv = "k=f32,v=f32";  // --kv
  std::string kv_calib;            // --kv-calib
  int ctx = 0;                     // the cache's positions (--ctx, resolved)
  int workers = 1;                 // --parallel
  int threads = 1;                 // compute threads in all (--threads, resolved), split over the workers
  size_t queue_capacity = 16;      // --queue: tasks waiting for a worker
  bool shadow = false;             // --shadow-rate > 0: each worker also gets an f32 shadow cache
};

class WorkerPool {
 public:
  using Task = std::function<void(Worker&)>;

  // Builds every worker's cache (BadInput for a bad --kv) and starts the threads.
  static Expected<std::unique_ptr<WorkerPool>> Start(const Model& model, const WorkerPoolOptions& options);
  ~WorkerPool();  // Shutdown()

  // Queues the task; false when the queue is full or the pool is shut down.
  bool TrySubmit(Task task);
  // Refuses new tasks, lets the workers finish the queued ones, joins them. Idempotent.
  void Shutdown();

  size_t queue_depth() const;
  size_t running() const;
  int workers() const { return static_cast<int>(workers_.size()); }
  size_t queue_capacity() const { return capacity_; }
  // The configuration every worker's cache runs, canonical (what /metrics reports).
  const std::string& kv_spec() const { return workers_.front()->cache.config.spec(); }

 private:
  explicit WorkerPool(size_t capacity) : capacity_(capacity) {}
  void Loop(Worker& worker);

  const size_t capacity_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  size_t running_ = 0;
  bool closed_ = false;
};

}  // namespace kvaudit::serve
