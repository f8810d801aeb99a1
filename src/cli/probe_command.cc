// kvaudit probe: workload checks (needle retrieval, structured exactness, constraint retention,
// repeated-run variance, free-running drift, custom probes) under the baseline and every cache
// configuration, with cache-induced failures told apart from model limits (the plan and session:
// probe/plan.h, probe/session.h; docs/probes.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/endpoint_flags.h"
#include "cli/flags.h"
#include "probe/session.h"

namespace kvaudit::cli {
namespace {

struct ProbeFlags {
  ModelFlags model;
  ProbeOptions options;
  std::string shard;
  bool list = false, json = false;
};

int PrintList() {
  std::printf(
      "kvaudit probe families (default: needle,exact,constraint,variance,drift; with --custom FILE and no --family,\n"
      "only the custom probes)\n"
      "  needle      fact planted at a depth, asked for at the end; variants code, multikey (default), prose, json;\n"
      "              lengths 512,1024,2048,4096 (capped at the model's context - 256); depths 0,10,25,50,75,90,100\n"
      "  exact       reproduce a code/JSON span seen earlier; variants identifiers, json_record (default), signature,\n"
      "              number;\n"
      "              depths 10,50\n"
      "  constraint  a convention declared in a header must hold in code written at the end; variants prefix\n"
      "              (default), quotes, indent\n"
      "  variance    K samples (--samples 5, --temp 0.8, seeds --seed..--seed+K-1, --variance-tokens 48) of one\n"
      "              prompt per length\n"
      "  drift       greedy --drift-tokens 64 from one prompt per length: divergence, edit distance, KL, repetition\n"
      "  custom      --custom FILE: JSONL "
      "{\"id\",\"prompt\",\"expected\"|\"regex\"|\"contains\"|\"json_valid\"|\"json_equals\",\"max_tokens\"}\n"
      "--variant all runs every variant of the selected families; a variant of no selected family is an error.\n"
      "--n instances per cell (default 1), --probe-seed (default 1). Details: docs/probes.md\n");
  return 0;
}

Expected<ProbeSessionResult> RunProbe(ProbeFlags& f) {
  ProbeOptions& o = f.options;
  KV_RETURN_IF_ERROR(ParseShardFlag(f.shard, &o.shard));
  KV_ASSIGN_OR_RETURN(const bool needs_haystack, NeedsHaystack(o));
  if (needs_haystack) {
    KV_RETURN_IF_ERROR(ResolveJobInputs(f.model, o.data, &o.model, &o.threads, &o.data));
  } else {  // custom probes only: --data is not read, so neither asked for nor defaulted
    KV_ASSIGN_OR_RETURN(o.model, f.model.Resolve());
    o.threads = f.model.threads;
  }
  KV_ASSIGN_OR_RETURN(ProbePlan plan, ProbePlan::Make(f.options));
  return ProbeSession(plan).Run();
}

void AddProbeFlags(CLI::App& app, ProbeOptions& o) {
  AddKvCompareFlags(app, o.kv);
  AddEndpointFlags(app, o.remote);
  app.add_option("--family", o.families,
                 "comma-separated families: needle,exact,constraint,variance,drift,custom (default: the first five; "
                 "only custom when --custom is given without --family)")
      ->delimiter(',');
  app.add_option("--variant", o.variants,
                 "variants to run (comma-separated), e.g. code,json, or all (default: needle code,multikey; exact "
                 "identifiers,json_record; constraint prefix); each must belong to a selected family")
      ->delimiter(',');
  AddProbeSizeFlags(app, o.lengths, o.n, "512..4096 within context");
  app.add_option("--depths", o.depths, "needle/exact depths in percent, e.g. 0,50,100")->delimiter(',');
  AddProbeSeedFlag(app, o.probe_seed);
  app.add_option("--needle-value", o.needle_value,
                 "needle values: rotate (number, word, hex in turn), number, word, hex, uuid")
      ->capture_default_str();
  AddCustomFlag(app, o.custom, "without --family only these run");
  AddDataFlag(app, o.data, "the haystack text");
  app.add_option("--samples", o.samples, "variance: samples per prompt")->capture_default_str();
  AddSeedFlag(app, o.seed, "variance sample k (1..K) uses seed + k - 1, the same under every cache");
  AddTempFlag(app, o.temperature, "variance samples");
  app.add_option("--variance-tokens", o.variance_tokens, "variance: tokens per sample")->capture_default_str();
  app.add_option("--drift-tokens", o.drift_tokens, "drift: greedy tokens per prompt")->capture_default_str();
  app.add_option("--chat-template", o.chat, "auto (from the model), none, chatml, llama3, mistral, mistral-v3")
      ->capture_default_str();
  AddOutFlags(app, o.out, o.restart, "probes");
}

}  // namespace

CommandRunner AddProbeCommand(CLI::App& app) {
  auto f = std::make_shared<ProbeFlags>();
  f->model.Add(app);
  app.add_flag("--list", f->list, "list the probe families with their defaults and exit");
  AddProbeFlags(app, f->options);
  AddShardFlag(app, f->shard);
  AddJsonFlag(app, f->json);
  return [f] {
    if (f->list) return PrintList();
    auto done = RunProbe(*f);
    if (!done) return ReportError(done.error());
    const ProbeSessionResult& r = *done;
    if (f->options.shard.on()) {
      const int n = static_cast<int>(r.probes.size() + r.variance.size() + r.drift.size());
      return PrintShardDone(f->options.shard, n, "probes", r.info.wall_s, r.results_path);
    }
    return PrintResults(
        ProbeResultsTable(r.info, r.probes, r.variance, r.drift), r.results,
        RunFooter({r.info.wall_s, r.info.peak_rss_mb}, r.info.resumed, r.info.instances, "instances", r.results_path),
        f->json);
  };
}

}  // namespace kvaudit::cli
