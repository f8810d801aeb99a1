#include "probe/plan.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/json_text.h"
#include "endpoint/dialect.h"
#include "job/job_runtime.h"
#include "model/config.h"
#include "io/gguf.h"
#include "probe/constraint.h"
#include "probe/custom.h"
#include "probe/exact.h"
#include "probe/haystack.h"
#include "probe/needle.h"
#include "run/fingerprint.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

// The families with variants and their defaults: the code-shaped needles (one fact; several with
// distractors), exact reproduction of an identifier list and a JSON record, the naming-prefix
// constraint. --variant all runs every variant (docs/probes.md: about twice the default run).
struct VariantFamily {
  std::string name;
  const std::vector<std::string>* known;
  std::vector<std::string> defaults;
};
const std::vector<VariantFamily>& VariantFamilies() {
  static const std::vector<VariantFamily> families = {{"needle", &kNeedleVariants, {"code", "multikey"}},
                                                      {"exact", &kExactVariants, {"identifiers", "json_record"}},
                                                      {"constraint", &kConstraintVariants, {"prefix"}}};
  return families;
}

}  // namespace

std::vector<std::string> DefaultVariants(const std::string& family) {
  for (const VariantFamily& f : VariantFamilies()) {
    if (f.name == family) return f.defaults;
  }
  return {};
}

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Status CheckOptions(const ProbeOptions& o) {
  if (o.kv.kv.empty() && o.remote.endpoints.empty()) {
    return BadInput("probe needs at least one --kv or --endpoint configuration; hint: e.g. --kv k=q4_0,v=q4_0");
  }
  if (o.remote.parallel > 1 && (o.remote.baseline_endpoint.empty() || !o.kv.kv.empty())) {
    return BadInput("--parallel " + std::to_string(o.remote.parallel) +
                    " needs the baseline and every configuration to be "
                    "endpoints (an in-process cache runs one instance at a time); hint: use --baseline-endpoint and "
                    "--endpoint only, or drop --parallel");
  }
  if (o.n < 1 || o.samples < 2 || o.variance_tokens < 1 || o.drift_tokens < 1) {
    return BadInput("--n must be >= 1, --samples >= 2, token budgets >= 1; hint: see kvaudit probe --list");
  }
  return Status::Ok();
}

// The families to run: --family as given (plus custom when a file is given), else the defaults, or
// only the custom probes when --custom is the only thing asked for.
Expected<std::set<std::string>> SelectFamilies(const ProbeOptions& o) {
  std::set<std::string> fam;
  for (const std::string& f : o.families) {
    if (!Has(kProbeFamilies, f)) {
      return BadInput("--family " + f + " is not known; hint: use one of " + JoinNames(kProbeFamilies));
    }
    fam.insert(f);
  }
  if (o.families.empty() && o.custom.empty()) fam.insert(kDefaultProbeFamilies.begin(), kDefaultProbeFamilies.end());
  if (!o.custom.empty()) fam.insert("custom");
  if (fam.count("custom") && o.custom.empty()) {
    return BadInput("--family custom needs --custom FILE; hint: pass the JSONL file of your probes (docs/probes.md)");
  }
  return fam;
}

}  // namespace

Expected<bool> NeedsHaystack(const ProbeOptions& o) {
  KV_ASSIGN_OR_RETURN(const std::set<std::string> fam, SelectFamilies(o));
  return fam.size() > fam.count("custom");
}

namespace {

// The variants each selected family runs. A value must belong to a selected family; a family the
// user named in --family must get at least one (with the default families, --variant narrows).
using FamilyVariants = std::vector<std::pair<std::string, std::vector<std::string>>>;  // in VariantFamilies order

Expected<FamilyVariants> SelectVariants(const ProbeOptions& o, const std::set<std::string>& fam) {
  FamilyVariants out;
  const bool all = Has(o.variants, "all");
  if (all && o.variants.size() > 1) return BadInput("--variant all runs every variant; hint: give all alone");
  std::vector<std::string> every;
  for (const VariantFamily& f : VariantFamilies()) every.insert(every.end(), f.known->begin(), f.known->end());
  for (const std::string& v : all ? std::vector<std::string>{} : o.variants) {
    if (!Has(every, v))
      return BadInput("--variant " + v + " is not known; hint: use one of " + JoinNames(every) + ", or all");
    std::vector<std::string> owners, selected;
    for (const VariantFamily& f : VariantFamilies()) {
      if (Has(*f.known, v)) (fam.count(f.name) ? selected : owners).push_back(f.name);
    }
    if (selected.empty()) {
      return BadInput("--variant " + v + " belongs to " + JoinNames(owners) + ", which is not selected; hint: add " +
                      JoinNames(owners) + " to --family, or drop the variant");
    }
  }
  for (const VariantFamily& f : VariantFamilies()) {
    if (!fam.count(f.name)) continue;
    std::vector<std::string>& vs = out.emplace_back(f.name, std::vector<std::string>{}).second;
    if (o.variants.empty()) vs = f.defaults;
    if (all) vs = *f.known;
    for (const std::string& v : all ? std::vector<std::string>{} : o.variants) {
      if (Has(*f.known, v) && !Has(vs, v)) vs.push_back(v);
    }
    if (vs.empty() && Has(o.families, f.name)) {
      return BadInput("--family " + f.name + " gets none of --variant " + JoinNames(o.variants) +
                      "; hint: add one of " + JoinNames(*f.known) + " (or all), or drop " + f.name + " from --family");
    }
  }
  return out;
}

PromptWrap WrapFor(ChatFormat chat) {
  if (chat == ChatFormat::kNone) return {};
  return [chat](std::string_view body, std::string_view question, std::string_view prefix) {
    std::string user(body);
    if (!question.empty()) user += "\n\n" + std::string(question);
    return ApplyChatTemplate(chat, user, prefix);
  };
}

Expected<std::vector<int>> ProbeLengths(const ProbeOptions& o, const ModelConfig& cfg) {
  std::vector<int> lengths = o.lengths.empty() ? DefaultProbeLengths(cfg.max_ctx, kProbeAnswerReserve) : o.lengths;
  for (int L : lengths) {
    if (L > cfg.max_ctx - 64) {
      return BadInput("--lengths " + std::to_string(L) + " leaves under 64 tokens of the model's context " +
                      std::to_string(cfg.max_ctx) + " for the answer; hint: use at most " +
                      std::to_string(cfg.max_ctx - 64));
    }
  }
  return lengths;
}

// What the generators of one run share.
struct Generation {
  const Tokenizer& tok;
  const Haystack& haystack;
  const ProbeOptions& o;
  std::vector<int> lengths;
  PromptWrap wrap;
};

Expected<std::vector<ProbeInstance>> Generate(const Generation& g, const std::string& family, const std::string& v) {
  const ProbeOptions& o = g.o;
  if (family == "needle") {
    NeedleOptions n;
    n.variant = v, n.lengths = g.lengths, n.per_cell = o.n, n.seed = o.probe_seed, n.wrap = g.wrap;
    KV_ASSIGN_OR_RETURN(n.value_kind, ParseNeedleValueKind(o.needle_value));
    if (!o.depths.empty()) n.depths = o.depths;
    return MakeNeedleProbes(g.tok, g.haystack, n);
  }
  if (family == "exact") {
    ExactOptions e;
    e.variant = v, e.lengths = g.lengths, e.per_cell = o.n, e.seed = o.probe_seed, e.wrap = g.wrap;
    if (!o.depths.empty()) e.depths = o.depths;
    return MakeExactProbes(g.tok, g.haystack, e);
  }
  ConstraintOptions c;
  c.variant = v, c.lengths = g.lengths, c.per_cell = o.n, c.seed = o.probe_seed, c.wrap = g.wrap;
  return MakeConstraintProbes(g.tok, g.haystack, c);
}

// Custom probes: the prompt text encoded with the model's BOS convention (and chat template); the
// length cell is the prompt's own token count (a team reads its probes by their real length).
Expected<std::vector<ProbeInstance>> CustomInstances(const Generation& g, const std::vector<CustomProbe>& custom,
                                                     int max_ctx) {
  std::vector<ProbeInstance> out;
  for (const CustomProbe& c : custom) {
    ProbeInstance i;
    i.family = "custom", i.variant = "custom", i.id = "custom/" + c.id;
    const std::string text = g.wrap ? g.wrap(c.prompt, "", "") : c.prompt;
    i.prompt = g.tok.Encode(text, g.tok.add_bos_default());
    const std::string where = g.o.custom + ":" + std::to_string(c.line);
    if (i.prompt.empty()) return BadInput(where + ": the prompt is empty; hint: give the probe a prompt");
    if (static_cast<int>(i.prompt.size()) + c.max_tokens > max_ctx) {
      return BadInput(where + ": prompt (" + std::to_string(i.prompt.size()) +
                      " tokens) + max_tokens exceeds the model's context " + std::to_string(max_ctx) +
                      "; hint: shorten the prompt or lower max_tokens");
    }
    i.length = static_cast<int>(i.prompt.size());
    i.check = c.check, i.max_tokens = c.max_tokens, i.expected_text = c.check.Describe();
    out.push_back(std::move(i));
  }
  return out;
}

// Variance and drift prompts: BOS, then haystack lines to the exact length, n per length.
Expected<std::vector<FreePrompt>> FreePrompts(const Generation& g, const char* family) {
  std::vector<FreePrompt> out;
  const bool bos = g.tok.add_bos_default() && g.tok.bos_id() >= 0;
  for (int L : g.lengths) {
    for (int k = 0; k < g.o.n; ++k) {
      const std::string id = ProbeId(family, "free", L, -1, k);
      FillerStream filler(g.haystack, g.tok, InstanceSeed(g.o.probe_seed, id));
      KV_ASSIGN_OR_RETURN(std::vector<int32_t> body, filler.Take(L - (bos ? 1 : 0)));
      FreePrompt p{id, L, {}};
      if (bos) p.prompt.push_back(g.tok.bos_id());
      p.prompt.insert(p.prompt.end(), body.begin(), body.end());
      out.push_back(std::move(p));
    }
  }
  return out;
}

// Texts for the tokenizer check against each endpoint: the first prompts of the run (decoded), and
// a line of code and of non-ASCII text that stress byte-level merges.
std::vector<std::string> TokenizerSamples(const Tokenizer& tok, const std::vector<ProbeInstance>& instances) {
  std::vector<std::string> out = {"def parse_config(path: str) -> dict:\n    return {\"retries\": 3, 'name': \"x\"}",
                                  "naïve café — 東京 ✓ \t tabs and  two  spaces"};
  for (size_t i = 0; i < instances.size() && i < 3; ++i) out.push_back(tok.Decode(instances[i].prompt));
  return out;
}

// The longest prompt plus its budget (plus one position), each instance checked to fit.
Expected<int> MaxPositions(const std::vector<ProbeInstance>& instances, const std::vector<FreePrompt>& variance,
                           const std::vector<FreePrompt>& drift, const ProbeOptions& o, int max_ctx) {
  int max_pos = 0;
  for (const ProbeInstance& i : instances) {
    const int need = static_cast<int>(i.prompt.size()) + i.max_tokens;
    if (need > max_ctx) {
      return BadInput(i.id + ": prompt (" + std::to_string(i.prompt.size()) + " tokens) + answer budget (" +
                      std::to_string(i.max_tokens) + ") exceeds the model's context " + std::to_string(max_ctx) +
                      "; hint: use --lengths at most " + std::to_string(max_ctx - i.max_tokens));
    }
    max_pos = std::max(max_pos, need);
  }
  for (const FreePrompt& v : variance)
    max_pos = std::max<int>(max_pos, static_cast<int>(v.prompt.size()) + o.variance_tokens);
  for (const FreePrompt& d : drift)
    max_pos = std::max<int>(max_pos, static_cast<int>(d.prompt.size()) + o.drift_tokens);
  if (max_pos == 0) return BadInput("nothing to run; hint: check --family and --variant");
  return std::min(max_pos + 1, max_ctx);
}

}  // namespace

Expected<ProbePlan> ProbePlan::Make(ProbeOptions o) {
  const RunClock clock;
  // "--family needle," or "--variant ''": empty items name nothing.
  for (std::vector<std::string>* list : {&o.families, &o.variants}) std::erase(*list, std::string());
  KV_RETURN_IF_ERROR(CheckOptions(o));
  KV_ASSIGN_OR_RETURN(const std::set<std::string> fam, SelectFamilies(o));
  KV_ASSIGN_OR_RETURN(const auto variants, SelectVariants(o, fam));
  // Custom probes are checked before anything loads or runs: a malformed file is exit 2 at once.
  std::vector<CustomProbe> custom;
  if (fam.count("custom")) {
    KV_ASSIGN_OR_RETURN(custom, LoadCustomProbes(o.custom));
  }
  // All-remote (no --kv, --baseline-endpoint): the config and tokenizer only, no weight read.
  KV_ASSIGN_OR_RETURN(ModelRuntime runtime, LoadJobRuntime(o.model, o.threads, o.kv, o.remote));
  KV_ASSIGN_OR_RETURN(const Tokenizer* tok, runtime.RequireTokenizer("probe"));
  const ModelConfig& cfg = runtime.model->config();
  KV_ASSIGN_OR_RETURN(std::vector<int> lengths, ProbeLengths(o, cfg));
  KV_ASSIGN_OR_RETURN(const ChatFormat chat, ResolveChatFormat(o.model, o.chat));
  // A custom-only run reads no documents: its haystack stays empty and its data "" (null in results).
  const bool needs_haystack = fam.size() > fam.count("custom");
  if (!needs_haystack) o.data.clear();
  Haystack haystack;
  if (needs_haystack) {
    KV_ASSIGN_OR_RETURN(haystack, Haystack::Load(o.data));
  }

  const Generation g{*tok, haystack, o, std::move(lengths), WrapFor(chat)};
  std::vector<ProbeInstance> instances;
  for (const auto& [family, vs] : variants) {
    for (const std::string& v : vs) {
      KV_ASSIGN_OR_RETURN(std::vector<ProbeInstance> made, Generate(g, family, v));
      for (ProbeInstance& i : made) instances.push_back(std::move(i));
    }
  }
  KV_ASSIGN_OR_RETURN(std::vector<ProbeInstance> customs, CustomInstances(g, custom, cfg.max_ctx));
  for (ProbeInstance& i : customs) instances.push_back(std::move(i));
  std::vector<FreePrompt> variance, drift;
  if (fam.count("variance")) {
    KV_ASSIGN_OR_RETURN(variance, FreePrompts(g, "variance"));
  }
  if (fam.count("drift")) {
    KV_ASSIGN_OR_RETURN(drift, FreePrompts(g, "drift"));
  }
  // The caches' size, which is also the run's context (LongRoPE: model/forward.h).
  KV_ASSIGN_OR_RETURN(const int max_positions, MaxPositions(instances, variance, drift, o, cfg.max_ctx));
  // Every --kv spec is validated (and calibrated) before any probe runs.
  o.kv.context = max_positions;
  KV_ASSIGN_OR_RETURN(KvConfigs configs, KvConfigs::Prepare(*runtime.model, o.kv, *runtime.pool));
  // Then every endpoint is reached and its tokenizer checked on prompts this run will send.
  KV_ASSIGN_OR_RETURN(RemoteConfigs remote, RemoteConfigs::Connect(o.remote, *tok, TokenizerSamples(*tok, instances)));
  // Drift compares next-token distributions along a path: an endpoint gives them through its prompt
  // logprobs (top k: the KL is then a lower bound). One without (llama-server) cannot take part.
  std::vector<std::string> notes;
  if (!drift.empty()) {
    for (const RemoteConfig* r : remote.all()) {
      if (r->backend->has_forced_top_k()) continue;
      const std::string why = r->name + " (" + DialectName(r->backend->dialect()) + ") returns no prompt logprobs";
      if (Has(o.families, "drift")) {
        return BadInput("--family drift needs each configuration's next-token distributions along a path; " + why +
                        "; hint: drop drift from --family for this endpoint (docs/endpoints.md)");
      }
      notes.push_back("drift: not run, " + why + " (docs/endpoints.md)");
      drift.clear();
      break;
    }
  }

  ProbePlan plan(std::move(o), std::move(runtime), std::move(configs), std::move(remote));
  if (cfg.rope.is_longrope()) notes.push_back(DescribeLongRope(cfg, max_positions));
  plan.notes = std::move(notes);
  plan.clock = clock;
  plan.tokenizer = tok, plan.chat = chat;
  plan.instances = std::move(instances), plan.variance = std::move(variance), plan.drift = std::move(drift);
  plan.max_positions = max_positions;
  const ModelIdentity id = IdentifyModel(*plan.runtime.model);
  plan.model_hash = id.hash, plan.model_hash_kind = id.kind;
  plan.fingerprint = plan.MakeFingerprint(custom);  // a shard's journal adds the shard (job/job_run.h)
  return plan;
}

// Everything a recorded verdict depends on. The instance ids name family, variant, length, depth
// and index; the prompts come from the probe seed and the data and are hashed as token ids; the
// checks and budgets are hashed for the generated probes and listed per custom probe, so an edited
// "expected" is named when the run is refused.
nlohmann::json ProbePlan::MakeFingerprint(const std::vector<CustomProbe>& custom) const {
  const ProbeOptions& o = options;
  nlohmann::json fp = {{"model", model_hash},
                       {"probe_seed", o.probe_seed},
                       {"seed", o.seed},
                       {"data", o.data},
                       {"chat", ChatFormatName(chat)},
                       {"samples", o.samples},
                       {"temperature", o.temperature},
                       {"variance_tokens", o.variance_tokens},
                       {"drift_tokens", o.drift_tokens}};
  fp.update(configs.Fingerprint());                          // baseline, configs, calibration
  if (remote.any()) fp["endpoints"] = remote.Fingerprint();  // absent without: older journals resume
  std::vector<int32_t> all_prompts;
  nlohmann::json checks = nlohmann::json::array();
  for (const ProbeInstance& i : instances) {
    all_prompts.insert(all_prompts.end(), i.prompt.begin(), i.prompt.end());
    const ProbeCheck& c = i.check;
    if (i.family != "custom") {
      checks.push_back({i.id, static_cast<int>(c.kind), c.expected, c.pattern, c.line_filter, c.min_lines, c.json_path,
                        c.json_value, i.max_tokens});
    }
  }
  fp["prompts"] = HexHash(HashBytes(all_prompts.data(), all_prompts.size() * sizeof(int32_t), 11));
  const std::string checks_text = JsonText(checks);
  fp["checks"] = HexHash(HashBytes(checks_text.data(), checks_text.size(), 13));
  for (const CustomProbe& c : custom) fp["custom"][c.id] = CheckFields(c);
  return fp;
}

}  // namespace kvaudit
