#include "run/model_runtime.h"

#include <thread>

namespace kvaudit {

Expected<ModelRuntime> ModelRuntime::Load(const std::string& model_path, int threads, bool weights) {
  ModelRuntime e;
  KV_ASSIGN_OR_RETURN(e.model, weights ? Model::Load(model_path) : Model::LoadForTokenizing(model_path));
  e.pool = std::make_unique<ThreadPool>(ResolveThreads(threads));
  return e;
}

Expected<const Tokenizer*> ModelRuntime::RequireTokenizer(const std::string& job) const {
  if (const Tokenizer* tok = model->tokenizer()) return tok;
  return BadInput(model->path() + ": model has no tokenizer; hint: " + job +
                  " reads text, so it needs a model with tokenizer.json or a GGUF vocabulary");
}

int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

Expected<int> ResolveContext(int requested, const ModelConfig& config, int fallback, int min_ctx) {
  const int ctx = requested != 0 ? requested : fallback;
  if (ctx < min_ctx) {
    return BadInput("--ctx " + std::to_string(ctx) + " is below " + std::to_string(min_ctx) + "; hint: use --ctx " +
                    std::to_string(min_ctx) + " or more");
  }
  if (ctx > config.max_ctx) {
    return BadInput("--ctx " + std::to_string(ctx) + " exceeds the model's context length " +
                    std::to_string(config.max_ctx) + "; hint: use --ctx " + std::to_string(config.max_ctx) +
                    " or less (the model was not trained on longer contexts)");
  }
  return ctx;
}

}  // namespace kvaudit
