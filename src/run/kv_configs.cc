#include "run/kv_configs.h"

#include <algorithm>
#include <set>

#include "kv/calibrate.h"
#include "kv/make_cache.h"
#include "run/fingerprint.h"
#include "run/text_data.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

Expected<std::vector<CacheConfig>> ParseKvArguments(const KvConfigOptions& options) {
  std::vector<CacheConfig> out;  // [1 + n_configs], baseline first
  KV_ASSIGN_OR_RETURN(CacheConfig baseline, CacheConfig::FromArgument(options.baseline, options.baseline_flag));
  out.push_back(std::move(baseline));
  for (const std::string& arg : options.kv) {
    KV_ASSIGN_OR_RETURN(CacheConfig config, CacheConfig::FromArgument(arg, options.FlagOf(arg)));
    out.push_back(std::move(config));
  }
  return out;
}

Expected<KvConfigs> KvConfigs::Prepare(const Model& model, const KvConfigOptions& options, ThreadPool& pool) {
  KvConfigs c;
  c.model_ = &model;
  const bool have_calib = !options.kv_calib.empty();
  std::set<std::string> seen;
  for (size_t i = 0; i <= options.kv.size(); ++i) {
    const std::string& arg = i == 0 ? options.baseline : options.kv[i - 1];
    KV_ASSIGN_OR_RETURN(CacheConfig config,
                        CacheConfig::FromArgument(arg, i == 0 ? options.baseline_flag : options.FlagOf(arg)));
    KV_RETURN_IF_ERROR(config.Validate(model.config(), have_calib));
    if (i > 0 && !seen.insert(config.spec()).second) {
      return BadInput("--kv " + arg + " repeats configuration " + config.spec() +
                      "; hint: give each configuration once");
    }
    c.configs_.push_back(std::move(config));
  }
  if (have_calib) {
    KV_ASSIGN_OR_RETURN(std::vector<std::string> docs, LoadDocuments(options.kv_calib));
    const std::string text = JoinDocuments(docs);
    c.calib_path_ = options.kv_calib;
    c.calib_hash_ = HexHash(HashBytes(text.data(), text.size(), 7));
    const bool needed =
        std::any_of(c.configs_.begin(), c.configs_.end(), [](const CacheConfig& p) { return p.NeedsCalibration(); });
    if (needed) KV_RETURN_IF_ERROR(c.Calibrate(model, text, pool, options.context));
  }
  return c;
}

Status KvConfigs::Calibrate(const Model& model, const std::string& text, ThreadPool& pool, int context) {
  const Tokenizer* tok = model.tokenizer();
  if (!tok)
    return BadInput(calib_path_ +
                    ": calibration needs a model with a tokenizer; hint: drop --kv-calib and the calibrated settings");
  const std::vector<int32_t> ids = tok->Encode(text, tok->add_bos_default());
  KV_ASSIGN_OR_RETURN(KvCalibration calib,
                      CalibrateKv(model, ids, std::min(model.config().max_ctx, 4096), pool, context));
  calib_ = std::make_shared<const KvCalibration>(std::move(calib));
  return Status::Ok();
}

std::vector<std::string> KvConfigs::config_specs() const {
  std::vector<std::string> specs;
  for (size_t i = 1; i < configs_.size(); ++i) specs.push_back(configs_[i].spec());
  return specs;
}

Expected<std::unique_ptr<KvCache>> KvConfigs::MakeCache(size_t i, int max_positions, int reserve_positions) const {
  KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache,
                      kvaudit::MakeCache(model_->config(), configs_[i], calib_.get(), max_positions));
  KV_RETURN_IF_ERROR(cache->Reserve(reserve_positions < 0 ? max_positions : reserve_positions));
  return cache;
}

Expected<std::vector<std::unique_ptr<KvCache>>> KvConfigs::MakeCaches(int max_positions) const {
  std::vector<std::unique_ptr<KvCache>> caches;
  for (size_t i = 0; i < configs_.size(); ++i) {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, MakeCache(i, max_positions));
    caches.push_back(std::move(cache));
  }
  return caches;
}

nlohmann::json KvConfigs::Fingerprint() const {
  nlohmann::json fp = {{"baseline", configs_[0].spec()}, {"configs", config_specs()}};
  if (!calib_hash_.empty()) fp["calibration"] = calib_hash_;
  return fp;
}

Expected<BuiltCache> BuildCache(const Model& model, const std::string& spec, const std::string& calib_file,
                                int max_positions, ThreadPool& pool, int reserve_positions) {
  KvConfigOptions options;
  options.baseline = spec, options.baseline_flag = "--kv", options.kv_calib = calib_file;
  options.context = max_positions;
  KV_ASSIGN_OR_RETURN(KvConfigs configs, KvConfigs::Prepare(model, options, pool));
  BuiltCache built{configs.config(0), configs.calibration(), nullptr};
  KV_ASSIGN_OR_RETURN(built.cache, configs.MakeCache(0, max_positions, reserve_positions));
  return built;
}

}  // namespace kvaudit
