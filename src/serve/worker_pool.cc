#include "serve/worker_pool.h"

#include <algorithm>
#include <utility>

namespace kvaudit::serve {

Expected<std::unique_ptr<WorkerPool>> WorkerPool::Start(const Model& model, const WorkerPoolOptions& o) {
  KV_CHECK(o.workers >= 1 && o.ctx >= 1);
  std::unique_ptr<WorkerPool> pool(new WorkerPool(o.queue_capacity));
  // Each worker's compute threads: an equal share, at least one, so N workers never oversubscribe.
  const int each = std::max(1, o.threads / o.workers);
  for (int i = 0; i < o.workers; ++i) {
    auto w = std::make_unique<Worker>();
    w->pool = std::make_unique<ThreadPool>(each);
    // Storage grows with use: nothing is reserved, the context is the hard limit.
    KV_ASSIGN_OR_RETURN(w->cache, BuildCache(model, o.kv, o.kv_calib, o.ctx, *w->pool, 0));
    w->generator = std::make_unique<CacheGenerator>(model, *w->cache.cache, *w->pool, o.ctx);
    if (o.shadow) {
      KV_ASSIGN_OR_RETURN(w->shadow_cache, BuildCache(model, "k=f32,v=f32", "", o.ctx, *w->pool, 0));
      w->shadow = std::make_unique<CacheGenerator>(model, *w->shadow_cache.cache, *w->pool, o.ctx);
    }
    pool->workers_.push_back(std::move(w));
  }
  for (auto& w : pool->workers_) {
    Worker* worker = w.get();
    pool->threads_.emplace_back([p = pool.get(), worker] { p->Loop(*worker); });
  }
  return pool;
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::TrySubmit(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkerPool::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

size_t WorkerPool::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void WorkerPool::Loop(Worker& worker) {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closed and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    task(worker);
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
}

}  // namespace kvaudit::serve
