// kvaudit reference: a baseline computed once and frozen as its top-k log-probabilities per scored
// position, for `kvaudit eval --reference FILE` (eval/reference_job.h; docs/endpoints.md "A frozen
// reference").
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/endpoint_flags.h"
#include "cli/flags.h"
#include "eval/reference_job.h"

namespace kvaudit::cli {
namespace {

struct ReferenceFlags {
  ModelFlags model;
  EvalOptions options;
};

}  // namespace

CommandRunner AddReferenceCommand(CLI::App& app) {
  auto f = std::make_shared<ReferenceFlags>();
  EvalOptions& o = f->options;
  o.out = "";
  f->model.Add(app);
  AddKvCompareFlags(app, o.kv);
  AddEndpointFlags(app, o.remote);
  app.add_option("--top-logprobs", o.top_logprobs,
                 "top logprobs stored per position (>= 5; default 100, or 20 for a baseline server with a cap)");
  AddDataFlag(app, o.data, "the text the reference covers");
  app.add_flag("--per-doc", o.per_doc, "one document per window (truncated to --ctx) instead of one joined stream");
  AddCtxFlag(app, o.ctx, "the window length (default: the model's context, at most 4096)");
  AddWindowFlags(app, o.windows, o.first_window);
  app.add_option("--score-from", o.score_from, "store only positions >= this in each window (llama.cpp: ctx/2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", o.out, "the reference file to write, e.g. f16.kvref")->required();
  return [f] {
    EvalOptions& opt = f->options;
    if (Status s = ResolveJobInputs(f->model, opt.data, &opt.model, &opt.threads, &opt.data); !s.ok())
      return ReportError(s.error());
    auto done = MakeReference(opt);
    if (!done) return ReportError(done.error());
    std::printf("reference: %s, baseline %s, %d windows, %lld positions, top %d, %llu bytes (%.0f bytes/position)\n",
                done->path.c_str(), done->baseline.c_str(), done->windows, static_cast<long long>(done->positions),
                done->top_k, static_cast<unsigned long long>(done->bytes),
                done->positions ? static_cast<double>(done->bytes) / static_cast<double>(done->positions) : 0.0);
    return 0;
  };
}

}  // namespace kvaudit::cli
