// `kvaudit serve`: the HTTP server (cpp-httplib, docs/dependencies.md) in front of the worker pool.
// Routes (docs/serve.md has every shape and the document it follows):
//   POST /v1/completions  OpenAI legacy completions (+ vLLM's top_k, min_p, prompt_logprobs)
//   POST /v1/chat/completions  OpenAI chat completions in the model's chat template
//                         (both: `stream` as server-sent events, serve/stream_chunks.h)
//   GET  /v1/models       OpenAI's model list: the one model served
//   POST /tokenize        llama-server's {content, add_special} -> {tokens}
//   POST /detokenize      llama-server's {tokens} -> {content}
//   GET  /health          {"status":"ok"}, never behind the API key
//   GET  /metrics         Prometheus text (serve/metrics.h)
// Lifecycle: Bind, then Run on one thread until Stop (from the signal watcher): Stop closes the
// listening socket, queued and running completions get shutdown_grace_s to finish, then are
// cancelled (503); Run returns once every connection is answered.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "serve/shadow.h"
#include "serve/worker_pool.h"

namespace kvaudit::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";    // --host
  int port = 8080;                   // --port; 0 picks a free one
  std::string model_id;              // GET /v1/models' id and every response's "model"
  std::string kv_spec;               // the workers' cache, canonical: /metrics' kvaudit_cache_config_info{kv=...}
  std::string api_key;               // "" = no key required
  int ctx = 0;                       // prompt + max_tokens limit (the workers' cache size)
  size_t max_body_bytes = 8u << 20;  // larger bodies: 413
  int request_timeout_s = 600;       // a completion not answered by then: 504 (and cancelled)
  int shutdown_grace_s = 10;         // in-flight completions after Stop, before they are cancelled
  ChatFormat chat_format = ChatFormat::kNone;  // --chat-template resolved; kNone: chat completions are a 400
  ShadowMonitor* shadow = nullptr;  // --shadow-rate > 0 (owned by the caller; the workers have shadow caches)
};

class Server {
 public:
  Server(const Model& model, WorkerPool& workers, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port; the port bound (the free one for port 0), or BadInput naming the address.
  Expected<int> Bind();
  // Serves until Stop(); returns when every accepted request has been answered.
  void Run();
  // Thread-safe, idempotent; returns at once.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SIGINT and SIGTERM: Block() before any thread starts (threads inherit the mask), then
// RunUntilSignal serves and calls Stop on the first of them; returns after Run does.
void BlockTerminationSignals();
void RunUntilSignal(Server& server);

}  // namespace kvaudit::serve
