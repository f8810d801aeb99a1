// One completion between the HTTP thread that answers it and the worker that runs it
// (server.cc). Without streaming the worker hands the output back through a promise; with
// `stream` it writes server-sent events (serve/stream_chunks.h) into the job's EventChannel as it
// generates, which the HTTP thread copies to the connection. After the answer is handed over the
// worker runs the shadow comparison when the request was sampled (serve/shadow.h): the answer
// never waits for it, but the worker is busy until it ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "model/model.h"
#include "serve/completion.h"
#include "serve/completion_request.h"
#include "serve/metrics.h"
#include "serve/shadow.h"
#include "serve/stream_chunks.h"
#include "serve/worker_pool.h"

namespace kvaudit::serve {

using Clock = std::chrono::steady_clock;

// Events from the worker to the HTTP thread, in order; closed after the last.
class EventChannel {
 public:
  void Push(std::string event);
  void Close();
  // The next event into *out (true), or false once closed and drained or at the deadline
  // (*timed_out set).
  bool Pop(std::string* out, Clock::time_point deadline, bool* timed_out);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> events_;
  bool closed_ = false;
};

struct Job {
  StreamRoute route = StreamRoute::kCompletions;
  CompletionRequest request;
  std::vector<int32_t> ids;  // the prompt's tokens
  ResponseIds response_ids;
  Clock::time_point deadline;
  int timeout_s = 0;                   // --request-timeout, for the error's message
  std::atomic<bool> abandoned{false};  // the HTTP side gave up: timeout, or a stream's client went away
  std::atomic<bool> disconnected{false};
  std::promise<CompletionOutput> done;  // without stream
  EventChannel events;                  // with stream
};

// What every job shares: the model, the server's counters, the shadow monitor (null when off) and
// the shutdown flag (set when the grace period is over).
struct JobContext {
  const Model& model;
  Metrics& metrics;
  ShadowMonitor* shadow;
  const std::atomic<bool>& aborting;
};

// On the worker: runs the job (streaming or not), then its shadow when sampled.
void RunJob(Worker& worker, Job& job, const JobContext& context);

// The error a cancelled completion answers with: 503 shutting_down or 504 timeout.
ApiError CancelledError(bool aborting, int timeout_s);

}  // namespace kvaudit::serve
