// kvaudit generate: continue a prompt with the model (greedy by default), streaming the text.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "model/forward.h"
#include "run/model_runtime.h"
#include "run/kv_configs.h"
#include "run/sampling.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

struct GenerateFlags {
  ModelFlags model;
  KvFlags kv;
  std::string prompt, prompt_file;
  int max_tokens = 128;
  int ctx = 0;
  bool ignore_eos = false;
  SamplingParams sampling;
};

int RunGenerate(const GenerateFlags& f) {
  auto model_path = f.model.Resolve();
  if (!model_path) return ReportError(model_path.error());
  auto loaded = Model::Load(*model_path);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& cfg = model.config();
  const Tokenizer* tok = model.tokenizer();
  if (!tok)
    return ReportError(BadInput(*model_path + ": model has no tokenizer; hint: generate needs text in and out"));
  std::string prompt = f.prompt;
  if (!f.prompt_file.empty()) {
    auto text = ReadTextFile(f.prompt_file);
    if (!text) return ReportError(text.error());
    prompt = *text;
  }
  std::vector<int32_t> ids = tok->Encode(prompt, tok->add_bos_default());
  if (ids.empty()) return ReportError(BadInput("the prompt is empty; hint: pass --prompt TEXT"));
  auto resolved_ctx = ResolveContext(f.ctx, cfg, cfg.max_ctx, 1);
  if (!resolved_ctx) return ReportError(resolved_ctx.error());
  const int ctx = *resolved_ctx;
  if (static_cast<int>(ids.size()) >= ctx) {
    return ReportError(BadInput("prompt has " + std::to_string(ids.size()) + " tokens, not below the context " +
                                std::to_string(ctx) + "; hint: shorten the prompt or raise --ctx"));
  }
  ThreadPool pool(ResolveThreads(f.model.threads));
  // Storage for the positions this run can reach, not the whole context.
  const int run_positions = static_cast<int>(std::min<int64_t>(ctx, static_cast<int64_t>(ids.size()) + f.max_tokens));
  auto built = BuildCache(model, f.kv.kv, f.kv.kv_calib, ctx, pool, run_positions);
  if (!built) return ReportError(built.error());
  Forward forward(model, *built->cache, pool, ctx);
  Sampler sampler(f.sampling);
  std::vector<float> logits(static_cast<size_t>(cfg.vocab_size));  // [vocab]

  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  forward.Run(ids, 0, logits.data(), /*all_logits=*/false);
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<int32_t> generated;
  std::string printed;
  int pos = static_cast<int>(ids.size());
  while (static_cast<int>(generated.size()) < f.max_tokens && pos < ctx) {
    const int32_t next = sampler.Sample(logits);
    if (next == tok->eos_id() && !f.ignore_eos) break;
    generated.push_back(next);
    // Decode the whole continuation and print what is new: a byte-level token may end inside a
    // UTF-8 character, so per-token decoding would print broken characters.
    const std::string text = tok->Decode(generated);
    if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
      std::fwrite(text.data() + printed.size(), 1, text.size() - printed.size(), stdout);
      std::fflush(stdout);
      printed = text;
    }
    const int32_t one[1] = {next};
    forward.Run(one, pos++, logits.data(), /*all_logits=*/false);
  }
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("\n");
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::fprintf(stderr,
               "kvaudit: prompt %zu tokens (%.1f tok/s), generated %zu tokens (%.1f tok/s), %d threads, "
               "KV cache %.2f MiB held\n",
               ids.size(), static_cast<double>(ids.size()) / prefill_s, generated.size(),
               generated.empty() ? 0.0 : static_cast<double>(generated.size()) / decode_s, pool.size(),
               static_cast<double>(built->cache->bytes_reserved()) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace

CommandRunner AddGenerateCommand(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  f->model.Add(app);
  f->kv.Add(app, "the cache generation runs with");
  auto* prompt = app.add_option("--prompt", f->prompt, "prompt text");
  auto* file = app.add_option("--prompt-file", f->prompt_file, "read the prompt from a file");
  prompt->excludes(file);
  file->excludes(prompt);
  app.add_option("--max-tokens", f->max_tokens, "tokens to generate")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddCtxFlag(app, f->ctx, "prompt and continuation together (default: the model's context)");
  AddTempFlag(app, f->sampling.temperature, "the continuation");
  app.add_option("--top-k", f->sampling.top_k, "keep the k most likely tokens (0 = off)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", f->sampling.top_p, "nucleus sampling mass (1 = off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", f->sampling.min_p, "drop tokens below min-p x top probability (0 = off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  AddSeedFlag(app, f->sampling.seed, "the continuation (with --temp > 0)");
  app.add_flag("--ignore-eos", f->ignore_eos, "keep generating after the end-of-sequence token");
  return [f] {
    if (f->prompt.empty() && f->prompt_file.empty()) {
      return ReportError(BadInput("generate needs --prompt or --prompt-file; hint: kvaudit generate --help"));
    }
    return RunGenerate(*f);
  };
}

}  // namespace kvaudit::cli
