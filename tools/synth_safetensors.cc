#include "synth_safetensors.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/gguf_pre_types.h"
#include "synth_write.h"

namespace kvaudit::synth {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// GGUF token types (llama.cpp enum llama_token_type): 1 normal, 3 control, 4 user defined.
constexpr int64_t kTokenNormal = 1, kTokenUserDefined = 4;

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return Internal(path.string() + ": write failed; hint: check the disk has space and --out is writable");
  return Status::Ok();
}

std::string ConfigJson(const Shape& s, FileType t, int64_t bos, int64_t eos) {
  // The keys of meta-llama's config.json (transformers LlamaConfig), as src/model/config.cc reads them.
  json j = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"hidden_act", "silu"},
      {"hidden_size", s.d_model},
      {"intermediate_size", s.d_ff},
      {"num_hidden_layers", s.n_layers},
      {"num_attention_heads", s.n_heads},
      {"num_key_value_heads", s.n_kv_heads},
      {"head_dim", s.head_dim},
      {"max_position_embeddings", s.max_ctx},
      {"rms_norm_eps", s.rms_eps},
      {"rope_theta", s.rope_theta},
      {"rope_scaling",
       {{"rope_type", "llama3"},
        {"factor", s.rope_factor},
        {"low_freq_factor", s.rope_low},
        {"high_freq_factor", s.rope_high},
        {"original_max_position_embeddings", s.rope_original_ctx}}},
      {"tie_word_embeddings", s.tied_embeddings},
      {"vocab_size", s.vocab},
      {"torch_dtype", t == FileType::kF16 ? "float16" : "bfloat16"},
      {"_kvaudit_synthetic",
       "random weights from kvaudit-synth-model: for memory and speed only, outputs are meaningless"},
  };
  if (bos >= 0) j["bos_token_id"] = bos;
  if (eos >= 0) j["eos_token_id"] = eos;
  return j.dump(2) + "\n";
}

struct TokenizerFiles {
  std::string tokenizer_json, tokenizer_config_json;
  int64_t bos = -1, eos = -1;
};

// tokenizer.json in the shape of Llama-3's: BPE model (vocab + merges), a Split per pre-tokenizer
// regex, then ByteLevel without its own regex; BOS added by a TemplateProcessing post-processor.
// src/tokenizer/hf_tokenizer_json.cc reads exactly these parts.
Expected<TokenizerFiles> BuildTokenizer(const GgufFile& v) {
  const std::string hint =
      "; hint: --format safetensors needs a byte-level BPE vocabulary (models/ggml-vocab-llama-bpe.gguf)";
  KV_ASSIGN_OR_RETURN(std::string model, v.GetString("tokenizer.ggml.model"));
  if (model != "gpt2") return BadInput(v.label() + ": tokenizer.ggml.model is '" + model + "', not 'gpt2'" + hint);
  std::string pre = "default";
  if (v.Has("tokenizer.ggml.pre")) {
    KV_ASSIGN_OR_RETURN(pre, v.GetString("tokenizer.ggml.pre"));
  }
  auto pre_type = LookupGgufPreType(pre);
  if (!pre_type) return BadInput(v.label() + ": " + pre_type.error().message);
  KV_ASSIGN_OR_RETURN(auto tokens, v.GetStringArray("tokenizer.ggml.tokens"));
  KV_ASSIGN_OR_RETURN(auto merges, v.GetStringArray("tokenizer.ggml.merges"));
  std::vector<int64_t> types(tokens.size(), kTokenNormal);
  if (v.Has("tokenizer.ggml.token_type")) {
    KV_ASSIGN_OR_RETURN(types, v.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != tokens.size()) return BadInput(v.label() + ": token_type and tokens differ in length" + hint);
  }
  TokenizerFiles out;
  if (v.Has("tokenizer.ggml.bos_token_id")) {
    KV_ASSIGN_OR_RETURN(out.bos, v.GetInt("tokenizer.ggml.bos_token_id"));
  }
  if (v.Has("tokenizer.ggml.eos_token_id")) {
    KV_ASSIGN_OR_RETURN(out.eos, v.GetInt("tokenizer.ggml.eos_token_id"));
  }
  bool add_bos = pre_type->add_bos;
  if (v.Has("tokenizer.ggml.add_bos_token")) {
    KV_ASSIGN_OR_RETURN(add_bos, v.GetBool("tokenizer.ggml.add_bos_token"));
  }
  auto token = [&](int64_t id) {
    return id >= 0 && id < static_cast<int64_t>(tokens.size()) ? tokens[id] : std::string();
  };

  json vocab = json::object(), added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (types[id] == kTokenNormal) {
      vocab[tokens[id]] = id;
    } else {
      added.push_back({{"id", id},
                       {"content", tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", types[id] != kTokenUserDefined}});
    }
  }
  json splits = json::array();
  for (const std::string& re : pre_type->regexes) {
    splits.push_back({{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
  }
  splits.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
  json post = nullptr;
  if (add_bos && !token(out.bos).empty()) {
    const std::string b = token(out.bos);
    post = {
        {"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair",
         {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", b}, {"type_id", 1}}}},
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{b, {{"id", b}, {"ids", {out.bos}}, {"tokens", {b}}}}}}};
  }
  const json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", splits}}},
      {"post_processor", post},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", pre_type->ignore_merges},
        {"vocab", vocab},
        {"merges", merges}}},
  };
  out.tokenizer_json = tok.dump() + "\n";
  json cfg = {{"tokenizer_class", "PreTrainedTokenizerFast"},
              {"model_max_length", 131072},
              {"clean_up_tokenization_spaces", true}};
  if (!token(out.bos).empty()) cfg["bos_token"] = token(out.bos);
  if (!token(out.eos).empty()) cfg["eos_token"] = token(out.eos);
  out.tokenizer_config_json = cfg.dump(2) + "\n";
  return out;
}

}  // namespace

std::vector<SafetensorsShard> LayOutSafetensors(const std::vector<TensorPlan>& plan, uint64_t max_shard_bytes) {
  // Greedy in plan order, as save_pretrained's shard split: a new shard when the next tensor would
  // take this one past the limit.
  std::vector<SafetensorsShard> shards(1);
  uint64_t bytes = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (bytes > 0 && bytes + plan[i].bytes() > max_shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().tensors.push_back(i);
    bytes += plan[i].bytes();
  }
  const size_t n = shards.size();
  for (size_t k = 0; k < n; ++k) {
    SafetensorsShard& sh = shards[k];
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", k + 1, n);
    sh.file = n == 1 ? "model.safetensors" : name;
    json h = {{"__metadata__", {{"format", "pt"}}}};
    uint64_t off = 0;
    for (size_t i : sh.tensors) {
      const TensorPlan& t = plan[i];
      h[t.hf_name] = {{"dtype", std::string(GetDTypeInfo(t.type).name)},
                      {"shape", t.shape},
                      {"data_offsets", {off, off + t.bytes()}}};
      off += t.bytes();
    }
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned (safetensors' own writer pads so)
    const uint64_t len = text.size();
    sh.head.assign(reinterpret_cast<const char*>(&len), 8);
    sh.head += text;
    sh.file_bytes = sh.head.size() + off;
  }
  return shards;
}

Status WriteSafetensorsDir(const std::string& dir, const Shape& s, FileType t, const std::vector<TensorPlan>& plan,
                           const std::vector<SafetensorsShard>& shards, const GgufFile& vocab, uint64_t seed) {
  KV_ASSIGN_OR_RETURN(TokenizerFiles tok, BuildTokenizer(vocab));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return BadInput(dir + ": cannot create the folder: " + ec.message() + "; hint: check --out names a writable place");
  const fs::path d(dir);
  KV_RETURN_IF_ERROR(WriteText(d / "config.json", ConfigJson(s, t, tok.bos, tok.eos)));
  KV_RETURN_IF_ERROR(WriteText(d / "tokenizer.json", tok.tokenizer_json));
  KV_RETURN_IF_ERROR(WriteText(d / "tokenizer_config.json", tok.tokenizer_config_json));
  if (shards.size() > 1) {
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    uint64_t total = 0;
    for (const SafetensorsShard& sh : shards) {
      for (size_t i : sh.tensors) {
        index["weight_map"][plan[i].hf_name] = sh.file;
        total += plan[i].bytes();
      }
    }
    index["metadata"]["total_size"] = total;
    KV_RETURN_IF_ERROR(WriteText(d / "model.safetensors.index.json", index.dump(2) + "\n"));
  }
  for (const SafetensorsShard& sh : shards) {
    const std::string path = (d / sh.file).string();
    KV_ASSIGN_OR_RETURN(OutFile out, OutFile::Create(path));
    KV_RETURN_IF_ERROR(out.Write(sh.head.data(), sh.head.size()));
    for (size_t i : sh.tensors) KV_RETURN_IF_ERROR(WriteTensorData(plan[i], s, seed, i, out));
    KV_CHECK(out.pos() == sh.file_bytes);
    KV_RETURN_IF_ERROR(out.Close());
  }
  return Status::Ok();
}

}  // namespace kvaudit::synth
