// kvaudit: is quantizing the KV cache of your model safe for your workload?
#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "base/isa.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "run/provenance.h"

int main(int argc, char** argv) {
  using namespace kvaudit::cli;
  kvaudit::RecordCommandLine(argc, argv);                      // the run block of every results.json
  if (kvaudit::Status isa = kvaudit::InitActiveIsa(); !isa) {  // KVAUDIT_ISA names a path this CPU lacks
    std::fprintf(stderr, "kvaudit: error: %s\n", isa.error().message.c_str());
    return 2;
  }
  CLI::App app{"kvaudit: measure what KV-cache quantization changes in your model"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  struct Entry {
    CLI::App* sub;
    CommandRunner run;
  };
  std::vector<Entry> entries;
  auto add = [&](const char* name, const char* what, CommandRunner (*adder)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, what);
    entries.push_back({sub, adder(*sub)});
  };
  add("audit",
      "the main job: is each KV cache configuration safe for this model and workload, up to which context, "
      "and what to deploy (eval, probes, recommendation, policy verdict)",
      AddAuditCommand);
  add("info", "show a model's architecture, weights, tokenizer and cache size", AddInfoCommand);
  add("tokenize", "turn text into token ids with the model's tokenizer", AddTokenizeCommand);
  add("generate", "continue a prompt (greedy or sampled)", AddGenerateCommand);
  add("score", "teacher-forced NLL / perplexity of text or token ids", AddScoreCommand);
  add("eval", "fidelity of KV-cache configurations against a baseline, by context length", AddEvalCommand);
  add("probe", "workload checks (needles, exactness, constraints, variance, drift, custom) per configuration",
      AddProbeCommand);
  add("reference", "a baseline computed once and frozen (its top-k logprobs per position), for eval --reference",
      AddReferenceCommand);
  add("merge", "combine the shards of an eval or probe --shard I/N run into the unsharded run's results",
      AddMergeCommand);
  add("deploy",
      "the settings of a KV cache configuration in llama.cpp, ollama, vLLM, SGLang, TensorRT-LLM, "
      "transformers, and its memory there",
      AddDeployCommand);
  add("gate", "judge eval and probe results by an acceptance policy: exit 0 pass, 1 fail, 2 bad input", AddGateCommand);
  add("sensitivity",
      "how much each layer's K and V contributes to a format's error (one at a time, leave one out, proxy)",
      AddSensitivityCommand);
  add("recommend",
      "under a memory budget, the cheapest cache configuration that passes a policy, verified on held-out data",
      AddRecommendCommand);
  add("report", "one self-contained HTML page (or markdown) from audit, eval, probe or recommend results",
      AddReportCommand);
  add("serve",
      "an HTTP server speaking the OpenAI completions API (as vLLM and llama-server do), running the model "
      "with the given KV cache",
      AddServeCommand);
  add("formats", "list KV-cache formats with their bits per element", AddFormatsCommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "kvaudit";
    const CLI::App* command = &app;
    for (CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name(), command = sub;
    std::fprintf(stderr, "kvaudit: error: %s; hint: %srun '%s --help'\n", e.what(), NearestFlag(*command).c_str(),
                 where.c_str());
    return 2;
  }
  for (const Entry& e : entries) {
    if (e.sub->parsed()) return e.run();
  }
  return 2;
}
