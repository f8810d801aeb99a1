// kvaudit serve: the model behind an OpenAI-compatible HTTP API, with the given KV cache
// (docs/serve.md). Flags -> worker pool + server (src/serve/) -> serve until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "tokenizer/chat_template.h"
#include "run/model_runtime.h"
#include "serve/auth.h"
#include "serve/server.h"

namespace kvaudit::cli {
namespace {

struct ServeCommandFlags {
  ModelFlags model;
  KvFlags kv;
  int ctx = 0;
  ServeFlags serve;
};

// GET /v1/models' id: the --model path's last component ("models/kvq-code-16m" -> "kvq-code-16m").
std::string ModelId(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

int RunServe(const ServeCommandFlags& f) {
  auto model_path = f.model.Resolve();
  if (!model_path) return ReportError(model_path.error());
  serve::ServeOptions o;
  if (!f.serve.api_key_file.empty()) {
    auto key = serve::ReadApiKeyFile(f.serve.api_key_file);
    if (!key) return ReportError(key.error());
    o.api_key = *key;
  }
  auto loaded = Model::Load(*model_path);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  if (!model.tokenizer()) {
    return ReportError(BadInput(*model_path + ": model has no tokenizer; hint: serve needs text in and out"));
  }
  auto ctx = ResolveContext(f.ctx, model.config(), model.config().max_ctx, 2);
  if (!ctx) return ReportError(ctx.error());
  auto chat = ResolveChatFormat(*model_path, f.serve.chat_template);
  if (!chat) return ReportError(chat.error());
  o.chat_format = *chat;
  std::unique_ptr<serve::ShadowMonitor> shadow;
  if (f.serve.shadow_rate > 0) {
    auto monitor = serve::ShadowMonitor::Open({f.serve.shadow_rate, f.serve.shadow_log, *ctx});
    if (!monitor) return ReportError(monitor.error());
    shadow = std::move(*monitor);
    o.shadow = shadow.get();
  } else if (!f.serve.shadow_log.empty()) {
    return ReportError(BadInput("--shadow-log without --shadow-rate logs nothing; hint: add --shadow-rate, e.g. 0.1"));
  }
  // Before any thread starts, so every thread inherits the mask and only the watcher sees them.
  serve::BlockTerminationSignals();
  serve::WorkerPoolOptions w{f.kv.kv,
                             f.kv.kv_calib,
                             *ctx,
                             f.serve.parallel,
                             ResolveThreads(f.model.threads),
                             static_cast<size_t>(f.serve.queue),
                             shadow != nullptr};
  auto workers = serve::WorkerPool::Start(model, w);
  if (!workers) return ReportError(workers.error());
  o.host = f.serve.host;
  o.port = f.serve.port;
  o.model_id = ModelId(*model_path);
  o.kv_spec = (*workers)->kv_spec();
  o.ctx = *ctx;
  o.request_timeout_s = f.serve.request_timeout_s;
  serve::Server server(model, **workers, o);
  auto port = server.Bind();
  if (!port) return ReportError(port.error());
  std::printf("kvaudit serve: listening on http://%s:%d\n", o.host.c_str(), *port);
  std::fflush(stdout);
  std::fprintf(stderr, "kvaudit: serving %s with --kv %s, %d worker(s), context %d, chat template %s%s%s\n",
               o.model_id.c_str(), f.kv.kv.c_str(), f.serve.parallel, *ctx, ChatFormatName(*chat),
               shadow ? ", shadow monitoring on" : "", o.api_key.empty() ? "" : ", API key required");
  serve::RunUntilSignal(server);
  (*workers)->Shutdown();  // before the server goes: queued tasks refer to it
  std::fprintf(stderr, "kvaudit: serve stopped\n");
  return 0;
}

}  // namespace

CommandRunner AddServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeCommandFlags>();
  f->model.Add(app);
  f->kv.Add(app, "the cache every worker runs with");
  AddCtxFlag(app, f->ctx, "prompt + max_tokens of a request (default: the model's context)");
  f->serve.Add(app);
  return [f] { return RunServe(*f); };
}

}  // namespace kvaudit::cli
