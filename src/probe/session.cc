#include "probe/session.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <thread>

#include "probe/run_info_json.h"
#include "probe/runner.h"
#include "probe/units.h"
#include "job/job_run.h"
#include "run/generation_backend.h"
#include "run/progress.h"

namespace kvaudit {
namespace {

// probe in the job skeleton: its units are instances, variance and drift prompts (probe/units.h).
const JobKind kProbeJob{"probe", "kvaudit_probe_progress", "probe"};

// The recorded instances of a journal by id; each is parsed when its instance comes up.
class Recorded {
 public:
  static Expected<Recorded> From(std::vector<nlohmann::json> lines, const std::string& path, size_t n_caches) {
    Recorded r(path, n_caches);
    for (nlohmann::json& j : lines) {
      if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("kind")) {
        return BadInput(path + ": damaged probe record" + JsonlJournal::Hint("probe"));
      }
      const std::string id = j["id"].get<std::string>();  // before the move: `=` evaluates its right side first
      r.done_[id] = std::move(j);
    }
    return r;
  }
  bool Has(const std::string& id) const { return done_.count(id) > 0; }
  // Parses the record of `id` into `into`; a record of the wrong shape is BadInput.
  template <class Parse, class Records>
  Status Restore(const std::string& id, Parse parse, Records& into) {
    auto rec = parse(done_.at(id), n_caches_);
    if (!rec) return BadInput(path_ + ": damaged record " + id + JsonlJournal::Hint("probe"));
    into.push_back(std::move(*rec));
    ++restored_;
    return Status::Ok();
  }
  int restored() const { return restored_; }

 private:
  Recorded(std::string path, size_t n_caches) : path_(std::move(path)), n_caches_(n_caches) {}
  std::string path_;
  size_t n_caches_;
  std::map<std::string, nlohmann::json> done_;
  int restored_ = 0;
};

// Runs (or restores) the owned units of 0..n-1 of one kind (another shard's are passed over) and
// journals what ran, in unit order: up to
// `parallel` consecutive units not yet recorded run at once (each on its own thread; only when
// every backend is an endpoint), and are journaled in order, so the journal and the results do
// not depend on which finishes first. When a unit fails, those before it are journaled first.
template <class IdOf, class Parse, class Records, class RunOne>
Status Steps(Recorded& recorded, JobRun& job, std::span<const uint8_t> owned, size_t parallel, IdOf id_of, Parse parse,
             Records& into, RunOne run, ProgressBar& bar) {
  using Record = typename Records::value_type;
  const size_t n = owned.size();
  for (size_t i = 0; i < n;) {
    if (!owned[i]) {
      ++i;
      continue;
    }
    if (recorded.Has(id_of(i))) {
      KV_RETURN_IF_ERROR(recorded.Restore(id_of(i), parse, into));
      bar.Advance(1);
      ++i;
      continue;
    }
    std::vector<size_t> batch;  // consecutive units to run now
    for (size_t j = i; j < n && batch.size() < parallel && owned[j] && !recorded.Has(id_of(j)); ++j) batch.push_back(j);
    std::vector<std::optional<Expected<Record>>> got(batch.size());
    if (batch.size() == 1) {
      got[0].emplace(run(batch[0]));
    } else {
      std::vector<std::thread> threads;
      for (size_t k = 0; k < batch.size(); ++k) threads.emplace_back([&, k] { got[k].emplace(run(batch[k])); });
      for (std::thread& t : threads) t.join();
    }
    for (auto& g : got) {
      if (!g->ok()) return g->error();
      into.push_back(std::move(g->value()));
      KV_RETURN_IF_ERROR(job.Record(ToJson(into.back())));
      bar.Advance(1);
    }
    i = batch.back() + 1;
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json ProbeSession::ShardSummary(const ProbeSessionResult& out, const std::vector<uint8_t>& owned) const {
  nlohmann::json ids = nlohmann::json::array();  // [owned units] the record id of each
  for (size_t u = 0; u < owned.size(); ++u) {
    if (owned[u]) ids.push_back(UnitId(plan_, u));
  }
  const ProbeUnitCounts n = UnitCounts(plan_);
  return {{"info", ProbeRunInfoToJson(out.info)},
          {"ids", ids},
          {"units", {{"instances", n.instances}, {"variance", n.variance}, {"drift", n.drift}}}};
}

ProbeRunInfo ProbeSession::Info() const {
  const ProbeOptions& o = plan_.options;
  ProbeRunInfo info;
  info.model = o.model, info.model_hash = plan_.model_hash, info.model_hash_kind = plan_.model_hash_kind;
  info.baseline_spec = plan_.configs.config(0).spec(), info.data = o.data;
  info.probe_seed = o.probe_seed, info.sampling_seed = o.seed;
  info.chat_format = ChatFormatName(plan_.chat);
  info.specs = plan_.configs.config_specs();
  info.endpoints.assign(info.specs.size(), nlohmann::json(nullptr));
  if (const RemoteConfig* b = plan_.remote.baseline()) {
    info.baseline_spec = b->name;
    info.baseline_endpoint = b->Describe();
  }
  for (const RemoteConfig& r : plan_.remote.configs()) {
    info.specs.push_back(r.name);
    info.endpoints.push_back(r.Describe());
  }
  info.notes = plan_.notes;
  info.instances = static_cast<int>(plan_.instances.size() + plan_.variance.size() + plan_.drift.size());
  info.threads = plan_.runtime.pool->size();
  return info;
}

Expected<ProbeSessionResult> ProbeSession::Run() {
  const ProbeOptions& o = plan_.options;
  // [1 + n_configs] in-process; none when all-remote (the model has no weights to run them).
  std::vector<std::unique_ptr<KvCache>> caches;
  if (!plan_.all_remote()) {
    KV_ASSIGN_OR_RETURN(caches, plan_.configs.MakeCaches(plan_.max_positions));
  }
  ProbeSessionResult out;
  out.info = Info();
  for (size_t i = 1; i < caches.size(); ++i) out.info.bytes_per_token.push_back(caches[i]->bytes_per_token());
  out.info.bytes_per_token.resize(out.info.specs.size(), 0);  // an endpoint's: unknown (null in results)
  const size_t n_backends = 1 + out.info.specs.size();        // baseline + every configuration
  std::vector<nlohmann::json> lines;
  KV_ASSIGN_OR_RETURN(JobRun job, JobRun::Open(kProbeJob, o, plan_.fingerprint, UnitCosts(plan_), &lines));
  KV_ASSIGN_OR_RETURN(Recorded recorded, Recorded::From(std::move(lines), job.journal_path(), n_backends));

  // [1 + n_configs]: the baseline (in-process or remote), the --kv caches, then the endpoints.
  std::vector<std::unique_ptr<GenerationBackend>> local;
  std::vector<GenerationBackend*> backends;
  for (auto& c : caches) {
    local.push_back(std::make_unique<LocalBackend>(*plan_.runtime.model, *c, *plan_.runtime.pool, plan_.max_positions));
    backends.push_back(local.back().get());
  }
  if (const RemoteConfig* b = plan_.remote.baseline()) {
    if (backends.empty()) backends.push_back(nullptr);  // all-remote: no in-process baseline
    backends[0] = b->backend.get();
  }
  for (const RemoteConfig& r : plan_.remote.configs()) backends.push_back(r.backend.get());
  ProbeRunner runner(*plan_.tokenizer, static_cast<size_t>(plan_.runtime.model->config().vocab_size), backends);
  const ModelConfig& mc = plan_.runtime.model->config();
  runner.set_sliding_window(mc.n_sliding_layers() > 0 ? mc.sliding_window : 0);
  const std::vector<uint8_t>& owned = job.owned();  // [n_units] in probe/units.h order
  const int threads = out.info.threads;
  if (job.sharded()) KV_RETURN_IF_ERROR(job.WriteShard(ShardSummary(out, owned), ShardRunJson({}, 0, threads), false));
  const ProbeUnitCounts n = UnitCounts(plan_);
  const std::span<const uint8_t> all(owned);
  ProgressBar bar(std::count(owned.begin(), owned.end(), 1), "probe");
  // The plan allows --parallel > 1 only when every backend is an endpoint (thread-safe).
  const size_t parallel = static_cast<size_t>(std::max(1, o.remote.parallel));
  const auto& inst = plan_.instances;
  KV_RETURN_IF_ERROR(Steps(
      recorded, job, all.subspan(0, n.instances), parallel, [&](size_t k) { return inst[k].id; }, ProbeRecordFromJson,
      out.probes, [&](size_t k) { return runner.RunChecked(inst[k]); }, bar));
  const auto& var = plan_.variance;
  KV_RETURN_IF_ERROR(Steps(
      recorded, job, all.subspan(n.instances, n.variance), parallel, [&](size_t k) { return var[k].id; },
      VarianceRecordFromJson, out.variance,
      [&](size_t k) {
        return runner.RunVariance(var[k].id, var[k].length, var[k].prompt, o.samples, o.temperature, o.variance_tokens,
                                  o.seed);
      },
      bar));
  const auto& drift = plan_.drift;
  KV_RETURN_IF_ERROR(Steps(
      recorded, job, all.subspan(n.instances + n.variance, n.drift), 1, [&](size_t k) { return drift[k].id; },
      DriftRecordFromJson, out.drift,
      [&](size_t k) { return runner.RunDrift(drift[k].id, drift[k].length, drift[k].prompt, o.drift_tokens); }, bar));
  bar.Finish();
  out.info.resumed = recorded.restored();
  const RunTotals totals = plan_.clock.Stop();
  out.info.wall_s = totals.wall_s, out.info.peak_rss_mb = totals.peak_rss_mb;
  // Re-described at the end: whether any generation had to re-tokenize text is known only now.
  if (const RemoteConfig* b = plan_.remote.baseline()) out.info.baseline_endpoint = b->Describe();
  for (size_t r = 0; r < plan_.remote.configs().size(); ++r) {
    out.info.endpoints[plan_.configs.n_configs() + r] = plan_.remote.configs()[r].Describe();
  }
  if (job.sharded()) {  // no statistics of a part: `kvaudit merge` computes them over all shards
    const nlohmann::json run = ShardRunJson(totals, out.info.resumed, threads);
    KV_RETURN_IF_ERROR(job.WriteShard(ShardSummary(out, owned), run, true));
  } else {
    out.results = ProbeResultsJson(out.info, out.probes, out.variance, out.drift);
  }
  KV_ASSIGN_OR_RETURN(out.results_path, job.Finish(out.results));
  return out;
}

}  // namespace kvaudit
