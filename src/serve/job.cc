#include "serve/job.h"

#include "serve/stream_text.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {

void EventChannel::Push(std::string event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_one();
}

void EventChannel::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_one();
}

bool EventChannel::Pop(std::string* out, Clock::time_point deadline, bool* timed_out) {
  std::unique_lock<std::mutex> lock(mu_);
  *timed_out = !cv_.wait_until(lock, deadline, [&] { return closed_ || !events_.empty(); });
  if (*timed_out || events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

ApiError CancelledError(bool aborting, int timeout_s) {
  return aborting
             ? ServerError(503, "server_error", "shutting_down", "the server shut down before the completion finished")
             : ServerError(504, "timeout_error", "timeout",
                           "the completion took longer than " + std::to_string(timeout_s) +
                               " s; hint: lower max_tokens or raise --request-timeout");
}

namespace {

// The streamed run: text chunks as tokens come (held back by StreamText), the last one with
// finish_reason, the usage chunk when asked, [DONE]; or an error event when cancelled.
CompletionOutput RunStreamed(Worker& w, Job& job, const JobContext& c, const std::function<bool()>& cancel,
                             CompletionHooks hooks) {
  const Tokenizer& tok = *c.model.tokenizer();
  StreamText text(job.request.stop);
  const bool usage = job.request.stream.include_usage;
  bool first = true;
  hooks.on_token = [&](const CompletionOutput& so_far) {
    const std::string delta = text.Delta(tok.Decode(so_far.generated));
    // Nothing new to send (held back): no chunk, but for the chat route's first, which carries the role.
    if (delta.empty() && !(first && job.route == StreamRoute::kChat)) return;
    job.events.Push(SseEvent(TextChunk(job.route, job.response_ids, delta, "", first, usage)));
    first = false;
  };
  CompletionOutput out = RunCompletion(c.model, *w.generator, job.request, job.ids, cancel, hooks);
  if (out.cancelled) {
    if (!job.disconnected) job.events.Push(SseEvent(CancelledError(c.aborting, job.timeout_s).ToJson()));
  } else {
    job.events.Push(
        SseEvent(TextChunk(job.route, job.response_ids, text.Finish(out.text), out.finish_reason, first, usage)));
    if (usage)
      job.events.Push(SseEvent(UsageChunk(job.route, job.response_ids, out.prompt_ids.size(), out.generated.size())));
    job.events.Push(kSseDone);
    c.metrics.AddTokens(static_cast<int64_t>(out.prompt_ids.size()), static_cast<int64_t>(out.generated.size()));
  }
  job.events.Close();
  return out;
}

}  // namespace

void RunJob(Worker& w, Job& job, const JobContext& c) {
  auto cancel = [&] { return job.abandoned.load() || c.aborting.load() || Clock::now() > job.deadline; };
  if (cancel()) {
    CompletionOutput none;
    none.cancelled = true;
    if (job.request.stream.stream) {
      if (!job.disconnected) job.events.Push(SseEvent(CancelledError(c.aborting, job.timeout_s).ToJson()));
      job.events.Close();
    } else {
      job.done.set_value(std::move(none));
    }
    return;
  }
  const bool shadowed = c.shadow && w.shadow && c.shadow->Sample();
  std::vector<float> steps;  // [generated, vocab] when shadowed
  CompletionHooks hooks;
  if (shadowed) hooks.step_logits = &steps;
  const auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  CompletionOutput out = job.request.stream.stream
                             ? RunStreamed(w, job, c, cancel, hooks)
                             : RunCompletion(c.model, *w.generator, job.request, job.ids, cancel, hooks);
  ShadowMonitor::Served info{job.response_ids.id, out.prompt_ids.size(),
                             std::chrono::duration<double>(Clock::now() - t0).count(), ProcessCpuSeconds() - cpu0};
  if (out.cancelled) {
    c.metrics.RecordCancel(job.disconnected ? "client_disconnect" : c.aborting ? "shutdown" : "timeout");
  }
  std::vector<int32_t> tokens;
  if (shadowed && !out.cancelled) {
    tokens = out.prompt_ids;
    tokens.insert(tokens.end(), out.generated.begin(), out.generated.end());
  }
  // The answer goes first: the HTTP thread writes it while this worker runs the shadow.
  if (!job.request.stream.stream) job.done.set_value(std::move(out));
  if (!tokens.empty()) {
    c.shadow->Run(*w.generator, *w.shadow, tokens, steps, static_cast<size_t>(c.model.config().vocab_size), info);
  }
}

}  // namespace kvaudit::serve
