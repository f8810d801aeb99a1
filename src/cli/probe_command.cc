// kvaudit probe: workload checks (needle retrieval, structured exactness, constraint retention,
// repeated-run variance, free-running drift, custom probes) under the baseline and every cache
// configuration, with cache-induced failures told apart from model limits (issue 5; docs/probes.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/kv_flags.h"
#include "probe/chat_template.h"
#include "io/gguf.h"
#include "probe/constraint.h"
#include "probe/custom.h"
#include "probe/exact.h"
#include "probe/haystack.h"
#include "probe/needle.h"
#include "probe/runner.h"
#include "run/progress.h"
#include "run/jsonl_journal.h"
#include "run/fingerprint.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

namespace fs = std::filesystem;

// Default lengths stop this far below the context: the longest answer budget (an exact span, a
// chat-model constraint reply) must fit after the prompt.
constexpr int kAnswerReserve = 256;

const std::vector<std::string> kFamilies = {"needle", "exact", "constraint", "variance", "drift", "custom"};

struct ProbeFlags {
  ModelFlags model;
  std::vector<std::string> kv;
  std::string kv_calib, baseline = "k=f32,v=f32", data, out = "kvaudit-probe", custom, chat = "auto";
  std::string families = "needle,exact,constraint,variance,drift", variants, lengths, depths, needle_value = "rotate";
  int n = 1, samples = 5, variance_tokens = 48, drift_tokens = 64;
  float temperature = 0.8f;
  uint64_t seed = 1;
  bool list = false, restart = false;
};

Expected<std::vector<std::string>> SplitList(const std::string& s, const std::string& flag,
                                             const std::vector<std::string>& known) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    if (!known.empty() && std::find(known.begin(), known.end(), item) == known.end()) {
      std::string names;
      for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
      return BadInput(flag + " " + item + " is not known; hint: use one of " + names);
    }
    out.push_back(item);
  }
  return out;
}

Expected<std::vector<int>> ParseInts(const std::string& s, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) {
      return BadInput(flag + " " + s + ": '" + item + "' is not an integer; hint: a comma-separated list like 512,1024");
    }
    out.push_back(v);
  }
  return out;
}

int PrintList() {
  std::printf(
      "kvaudit probe families (default: needle,exact,constraint,variance,drift; custom runs with --custom FILE)\n"
      "  needle      fact planted at a depth, asked for at the end; variants code, multikey (default), prose, json;\n"
      "              lengths 512,1024,2048,4096 (capped at the model's context - 256); depths 0,10,25,50,75,90,100\n"
      "  exact       reproduce a code/JSON span seen earlier; variants identifiers, json_record (default), signature,\n"
      "              number;\n"
      "              depths 10,50\n"
      "  constraint  a convention declared in a header must hold in code written at the end; variants prefix\n"
      "              (default), quotes, indent\n"
      "  variance    K samples (--samples 5, --temp 0.8, seeds 1..K, --variance-tokens 48) of one prompt per length\n"
      "  drift       greedy --drift-tokens 64 from one prompt per length: divergence, edit distance, KL, repetition\n"
      "  custom      --custom FILE: JSONL {\"id\",\"prompt\",\"expected\"|\"regex\"|\"contains\"|\"json_valid\"|\"json_equals\",\"max_tokens\"}\n"
      "--variant all runs every variant. --n instances per cell (default 1), --seed (default 1). Details: docs/probes.md\n");
  return 0;
}

// --chat-template auto reads the model's own template (tokenizer_config.json / chat_template.jinja
// beside HF weights, tokenizer.chat_template in a GGUF file); other values name the family.
Expected<ChatFormat> ResolveChatFormat(const std::string& model_path, const std::string& name) {
  if (name != "auto") return ParseChatFormatName(name);
  std::string jinja;
  if (fs::is_directory(model_path)) {
    KV_ASSIGN_OR_RETURN(jinja, ReadHfChatTemplate(model_path));
  } else {
    KV_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(model_path));
    KV_ASSIGN_OR_RETURN(jinja, ReadGgufChatTemplate(gguf));
  }
  return DetectChatFormat(jinja);
}

int RoundUpPow2(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

int RunProbe(const ProbeFlags& f) {
  if (f.list) return PrintList();
  const auto t0 = std::chrono::steady_clock::now();
  if (f.kv.empty()) return ReportError(BadInput("probe needs at least one --kv configuration; hint: e.g. --kv k=q4_0,v=q4_0"));
  auto families = SplitList(f.families, "--family", kFamilies);
  if (!families) return ReportError(families.error());
  std::set<std::string> fam(families->begin(), families->end());
  if (!f.custom.empty()) fam.insert("custom");
  if (fam.count("custom") && f.custom.empty()) return ReportError(BadInput("--family custom needs --custom FILE"));
  if (f.n < 1 || f.samples < 2 || f.variance_tokens < 1 || f.drift_tokens < 1) {
    return ReportError(BadInput("--n must be >= 1, --samples >= 2, token budgets >= 1; hint: see kvaudit probe --list"));
  }
  // Custom probes are checked before anything loads or runs: a malformed file is exit 2 at once.
  std::vector<CustomProbe> custom;
  if (fam.count("custom")) {
    auto c = LoadCustomProbes(f.custom);
    if (!c) return ReportError(c.error());
    custom = std::move(*c);
  }
  auto loaded = Model::Load(f.model.model);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& cfg = model.config();
  const Tokenizer* tok = model.tokenizer();
  if (!tok) return ReportError(BadInput(f.model.model + ": model has no tokenizer; hint: probe needs text in and out"));

  std::vector<int> lengths = DefaultProbeLengths(cfg.max_ctx, kAnswerReserve);
  if (!f.lengths.empty()) {
    auto l = ParseInts(f.lengths, "--lengths");
    if (!l) return ReportError(l.error());
    lengths = *l;
  }
  for (int L : lengths) {
    if (L > cfg.max_ctx - 64) {
      return ReportError(BadInput("--lengths " + std::to_string(L) + " leaves under 64 tokens of the model's context " +
                                  std::to_string(cfg.max_ctx) + " for the answer; hint: use at most " +
                                  std::to_string(cfg.max_ctx - 64)));
    }
  }
  std::vector<int> depths;
  if (!f.depths.empty()) {
    auto d = ParseInts(f.depths, "--depths");
    if (!d) return ReportError(d.error());
    depths = *d;
  }
  auto chat = ResolveChatFormat(f.model.model, f.chat);
  if (!chat) return ReportError(chat.error());
  PromptWrap wrap;
  if (*chat != ChatFormat::kNone) {
    const ChatFormat fmt = *chat;
    wrap = [fmt](std::string_view body, std::string_view question, std::string_view prefix) {
      std::string user(body);
      if (!question.empty()) user += "\n\n" + std::string(question);
      return ApplyChatTemplate(fmt, user, prefix);
    };
  }
  const std::string data = f.data.empty() ? DefaultDataPath() : f.data;
  auto haystack = Haystack::Load(data);
  if (!haystack) return ReportError(haystack.error());

  // Instances of the checked families.
  std::vector<ProbeInstance> instances;
  auto add = [&](Expected<std::vector<ProbeInstance>> made) -> Status {
    if (!made) return made.error();
    for (ProbeInstance& i : *made) instances.push_back(std::move(i));
    return Status::Ok();
  };
  auto variants_of = [&](const std::vector<std::string>& known,
                         const std::vector<std::string>& defaults) -> Expected<std::vector<std::string>> {
    if (f.variants.empty()) return defaults;
    if (f.variants == "all") return known;
    KV_ASSIGN_OR_RETURN(std::vector<std::string> all, SplitList(f.variants, "--variant", {}));
    std::vector<std::string> out;
    for (const std::string& v : all) {
      if (std::find(known.begin(), known.end(), v) != known.end()) out.push_back(v);
    }
    return out;
  };
  if (!f.variants.empty() && f.variants != "all") {
    std::vector<std::string> every = kNeedleVariants;
    every.insert(every.end(), kExactVariants.begin(), kExactVariants.end());
    every.insert(every.end(), kConstraintVariants.begin(), kConstraintVariants.end());
    auto checked = SplitList(f.variants, "--variant", every);  // a typo is an error, not an empty run
    if (!checked) return ReportError(checked.error());
  }
  // Default variants: the code-shaped needles (one fact; several with distractors), exact
  // reproduction of an identifier list and a JSON record, the naming-prefix constraint. Every
  // variant with --variant all (docs/probes.md: the full set costs ~2x the default run).
  struct Family {
    const char* name;
    const std::vector<std::string>* variants;
    std::vector<std::string> defaults;
  };
  for (const Family& fm : {Family{"needle", &kNeedleVariants, {"code", "multikey"}},
                           Family{"exact", &kExactVariants, {"identifiers", "json_record"}},
                           Family{"constraint", &kConstraintVariants, {"prefix"}}}) {
    if (!fam.count(fm.name)) continue;
    auto vs = variants_of(*fm.variants, fm.defaults);
    if (!vs) return ReportError(vs.error());
    for (const std::string& v : *vs) {
      Status st = Status::Ok();
      if (std::string(fm.name) == "needle") {
        NeedleOptions o;
        o.variant = v, o.lengths = lengths, o.per_cell = f.n, o.seed = f.seed, o.wrap = wrap;
        auto kind = ParseNeedleValueKind(f.needle_value);
        if (!kind) return ReportError(kind.error());
        o.value_kind = *kind;
        if (!depths.empty()) o.depths = depths;
        st = add(MakeNeedleProbes(*tok, *haystack, o));
      } else if (std::string(fm.name) == "exact") {
        ExactOptions o;
        o.variant = v, o.lengths = lengths, o.per_cell = f.n, o.seed = f.seed, o.wrap = wrap;
        if (!depths.empty()) o.depths = depths;
        st = add(MakeExactProbes(*tok, *haystack, o));
      } else {
        ConstraintOptions o;
        o.variant = v, o.lengths = lengths, o.per_cell = f.n, o.seed = f.seed, o.wrap = wrap;
        st = add(MakeConstraintProbes(*tok, *haystack, o));
      }
      if (!st) return ReportError(st.error());
    }
  }
  for (const CustomProbe& c : custom) {
    ProbeInstance i;
    i.family = "custom", i.variant = "custom", i.id = "custom/" + c.id;
    const std::string text = wrap ? wrap(c.prompt, "", "") : c.prompt;
    i.prompt = tok->Encode(text, tok->add_bos_default());
    if (i.prompt.empty()) return ReportError(BadInput(f.custom + ":" + std::to_string(c.line) + ": the prompt is empty"));
    if (static_cast<int>(i.prompt.size()) + c.max_tokens > cfg.max_ctx) {
      return ReportError(BadInput(f.custom + ":" + std::to_string(c.line) + ": prompt (" + std::to_string(i.prompt.size()) +
                                  " tokens) + max_tokens exceeds the model's context " + std::to_string(cfg.max_ctx) +
                                  "; hint: shorten the prompt or lower max_tokens"));
    }
    i.length = RoundUpPow2(static_cast<int>(i.prompt.size()));
    i.check = c.check, i.max_tokens = c.max_tokens, i.expected_text = c.check.Describe();
    instances.push_back(std::move(i));
  }
  // Prompts of the variance and drift families: BOS, then haystack lines to the exact length.
  struct Free {
    std::string id;
    int length;
    std::vector<int32_t> prompt;
  };
  std::vector<Free> variance, drift;
  for (const char* which : {"variance", "drift"}) {
    if (!fam.count(which)) continue;
    for (int L : lengths) {
      for (int k = 0; k < f.n; ++k) {
        const std::string id = ProbeId(which, "free", L, -1, k);
        FillerStream filler(*haystack, *tok, InstanceSeed(f.seed, id));
        const bool bos = tok->add_bos_default() && tok->bos_id() >= 0;
        auto body = filler.Take(L - (bos ? 1 : 0));
        if (!body) return ReportError(body.error());
        std::vector<int32_t> prompt;
        if (bos) prompt.push_back(tok->bos_id());
        prompt.insert(prompt.end(), body->begin(), body->end());
        (std::string(which) == "variance" ? variance : drift).push_back({id, L, std::move(prompt)});
      }
    }
  }
  int max_pos = 0;
  for (const ProbeInstance& i : instances) {
    const int need = static_cast<int>(i.prompt.size()) + i.max_tokens;
    if (need > cfg.max_ctx) {
      return ReportError(BadInput(i.id + ": prompt (" + std::to_string(i.prompt.size()) + " tokens) + answer budget (" +
                                  std::to_string(i.max_tokens) + ") exceeds the model's context " +
                                  std::to_string(cfg.max_ctx) + "; hint: use --lengths at most " +
                                  std::to_string(cfg.max_ctx - i.max_tokens)));
    }
    max_pos = std::max(max_pos, need);
  }
  for (const Free& v : variance) max_pos = std::max<int>(max_pos, static_cast<int>(v.prompt.size()) + f.variance_tokens);
  for (const Free& d : drift) max_pos = std::max<int>(max_pos, static_cast<int>(d.prompt.size()) + f.drift_tokens);
  if (max_pos == 0) return ReportError(BadInput("nothing to run; hint: check --family and --variant"));
  max_pos = std::min(max_pos + 1, cfg.max_ctx);

  ThreadPool pool(ResolveThreads(f.model.threads));
  std::vector<BuiltCache> built;  // [1 + n_configs], baseline first; all validated before any compute
  std::set<std::string> seen;
  for (size_t i = 0; i <= f.kv.size(); ++i) {
    auto b = BuildCache(model, i == 0 ? f.baseline : f.kv[i - 1], f.kv_calib, max_pos, pool);
    if (!b) return ReportError(b.error());
    if (i > 0 && !seen.insert(b->policy.spec()).second) {
      return ReportError(BadInput("--kv " + f.kv[i - 1] + " repeats configuration " + b->policy.spec() + "; hint: give each configuration once"));
    }
    built.push_back(std::move(*b));
  }
  ProbeRunInfo info;
  info.model = f.model.model, info.baseline_spec = built[0].policy.spec(), info.data = data, info.seed = f.seed;
  info.chat_format = ChatFormatName(*chat);
  for (size_t i = 1; i < built.size(); ++i) {
    info.specs.push_back(built[i].policy.spec());
    info.bytes_per_token.push_back(built[i].cache->bytes_per_token());
  }
  // Everything a recorded result depends on; the instance ids name family, variant, length, depth
  // and index, and the prompts come from the seed and data.
  nlohmann::json fp = {{"model", HexHash(HashModel(model))}, {"baseline", info.baseline_spec}, {"configs", info.specs},
                       {"seed", f.seed}, {"data", data}, {"chat", info.chat_format}, {"samples", f.samples},
                       {"temperature", f.temperature}, {"variance_tokens", f.variance_tokens},
                       {"drift_tokens", f.drift_tokens}};
  std::vector<int32_t> all_prompts;
  for (const ProbeInstance& i : instances) all_prompts.insert(all_prompts.end(), i.prompt.begin(), i.prompt.end());
  fp["prompts"] = HexHash(HashBytes(all_prompts.data(), all_prompts.size() * sizeof(int32_t), 11));
  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return ReportError(BadInput(f.out + ": cannot create the output directory: " + ec.message() + "; hint: check --out"));
  const fs::path journal_path = fs::path(f.out) / "progress.jsonl";
  if (f.restart) fs::remove(journal_path, ec);
  std::vector<nlohmann::json> lines;
  auto journal = JsonlJournal::Open(journal_path.string(), "kvaudit_probe_progress", fp, "probe", &lines);
  if (!journal) return ReportError(journal.error());
  const size_t n_caches = built.size();
  std::vector<ProbeRecord> probes;
  std::vector<VarianceRecord> var_recs;
  std::vector<DriftRecord> drift_recs;
  std::map<std::string, nlohmann::json> done;
  for (nlohmann::json& j : lines) {
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("kind")) {
      return ReportError(BadInput(journal_path.string() + ": damaged probe record" + JsonlJournal::Hint("probe")));
    }
    const std::string id = j["id"].get<std::string>();  // before the move: `=` evaluates its right side first
    done[id] = std::move(j);
  }
  auto restore = [&](const std::string& id, auto parse, auto& into) -> Status {
    auto r = parse(done.at(id), n_caches);
    if (!r) return BadInput(journal_path.string() + ": damaged record " + id + JsonlJournal::Hint("probe"));
    into.push_back(std::move(*r));
    ++info.resumed;
    return Status::Ok();
  };

  std::vector<KvCache*> caches;
  for (BuiltCache& b : built) caches.push_back(b.cache.get());
  ProbeRunner runner(model, caches, pool);
  info.instances = static_cast<int>(instances.size() + variance.size() + drift.size());
  ProgressBar bar(info.instances, StderrIsTerminal(), "probe");
  Status st = Status::Ok();
  for (const ProbeInstance& i : instances) {
    if (done.count(i.id)) {
      st = restore(i.id, ProbeRecordFromJson, probes);
    } else {
      probes.push_back(runner.RunChecked(i));
      st = (*journal)->Append(ToJson(probes.back()));
    }
    if (!st) return ReportError(st.error());
    bar.Advance(1);
  }
  for (const Free& v : variance) {
    if (done.count(v.id)) {
      st = restore(v.id, VarianceRecordFromJson, var_recs);
    } else {
      var_recs.push_back(runner.RunVariance(v.id, v.length, v.prompt, f.samples, f.temperature, f.variance_tokens));
      st = (*journal)->Append(ToJson(var_recs.back()));
    }
    if (!st) return ReportError(st.error());
    bar.Advance(1);
  }
  for (const Free& d : drift) {
    if (done.count(d.id)) {
      st = restore(d.id, DriftRecordFromJson, drift_recs);
    } else {
      drift_recs.push_back(runner.RunDrift(d.id, d.length, d.prompt, f.drift_tokens));
      st = (*journal)->Append(ToJson(drift_recs.back()));
    }
    if (!st) return ReportError(st.error());
    bar.Advance(1);
  }
  bar.Finish();
  info.threads = pool.size();
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info.peak_rss_mb = PeakRssMb();
  const std::string results = (fs::path(f.out) / "results.json").string();
  Status ws = WriteFileAtomically(results, ProbeResultsJson(info, probes, var_recs, drift_recs).dump(2) + "\n");
  if (!ws) return ReportError(ws.error());
  std::fputs(ProbeResultsTable(info, probes, var_recs, drift_recs).c_str(), stdout);
  std::printf("wall %.1f s, peak RSS %.0f MB, %d of %d instances resumed; results: %s\n", info.wall_s,
              info.peak_rss_mb, info.resumed, info.instances, results.c_str());
  return 0;
}

}  // namespace

CommandRunner AddProbeCommand(CLI::App& app) {
  auto f = std::make_shared<ProbeFlags>();
  f->model.Add(app);
  app.add_flag("--list", f->list, "list the probe families with their defaults and exit");
  app.add_option("--kv", f->kv, "cache configuration to compare with the baseline (repeatable), e.g. k=q4_0,v=q4_0");
  app.add_option("--baseline", f->baseline, "reference cache configuration")->capture_default_str();
  app.add_option("--kv-calib", f->kv_calib, "calibration text for fp8 scale=calib and outliers=N");
  app.add_option("--family", f->families, "comma-separated families: needle,exact,constraint,variance,drift,custom")
      ->capture_default_str();
  app.add_option("--variant", f->variants,
                 "variants to run (comma-separated), e.g. code,json, or all (default: needle code,multikey; exact "
                 "identifiers,json_record; constraint prefix)");
  app.add_option("--lengths", f->lengths, "prompt lengths in tokens, e.g. 1024,2048 (default 512..4096 within context)");
  app.add_option("--depths", f->depths, "needle/exact depths in percent, e.g. 0,50,100");
  app.add_option("--n", f->n, "instances per cell")->capture_default_str();
  app.add_option("--seed", f->seed, "seed of the generated probes")->capture_default_str();
  app.add_option("--needle-value", f->needle_value, "needle values: rotate (number, word, hex in turn), number, word, hex, uuid")
      ->capture_default_str();
  app.add_option("--custom", f->custom, "JSONL file of custom probes");
  app.add_option("--data", f->data, "haystack text: file, folder or JSONL with \"text\" (default: the bundled eval documents)");
  app.add_option("--samples", f->samples, "variance: samples per prompt (seeds 1..K)")->capture_default_str();
  app.add_option("--temp", f->temperature, "variance: sampling temperature")->capture_default_str();
  app.add_option("--variance-tokens", f->variance_tokens, "variance: tokens per sample")->capture_default_str();
  app.add_option("--drift-tokens", f->drift_tokens, "drift: greedy tokens per prompt")->capture_default_str();
  app.add_option("--chat-template", f->chat, "auto (from the model), none, chatml, llama3, mistral")->capture_default_str();
  app.add_option("--out", f->out, "output directory (results.json, progress.jsonl)")->capture_default_str();
  app.add_flag("--restart", f->restart, "discard the probes recorded in --out and start over");
  return [f] { return RunProbe(*f); };
}

}  // namespace kvaudit::cli
