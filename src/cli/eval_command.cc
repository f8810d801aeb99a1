// kvaudit eval: fidelity of each cache configuration against the baseline, by context length,
// in one streaming, resumable run (issue 4; metrics in docs/metrics.md, output in
// docs/results-schema.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/kv_flags.h"
#include "eval/attention_diag.h"
#include "eval/report.h"
#include "eval/runner.h"
#include "run/progress.h"
#include "eval/resume_log.h"
#include "run/text_data.h"
#include "run/windows.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

namespace fs = std::filesystem;

struct EvalFlags {
  ModelFlags model;
  std::vector<std::string> kv;
  std::string kv_calib, baseline = "k=f32,v=f32", data, out = "kvaudit-eval", jsonl, buckets;
  int ctx = 0, windows = 0, score_from = 0, bootstrap = 1000, attn_samples = 32;
  uint64_t seed = 1;
  double kld_threshold = 0.01;
  bool per_doc = false, restart = false;
};

Expected<std::vector<std::vector<int32_t>>> LoadWindows(const Tokenizer& tok, const std::string& path, int ctx,
                                                        bool per_doc) {
  KV_ASSIGN_OR_RETURN(std::vector<std::string> docs, LoadDocuments(path));
  const bool bos = tok.add_bos_default();
  if (!per_doc) return MakeWindows(tok.Encode(JoinDocuments(docs), bos), ctx, bos ? tok.bos_id() : -1);
  std::vector<std::vector<int32_t>> windows;
  for (const std::string& d : docs) {
    std::vector<int32_t> ids = tok.Encode(d, bos);
    if (ids.size() > static_cast<size_t>(ctx)) ids.resize(static_cast<size_t>(ctx));
    if (ids.size() >= 2) windows.push_back(std::move(ids));
  }
  return windows;
}

Status WritePositionsJsonl(const std::string& path, const std::vector<WindowRecord>& records) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return BadInput(path + ": cannot open for writing; hint: check the directory exists");
  for (const WindowRecord& w : records) {
    for (size_t i = 0; i < w.size(); ++i) {
      nlohmann::json row = {{"window", w.window}, {"pos", w.first_pos + static_cast<int>(i)},
                            {"token", w.tokens[i]}, {"nll_base", w.nll_base[i]}};
      for (const char* key : {"kld", "nll", "dp", "top1", "top5_drop"}) row[key] = nlohmann::json::array();
      for (const WindowRecord::Config& c : w.configs) {
        row["kld"].push_back(c.kld[i]), row["nll"].push_back(c.nll[i]), row["dp"].push_back(c.dp[i]);
        row["top1"].push_back(c.top1[i]), row["top5_drop"].push_back(c.top5_drop[i]);
      }
      out << row.dump() << '\n';
    }
  }
  if (!out.flush()) return Internal(path + ": write failed");
  return Status::Ok();
}

int RunEval(const EvalFlags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  auto loaded = Model::Load(f.model.model);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& cfg = model.config();
  const Tokenizer* tok = model.tokenizer();
  if (!tok) return ReportError(BadInput(f.model.model + ": model has no tokenizer; hint: eval needs tokenizer.json or a GGUF vocabulary"));
  const int ctx = f.ctx > 0 ? f.ctx : std::min(cfg.max_ctx, 4096);
  if (ctx < 2 || ctx > cfg.max_ctx) {
    return ReportError(BadInput("--ctx " + std::to_string(ctx) + " is outside [2, " + std::to_string(cfg.max_ctx) +
                                "] (the model's context length); hint: pick a window length the model supports"));
  }
  if (f.score_from > ctx - 2) {
    return ReportError(BadInput("--score-from " + std::to_string(f.score_from) + " leaves no position to score in windows of " +
                                std::to_string(ctx) + "; hint: use at most ctx-2 (llama.cpp scores from ctx/2)"));
  }
  const std::string data = f.data.empty() ? DefaultDataPath() : f.data;
  if (f.data.empty() && !fs::exists(data)) {
    return ReportError(BadInput("the bundled eval documents " + data + " are missing; hint: pass --data FILE|DIR|JSONL"));
  }
  auto all_windows = LoadWindows(*tok, data, ctx, f.per_doc);
  if (!all_windows) return ReportError(all_windows.error());
  if (all_windows->empty()) return ReportError(BadInput(data + ": no window of at least 2 tokens; hint: pass more text"));
  // The fingerprint hashes every window of the data, so a rerun with a larger --windows reuses
  // the windows already done.
  const std::string data_hash = HexHash(HashWindows(*all_windows));
  std::vector<std::vector<int32_t>> windows = std::move(*all_windows);
  if (f.windows > 0 && static_cast<size_t>(f.windows) < windows.size()) windows.resize(static_cast<size_t>(f.windows));

  EvalRunInfo info;
  info.model = f.model.model;
  info.data = data;
  info.ctx = ctx;
  info.score_from = f.score_from;
  info.per_doc = f.per_doc;
  info.n_windows = static_cast<int>(windows.size());
  info.tokens_hash = data_hash;
  info.aggregate.kld_threshold = f.kld_threshold;
  info.aggregate.bootstrap = {f.bootstrap, f.seed};
  if (f.buckets.empty()) {
    info.aggregate.buckets = DefaultBuckets(ctx);
  } else {
    auto b = ParseBuckets(f.buckets, ctx);
    if (!b) return ReportError(b.error());
    info.aggregate.buckets = std::move(*b);
  }

  info.threads = ResolveThreads(f.model.threads);
  ThreadPool pool(info.threads);
  int max_len = 0;
  for (const auto& w : windows) max_len = std::max<int>(max_len, static_cast<int>(w.size()));
  // Every cache is built (and every spec validated) before any compute: a typo in the third
  // --kv fails at once, not after the first two ran.
  std::vector<BuiltCache> built;  // [1 + n_configs], baseline first
  std::set<std::string> seen;
  for (size_t i = 0; i <= f.kv.size(); ++i) {
    auto b = BuildCache(model, i == 0 ? f.baseline : f.kv[i - 1], f.kv_calib, max_len, pool);
    if (!b) return ReportError(b.error());
    if (i > 0 && !seen.insert(b->policy.spec()).second) {
      return ReportError(BadInput("--kv " + f.kv[i - 1] + " repeats configuration " + b->policy.spec() + "; hint: give each configuration once"));
    }
    built.push_back(std::move(*b));
  }
  // The attention diagnosis: one shadow cache per configuration, fed the baseline's rows.
  std::vector<BuiltCache> shadows;  // [n_configs]
  if (f.attn_samples > 0) {
    for (size_t i = 1; i < built.size(); ++i) {
      auto b = BuildCache(model, f.kv[i - 1], f.kv_calib, max_len, pool);
      if (!b) return ReportError(b.error());
      shadows.push_back(std::move(*b));
    }
  }
  info.attn_samples = f.attn_samples;
  info.baseline_spec = built[0].policy.spec();
  info.baseline_bytes_per_token = built[0].cache->bytes_per_token();

  nlohmann::json fingerprint = {{"model", HexHash(HashModel(model))}, {"data", data_hash}, {"ctx", ctx},
                                {"score_from", f.score_from}, {"per_doc", f.per_doc},
                                {"baseline", info.baseline_spec}, {"configs", nlohmann::json::array()}};
  for (size_t i = 1; i < built.size(); ++i) fingerprint["configs"].push_back(built[i].policy.spec());
  const int n_buckets = static_cast<int>(info.aggregate.buckets.size());
  const size_t attn_cells = f.attn_samples > 0 ? static_cast<size_t>(cfg.n_layers) * cfg.n_kv_heads * n_buckets : 0;
  if (f.attn_samples > 0) {
    // The attention cells are kept per context bucket: other buckets or samples cannot be mixed in.
    nlohmann::json edges = nlohmann::json::array();
    for (const Bucket& b : info.aggregate.buckets) edges.push_back(b.to);
    fingerprint["attention"] = {{"samples", f.attn_samples}, {"bucket_edges", edges}};
  }
  if (!f.kv_calib.empty()) {
    auto calib_docs = LoadDocuments(f.kv_calib);
    if (!calib_docs) return ReportError(calib_docs.error());
    const std::string text = JoinDocuments(*calib_docs);
    fingerprint["calibration"] = HexHash(HashBytes(text.data(), text.size(), 7));
  }

  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return ReportError(BadInput(f.out + ": cannot create the output directory: " + ec.message() + "; hint: check --out"));
  const fs::path progress_path = fs::path(f.out) / "progress.jsonl";
  if (f.restart) fs::remove(progress_path, ec);
  std::vector<WindowRecord> records;
  auto log = ProgressLog::Open(progress_path.string(), fingerprint, f.kv.size(), windows.size(), &records, attn_cells);
  if (!log) return ReportError(log.error());
  info.windows_resumed = static_cast<int>(records.size());

  std::vector<bool> skip(windows.size(), false);
  int64_t todo = 0;
  for (const WindowRecord& r : records) skip[static_cast<size_t>(r.window)] = true;
  for (size_t w = 0; w < windows.size(); ++w) todo += skip[w] ? 0 : static_cast<int64_t>(windows[w].size()) - 1;
  std::vector<KvCache*> caches;  // [1 + n_configs]
  for (BuiltCache& b : built) caches.push_back(b.cache.get());
  std::unique_ptr<AttentionDiagnosis> diag;
  if (f.attn_samples > 0) {
    std::vector<KvCache*> shadow_caches;
    for (BuiltCache& b : shadows) shadow_caches.push_back(b.cache.get());
    diag = std::make_unique<AttentionDiagnosis>(cfg, *caches[0], shadow_caches, info.aggregate.buckets, f.attn_samples);
    caches[0] = diag.get();
  }
  ProgressBar bar(todo, StderrIsTerminal(), "eval");
  FidelityRunOptions run;
  run.score_from = f.score_from;
  if (diag) run.begin_window = [&](int w, int n) { diag->BeginWindow(w, n - 1); };  // the last token is never run
  Status st = RunFidelity(model, caches, pool, windows, skip, run, [&](WindowRecord&& rec) -> Status {
    if (diag) rec.attention = diag->TakeWindow();
    KV_RETURN_IF_ERROR((*log)->Append(rec));
    bar.Advance(static_cast<int64_t>(windows[static_cast<size_t>(rec.window)].size()) - 1);
    records.push_back(std::move(rec));
    return Status::Ok();
  });
  bar.Finish();
  if (!st) return ReportError(st.error());
  // Ascending window order: a resumed run must sum in the same order as a fresh one.
  std::sort(records.begin(), records.end(), [](const WindowRecord& a, const WindowRecord& b) { return a.window < b.window; });

  std::vector<int32_t> scored_tokens;  // [scored positions]
  for (const WindowRecord& r : records) scored_tokens.insert(scored_tokens.end(), r.tokens.begin(), r.tokens.end());
  const std::vector<TokenClass> classes = ClassifyVocabulary(*tok);
  const std::vector<uint8_t> rare = RareTokens(scored_tokens, cfg.vocab_size);
  AggregateOptions agg = info.aggregate;
  agg.classes = &classes;
  agg.rare = &rare;
  std::vector<ConfigResult> results;
  for (size_t c = 0; c + 1 < built.size(); ++c) {
    ConfigResult r{built[c + 1].policy.spec(), built[c + 1].cache->bytes_per_token(), SummarizeConfig(records, c, agg), {}};
    if (attn_cells > 0) {
      std::vector<AttnCell> sum(attn_cells);  // summed in ascending window order (records are sorted)
      for (const WindowRecord& w : records) {
        for (size_t i = 0; i < attn_cells; ++i) sum[i].Add(w.attention[c][i]);
      }
      std::vector<int> from;
      for (const Bucket& b : agg.buckets) from.push_back(b.from);
      r.attention = SummarizeAttention(sum, cfg.n_layers, cfg.n_kv_heads, from);
    }
    results.push_back(std::move(r));
  }
  if (!f.jsonl.empty()) {
    Status js = WritePositionsJsonl(f.jsonl, records);
    if (!js) return ReportError(js.error());
  }
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info.peak_rss_mb = PeakRssMb();
  Status ws = WriteFileAtomically((fs::path(f.out) / "results.json").string(), ResultsJson(info, results).dump(2) + "\n");
  if (!ws) return ReportError(ws.error());
  std::fputs(ResultsTable(info, results).c_str(), stdout);
  std::printf("wall %.1f s, peak RSS %.0f MB, %d of %d windows resumed; results: %s\n", info.wall_s, info.peak_rss_mb,
              info.windows_resumed, info.n_windows, (fs::path(f.out) / "results.json").string().c_str());
  return 0;
}

}  // namespace

CommandRunner AddEvalCommand(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  f->model.Add(app);
  app.add_option("--kv", f->kv, "cache configuration to compare with the baseline (repeatable), e.g. k=q4_0,v=q4_0")
      ->required();
  app.add_option("--baseline", f->baseline, "reference cache configuration")->capture_default_str();
  app.add_option("--kv-calib", f->kv_calib, "calibration text for fp8 scale=calib and outliers=N");
  app.add_option("--data", f->data, "text file, folder of text files, or JSONL with \"text\" (default: the bundled eval documents)");
  app.add_flag("--per-doc", f->per_doc, "one document per window (truncated to --ctx) instead of one joined stream");
  app.add_option("--ctx", f->ctx, "window length in tokens (default: model context, at most 4096)");
  app.add_option("--windows", f->windows, "use only the first K windows (0 = all)")->check(CLI::NonNegativeNumber);
  app.add_option("--score-from", f->score_from, "statistics use only positions >= this in each window (llama.cpp: ctx/2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--buckets", f->buckets, "ascending upper edges of context-length buckets, e.g. 16,64,256 (default powers of two)");
  app.add_option("--kld-threshold", f->kld_threshold, "KLD above which a context length counts as unsafe")->capture_default_str();
  app.add_option("--bootstrap", f->bootstrap, "bootstrap replicates for the KLD confidence intervals")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", f->seed, "bootstrap seed")->capture_default_str();
  app.add_option("--out", f->out, "output directory (results.json, progress.jsonl)")->capture_default_str();
  app.add_flag("--restart", f->restart, "discard the windows recorded in --out and start over");
  app.add_option("--jsonl", f->jsonl, "also write one JSON line per scored position");
  app.add_option("--attn-samples", f->attn_samples,
                 "query positions per window sampled for the per-layer/KV-head attention diagnosis (0 = off)")
      ->capture_default_str()->check(CLI::Range(0, 4096));
  return [f] { return RunEval(*f); };
}

}  // namespace kvaudit::cli
