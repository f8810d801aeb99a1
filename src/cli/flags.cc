#include "cli/flags.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "base/edit_distance.h"

namespace kvaudit::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelHelp = "Hugging Face model directory or .gguf file";
constexpr const char* kKvHelp =
    "KV cache configuration, e.g. k=q8_0,v=q4_0 or @cache.json (kvaudit formats; docs/formats.md)";
constexpr const char* kKvCalibHelp = "calibration text (file, folder or JSONL) for fp8 scale=calib and outliers=N";

// A bundled default, used only by its relative name and only when it is there.
Expected<std::string> Bundled(const char* flag, const char* what, const char* path, const char* hint) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    const fs::path cwd = fs::current_path(ec);
    return BadInput(std::string(flag) + " not given and " + what + " " + path + " is not in the current directory " +
                    cwd.string() + "; hint: " + hint);
  }
  std::fprintf(stderr, "kvaudit: %s not given: using %s %s\n", flag, what, path);
  return std::string(path);
}

}  // namespace

void ModelFlags::AddModelOnly(CLI::App& app) {
  app.add_option("--model", model,
                 std::string(kModelHelp) + " (default: the bundled demo model " + kBundledModel +
                     ", relative to the current directory)");
}

void ModelFlags::Add(CLI::App& app) {
  AddModelOnly(app);
  app.add_option("--threads", threads, "worker threads (0 = all cores)")->capture_default_str();
}

void AddModelCheckFlag(CLI::App& app, std::string& model) {
  app.add_option("--model", model,
                 std::string(kModelHelp) +
                     ": the model the results must come from, checked by its content hash "
                     "(default: not checked)");
}

Expected<std::string> ModelFlags::Resolve() const {
  if (!model.empty()) return model;
  return Bundled("--model", "the bundled demo model", kBundledModel, "pass --model DIR|FILE.gguf");
}

Status ResolveJobInputs(const ModelFlags& flags, const std::string& data_flag, std::string* model, int* threads,
                        std::string* data) {
  KV_ASSIGN_OR_RETURN(*model, flags.Resolve());
  KV_ASSIGN_OR_RETURN(*data, ResolveData(data_flag));
  *threads = flags.threads;
  return Status::Ok();
}

void AddKvFlag(CLI::App& app, std::string& kv, const std::string& use) {
  auto* opt = app.add_option("--kv", kv, std::string(kKvHelp) + "; " + use);
  if (!kv.empty()) opt->capture_default_str();
}

void KvFlags::Add(CLI::App& app, const std::string& use) {
  AddKvFlag(app, kv, use);
  app.add_option("--kv-calib", kv_calib, kKvCalibHelp);
}

void AddKvCompareFlags(CLI::App& app, KvConfigOptions& kv) {
  app.add_option("--kv", kv.kv, std::string(kKvHelp) + "; repeatable: each is compared with --baseline");
  AddBaselineFlags(app, kv);
}

void AddBaselineFlags(CLI::App& app, KvConfigOptions& kv) {
  app.add_option("--baseline", kv.baseline, "the reference cache configuration")->capture_default_str();
  app.add_option("--kv-calib", kv.kv_calib, kKvCalibHelp);
}

void AddWindowFlags(CLI::App& app, int& windows, int& first_window) {
  app.add_option("--windows", windows, "use K windows of the data, from --first-window on (0 = all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--first-window", first_window,
                 "the first window used (0-based): windows [F, F + --windows) of the data, e.g. to hold out windows")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void AddCalibWindowsFlag(CLI::App& app, int& windows) {
  app.add_option("--calib-windows", windows,
                 "windows of the data the sensitivity run calibrates on (default: 4096 tokens' worth, at least 2)")
      ->check(CLI::Range(1, 1 << 20));
}

void AddAttnSamplesFlag(CLI::App& app, int& samples, const std::string& use) {
  app.add_option("--attn-samples", samples, "query positions per window sampled for the attention diagnosis: " + use)
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
}

void AddCtxFlag(CLI::App& app, int& ctx, const std::string& use) {
  app.add_option("--ctx", ctx, "context length in tokens, at most the model's: " + use);
}

void AddDataFlag(CLI::App& app, std::string& data, const std::string& use) {
  app.add_option(
      "--data", data,
      use + ": a text file, a folder of text files, or JSONL with \"text\" (default: the bundled eval documents " +
          kBundledData + ", relative to the current directory)");
}

Expected<std::string> ResolveData(const std::string& data) {
  if (!data.empty()) return data;
  return Bundled("--data", "the bundled eval documents", kBundledData, "pass --data FILE|DIR|JSONL");
}

void AddFormatsFlag(CLI::App& app, std::vector<std::string>& formats, const std::string& use) {
  app.add_option(
      "--formats", formats,
      "candidate formats, comma-separated; key=value after a format is its protection (q8_0,q4_0,rot=1,kivi2): " + use);
}

void AddStageFlag(CLI::App& app, std::string& stage) {
  app.add_option("--stage", stage,
                 "proxy: attention diagnosis only; full: every part end to end; auto: the proxy's top parts end to end")
      ->capture_default_str();
}

void AddTargetFlag(CLI::App& app, std::string& target, const std::string& default_text) {
  app.add_option("--target", target,
                 "the deployment engine measured: llama.cpp (its attention and default rotation), ollama, vllm, "
                 "sglang, tensorrt-llm, transformers, or native (kvaudit's reference engine); " +
                     default_text);
}

void AddOutFlags(CLI::App& app, std::string& out, bool& restart, const std::string& unit) {
  app.add_option("--out", out, "output directory (results.json, progress.jsonl); a rerun resumes it")
      ->capture_default_str();
  app.add_flag("--restart", restart, "discard the " + unit + " recorded in --out and start over");
}

void AddShardFlag(CLI::App& app, std::string& shard) {
  app.add_option("--shard", shard,
                 "I/N: compute only shard I (0-based) of N of the work, into its own --out; combine the N with "
                 "kvaudit merge (docs/scale-out.md)");
}

void AddStagedShardFlags(CLI::App& app, std::string& shard, std::string& merged) {
  AddShardFlag(app, shard);
  app.add_option("--merged", merged,
                 "with --shard: the directory kvaudit merge wrote from the shards' earlier rounds; the stages "
                 "merged there are read, and the shard computes its part of the next (docs/scale-out.md)");
}

Status ParseStagedShardFlags(const std::string& shard_text, const std::string& merged, ShardSpec* shard) {
  KV_RETURN_IF_ERROR(ParseShardFlag(shard_text, shard));
  if (!merged.empty() && !shard->on()) {
    return BadInput("--merged " + merged +
                    " without --shard; hint: --merged names the merge of the shards' earlier "
                    "rounds; the final unsharded run takes that directory as --out");
  }
  return Status::Ok();
}

Status ParseShardFlag(const std::string& text, ShardSpec* shard) {
  if (text.empty()) return Status::Ok();
  KV_ASSIGN_OR_RETURN(*shard, ParseShard(text));
  return Status::Ok();
}

void AddJsonFlag(CLI::App& app, bool& json) {
  app.add_flag("--json", json, "print one JSON document on stdout instead of the table (docs/cli.md)");
}

void AddJsonlFlag(CLI::App& app, std::string& path) {
  app.add_option("--jsonl", path, "also write one JSON line per position to this file (its fields: docs/cli.md)");
}

void AddSeedFlag(CLI::App& app, uint64_t& seed, const std::string& use) {
  app.add_option("--seed", seed, "sampling seed: " + use)->capture_default_str();
}

void AddTempFlag(CLI::App& app, float& temp, const std::string& use) {
  app.add_option("--temp", temp, "sampling temperature (0 = greedy): " + use)
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void AddProbeSeedFlag(CLI::App& app, uint64_t& seed) {
  app.add_option("--probe-seed", seed, "seed of the generated probe prompts (needle values, filler, spans)")
      ->capture_default_str();
}

void AddBootstrapSeedFlag(CLI::App& app, uint64_t& seed) {
  app.add_option("--bootstrap-seed", seed, "seed of the bootstrap confidence intervals")->capture_default_str();
}

std::string NearestFlag(const CLI::App& command) {
  for (const std::string& arg : command.remaining()) {
    if (arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');  // --windwos=3
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string best;
    size_t best_distance = 3;
    for (const CLI::Option* o : command.get_options()) {
      for (const std::string& long_name : o->get_lnames()) {
        const size_t d = EditDistance(name, long_name);
        if (d < best_distance) best = long_name, best_distance = d;
      }
    }
    if (!best.empty()) return "did you mean --" + best + "? ";
  }
  return "";
}

void AddPolicyFlag(CLI::App& app, std::string& policy) {
  CLI::Option* o = app.add_option(
      "--policy", policy, "acceptance policy: a preset (strict, balanced, relative) or a TOML file (docs/decision.md)");
  if (policy.empty()) {
    o->required();
  } else {
    o->capture_default_str();
  }
}

void AddCustomFlag(CLI::App& app, std::string& path, const std::string& use) {
  app.add_option("--custom", path, "JSONL file of your own probes (docs/probes.md): " + use);
}

void AddProbeSizeFlags(CLI::App& app, std::vector<int>& lengths, int& n, const std::string& default_lengths) {
  app.add_option("--lengths", lengths,
                 "probe prompt lengths in tokens, e.g. 1024,2048 (default " + default_lengths + ")")
      ->delimiter(',');
  app.add_option("--n", n, "probe instances per cell")->capture_default_str()->check(CLI::Range(1, 1 << 20));
}

void AddBudgetFlag(CLI::App& app, std::string& budget, bool required) {
  CLI::Option* o = app.add_option(
      "--budget", budget,
      "KV memory budget: bytes per token (1800), the whole cache at the target context (2.5GiB, 700MiB) or a fraction "
      "of f16 (0.5xf16)");
  if (required) o->required();
}

void AddResultsFlag(CLI::App& app, std::vector<std::string>& dirs) {
  app.add_option("--results", dirs,
                 "repeatable: an eval, probe or audit output directory (results.json, or eval/ and probe/ below it)")
      ->required();
}

void AddJunitFlag(CLI::App& app, std::string& path) {
  app.add_option("--junit", path, "also write the cases as JUnit XML to this file (one test case per criterion)");
}

void AddMarkdownFlag(CLI::App& app, std::string& path) {
  app.add_option("--markdown", path, "also write a markdown summary for a pull-request comment to this file");
}

void ServeFlags::Add(CLI::App& app) {
  app.add_option("--host", host, "address to listen on (another than 127.0.0.1 exposes the server to the network)")
      ->capture_default_str();
  app.add_option("--port", port, "TCP port (0 = a free one; the server prints the one it bound)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--parallel", parallel, "completions run at once, each worker with its own KV cache")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--queue", queue, "completions that may wait for a worker; beyond them the server answers 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--api-key-file", api_key_file,
                 "file whose first line is the key every request but /health must send as 'Authorization: Bearer KEY'");
  app.add_option("--request-timeout", request_timeout_s, "seconds a completion may take from arrival; later: 504")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  app.add_option("--chat-template", chat_template,
                 "template of /v1/chat/completions: auto (from the model), none, chatml, llama3, mistral, mistral-v3")
      ->capture_default_str();
  app.add_option("--shadow-rate", shadow_rate,
                 "fraction of completions (0-1, evenly spaced) re-run on an f32 shadow cache after they are answered; "
                 "the drift is exported on /metrics")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--shadow-log", shadow_log, "append one JSON line per shadowed completion to this file");
}

}  // namespace kvaudit::cli
