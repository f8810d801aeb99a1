#include "decide/gate/gate_inputs.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json_text.h"
#include "model/model.h"
#include "run/fingerprint.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kRerunHint =
    "pass a results.json written by this kvaudit's eval or probe (docs/results-schema.md)";

// Typed access to one results.json: a missing or mistyped key is BadInput naming the file and the
// key's path, so an edited or truncated file stops the gate rather than passing as "no data".
class ResultsReader {
 public:
  explicit ResultsReader(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  Error Bad(const std::string& key, const std::string& what) const {
    return BadInput(key + " " + what + ", " + path_ + "; hint: " + kRerunHint);
  }
  Expected<const json*> Get(const json& obj, const std::string& at, const char* key) const {
    const std::string path = at.empty() ? key : at + "." + key;
    if (!obj.is_object() || !obj.contains(key)) return Bad(path, "is missing");
    return &obj[key];
  }
  Expected<const json*> Array(const json& obj, const std::string& at, const char* key) const {
    KV_ASSIGN_OR_RETURN(const json* j, Get(obj, at, key));
    if (!j->is_array()) return Bad(at.empty() ? key : at + "." + key, "is not an array");
    return j;
  }
  Expected<std::string> String(const json& obj, const std::string& at, const char* key) const {
    KV_ASSIGN_OR_RETURN(const json* j, Get(obj, at, key));
    if (!j->is_string()) return Bad(at + "." + key, "is not a string");
    return j->get<std::string>();
  }
  Expected<int64_t> Int(const json& obj, const std::string& at, const char* key) const {
    KV_ASSIGN_OR_RETURN(const json* j, Get(obj, at, key));
    if (!j->is_number_integer()) return Bad(at + "." + key, "is not an integer");
    return j->get<int64_t>();
  }
  // null (a value eval could not compute) is returned as nullopt; a missing key is an error.
  Expected<std::optional<double>> NumberOrNull(const json& obj, const std::string& at, const char* key) const {
    KV_ASSIGN_OR_RETURN(const json* j, Get(obj, at, key));
    if (j->is_null()) return std::optional<double>();
    if (!j->is_number()) return Bad(at + "." + key, "is not a number");
    return std::optional<double>(j->get<double>());
  }
  Expected<bool> Bool(const json& obj, const std::string& at, const char* key) const {
    KV_ASSIGN_OR_RETURN(const json* j, Get(obj, at, key));
    if (!j->is_boolean()) return Bad(at + "." + key, "is not true or false");
    return j->get<bool>();
  }

 private:
  std::string path_;
};

std::string At(const char* array, size_t i) { return std::string(array) + "[" + std::to_string(i) + "]"; }

Expected<json> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open; hint: check the --results directory");
  std::ostringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return BadInput(path + ": not a JSON object; hint: " + std::string(kRerunHint));
  return j;
}

// "eval", "probe", or "" for a file of neither kind. Eval's results had no "kind" before the
// gate; they are recognised by their per-bucket configs.
std::string KindOf(const json& j) {
  if (j.contains("kind")) return j["kind"].is_string() ? j["kind"].get<std::string>() : "";
  const bool eval_shape = j.contains("configs") && j["configs"].is_array() && !j["configs"].empty() &&
                          j["configs"][0].is_object() && j["configs"][0].contains("buckets");
  return eval_shape ? "eval" : "";
}

Status CheckSchema(const ResultsReader& r, const json& j) {
  KV_ASSIGN_OR_RETURN(const int64_t v, r.Int(j, "", "schema_version"));
  if (v == kGateSchemaVersion) return Status::Ok();
  return BadInput("schema_version " + std::to_string(v) + " is not the " + std::to_string(kGateSchemaVersion) +
                  " this gate reads, " + r.path() +
                  "; hint: gate the results with the kvaudit that wrote them, or "
                  "rerun eval/probe with this one");
}

std::string OptionalString(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// [lo, hi], or nullopt where eval wrote none (null, or a file from before the intervals); the gate
// says so when a policy needs it.
Expected<std::optional<Interval>> ReadInterval(const ResultsReader& r, const json& b, const std::string& at,
                                               const char* key) {
  if (!b.contains(key) || b[key].is_null()) return std::optional<Interval>();
  const json& v = b[key];
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number() || v[0] > v[1])
    return r.Bad(at + "." + key, "is not an interval [lo, hi]");
  return std::optional<Interval>(Interval{v[0].get<double>(), v[1].get<double>()});
}

Expected<std::vector<double>> Numbers(const ResultsReader& r, const json& obj, const std::string& at, const char* key) {
  KV_ASSIGN_OR_RETURN(const json* a, r.Array(obj, at, key));
  std::vector<double> out;  // [n_windows]
  for (const json& x : *a) {
    if (!x.is_number()) return r.Bad(at + "." + key, "holds a value that is not a number");
    out.push_back(x.get<double>());
  }
  return out;
}

// window_sums (eval/fidelity_interval.h WindowTotals), or nullopt where eval wrote none.
Expected<std::optional<WindowTotals>> ReadWindowSums(const ResultsReader& r, const json& b, const std::string& at) {
  if (!b.contains("window_sums")) return std::optional<WindowTotals>();
  const json& s = b["window_sums"];
  const std::string path = at + ".window_sums";
  WindowTotals t;
  KV_ASSIGN_OR_RETURN(t.count, Numbers(r, s, path, "tokens"));
  KV_ASSIGN_OR_RETURN(t.kld_sum, Numbers(r, s, path, "kld"));
  KV_ASSIGN_OR_RETURN(t.top1, Numbers(r, s, path, "top1"));
  KV_ASSIGN_OR_RETURN(t.dnll_sum, Numbers(r, s, path, "delta_nll"));
  KV_ASSIGN_OR_RETURN(const std::optional<double> kld_sq, r.NumberOrNull(s, path, "kld_sq"));
  KV_ASSIGN_OR_RETURN(const std::optional<double> dnll_sq, r.NumberOrNull(s, path, "delta_nll_sq"));
  const size_t n = t.count.size();
  if (t.kld_sum.size() != n || t.top1.size() != n || t.dnll_sum.size() != n || !kld_sq || !dnll_sq)
    return r.Bad(path, "does not hold one value per window in each array");
  t.kld_sq = *kld_sq, t.dnll_sq = *dnll_sq;
  return std::optional<WindowTotals>(std::move(t));
}

Expected<EvalBucketRow> ReadBucket(const ResultsReader& r, const json& b, const std::string& at) {
  EvalBucketRow row;
  KV_ASSIGN_OR_RETURN(const int64_t from, r.Int(b, at, "from"));
  KV_ASSIGN_OR_RETURN(const int64_t to, r.Int(b, at, "to"));
  KV_ASSIGN_OR_RETURN(row.tokens, r.Int(b, at, "tokens"));
  row.from = static_cast<int>(from), row.to = static_cast<int>(to);
  row.measured_to =
      b.contains("measured_to") && b["measured_to"].is_number_integer() ? b["measured_to"].get<int>() : row.to;
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
    const char* field = Info(static_cast<FidelityMetric>(m)).field;
    if (!b.contains(field)) continue;  // kld_p99 is not a stable bucket key: absent is "not measured"
    KV_ASSIGN_OR_RETURN(row.value[m], r.NumberOrNull(b, at, field));
    KV_ASSIGN_OR_RETURN(row.ci[m], ReadInterval(r, b, at, Info(static_cast<FidelityMetric>(m)).ci_field));
  }
  row.windows = b.contains("windows") && b["windows"].is_number_integer() ? b["windows"].get<int>() : 0;
  KV_ASSIGN_OR_RETURN(row.totals, ReadWindowSums(r, b, at));
  return row;
}

Expected<EvalInput> ReadEval(const ResultsReader& r, const json& j) {
  EvalInput in;
  in.path = r.path(), in.model_hash = OptionalString(j, "model_hash");
  if (const std::string kind = OptionalString(j, "model_hash_kind"); !kind.empty()) in.model_hash_kind = kind;
  if (j.contains("baseline") && j["baseline"].is_object()) in.baseline = OptionalString(j["baseline"], "spec");
  if (j.contains("settings") && j["settings"].is_object()) {
    const json& st = j["settings"];
    if (st.contains("bootstrap_replicates") && st["bootstrap_replicates"].is_number_integer())
      in.bootstrap_replicates = st["bootstrap_replicates"].get<int>();
    if (st.contains("bootstrap_seed") && st["bootstrap_seed"].is_number_unsigned())
      in.bootstrap_seed = st["bootstrap_seed"].get<uint64_t>();
  }
  KV_ASSIGN_OR_RETURN(const json* configs, r.Array(j, "", "configs"));
  for (size_t c = 0; c < configs->size(); ++c) {
    const json& cj = (*configs)[c];
    const std::string at = At("configs", c);
    EvalConfigResult cfg;
    KV_ASSIGN_OR_RETURN(cfg.spec, r.String(cj, at, "spec"));
    cfg.kld_lower_bound = cj.contains("kld_estimate") && cj["kld_estimate"].is_object() &&
                          OptionalString(cj["kld_estimate"], "kind") == "lower_bound_from_top_k";
    KV_ASSIGN_OR_RETURN(const json* buckets, r.Array(cj, at, "buckets"));
    for (size_t b = 0; b < buckets->size(); ++b) {
      KV_ASSIGN_OR_RETURN(EvalBucketRow row, ReadBucket(r, (*buckets)[b], at + "." + At("buckets", b)));
      cfg.buckets.push_back(row);
    }
    in.configs.push_back(std::move(cfg));
  }
  return in;
}

ProbeConfigResult& ConfigOf(ProbeInput& in, const std::string& spec) {
  for (ProbeConfigResult& c : in.configs) {
    if (c.spec == spec) return c;
  }
  in.configs.push_back({spec, {}, 0, 0, 0, {}, false, {}});
  return in.configs.back();
}

// variance[] and drift[] are not stable keys (docs/probes.md): read when there, and a family the
// run did not have is simply absent.
const json& OptionalArray(const json& j, const char* key) {
  static const json kEmpty = json::array();
  return j.contains(key) && j[key].is_array() ? j[key] : kEmpty;
}

// Calls f(r, row, its key path, the configuration it names) for each row of the array `key`; a
// required array that is missing is an error, an optional one has no rows.
template <class F>
Status ForEachConfigRow(const ResultsReader& r, const json& j, const char* key, bool required, ProbeInput* in, F&& f) {
  const json* rows = &OptionalArray(j, key);
  if (required) {
    KV_ASSIGN_OR_RETURN(rows, r.Array(j, "", key));
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string at = At(key, i);
    KV_ASSIGN_OR_RETURN(const std::string config, r.String((*rows)[i], at, "config"));
    KV_RETURN_IF_ERROR(f(r, (*rows)[i], at, ConfigOf(*in, config)));
  }
  return Status::Ok();
}

Status ReadPooled(const ResultsReader& r, const json& p, const std::string& at, ProbeConfigResult& c) {
  PooledFamilyRow row;
  KV_ASSIGN_OR_RETURN(row.family, r.String(p, at, "family"));
  KV_ASSIGN_OR_RETURN(const int64_t n, r.Int(p, at, "n"));
  KV_ASSIGN_OR_RETURN(const int64_t induced, r.Int(p, at, "cache_induced"));
  KV_ASSIGN_OR_RETURN(const int64_t recovered, r.Int(p, at, "recovered"));
  KV_ASSIGN_OR_RETURN(const int64_t both_pass, r.Int(p, at, "both_pass"));
  KV_ASSIGN_OR_RETURN(const std::optional<double> p_holm, r.NumberOrNull(p, at, "mcnemar_p_holm"));
  KV_ASSIGN_OR_RETURN(row.significant, r.Bool(p, at, "significant"));
  row.n = static_cast<int>(n), row.cache_induced = static_cast<int>(induced),
  row.recovered = static_cast<int>(recovered), row.baseline_pass = static_cast<int>(both_pass + induced);
  row.p_holm = p_holm.value_or(1.0);
  if (row.n <= 0) return r.Bad(at + ".n", "is not positive");
  c.pooled.push_back(row);
  return Status::Ok();
}

Status ReadVariance(const ResultsReader& r, const json& v, const std::string& at, ProbeConfigResult& c) {
  KV_ASSIGN_OR_RETURN(const int64_t pairs, r.Int(v, at, "pairs"));
  KV_ASSIGN_OR_RETURN(const int64_t identical, r.Int(v, at, "identical_pairs"));
  c.variance_rows += 1, c.variance_pairs += static_cast<int>(pairs),
      c.variance_identical += static_cast<int>(identical);
  return Status::Ok();
}

Status ReadDrift(const ResultsReader& r, const json& d, const std::string& at, ProbeConfigResult& c) {
  KV_ASSIGN_OR_RETURN(const int64_t length, r.Int(d, at, "length"));
  KV_ASSIGN_OR_RETURN(const std::optional<double> kl, r.NumberOrNull(d, at, "kl_mean"));
  if (!kl) return r.Bad(at + ".kl_mean", "is null");
  c.drift_kl_mean.push_back({static_cast<int>(length), *kl});
  return Status::Ok();
}

Status ReadCustom(const ResultsReader& r, const json& p, const std::string& at, ProbeConfigResult& c) {
  CustomProbeOutcome o;
  KV_ASSIGN_OR_RETURN(o.id, r.String(p, at, "id"));
  KV_ASSIGN_OR_RETURN(const int64_t tokens, r.Int(p, at, "tokens"));
  KV_ASSIGN_OR_RETURN(o.baseline_pass, r.Bool(p, at, "baseline_pass"));
  KV_ASSIGN_OR_RETURN(o.pass, r.Bool(p, at, "pass"));
  o.tokens = static_cast<int>(tokens);
  c.custom.push_back(std::move(o));
  return Status::Ok();
}

Expected<ProbeInput> ReadProbe(const ResultsReader& r, const json& j) {
  ProbeInput in;
  in.path = r.path(), in.model_hash = OptionalString(j, "model_hash"), in.baseline = OptionalString(j, "baseline");
  if (const std::string kind = OptionalString(j, "model_hash_kind"); !kind.empty()) in.model_hash_kind = kind;
  if (j.contains("alpha") && j["alpha"].is_number()) in.alpha = j["alpha"].get<double>();
  KV_ASSIGN_OR_RETURN(const json* configs, r.Array(j, "", "configs"));
  for (size_t c = 0; c < configs->size(); ++c) {
    KV_ASSIGN_OR_RETURN(const std::string spec, r.String((*configs)[c], At("configs", c), "spec"));
    ConfigOf(in, spec).endpoint = (*configs)[c].contains("endpoint") && !(*configs)[c]["endpoint"].is_null();
  }
  KV_RETURN_IF_ERROR(ForEachConfigRow(r, j, "pooled", true, &in, ReadPooled));
  KV_RETURN_IF_ERROR(ForEachConfigRow(r, j, "variance", false, &in, ReadVariance));
  KV_RETURN_IF_ERROR(ForEachConfigRow(r, j, "drift", false, &in, ReadDrift));
  KV_RETURN_IF_ERROR(ForEachConfigRow(r, j, "custom_probes", false, &in, ReadCustom));
  return in;
}

// Reads one results.json of the given kind ("" = whichever it is) into *inputs; *kind gets what it was.
Status ReadResults(const std::string& path, GateInputs* inputs, std::string* kind) {
  KV_ASSIGN_OR_RETURN(const json j, ReadJson(path));
  *kind = KindOf(j);
  if (kind->empty() || (*kind != "eval" && *kind != "probe")) return Status::Ok();
  const ResultsReader r(path);
  KV_RETURN_IF_ERROR(CheckSchema(r, j));
  if (j.contains("partial")) {  // `kvaudit merge --partial`: a deployment verdict needs every unit
    const json& p = j["partial"];
    return BadInput(path + " is a partial merge (" + JsonText(p.value("recorded", json())) + " of " +
                    JsonText(p.value("total", json())) + " " + p.value("unit", std::string("units")) +
                    "); hint: gate the results of kvaudit merge without --partial once every shard has finished");
  }
  if (*kind == "eval") {
    KV_ASSIGN_OR_RETURN(EvalInput e, ReadEval(r, j));
    inputs->evals.push_back(std::move(e));
  } else {
    KV_ASSIGN_OR_RETURN(ProbeInput p, ReadProbe(r, j));
    inputs->probes.push_back(std::move(p));
  }
  return Status::Ok();
}

Status ReadDir(const std::string& dir, GateInputs* inputs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return BadInput("--results " + dir +
                    " is not a directory; hint: pass the --out directory of kvaudit eval or probe");
  }
  std::string kind;
  const fs::path top = fs::path(dir) / "results.json";
  if (fs::exists(top, ec)) KV_RETURN_IF_ERROR(ReadResults(top.string(), inputs, &kind));
  if (kind == "eval" || kind == "probe") return Status::Ok();
  // An audit directory: its eval and probe jobs write into eval/ and probe/ below it.
  bool any = false;
  for (const char* sub : {"eval", "probe"}) {
    const fs::path p = fs::path(dir) / sub / "results.json";
    if (!fs::exists(p, ec)) continue;
    KV_RETURN_IF_ERROR(ReadResults(p.string(), inputs, &kind));
    if (kind != sub) {
      return BadInput(p.string() + " is not " + (std::string(sub) == "eval" ? "an eval" : "a probe") +
                      " results.json; hint: an audit directory holds eval/ and probe/ as kvaudit writes them");
    }
    any = true;
  }
  if (any) return Status::Ok();
  return BadInput("--results " + dir + " holds no eval or probe results.json (nor eval/ or probe/ below it)" +
                  "; hint: pass the --out directory of kvaudit eval or probe, or of an audit");
}

}  // namespace

Expected<GateInputs> LoadGateInputs(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return BadInput("gate needs --results; hint: pass the --out directory of kvaudit eval or probe");
  GateInputs inputs;
  for (const std::string& d : dirs) KV_RETURN_IF_ERROR(ReadDir(d, &inputs));
  return inputs;
}

namespace {

struct HashedFile {
  std::string path, hash, kind;
};

std::vector<HashedFile> HashedFiles(const GateInputs& inputs) {
  std::vector<HashedFile> files;
  for (const EvalInput& e : inputs.evals) files.push_back({e.path, e.model_hash, e.model_hash_kind});
  for (const ProbeInput& p : inputs.probes) files.push_back({p.path, p.model_hash, p.model_hash_kind});
  return files;
}

// " of its config+tokenizer" for that kind, "" for weights: messages keep their old wording.
std::string KindWords(const std::string& kind) { return kind == kHashKindWeights ? "" : " of its " + kind; }

}  // namespace

Status CheckOneModel(const GateInputs& inputs, const ModelHashes& model, const std::string& model_path) {
  const std::vector<HashedFile> files = HashedFiles(inputs);
  if (files.size() < 2 && model.empty()) return Status::Ok();
  for (const HashedFile& f : files) {
    if (f.hash.empty()) {
      return BadInput(f.path +
                      " has no model_hash, so its model cannot be checked; hint: rerun its eval or probe "
                      "with this kvaudit (it writes model_hash)");
    }
    if (f.kind != kHashKindWeights && f.kind != kHashKindConfigTokenizer) {
      return BadInput(f.path + ": model_hash_kind '" + f.kind + "' is not known; hint: it is weights or " +
                      kHashKindConfigTokenizer + " (docs/results-schema.md)");
    }
  }
  for (const HashedFile& f : files) {
    if (!model.empty() && f.hash != model.Of(f.kind)) {
      return BadInput(f.path + " is from another model (model_hash " + f.hash + KindWords(f.kind) + ", --model " +
                      model_path + " is " + model.Of(f.kind) +
                      "); hint: gate the results of the model you deploy, or pass its --model");
    }
  }
  for (const HashedFile& f : files) {
    const HashedFile& first = files[0];
    if (f.kind != first.kind) {
      if (!model.empty()) continue;  // each matched --model in its own kind above
      return BadInput(f.path + " (model_hash of its " + f.kind + ") and " + first.path + " (of its " + first.kind +
                      ") cannot be compared: an all-remote run hashes the config and tokenizer, not the weights; "
                      "hint: pass --model with the model's directory, and each is checked against it in its own kind");
    }
    if (f.hash != first.hash) {
      return BadInput(f.path + " and " + first.path + " are from different models (model_hash " + f.hash + " vs " +
                      first.hash + KindWords(f.kind) + "); hint: gate eval and probe results of one model together");
    }
  }
  return Status::Ok();
}

Expected<ModelHashes> ModelHashesOf(const std::string& model_path, const GateInputs& inputs) {
  bool need_weights = false;
  for (const HashedFile& f : HashedFiles(inputs)) need_weights = need_weights || f.kind == kHashKindWeights;
  std::unique_ptr<Model> model;
  if (need_weights) {
    KV_ASSIGN_OR_RETURN(model, Model::Load(model_path));
  } else {
    KV_ASSIGN_OR_RETURN(model, Model::LoadForTokenizing(model_path));
  }
  ModelHashes h;
  if (need_weights) h.weights = HexHash(HashModel(*model));
  h.config_tokenizer = HexHash(HashModelConfigTokenizer(*model));
  return h;
}

}  // namespace kvaudit
