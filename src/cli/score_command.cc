// kvaudit score: teacher-forced NLL of text or token ids (flags and output: docs/cli.md).
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "run/model_runtime.h"
#include "run/kv_configs.h"
#include "run/scorer.h"
#include "run/windows.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

struct ScoreFlags {
  ModelFlags model;
  KvFlags kv;
  std::string data, ids_file, jsonl;
  int ctx = 0;
  int score_from = 0;
  bool json = false;
};

// --ids-file as it is, or the --data text tokenized (BOS first) and cut into windows.
Expected<std::vector<std::vector<int32_t>>> ScoreWindowsOf(const ScoreFlags& f, const ModelRuntime& runtime, int ctx) {
  const ModelConfig& cfg = runtime.model->config();
  if (!f.ids_file.empty()) {
    KV_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ReadIdsFile(f.ids_file, cfg.vocab_size));
    return MakeWindows(ids, ctx, -1);
  }
  KV_ASSIGN_OR_RETURN(const Tokenizer* tok, runtime.RequireTokenizer("score --data (or use --ids-file)"));
  KV_ASSIGN_OR_RETURN(std::string data, ResolveData(f.data));
  return LoadTextWindows(*tok, data, ctx, /*per_doc=*/false);
}

int RunScore(const ScoreFlags& f) {
  auto model_path = f.model.Resolve();
  if (!model_path) return ReportError(model_path.error());
  auto runtime = ModelRuntime::Load(*model_path, f.model.threads);
  if (!runtime) return ReportError(runtime.error());
  const Model& model = *runtime->model;
  const ModelConfig& cfg = model.config();
  auto ctx = ResolveContext(f.ctx, cfg, std::min(cfg.max_ctx, 4096), 2);
  if (!ctx) return ReportError(ctx.error());
  auto windows = ScoreWindowsOf(f, *runtime, *ctx);
  if (!windows) return ReportError(windows.error());
  if (windows->empty() || (*windows)[0].size() < 2) {
    return ReportError(BadInput("input has fewer than 2 tokens; hint: nothing to predict"));
  }
  std::unique_ptr<std::ofstream> jsonl;
  if (!f.jsonl.empty()) {
    jsonl = std::make_unique<std::ofstream>(f.jsonl);
    if (!*jsonl) return ReportError(BadInput(f.jsonl + ": cannot open for writing; hint: check the directory exists"));
  }
  ThreadPool& pool = *runtime->pool;
  int max_len = 0;
  for (const auto& w : *windows) max_len = std::max<int>(max_len, static_cast<int>(w.size()));
  auto built = BuildCache(model, f.kv.kv, f.kv.kv_calib, max_len, pool);
  if (!built) return ReportError(built.error());
  KvCache& cache = *built->cache;
  ScoreOptions options;
  options.score_from = f.score_from;
  options.context = *ctx;
  char line[256];
  ScoreSummary s = ScoreWindows(model, cache, pool, *windows, options, [&](const ScoredPosition& p) {
    if (!jsonl) return;
    std::snprintf(line, sizeof(line), "{\"window\":%d,\"pos\":%d,\"token\":%d,\"nll\":%.9g,\"argmax\":%d}\n", p.window,
                  p.pos, p.token, p.nll, p.argmax);
    *jsonl << line;
  });
  if (jsonl && !jsonl->flush()) return ReportError(Internal(f.jsonl + ": write failed"));
  if (f.json) {
    const nlohmann::json j = {{"kv", built->config.spec()},
                              {"bytes_per_token", cache.bytes_per_token()},
                              {"ctx", *ctx},
                              {"windows", windows->size()},
                              {"last_window_tokens", windows->back().size()},
                              {"tokens", s.tokens},
                              {"mean_nll", s.mean_nll},
                              {"ppl", s.ppl}};
    std::printf("%s\n", JsonText(j, 2).c_str());
    return 0;
  }
  std::printf("kv: %s (%.1f bytes/token)\n", built->config.spec().c_str(),
              static_cast<double>(cache.bytes_per_token()));
  std::printf("windows: %zu of %d tokens (last %zu)\n", windows->size(), *ctx, windows->back().size());
  std::printf("{\"tokens\":%lld,\"mean_nll\":%.9g,\"ppl\":%.9g}\n", static_cast<long long>(s.tokens), s.mean_nll,
              s.ppl);
  return 0;
}

}  // namespace

CommandRunner AddScoreCommand(CLI::App& app) {
  auto f = std::make_shared<ScoreFlags>();
  f->model.Add(app);
  f->kv.Add(app, "the cache the text is scored with");
  AddDataFlag(app, f->data, "the text to tokenize (BOS first) and score, documents joined by a blank line");
  auto* ids =
      app.add_option("--ids-file", f->ids_file, "whitespace-separated token ids, used as they are (instead of --data)");
  ids->excludes(app.get_option("--data"));
  app.get_option("--data")->excludes(ids);
  AddCtxFlag(app, f->ctx, "the window length (default: the model's context, at most 4096)");
  app.add_option("--score-from", f->score_from,
                 "summary counts only positions >= this inside each window (llama.cpp: ctx/2)")
      ->check(CLI::NonNegativeNumber);
  AddJsonlFlag(app, f->jsonl);
  AddJsonFlag(app, f->json);
  return [f] { return RunScore(*f); };
}

}  // namespace kvaudit::cli
