#include "eval/session.h"

#include <algorithm>
#include <fstream>
#include <memory>

#include "base/json_text.h"
#include "job/job_runtime.h"
#include "eval/attention_diag.h"
#include "eval/buckets.h"
#include "eval/reference_file.h"
#include "eval/remote_fidelity.h"
#include "eval/resume_log.h"
#include "eval/runner.h"
#include "eval/token_classes.h"
#include "model/forward.h"
#include "model/config.h"
#include "run/fingerprint.h"
#include "run/progress.h"
#include "run/windows.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

Status WritePositionsJsonl(const std::string& path, const std::vector<WindowRecord>& records) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return BadInput(path + ": cannot open for writing; hint: check the directory exists");
  for (const WindowRecord& w : records) {
    for (size_t i = 0; i < w.size(); ++i) {
      nlohmann::json row = {{"window", w.window},
                            {"pos", w.first_pos + static_cast<int>(i)},
                            {"token", w.tokens[i]},
                            {"nll_base", w.nll_base[i]}};
      for (const char* key : {"kld", "nll", "dp", "top1", "top5_drop"}) row[key] = nlohmann::json::array();
      for (const WindowRecord::Config& c : w.configs) {
        row["kld"].push_back(c.kld[i]), row["nll"].push_back(c.nll[i]), row["dp"].push_back(c.dp[i]);
        row["top1"].push_back(c.top1[i]), row["top5_drop"].push_back(c.top5_drop[i]);
      }
      out << JsonText(row) << '\n';
    }
  }
  if (!out.flush()) return Internal(path + ": write failed");
  return Status::Ok();
}

// Positions per lockstep chunk: the runner holds [chunk, vocab] f32 logits per cache, so a job
// with many configurations (sensitivity runs 2 per layer and tensor) takes shorter chunks to keep
// them under 1 GiB. The logits do not depend on the chunking (batch invariance,
// docs/architecture.md), so neither do the results.
int LogitsChunk(size_t n_caches, int64_t vocab) {
  constexpr int64_t kLogitsBudget = int64_t{1} << 30;
  const int64_t fit = kLogitsBudget / (static_cast<int64_t>(n_caches) * vocab * 4);
  return static_cast<int>(std::clamp<int64_t>(fit / 64 * 64, 64, Forward::kMaxChunk));
}

Status CheckSomeConfiguration(const EvalOptions& o) {
  if (o.kv.kv.empty() && o.remote.endpoints.empty()) {
    return BadInput("eval needs at least one --kv or --endpoint configuration; hint: e.g. --kv k=q4_0,v=q4_0");
  }
  return Status::Ok();
}

// --reference replaces the baseline (in process or a server): not both.
Status CheckReferenceFlags(const EvalOptions& o) {
  if (o.reference.empty() || o.remote.baseline_endpoint.empty()) return Status::Ok();
  return BadInput("--reference " + o.reference + " and --baseline-endpoint are two baselines; hint: keep one");
}

// The reference's window for each selected window, checked: the same model (config and tokenizer),
// context, cut and scored positions, and the same token ids, window by window.
Expected<std::vector<const ReferenceWindow*>> MatchReference(const ReferenceFile& ref, const std::string& path,
                                                             const Model& model, const EvalOptions& o, int ctx,
                                                             const std::vector<std::vector<int32_t>>& windows) {
  const nlohmann::json& h = ref.header;
  auto bad = [&](const std::string& what) {
    return BadInput("--reference " + path + ": " + what +
                    "; hint: make the reference with this run's --model, --data, --ctx, --per-doc and --score-from");
  };
  if (h.value("config_tokenizer_hash", "") != HexHash(HashModelConfigTokenizer(model)))
    return bad("it was made for another model (config or tokenizer)");
  if (h.value("ctx", 0) != ctx) return bad("made at --ctx " + std::to_string(h.value("ctx", 0)));
  if (h.value("per_doc", false) != o.per_doc) return bad("its windows are cut differently (--per-doc)");
  if (h.value("score_from", -1) != o.score_from)
    return bad("it scores from position " + std::to_string(h.value("score_from", -1)));
  std::vector<const ReferenceWindow*> out;  // [windows]
  for (size_t i = 0; i < windows.size(); ++i) {
    const int index = o.first_window + static_cast<int>(i);
    const auto it = std::find_if(ref.windows.begin(), ref.windows.end(),
                                 [&](const ReferenceWindow& w) { return w.window == index; });
    if (it == ref.windows.end()) return bad("it has no window " + std::to_string(index));
    if (it->ids != windows[i]) return bad("window " + std::to_string(index) + " holds other tokens (another text)");
    out.push_back(&*it);
  }
  return out;
}

// Texts for the tokenizer check against each endpoint: the start of the first windows, decoded.
std::vector<std::string> TokenizerSamples(const Tokenizer* tok, const std::vector<std::vector<int32_t>>& windows) {
  std::vector<std::string> out;
  for (size_t w = 0; tok && w < windows.size() && w < 3; ++w) {
    const size_t n = std::min<size_t>(windows[w].size(), 256);
    out.push_back(tok->Decode(std::span<const int32_t>(windows[w]).first(n)));
  }
  return out;
}

}  // namespace

Expected<EvalPlan> EvalPlan::Make(EvalOptions o) {
  const RunClock clock;
  KV_RETURN_IF_ERROR(CheckSomeConfiguration(o));
  KV_RETURN_IF_ERROR(CheckReferenceFlags(o));
  // All-remote (no --kv, --baseline-endpoint or --reference): the config and tokenizer only, no weight read.
  KV_ASSIGN_OR_RETURN(ModelRuntime runtime, o.reference.empty()
                                                ? LoadJobRuntime(o.model, o.threads, o.kv, o.remote)
                                                : ModelRuntime::Load(o.model, o.threads, !o.kv.kv.empty()));
  KV_ASSIGN_OR_RETURN(auto windows, CutWindows(runtime, "eval", o));
  KV_ASSIGN_OR_RETURN(EvalPlan plan, FromWindows(std::move(o), std::move(runtime), std::move(windows)));
  plan.clock = clock;
  return plan;
}

Expected<std::vector<std::vector<int32_t>>> EvalPlan::CutWindows(const ModelRuntime& runtime, const std::string& job,
                                                                 EvalOptions& o) {
  KV_ASSIGN_OR_RETURN(const Tokenizer* tok, runtime.RequireTokenizer(job));
  const ModelConfig& cfg = runtime.model->config();
  KV_ASSIGN_OR_RETURN(o.ctx, ResolveContext(o.ctx, cfg, std::min(cfg.max_ctx, 4096), 2));
  KV_ASSIGN_OR_RETURN(auto windows, LoadTextWindows(*tok, o.data, o.ctx, o.per_doc));
  if (windows.empty()) return BadInput(o.data + ": no window of at least 2 tokens; hint: pass more text");
  return windows;
}

Expected<EvalPlan::LoadedText> EvalPlan::LoadText(const JobOptions& job, int* ctx, const std::string& job_name) {
  KV_ASSIGN_OR_RETURN(ModelRuntime runtime, ModelRuntime::Load(job.model, job.threads));
  EvalOptions cut;
  cut.data = job.data, cut.ctx = *ctx;
  KV_ASSIGN_OR_RETURN(auto windows, CutWindows(runtime, job_name, cut));
  *ctx = cut.ctx;
  return LoadedText{std::move(runtime), std::move(windows)};
}

Expected<EvalPlan> EvalPlan::FromWindows(EvalOptions o, ModelRuntime runtime, std::vector<std::vector<int32_t>> all) {
  const RunClock clock;
  KV_RETURN_IF_ERROR(CheckSomeConfiguration(o));
  const ModelConfig& cfg = runtime.model->config();
  KV_ASSIGN_OR_RETURN(const int ctx, ResolveContext(o.ctx, cfg, std::min(cfg.max_ctx, 4096), 2));
  if (o.score_from > ctx - 2) {
    return BadInput("--score-from " + std::to_string(o.score_from) + " leaves no position to score in windows of " +
                    std::to_string(ctx) + "; hint: use at most ctx-2 (llama.cpp scores from ctx/2)");
  }
  for (const auto& w : all) KV_CHECK(w.size() >= 2 && w.size() <= static_cast<size_t>(ctx));
  if (all.empty()) return BadInput(o.data + ": no window of at least 2 tokens; hint: pass more text");
  // Every window of the data is hashed for the fingerprint, so a rerun with a larger --windows
  // reuses the windows already done; --first-window and --windows then select.
  const std::string data_hash = HexHash(HashWindows(all));
  KV_ASSIGN_OR_RETURN(auto windows, SelectWindows(std::move(all), o.first_window, o.windows));
  std::vector<Bucket> buckets = DefaultBuckets(ctx);
  if (!o.buckets.empty()) {
    KV_ASSIGN_OR_RETURN(buckets, ParseBuckets(o.buckets, ctx));
  }
  // Every spec is validated before any compute: a typo in the third --kv fails at once.
  o.kv.context = ctx;
  KV_ASSIGN_OR_RETURN(KvConfigs configs, KvConfigs::Prepare(*runtime.model, o.kv, *runtime.pool));
  // Then every endpoint is reached, its capabilities checked and its tokenizer compared with ours.
  std::vector<std::string> notes;
  RemoteConfigs remote;
  if (!o.remote.empty()) {
    const Tokenizer* tok = runtime.model->tokenizer();
    if (!tok)
      return BadInput(o.model +
                      ": eval through an endpoint sends token ids, and the model has no tokenizer; hint: use a model "
                      "directory with tokenizer.json");
    RemoteConfigOptions connect = o.remote;
    if (!o.reference.empty()) connect.parallel = 1;  // a reference answers any number of windows at once
    KV_ASSIGN_OR_RETURN(
        remote, ConnectEvalEndpoints(connect, !o.kv.kv.empty(), &o.top_logprobs, *tok, TokenizerSamples(tok, windows)));
    if (o.attn_samples > 0) {
      o.attn_samples = 0;  // the diagnosis reads each configuration's cache rows: none through an API
      notes.push_back("attention diagnosis: off, an endpoint's cache rows cannot be read (docs/endpoints.md)");
    }
  }

  std::shared_ptr<const ReferenceFile> reference;
  std::vector<const ReferenceWindow*> reference_windows;
  if (!o.reference.empty()) {
    KV_ASSIGN_OR_RETURN(ReferenceFile ref, ReadReference(o.reference));
    reference = std::make_shared<const ReferenceFile>(std::move(ref));
    KV_ASSIGN_OR_RETURN(reference_windows, MatchReference(*reference, o.reference, *runtime.model, o, ctx, windows));
    if (o.attn_samples > 0) {
      o.attn_samples = 0;  // the diagnosis reads the baseline cache's rows, which a reference does not hold
      notes.push_back("attention diagnosis: off, a reference holds no baseline cache rows (docs/endpoints.md)");
    }
    notes.push_back("every KLD is a lower bound from the reference's top " +
                    std::to_string(reference->header.value("top_k", 0)) + " (docs/metrics.md)");
  }

  EvalPlan plan(std::move(o), std::move(runtime), std::move(configs));
  plan.remote = std::move(remote);
  plan.reference = std::move(reference);
  plan.reference_windows = std::move(reference_windows);
  plan.clock = clock;
  plan.tokenizer = plan.runtime.model->tokenizer();
  plan.windows = std::move(windows);
  for (const auto& w : plan.windows) plan.max_len = std::max<int>(plan.max_len, static_cast<int>(w.size()));
  EvalRunInfo& info = plan.info;
  const EvalOptions& opt = plan.options;
  info.model = opt.model, info.data = opt.data, info.ctx = ctx, info.score_from = opt.score_from;
  info.ubatch = opt.ubatch;
  info.per_doc = opt.per_doc, info.n_windows = static_cast<int>(plan.windows.size()), info.tokens_hash = data_hash;
  info.first_window = opt.first_window;
  info.aggregate.kld_threshold = opt.kld_threshold;
  info.aggregate.bootstrap.replicates = opt.bootstrap;
  info.aggregate.bootstrap.seed = opt.bootstrap_seed;
  info.aggregate.buckets = std::move(buckets);
  info.threads = plan.runtime.pool->size();
  info.attn_samples = opt.attn_samples;
  info.baseline_spec = plan.configs.config(0).spec();
  if (const RemoteConfig* b = plan.remote.baseline()) {
    info.baseline_spec = b->name;
    info.baseline_endpoint = b->Describe();
  }
  if (plan.reference) {
    const nlohmann::json& h = plan.reference->header;
    const nlohmann::json& base = h["baseline"];
    info.baseline_spec =
        std::string(kReferenceBaselinePrefix) + (base.is_string() ? base.get<std::string>() : base.value("name", ""));
    info.baseline_endpoint = {{"reference", opt.reference}, {"top_k", h["top_k"]}, {"baseline", base},
                              {"model", h["model"]},        {"data", h["data"]},   {"positions", h["positions"]}};
  }
  info.top_logprobs = plan.remote.any() ? opt.top_logprobs : 0;
  // In-process configurations against a reference: the bound is from the reference's top k.
  if (plan.reference && !plan.remote.any()) info.top_logprobs = plan.reference->header.value("top_k", 0);
  info.notes = std::move(notes);
  const ModelIdentity id = IdentifyModel(*plan.runtime.model);  // once: with weights, it reads every byte
  plan.model_hash = id.hash;
  info.model_hash = id.hash, info.model_hash_kind = id.kind;
  const ModelConfig& mc = plan.runtime.model->config();
  info.model_architecture = ArchName(mc.arch);
  info.n_layers = mc.n_layers, info.n_kv_heads = mc.n_kv_heads, info.head_dim = mc.head_dim;
  if (mc.n_sliding_layers() > 0) {
    for (int l = 0; l < mc.n_layers; ++l) info.layer_windows.push_back(mc.layer_window(l));
    // bytes_per_token counts what kvaudit's cache stores per position; an engine's sliding layer
    // keeps only its window, so memory at a context is the per-layer model's (decide/targets/kv_memory.h).
    info.notes.push_back("bytes/token: per position of every layer as kvaudit's cache stores it; the engines keep " +
                         std::to_string(mc.n_sliding_layers()) + " of " + std::to_string(mc.n_layers) +
                         " layers for their window (" + std::to_string(mc.sliding_window) +
                         ") only: memory at a context is kvaudit info's or deploy's");
  }
  // Which LongRoPE factors ran depends on --ctx: said beside the numbers they produced.
  if (mc.rope.is_longrope()) info.notes.push_back(DescribeLongRope(mc, ctx));
  plan.fingerprint = plan.MakeFingerprint();
  return plan;
}

Status EvalPlan::Reconfigure(KvConfigOptions kv, int attn_samples, const std::string& out) {
  if (kv.kv.empty()) return BadInput("eval needs at least one --kv configuration; hint: e.g. --kv k=q4_0,v=q4_0");
  kv.context = info.ctx;
  KV_ASSIGN_OR_RETURN(configs, KvConfigs::Prepare(*runtime.model, kv, *runtime.pool));
  options.kv = kv, options.attn_samples = attn_samples, options.out = out;
  info.attn_samples = attn_samples;
  info.baseline_spec = configs.config(0).spec();
  info.windows_resumed = 0;
  clock = RunClock();  // each stage reports its own wall time
  fingerprint = MakeFingerprint();
  return Status::Ok();
}

void EvalPlan::Reshard(const ShardSpec& shard) { options.shard = shard; }

nlohmann::json EvalPlan::MakeFingerprint() const {
  nlohmann::json fp = {{"model", model_hash},
                       {"data", info.tokens_hash},
                       {"ctx", info.ctx},
                       {"score_from", info.score_from},
                       {"per_doc", info.per_doc}};
  // The journal numbers windows from the first selected one: another start cannot be mixed in.
  // (Absent at 0, so journals written before --first-window existed still resume.)
  if (options.first_window > 0) fp["first_window"] = options.first_window;
  if (options.ubatch > 0) fp["ubatch"] = options.ubatch;  // engine=llama.cpp's logits depend on it
  fp.update(configs.Fingerprint());                       // baseline, configs, calibration
  if (remote.any()) fp["endpoints"] = {{"servers", remote.Fingerprint()}, {"top_logprobs", options.top_logprobs}};
  if (reference) {
    const nlohmann::json& h = reference->header;
    fp["reference"] = {{"model_hash", h["model_hash"]},
                       {"baseline", h["baseline"]},
                       {"top_k", h["top_k"]},
                       {"positions", h["positions"]}};
  }
  if (options.attn_samples > 0) {
    // The attention cells are kept per context bucket: other buckets or samples cannot be mixed in.
    nlohmann::json edges = nlohmann::json::array();
    for (const Bucket& b : info.aggregate.buckets) edges.push_back(b.to);
    fp["attention"] = {{"samples", options.attn_samples}, {"bucket_edges", edges}};
  }
  return fp;
}

std::vector<int64_t> EvalSession::WindowCosts() const {
  std::vector<int64_t> costs;  // [n_windows]
  for (const auto& w : plan_.windows) costs.push_back(static_cast<int64_t>(w.size()));
  return costs;
}

size_t EvalSession::n_configs() const { return plan_.configs.n_configs() + plan_.remote.configs().size(); }

Expected<EvalSessionResult> EvalSession::Run() {
  const KvConfigs& configs = plan_.configs;
  // [1 + n_configs]; none when every side is an endpoint (the model may have no weights).
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<ConfigGroup> groups;  // more than one: caches[1..] hold no storage, each group's are built per window
  if (!plan_.remote.baseline()) {
    KV_ASSIGN_OR_RETURN(groups, PlanGroups());
    const bool grouped = groups.size() > 1;
    if (plan_.reference) caches.push_back(nullptr);  // the baseline is frozen: no baseline cache
    for (size_t i = plan_.reference ? 1 : 0; i <= configs.n_configs(); ++i) {
      KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> c, configs.MakeCache(i, plan_.max_len, grouped && i > 0 ? 0 : -1));
      caches.push_back(std::move(c));
    }
  }
  // The attention diagnosis: one shadow cache per configuration, fed the baseline's rows.
  std::vector<std::unique_ptr<KvCache>> shadows;  // [n_configs]
  for (size_t i = 1; plan_.options.attn_samples > 0 && i <= configs.n_configs(); ++i) {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> s, configs.MakeCache(i, plan_.max_len));
    shadows.push_back(std::move(s));
  }
  plan_.info.baseline_bytes_per_token = caches.empty() || !caches[0] ? 0 : caches[0]->bytes_per_token();
  std::vector<KvCache*> cache_ptrs, shadow_ptrs;
  for (auto& c : caches) cache_ptrs.push_back(c.get());
  for (auto& s : shadows) shadow_ptrs.push_back(s.get());

  std::vector<nlohmann::json> lines;
  KV_ASSIGN_OR_RETURN(JobRun job, JobRun::Open(kEvalJob, plan_.options, plan_.fingerprint, WindowCosts(), &lines));
  std::vector<WindowRecord> records;
  KV_RETURN_IF_ERROR(WindowsFromJournal(lines, job.journal_path(), n_configs(), plan_.windows.size(),
                                        AttentionCells(plan_.info), &records));
  plan_.info.windows_resumed = static_cast<int>(records.size());
  const EvalSummaryInputs inputs = SummaryInputs(caches);
  const int threads = plan_.info.threads;
  if (job.sharded())
    KV_RETURN_IF_ERROR(job.WriteShard(EvalSummaryInputsToJson(inputs), ShardRunJson({}, 0, threads), false));
  KV_RETURN_IF_ERROR(RunWindows(job, cache_ptrs, shadow_ptrs, groups, &records));
  if (!plan_.options.jsonl.empty())
    KV_RETURN_IF_ERROR(WritePositionsJsonl(plan_.options.jsonl, records));  // a shard: its windows
  EvalSessionResult out;
  if (!job.sharded()) out.configs = SummarizeEval(inputs, records);
  const RunTotals totals = plan_.clock.Stop();
  plan_.info.wall_s = totals.wall_s, plan_.info.peak_rss_mb = totals.peak_rss_mb;
  out.info = plan_.info;
  if (job.sharded()) {
    const nlohmann::json run = ShardRunJson(totals, plan_.info.windows_resumed, threads);
    KV_RETURN_IF_ERROR(job.WriteShard(EvalSummaryInputsToJson(inputs), run, true));
    out.shard_windows = static_cast<int>(records.size());
  } else {
    out.results = ResultsJson(out.info, out.configs);
  }
  KV_ASSIGN_OR_RETURN(out.results_path, job.Finish(out.results));
  return out;
}

int EvalSession::Chunk(size_t n_caches) const {
  const int chunk = LogitsChunk(std::max<size_t>(n_caches, 1), plan_.runtime.model->config().vocab_size);
  return plan_.options.ubatch > 0 ? std::min(chunk, plan_.options.ubatch) : chunk;
}

Expected<std::vector<ConfigGroup>> EvalSession::PlanGroups() const {
  const size_t n = plan_.configs.n_configs();
  if (n < 2 || !plan_.remote.configs().empty() || plan_.options.attn_samples > 0) return std::vector<ConfigGroup>{};
  const Model& model = *plan_.runtime.model;
  const uint64_t mapped = model.weights().mappings.empty() ? 0 : model.weights().bytes();
  KV_ASSIGN_OR_RETURN(const ConfigMemory memory,
                      MeasureConfigMemory(plan_.configs, model.config(), plan_.max_len, Chunk(1 + n),
                                          plan_.reference != nullptr, mapped, plan_.options.memory_limit));
  const std::vector<ConfigGroup> groups = GroupConfigs(memory.config_bytes, memory.budget);
  if (groups.size() > 1) std::fprintf(stderr, "kvaudit: %s\n", GroupingNote(memory, groups).c_str());
  return groups;
}

// Runs the windows this run owns that *records (read back from the journal) does not hold, each
// journaled as it finishes; *records ends in ascending window order (a resumed run must sum in
// the same order as a fresh one).
Status EvalSession::RunWindows(JobRun& job, const std::vector<KvCache*>& caches_in, std::vector<KvCache*> shadows,
                               const std::vector<ConfigGroup>& groups, std::vector<WindowRecord>* records) {
  const auto& windows = plan_.windows;
  std::vector<bool> skip(windows.size(), true);  // done, or another shard's
  for (size_t w = 0; w < windows.size(); ++w) skip[w] = !job.owned()[w];
  int64_t todo = 0;
  for (const WindowRecord& r : *records) skip[static_cast<size_t>(r.window)] = true;
  for (size_t w = 0; w < windows.size(); ++w) todo += skip[w] ? 0 : static_cast<int64_t>(windows[w].size()) - 1;

  std::vector<KvCache*> caches = caches_in;
  std::unique_ptr<AttentionDiagnosis> diag;
  if (!shadows.empty()) {
    diag = std::make_unique<AttentionDiagnosis>(plan_.runtime.model->config(), *caches[0], std::move(shadows),
                                                plan_.info.aggregate.buckets, plan_.options.attn_samples);
    caches[0] = diag.get();
  }
  ProgressBar bar(todo, "eval");
  FidelityRunOptions run;
  run.score_from = plan_.options.score_from;
  run.context = plan_.info.ctx;
  run.chunk = Chunk(caches.size());
  if (diag) run.begin_window = [&](int w, int n) { diag->BeginWindow(w, n - 1); };  // the last token is never run
  auto on_window = [&](WindowRecord&& rec) -> Status {
    if (diag) rec.attention = diag->TakeWindow();
    KV_RETURN_IF_ERROR(job.Record(WindowToJson(rec)));
    bar.Advance(static_cast<int64_t>(windows[static_cast<size_t>(rec.window)].size()) - 1);
    records->push_back(std::move(rec));
    return Status::Ok();
  };
  std::vector<RemoteBackend*> remote;  // the endpoint configurations, in --endpoint order
  for (const RemoteConfig& r : plan_.remote.configs()) remote.push_back(r.backend.get());
  const int k = plan_.options.top_logprobs;
  Status st;
  // A frozen baseline: window w's rows from the reference, [n - 1], before first_pos the token only.
  auto rows = [&](size_t w) {
    const ReferenceWindow& ref = *plan_.reference_windows[w];
    TopKRows out(ref.ids.size() - 1);
    for (size_t i = 0; i < out.size(); ++i) out[i].token = ref.ids[i + 1];
    for (size_t i = 0; i < ref.rows.size(); ++i) out[static_cast<size_t>(ref.first_pos) + i] = ref.rows[i];
    return out;
  };
  if (plan_.reference && plan_.configs.n_configs() == 0) {  // only the servers are asked
    st = RunTopKFidelity(remote, k, windows, skip, run.score_from, plan_.options.remote.parallel, on_window, rows);
  } else if (const RemoteConfig* b = plan_.remote.baseline()) {
    remote.insert(remote.begin(), b->backend.get());  // every side remote: no forward pass here
    st = RunTopKFidelity(remote, k, windows, skip, run.score_from, plan_.options.remote.parallel, on_window);
  } else {
    if (plan_.reference) run.reference_rows = rows;
    run.n_topk = remote.size();
    run.fetch_topk = [&](std::span<const int32_t> ids) {
      const size_t first = std::min(static_cast<size_t>(std::max(run.score_from, 0)), ids.empty() ? 0 : ids.size() - 1);
      return FetchTopKRows(remote, ids, k, first);
    };
    if (groups.size() > 1) {
      const ConfigCacheMaker make = [&](size_t i) { return plan_.configs.MakeCache(i + 1, plan_.max_len); };
      st = RunFidelityInGroups(*plan_.runtime.model, caches[0], make, groups, *plan_.runtime.pool, windows, skip, run,
                               on_window);
    } else {
      st = RunFidelity(*plan_.runtime.model, caches, *plan_.runtime.pool, windows, skip, run, on_window);
    }
  }
  bar.Finish();
  KV_RETURN_IF_ERROR(st);
  std::sort(records->begin(), records->end(),
            [](const WindowRecord& a, const WindowRecord& b) { return a.window < b.window; });
  return Status::Ok();
}

EvalSummaryInputs EvalSession::SummaryInputs(const std::vector<std::unique_ptr<KvCache>>& caches) const {
  EvalSummaryInputs in;
  in.info = plan_.info;
  in.vocab_size = plan_.runtime.model->config().vocab_size;
  if (plan_.tokenizer) in.classes = ClassifyVocabulary(*plan_.tokenizer);
  const size_t n_local = plan_.configs.n_configs();
  for (size_t c = 0; c < n_configs(); ++c) {
    ConfigResult r;
    if (c < n_local) {
      r.spec = plan_.configs.config(c + 1).spec(), r.bytes_per_token = caches[c + 1]->bytes_per_token();
    } else {
      const RemoteConfig& e = plan_.remote.configs()[c - n_local];
      r.spec = e.name, r.endpoint = e.Describe();
    }
    in.heads.push_back(std::move(r));
  }
  return in;
}

}  // namespace kvaudit
