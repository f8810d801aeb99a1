// A loaded model: config, weights (ops/weight_matrix.h: in their stored type) and (when the files carry one) its
// tokenizer; or, loaded for tokenizing, the config and tokenizer alone (an audit whose every configuration is a remote
// server, docs/endpoints.md: nothing runs in-process, so no weight is read).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

class Model {
 public:
  // `path`: a Hugging Face model directory (config.json + model.safetensors or an indexed shard
  // set) or a .gguf file. Errors (exit 2) name the file and the key/tensor at fault.
  static Expected<std::unique_ptr<Model>> Load(const std::string& path, const WeightLoadOptions& options = {});
  // The config and the tokenizer, no tensor read: a directory needs only config.json (and
  // tokenizer.json for a tokenizer; no safetensors file); a .gguf is mapped and only its metadata
  // parsed. weights() of such a model is an internal check failure: nothing may compute with it.
  static Expected<std::unique_ptr<Model>> LoadForTokenizing(const std::string& path);

  const ModelConfig& config() const { return config_; }
  bool has_weights() const { return has_weights_; }
  const ModelWeights& weights() const {
    KV_CHECK_MSG(has_weights_, "the model was loaded for tokenizing only (Model::LoadForTokenizing): no weights");
    return weights_;
  }
  // nullptr when the model directory has no tokenizer.json (the tiny golden models).
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }  // "safetensors" or "gguf"

  // Multi-line summary for `kvaudit info`: format, architecture, shapes, stored dtypes, params, weight
  // memory. KV memory is not here: it depends on the layer kinds and the engine, and `info` prints it
  // from the per-layer memory model (decide/targets/kv_memory.h).
  std::string Describe() const;

 private:
  std::string path_, format_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  bool has_weights_ = false;

  static Expected<std::unique_ptr<Model>> LoadImpl(const std::string& path, bool weights,
                                                   const WeightLoadOptions& options);
};

// The config alone (config.json, or a GGUF file's metadata), and a checkpoint's k_scale/v_scale,
// without reading any weights: for commands that only need the shapes (`kvaudit deploy`). A
// directory may hold config.json alone. Errors as Model::Load's.
Expected<ModelConfig> LoadModelConfig(const std::string& path);

}  // namespace kvaudit
