// kvaudit score: teacher-forced NLL of text or token ids (contract in issue 2 and docs/cli.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "run/scorer.h"
#include "run/text_data.h"
#include "run/windows.h"
#include "cli/kv_flags.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

struct ScoreFlags {
  ModelFlags model;
  KvFlags kv;
  std::string text_file, ids_file, jsonl;
  int ctx = 0;
  int score_from = 0;
};

int RunScore(const ScoreFlags& f) {
  auto loaded = Model::Load(f.model.model);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& cfg = model.config();
  const int ctx = f.ctx > 0 ? f.ctx : std::min(cfg.max_ctx, 4096);
  if (ctx < 2) return ReportError(BadInput("--ctx " + std::to_string(ctx) + " is too small; hint: use at least 2"));
  if (f.ctx > cfg.max_ctx) {
    return ReportError(BadInput("--ctx " + std::to_string(f.ctx) + " exceeds the model's context length " +
                                std::to_string(cfg.max_ctx) + "; hint: use --ctx " + std::to_string(cfg.max_ctx)));
  }
  std::vector<std::vector<int32_t>> windows;
  if (!f.text_file.empty()) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok) return ReportError(BadInput(f.model.model + ": model has no tokenizer; hint: use --ids-file"));
    auto docs = LoadDocuments(f.text_file);
    if (!docs) return ReportError(docs.error());
    const std::string text = JoinDocuments(*docs);
    windows = MakeWindows(tok->Encode(text, tok->add_bos_default()), ctx, tok->add_bos_default() ? tok->bos_id() : -1);
  } else {
    auto ids = ReadIdsFile(f.ids_file, cfg.vocab_size);
    if (!ids) return ReportError(ids.error());
    windows = MakeWindows(*ids, ctx, -1);
  }
  if (windows.empty() || windows[0].size() < 2) {
    return ReportError(BadInput("input has fewer than 2 tokens; hint: nothing to predict"));
  }
  std::unique_ptr<std::ofstream> jsonl;
  if (!f.jsonl.empty()) {
    jsonl = std::make_unique<std::ofstream>(f.jsonl);
    if (!*jsonl) return ReportError(BadInput(f.jsonl + ": cannot open for writing; hint: check the directory exists"));
  }
  ThreadPool pool(ResolveThreads(f.model.threads));
  int max_len = 0;
  for (const auto& w : windows) max_len = std::max<int>(max_len, static_cast<int>(w.size()));
  auto built = BuildCache(model, f.kv.kv, f.kv.kv_calib, max_len, pool);
  if (!built) return ReportError(built.error());
  KvCache& cache = *built->cache;
  ScoreOptions options;
  options.score_from = f.score_from;
  char line[256];
  ScoreSummary s = ScoreWindows(model, cache, pool, windows, options, [&](const ScoredPosition& p) {
    if (!jsonl) return;
    std::snprintf(line, sizeof(line), "{\"window\":%d,\"pos\":%d,\"token\":%d,\"nll\":%.9g,\"argmax\":%d}\n",
                  p.window, p.pos, p.token, p.nll, p.argmax);
    *jsonl << line;
  });
  if (jsonl && !jsonl->flush()) return ReportError(Internal(f.jsonl + ": write failed"));
  std::printf("kv: %s (%.1f bytes/token)\n", built->policy.spec().c_str(), static_cast<double>(cache.bytes_per_token()));
  std::printf("windows: %zu of %d tokens (last %zu)\n", windows.size(), ctx, windows.back().size());
  std::printf("{\"tokens\":%lld,\"mean_nll\":%.9g,\"ppl\":%.9g}\n", static_cast<long long>(s.tokens), s.mean_nll, s.ppl);
  return 0;
}

}  // namespace

CommandRunner AddScoreCommand(CLI::App& app) {
  auto f = std::make_shared<ScoreFlags>();
  f->model.Add(app);
  f->kv.Add(app);
  auto* text = app.add_option("--text-file", f->text_file, "text to tokenize (BOS first) and score: a file, a folder of files, or JSONL with \"text\" (documents joined by a blank line)");
  auto* ids = app.add_option("--ids-file", f->ids_file, "whitespace-separated token ids, used as they are");
  text->excludes(ids);
  ids->excludes(text);
  app.add_option("--ctx", f->ctx, "window length in tokens (default: model context, at most 4096)");
  app.add_option("--score-from", f->score_from,
                 "summary counts only positions >= this inside each window (llama.cpp: ctx/2)")->check(CLI::NonNegativeNumber);
  app.add_option("--jsonl", f->jsonl, "write one JSON line per predicted position");
  return [f] {
    if (f->text_file.empty() == f->ids_file.empty()) {
      return ReportError(BadInput("score needs exactly one of --text-file or --ids-file; hint: kvaudit score --help"));
    }
    return RunScore(*f);
  };
}

}  // namespace kvaudit::cli
