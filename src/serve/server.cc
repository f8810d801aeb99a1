#include "serve/server.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <random>
#include <thread>

#include "serve/auth.h"
#include "serve/chat_prompt.h"
#include "serve/chat_request.h"
#include "serve/chat_response.h"
#include "serve/completion.h"
#include "serve/completion_response.h"
#include "serve/job.h"
#include "serve/histogram.h"
#include "serve/metrics.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

void Reply(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(DumpJson(e.ToJson()), "application/json");
}

// A metrics label from a fixed set, so a client's path never becomes a label value.
std::string EndpointOf(const std::string& path) {
  for (const char* known :
       {"/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize", "/detokenize", "/health", "/metrics"}) {
    if (path == known) return known;
  }
  return "other";
}

// When the pre-routing handler saw the request this thread is answering (the logger reads it:
// httplib routes and logs a request on one thread). Unset for requests refused before routing.
thread_local Clock::time_point t_started;
thread_local bool t_timed = false;

}  // namespace

struct Server::Impl {
  const Model& model;
  const Tokenizer& tok;
  WorkerPool& workers;
  const ServeOptions o;
  httplib::Server http;
  Metrics metrics;
  const int64_t started_unix = static_cast<int64_t>(std::time(nullptr));
  std::atomic<uint64_t> next_id{std::random_device{}()};
  std::atomic<bool> stopping{false}, aborting{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool finished = false;
  std::thread grace;

  Impl(const Model& m, WorkerPool& w, ServeOptions opts)
      : model(m), tok(*m.tokenizer()), workers(w), o(std::move(opts)) {}

  void Routes();
  void Completions(const httplib::Request& req, httplib::Response& res);
  void ChatCompletions(const httplib::Request& req, httplib::Response& res);
  void Dispatch(StreamRoute route, CompletionRequest request, std::vector<int32_t> ids, httplib::Response& res);
  void Stream(const std::shared_ptr<Job>& job, httplib::Response& res);
  void Tokenize(const httplib::Request& req, httplib::Response& res);
  void Detokenize(const httplib::Request& req, httplib::Response& res);
  httplib::Server::HandlerResponse Authorize(const httplib::Request& req, httplib::Response& res);
  void StartGrace();
};

httplib::Server::HandlerResponse Server::Impl::Authorize(const httplib::Request& req, httplib::Response& res) {
  t_started = Clock::now();
  t_timed = true;
  if (o.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
  if (BearerMatches(req.get_header_value("Authorization"), o.api_key))
    return httplib::Server::HandlerResponse::Unhandled;
  Reply(res, ServerError(401, "authentication_error", "invalid_api_key",
                         "missing or wrong API key; hint: send 'Authorization: Bearer <key>'"));
  return httplib::Server::HandlerResponse::Handled;
}

void Server::Impl::Completions(const httplib::Request& req, httplib::Response& res) {
  ApiError err;
  std::optional<CompletionRequest> request = ParseCompletionRequest(req.body, &err);
  if (!request) return Reply(res, err);
  std::vector<int32_t> ids =
      request->prompt_is_ids ? request->prompt_ids : tok.Encode(request->prompt_text, tok.add_bos_default());
  Dispatch(StreamRoute::kCompletions, std::move(*request), std::move(ids), res);
}

// The prompt is the conversation in the model's chat template with the generation prompt
// appended (serve/chat_prompt.h), encoded as a /v1/completions text prompt is: so a greedy chat
// completion is the completion of that text, token for token.
void Server::Impl::ChatCompletions(const httplib::Request& req, httplib::Response& res) {
  ApiError err;
  std::optional<ChatRequest> chat = ParseChatRequest(req.body, &err);
  if (!chat) return Reply(res, err);
  std::optional<std::string> prompt = RenderChat(o.chat_format, chat->messages, &err);
  if (!prompt) return Reply(res, err);
  std::vector<int32_t> ids = tok.Encode(*prompt, tok.add_bos_default());
  CompletionRequest r = std::move(chat->completion);
  r.prompt_text = std::move(*prompt);
  // No max_tokens: the rest of the context (vLLM's default for chat).
  if (!chat->max_tokens_given) r.max_tokens = std::max(0, o.ctx - static_cast<int>(ids.size()));
  Dispatch(StreamRoute::kChat, std::move(r), std::move(ids), res);
}

void Server::Impl::Dispatch(StreamRoute route, CompletionRequest request, std::vector<int32_t> ids,
                            httplib::Response& res) {
  if (auto bad = CheckAgainstModel(request, ids.size(), model.config().vocab_size, o.ctx)) return Reply(res, *bad);
  auto job = std::make_shared<Job>();
  job->route = route;
  job->request = std::move(request);
  job->ids = std::move(ids);
  job->timeout_s = o.request_timeout_s;
  job->deadline = Clock::now() + std::chrono::seconds(o.request_timeout_s);
  char id[40];
  std::snprintf(id, sizeof(id), route == StreamRoute::kChat ? "chatcmpl-%016llx" : "cmpl-%016llx",
                static_cast<unsigned long long>(next_id++));
  job->response_ids = {id, static_cast<int64_t>(std::time(nullptr)), o.model_id};
  const bool stream = job->request.stream.stream;
  std::future<CompletionOutput> answer;
  if (!stream) answer = job->done.get_future();
  const bool queued = workers.TrySubmit([this, job](Worker& w) {
    RunJob(w, *job, {model, metrics, o.shadow, aborting});
  });
  if (!queued) {
    return Reply(res, stopping ? ServerError(503, "server_error", "shutting_down", "the server is shutting down")
                               : ServerError(503, "server_error", "queue_full",
                                             "every worker is busy and the queue is full; hint: retry later, or "
                                             "start the server with a larger --queue or --parallel"));
  }
  if (stream) return Stream(job, res);
  // A little past the deadline: the worker notices it at its next token and answers cancelled.
  if (answer.wait_until(job->deadline + std::chrono::seconds(1)) != std::future_status::ready) job->abandoned = true;
  const CompletionOutput out = job->abandoned ? CompletionOutput{} : answer.get();
  if (job->abandoned || out.cancelled) return Reply(res, CancelledError(aborting, o.request_timeout_s));
  metrics.AddTokens(static_cast<int64_t>(out.prompt_ids.size()), static_cast<int64_t>(out.generated.size()));
  const json body = route == StreamRoute::kChat ? ChatCompletionResponse(job->request, out, tok, job->response_ids)
                                                : CompletionResponse(job->request, out, tok, job->response_ids);
  res.set_content(DumpJson(body), "application/json");
}

// The events as the worker makes them, all in one call of the content provider: httplib checks
// for shutdown between calls, which would cut a stream short during the shutdown grace period.
// A failed write means the client went away: the job is abandoned, so the worker stops at its next
// token and takes the next request.
void Server::Impl::Stream(const std::shared_ptr<Job>& job, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, job](size_t, httplib::DataSink& sink) {
        std::string event;
        bool timed_out = false;
        while (job->events.Pop(&event, job->deadline + std::chrono::seconds(2), &timed_out)) {
          if (!sink.is_writable() || !sink.write(event.data(), event.size())) {
            job->disconnected = true;
            job->abandoned = true;
            return false;
          }
        }
        if (timed_out) {  // the worker never answered (still queued past the deadline)
          job->abandoned = true;
          const std::string error = SseEvent(CancelledError(aborting, o.request_timeout_s).ToJson());
          sink.write(error.data(), error.size());
        }
        sink.done();
        return true;
      },
      [job](bool success) {
        if (!success) job->disconnected = true, job->abandoned = true;
      });
}

void Server::Impl::Tokenize(const httplib::Request& req, httplib::Response& res) {
  ApiError err;
  auto r = ParseTokenizeRequest(req.body, &err);
  if (!r) return Reply(res, err);
  // llama-server: add_special adds the BOS the model's vocabulary asks for, nothing when it asks none.
  const std::vector<int32_t> ids = tok.Encode(r->content, r->add_special && tok.add_bos_default());
  res.set_content(DumpJson({{"tokens", ids}}), "application/json");
}

void Server::Impl::Detokenize(const httplib::Request& req, httplib::Response& res) {
  ApiError err;
  auto ids = ParseDetokenizeRequest(req.body, model.config().vocab_size, &err);
  if (!ids) return Reply(res, err);
  res.set_content(DumpJson({{"content", tok.Decode(*ids)}}), "application/json");
}

void Server::Impl::Routes() {
  http.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { Completions(q, r); });
  http.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { ChatCompletions(q, r); });
  http.Post("/tokenize", [this](const httplib::Request& q, httplib::Response& r) { Tokenize(q, r); });
  http.Post("/detokenize", [this](const httplib::Request& q, httplib::Response& r) { Detokenize(q, r); });
  http.Get("/health", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"status":"ok"})", "application/json");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) {
    const json model_entry = {{"id", o.model_id},
                              {"object", "model"},
                              {"created", started_unix},
                              {"owned_by", "kvaudit"},
                              {"max_model_len", o.ctx}};
    r.set_content(DumpJson({{"object", "list"}, {"data", json::array({model_entry})}}), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    std::string text = metrics.Render(workers.queue_depth(), workers.running());
    // What the server runs, for a client to read (endpoint/server_report.h), as vLLM's
    // vllm:cache_config_info does; the spec has no quote or backslash to escape.
    MetricFamilyHeader(text, "kvaudit_cache_config_info", "gauge", "The KV cache every worker runs (--kv).");
    text += "kvaudit_cache_config_info{kv=\"" + o.kv_spec + "\"} 1\n";
    if (o.shadow) text += o.shadow->metrics().Render();
    r.set_content(text, "text/plain; version=0.0.4");
  });
}

void Server::Impl::StartGrace() {
  grace = std::thread([this] {
    std::unique_lock<std::mutex> lock(stop_mu);
    if (!stop_cv.wait_for(lock, std::chrono::seconds(o.shutdown_grace_s), [this] { return finished; })) {
      aborting = true;  // in-flight completions stop at their next token
    }
  });
}

Server::Server(const Model& model, WorkerPool& workers, ServeOptions options)
    : impl_(std::make_unique<Impl>(model, workers, std::move(options))) {
  Impl& m = *impl_;
  // Enough HTTP threads for every running and queued completion plus a few for the rest, so a
  // request beyond the queue is answered 503 at once rather than waiting for a thread.
  const size_t threads = std::max<size_t>(8, static_cast<size_t>(workers.workers()) + workers.queue_capacity() + 4);
  m.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and share
  // its connections with the first; SO_REUSEADDR alone keeps a restart possible past TIME_WAIT
  // while a port in use is refused (docs/serve.md).
  m.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // TCP_NODELAY (accepted sockets inherit it from the listening one on Linux, and httplib sets it
  // on each when asked): cpp-httplib writes a response's headers and body in separate sends, and
  // with Nagle's algorithm the body waits for the client's delayed ACK, ~40 ms on Linux, on
  // every response. Measured: a 64-token completion answered in 82 ms instead of ~40
  // (BENCHMARKS.md "kvaudit serve").
  m.http.set_tcp_nodelay(true);
  m.http.set_payload_max_length(m.o.max_body_bytes);
  m.http.set_read_timeout(30, 0);
  m.http.set_write_timeout(30, 0);
  m.http.set_keep_alive_timeout(2);  // bounds how long Stop waits on an idle keep-alive connection
  m.http.set_pre_routing_handler([&m](const httplib::Request& q, httplib::Response& r) { return m.Authorize(q, r); });
  m.http.set_error_handler([](const httplib::Request&, httplib::Response& r) {
    if (!r.body.empty()) return;  // our own error, already in OpenAI's shape
    ApiError e = ServerError(r.status, "invalid_request_error", "", "");
    e.code = r.status == 413 ? "payload_too_large" : r.status == 404 ? "not_found" : "http_" + std::to_string(r.status);
    e.message = r.status == 413   ? "the body is larger than the server's limit; hint: send a shorter prompt"
                : r.status == 404 ? "no such endpoint; hint: see docs/serve.md"
                                  : "the HTTP request was refused";
    Reply(r, e);
  });
  m.http.set_logger([&m](const httplib::Request& q, const httplib::Response& r) {
    const double seconds = t_timed ? std::chrono::duration<double>(Clock::now() - t_started).count() : -1.0;
    t_timed = false;
    m.metrics.RecordRequest(EndpointOf(q.path), r.status, seconds);
  });
  m.Routes();
}

Server::~Server() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    impl_->finished = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->grace.joinable()) impl_->grace.join();
}

Expected<int> Server::Bind() {
  Impl& m = *impl_;
  const int port =
      m.o.port == 0 ? m.http.bind_to_any_port(m.o.host) : (m.http.bind_to_port(m.o.host, m.o.port) ? m.o.port : -1);
  if (port <= 0) {
    return BadInput("cannot listen on " + m.o.host + ":" + std::to_string(m.o.port) +
                    "; hint: the port may be in use (--port 0 picks a free one) or --host is not an address here");
  }
  return port;
}

void Server::Run() {
  if (!impl_->stopping) impl_->http.listen_after_bind();
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  impl_->finished = true;
  impl_->stop_cv.notify_all();
}

void Server::Stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->StartGrace();
  impl_->http.stop();
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void RunUntilSignal(Server& server) {
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    const timespec tick{0, 100'000'000};  // 0.1 s: how soon the watcher notices Run has returned
    while (!done) {
      if (sigtimedwait(&set, nullptr, &tick) > 0) return server.Stop();
    }
  });
  server.Run();
  done = true;
  watcher.join();
}

}  // namespace kvaudit::serve
