// The flags subcommands share, each declared once here with one meaning and one help text (house
// style: the same flag means the same thing everywhere). A subcommand adds the ones it takes;
// docs/cli.md lists which takes which.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/kv_configs.h"
#include "run/shard.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kvaudit::cli {

// Relative to the current directory: the repository root is where `make demo` runs.
inline constexpr const char* kBundledModel = "models/kvq-code-16m";
inline constexpr const char* kBundledData = "data/eval-docs.jsonl";

// --model, --threads: every subcommand that runs a model.
struct ModelFlags {
  std::string model;  // "" = the bundled demo model, if it is there
  int threads = 0;    // 0 = all cores
  void Add(CLI::App& app);
  void AddModelOnly(CLI::App& app);  // --model without --threads (commands that run nothing: deploy)
  // --model as given; without it the bundled demo model, announced in one line on stderr; BadInput
  // with a hint to pass --model when that is not in the current directory either.
  Expected<std::string> Resolve() const;
};

// --model for a command that reads results rather than running the model (gate): the model the
// results must come from, checked by its content hash; "" = not checked (no bundled default).
void AddModelCheckFlag(CLI::App& app, std::string& model);

// A job over text (eval, probe): --model and --data resolved (defaults announced), --threads copied.
Status ResolveJobInputs(const ModelFlags& flags, const std::string& data_flag, std::string* model, int* threads,
                        std::string* data);

// --kv alone: one cache configuration that is not run (deploy).
void AddKvFlag(CLI::App& app, std::string& kv, const std::string& use);
// --kv, --kv-calib for one cache configuration (info, score, generate).
struct KvFlags {
  std::string kv = "k=f32,v=f32";
  std::string kv_calib;
  void Add(CLI::App& app, const std::string& use);
};
// --kv (repeatable), --baseline, --kv-calib for configurations compared with a baseline (eval,
// probe, and the commands that build on them).
void AddKvCompareFlags(CLI::App& app, KvConfigOptions& kv);
// --baseline, --kv-calib without --kv: a job that makes its configurations itself (sensitivity).
void AddBaselineFlags(CLI::App& app, KvConfigOptions& kv);

// --ctx: the context length in tokens; never above the model's (run/engine.h ResolveContext).
void AddCtxFlag(CLI::App& app, int& ctx, const std::string& use);
// --data: text as documents (a file, a folder of text files, or JSONL with "text").
void AddDataFlag(CLI::App& app, std::string& data, const std::string& use);
// --data as given; without it the bundled eval documents, announced on stderr, or BadInput.
Expected<std::string> ResolveData(const std::string& data);
// --windows K, --first-window F: windows [F, F + K) of the data's (run/windows.h SelectWindows).
void AddWindowFlags(CLI::App& app, int& windows, int& first_window);
// --calib-windows C: the calibration windows of a recommendation (recommend, audit).
void AddCalibWindowsFlag(CLI::App& app, int& windows);
// --attn-samples S: query positions per window for the attention diagnosis (eval/attention_diag.h).
void AddAttnSamplesFlag(CLI::App& app, int& samples, const std::string& use);
// --formats LIST (repeatable): candidate formats with optional protections, e.g. q8_0,q4_0,rot=1
// (decide/sensitivity/sensitivity_specs.h ParseCandidates); --stage proxy|full|auto (decide/sensitivity/sensitivity.h).
void AddFormatsFlag(CLI::App& app, std::vector<std::string>& formats, const std::string& use);
void AddStageFlag(CLI::App& app, std::string& stage);
// --target NAME: the deployment engine a job measures (decide/targets/measure_target.h): its
// emulation, its defaults and its cache formats; "" = the job's default.
void AddTargetFlag(CLI::App& app, std::string& target, const std::string& default_text);
// --out DIR, --restart: a resumable job's output directory (run/run_dir.h).
void AddOutFlags(CLI::App& app, std::string& out, bool& restart, const std::string& unit);
// --shard I/N: run only shard I of N of the job's work units (run/shard.h; docs/scale-out.md);
// parsed by ParseShardFlag ("" = not sharded).
void AddShardFlag(CLI::App& app, std::string& shard);
Status ParseShardFlag(const std::string& text, ShardSpec* shard);
// --shard and --merged of a job that runs in stages (sensitivity, recommend, audit); --merged
// needs --shard.
void AddStagedShardFlags(CLI::App& app, std::string& shard, std::string& merged);
Status ParseStagedShardFlags(const std::string& shard_text, const std::string& merged, ShardSpec* shard);
// --json: the command's table as one JSON document on stdout instead (docs/cli.md has the shapes).
void AddJsonFlag(CLI::App& app, bool& json);
// --jsonl FILE: one JSON line per position (score: every predicted one; eval: the scored ones).
void AddJsonlFlag(CLI::App& app, std::string& path);
// --seed: the sampling seed, wherever tokens are sampled; --temp: the sampling temperature.
void AddSeedFlag(CLI::App& app, uint64_t& seed, const std::string& use);
void AddTempFlag(CLI::App& app, float& temp, const std::string& use);
// --probe-seed: the seed of the generated probe prompts (probe).
void AddProbeSeedFlag(CLI::App& app, uint64_t& seed);
// --bootstrap-seed: the seed of the bootstrap confidence intervals (eval).
void AddBootstrapSeedFlag(CLI::App& app, uint64_t& seed);

// --policy: the acceptance policy, a preset (strict, balanced, relative) or a TOML file (gate; docs/decision.md).
// Required when `policy` is empty; else that is its default (recommend, audit).
void AddPolicyFlag(CLI::App& app, std::string& policy);
// "did you mean --threads? " for the first unknown --flag left over by a parse of `command` that is
// within two edits of one of its flags; "" otherwise (the error line's hint starts with it).
std::string NearestFlag(const CLI::App& command);

// --custom FILE: JSONL of the user's own probes (docs/probes.md "Custom probes"; probe, recommend, audit).
void AddCustomFlag(CLI::App& app, std::string& path, const std::string& use);
// --lengths L,...: probe prompt lengths in tokens; --n N: probe instances per cell (at least 1).
void AddProbeSizeFlags(CLI::App& app, std::vector<int>& lengths, int& n, const std::string& default_lengths);

// --budget: the KV memory budget of a recommendation (decide/search/budget.h; recommend, audit).
void AddBudgetFlag(CLI::App& app, std::string& budget, bool required);
// --results DIR (repeatable, required): eval, probe or audit output directories to judge (gate).
void AddResultsFlag(CLI::App& app, std::vector<std::string>& dirs);
// --junit FILE, --markdown FILE: the gate's report as JUnit XML and as a pull-request comment.
void AddJunitFlag(CLI::App& app, std::string& path);
void AddMarkdownFlag(CLI::App& app, std::string& path);

// serve (docs/serve.md): --host, --port, --parallel N (workers, each with its own KV cache),
// --queue N (completions waiting for a worker; more: 503), --api-key-file F, --request-timeout S.
struct ServeFlags {
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  int queue = 16;
  std::string api_key_file;
  int request_timeout_s = 600;
  std::string chat_template = "auto";  // /v1/chat/completions' template family (tokenizer/chat_template.h)
  double shadow_rate = 0;              // fraction of completions re-run on an f32 shadow cache (serve/shadow.h)
  std::string shadow_log;              // one JSONL line per shadowed request
  void Add(CLI::App& app);
};

}  // namespace kvaudit::cli
