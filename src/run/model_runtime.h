// The loaded model and the worker pool a job computes with (score, generate, eval, probe and the
// commands after them), and the checks every job makes of the model before anything runs: that it
// has a tokenizer when the job reads text, and that a requested context length fits it.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/config.h"
#include "model/model.h"

namespace kvaudit {

struct ModelRuntime {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;

  // model_path: a Hugging Face directory or a .gguf file; threads: 0 = all hardware threads.
  // weights = false: Model::LoadForTokenizing (a job whose every configuration is remote).
  static Expected<ModelRuntime> Load(const std::string& model_path, int threads, bool weights = true);
  // The tokenizer, or BadInput naming the model and the job that needs one ("eval").
  Expected<const Tokenizer*> RequireTokenizer(const std::string& job) const;
};

// Worker threads: 0 means all hardware threads.
int ResolveThreads(int requested);

// The context length of a job (--ctx): 0 takes `fallback`; a value below `min_ctx` or above the
// model's context is BadInput with a hint. Positions past the trained context are refused
// everywhere: the RoPE table would extend, but the model was never measured there.
Expected<int> ResolveContext(int requested, const ModelConfig& config, int fallback, int min_ctx);

}  // namespace kvaudit
