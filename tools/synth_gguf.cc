#include "synth_gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/gguf_writer.h"
#include "synth_write.h"

namespace kvaudit::synth {
namespace {

constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION (ggml.h), written by converter and quantizer

// Qwen3MoeModel / Gemma3Model / GptOssModel.set_gguf_parameters (convert_hf_to_gguf.py): experts,
// window, the local layers' RoPE base, RoPE scaling.
void AddArchKeys(const Shape& s, const std::string& arch, GgufMetaWriter& m) {
  if (s.n_experts > 0) {
    m.U32(arch + ".expert_count", static_cast<uint32_t>(s.n_experts));
    m.U32(arch + ".expert_used_count", static_cast<uint32_t>(s.n_experts_used));
    m.U32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(s.expert_ff));
  }
  if (s.sliding_window > 0) m.U32(arch + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  if (s.arch == SynthArch::kGemma3) {
    m.F32(arch + ".rope.freq_base_swa", static_cast<float>(s.rope_local_theta));
    m.Str(arch + ".rope.scaling.type", "linear");
    m.F32(arch + ".rope.scaling.factor", static_cast<float>(s.rope_factor));
  }
  if (s.arch == SynthArch::kGptOss) {
    m.Str(arch + ".rope.scaling.type", "yarn");
    m.F32(arch + ".rope.scaling.factor", static_cast<float>(s.rope_factor));
    m.U32(arch + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.rope_original_ctx));
  }
}

// llama.cpp checks token_embd against the vocabulary (llama-model.cpp check_tensor_dims: {n_embd,
// n_vocab}, n_vocab = the token list's length), so a vocabulary smaller than the shape's is padded
// as convert_hf_to_gguf.py pads a model's own (get_vocab_base: "[PAD{i}]", token type UNUSED = 5,
// and score 0 where the vocabulary has scores).
GgufValue PaddedToVocab(const std::string& key, GgufValue v, int64_t vocab) {
  if (v.type != GgufType::kArray) return v;
  if (key == "tokenizer.ggml.tokens") {
    for (int64_t i = static_cast<int64_t>(v.strings.size()); i < vocab; ++i)
      v.strings.push_back("[PAD" + std::to_string(i) + "]");
  } else if (key == "tokenizer.ggml.token_type") {
    v.ints.resize(std::max<size_t>(v.ints.size(), static_cast<size_t>(vocab)), 5);
  } else if (key == "tokenizer.ggml.scores") {
    v.floats.resize(std::max<size_t>(v.floats.size(), static_cast<size_t>(vocab)), 0.0);
  }
  return v;
}

}  // namespace

Expected<GgufLayout> LayOutGguf(const Shape& s, FileType t, const std::vector<TensorPlan>& plan,
                                const GgufFile& vocab) {
  // Keys in convert_hf_to_gguf.py's order (general.*, then the model's set_gguf_parameters).
  GgufMetaWriter m;
  const std::string arch = SynthArchName(s.arch);
  m.Str("general.architecture", arch);
  m.Str("general.type", "model");
  m.Str("general.name", "kvaudit synthetic " + std::string(s.name) + " (random weights)");
  m.U32("general.alignment", static_cast<uint32_t>(kGgufAlignment));
  m.U32(arch + ".block_count", static_cast<uint32_t>(s.n_layers));
  m.U32(arch + ".context_length", static_cast<uint32_t>(s.max_ctx));
  m.U32(arch + ".embedding_length", static_cast<uint32_t>(s.d_model));
  m.U32(arch + ".feed_forward_length", static_cast<uint32_t>(s.d_ff));
  m.U32(arch + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  m.U32(arch + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  m.F32(arch + ".rope.freq_base", static_cast<float>(s.rope_theta));
  m.F32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  m.U32(arch + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  m.U32(arch + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  m.U32("general.file_type", LlamaFtype(t));
  if (s.arch == SynthArch::kLlama) {
    m.U32("llama.vocab_size", static_cast<uint32_t>(s.vocab));
    m.U32("llama.rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  }
  AddArchKeys(s, arch, m);
  int n_tokenizer = 0;
  for (const auto& [key, value] : vocab.metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    KV_RETURN_IF_ERROR(m.Copy(key, PaddedToVocab(key, value, s.vocab)));
    ++n_tokenizer;
  }
  if (n_tokenizer == 0) {
    return BadInput(
        vocab.label() +
        ": no tokenizer.* keys; hint: pass a vocabulary GGUF from llama.cpp (models/ggml-vocab-llama-bpe.gguf)");
  }
  m.U32("general.quantization_version", kQuantizationVersion);

  std::vector<GgufTensorInfo> infos;
  for (const TensorPlan& tp : plan) infos.push_back({tp.gguf_name, tp.shape, GgmlTypeId(tp.type), tp.bytes()});
  GgufHeader h = LayOutGgufHeader(m, infos, kGgufAlignment);
  GgufLayout l;
  l.head = std::move(h.bytes);
  l.offsets = std::move(h.offsets);
  l.file_bytes = l.head.size() + h.data_bytes;
  return l;
}

Status WriteGguf(const std::string& path, const GgufLayout& layout, const Shape& s, const std::vector<TensorPlan>& plan,
                 uint64_t seed) {
  const std::string partial = path + ".partial";
  KV_ASSIGN_OR_RETURN(OutFile out, OutFile::Create(partial));
  KV_RETURN_IF_ERROR(out.Write(layout.head.data(), layout.head.size()));
  for (size_t i = 0; i < plan.size(); ++i) {
    KV_CHECK(out.pos() == layout.head.size() + layout.offsets[i]);
    KV_RETURN_IF_ERROR(WriteTensorData(plan[i], s, seed, i, out));
    KV_RETURN_IF_ERROR(out.PadTo(kGgufAlignment));
  }
  KV_CHECK(out.pos() == layout.file_bytes);
  KV_RETURN_IF_ERROR(out.Close());
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec)
    return Internal(path + ": cannot rename " + partial + ": " + ec.message() +
                    "; hint: check --out's folder is writable");
  return Status::Ok();
}

}  // namespace kvaudit::synth
