// kvaudit-synth-model: writes a random-weight model with the exact shapes and tensor types of a
// real one (a GGUF as llama.cpp's quantizer would make it, or a Hugging Face safetensors folder),
// so memory and speed can be measured without downloading weights. Random weights: every output
// of the model is meaningless. docs/synthetic-models.md.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "io/gguf.h"
#include "synth_gguf.h"
#include "synth_plan.h"
#include "synth_safetensors.h"

namespace kvaudit::synth {
namespace {

constexpr const char* kTool = "kvaudit-synth-model";

struct Args {
  std::string shape, type, vocab, out;
  std::string format = "gguf";
  uint64_t seed = 1;
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  bool dry_run = false;
  bool help = false;
};

std::string Usage() {
  return std::string("usage: ") + kTool + " --shape " + ShapeNames() +
         " --type q4_k_m|q8_0|f16|bf16 --vocab VOCAB.gguf --out PATH\n"
         "       [--seed 1] [--dry-run] [--format gguf|safetensors] [--max-shard-bytes 5000000000]\n"
         "\n"
         "Writes a model with the shapes of a real one (its config.json) and RANDOM WEIGHTS: its size, memory\n"
         "and speed are those of the real model; its outputs (perplexity, generations, probes) are meaningless.\n"
         "\n"
         "  --shape     llama-3.2-1b, llama-3.1-8b, qwen3-30b-a3b, gemma-3-12b, gpt-oss-20b, or the test sizes\n"
         "              tiny, tiny-qwen3moe, tiny-gemma3, tiny-gpt-oss (hidden 256, head_dim 64; GGUF only but tiny)\n"
         "  --type      the llama.cpp file type; each tensor gets the type llama-quantize would give it\n"
         "              (q4_k_m: Q6_K for output/tied embeddings and half the attn_v and ffn_down layers;\n"
         "              mxfp4_moe: experts MXFP4, other matrices Q8_0, as ggml-org publishes gpt-oss)\n"
         "  --vocab     a llama.cpp vocabulary GGUF (e.g. ggml-vocab-llama-bpe.gguf): its tokenizer.* keys are\n"
         "              copied (gguf), or turned into tokenizer.json (safetensors)\n"
         "  --out       the .gguf file, or the folder for --format safetensors\n"
         "  --seed      the weights' seed: the same seed writes the same bytes\n"
         "  --dry-run   print the tensor types and sizes, write nothing\n"
         "  --format    gguf (default) or safetensors (f16/bf16 only)\n"
         "  --max-shard-bytes  safetensors: the largest shard (default 5 GB, transformers' max_shard_size);\n"
         "              more than that is written as shards + model.safetensors.index.json\n";
}

int Fail(const std::string& what, const std::string& hint) {
  std::fprintf(stderr, "%s: %s; hint: %s\n", kTool, what.c_str(), hint.c_str());
  return 2;
}

int FailWith(const Error& e) {
  std::fprintf(stderr, "%s: %s\n", kTool, e.message.c_str());
  return e.exit_code();
}

// Flags as "--name value" or "--name=value". Returns false after printing the error.
bool ParseArgs(int argc, char** argv, Args* a, int* rc) {
  const std::string hint = "run " + std::string(kTool) + " --help";
  const std::map<std::string, std::string*> values = {{"--shape", &a->shape},
                                                      {"--type", &a->type},
                                                      {"--vocab", &a->vocab},
                                                      {"--out", &a->out},
                                                      {"--format", &a->format}};
  std::string seed, shard;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      a->help = true;
      continue;
    }
    if (flag == "--dry-run") {
      a->dry_run = true;
      continue;
    }
    std::string* dst = flag == "--seed" ? &seed : flag == "--max-shard-bytes" ? &shard : nullptr;
    if (auto it = values.find(flag); it != values.end()) dst = it->second;
    if (!dst) {
      *rc = Fail("unknown flag '" + flag + "'", hint);
      return false;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        *rc = Fail(flag + " needs a value", hint);
        return false;
      }
      value = argv[++i];
    }
    *dst = value;
  }
  if (a->help) return true;
  for (auto [flag, text, dst] :
       {std::tuple{"--seed", &seed, &a->seed}, std::tuple{"--max-shard-bytes", &shard, &a->max_shard_bytes}}) {
    if (text->empty()) continue;
    char* end = nullptr;
    errno = 0;
    *dst = std::strtoull(text->c_str(), &end, 10);
    if ((*text)[0] == '-' || *end != '\0' || errno != 0) {
      *rc = Fail(std::string(flag) + " '" + *text + "' is not a non-negative integer",
                 "pass e.g. " + std::string(flag) + " 1");
      return false;
    }
  }
  if (a->max_shard_bytes == 0) {
    *rc = Fail("--max-shard-bytes must be positive", "pass e.g. --max-shard-bytes 5000000000");
    return false;
  }
  if (a->shape.empty()) {
    *rc = Fail("--shape is required", "pass --shape " + ShapeNames());
    return false;
  }
  if (a->type.empty()) {
    *rc = Fail("--type is required", "pass --type q4_k_m|q8_0|f16|bf16");
    return false;
  }
  if (a->vocab.empty()) {
    *rc = Fail("--vocab is required", "pass a llama.cpp vocabulary GGUF, e.g. ggml-vocab-llama-bpe.gguf");
    return false;
  }
  if (a->out.empty() && !a->dry_run) {
    *rc = Fail("--out is required", "pass the file (or, for safetensors, folder) to write, or --dry-run");
    return false;
  }
  if (a->format != "gguf" && a->format != "safetensors") {
    *rc = Fail("--format '" + a->format + "' is unknown", "pass --format gguf or safetensors");
    return false;
  }
  return true;
}

std::string ShapeStr(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// "0-3,6,9" for sorted layer indices.
std::string Ranges(const std::vector<int>& v) {
  std::string r;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    r += (r.empty() ? "" : ",") + std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return r;
}

// The type mix, by role (which layers get which type), by type, and the totals.
void PrintPlan(const Args& a, const Shape& s, FileType ft, const std::vector<TensorPlan>& plan) {
  std::printf("%s: %s %s %s (random weights: sizes and speed are real, outputs are meaningless)\n", kTool,
              std::string(s.name).c_str(), FileTypeName(ft), a.format.c_str());
  std::printf("tensor types (llama.cpp llama_tensor_get_type for llama_ftype %u):\n", LlamaFtype(ft));
  std::vector<std::string> roles;
  std::map<std::string, std::map<std::string, std::vector<int>>> layers;  // role -> type -> layers
  std::map<std::string, std::string> shapes;
  for (const TensorPlan& t : plan) {
    if (!shapes.count(t.role)) roles.push_back(t.role);
    shapes[t.role] = ShapeStr(t.shape);
    layers[t.role][std::string(GetDTypeInfo(t.type).name)].push_back(t.layer);
  }
  for (const std::string& role : roles) {
    std::string line;
    for (const auto& [type, ls] : layers[role]) {
      line += "  " + type;
      if (ls[0] < 0) continue;
      line += static_cast<int>(ls.size()) == s.n_layers ? " all " + std::to_string(ls.size()) + " layers"
                                                        : " layers " + Ranges(ls);
    }
    std::printf("  %-12s %-16s%s\n", role.c_str(), shapes[role].c_str(), line.c_str());
  }
  struct Sum {
    int tensors = 0;
    uint64_t params = 0, bytes = 0;
  };
  std::map<std::string, Sum> by_type;
  Sum total;
  for (const TensorPlan& t : plan) {
    Sum& b = by_type[std::string(GetDTypeInfo(t.type).name)];
    for (Sum* x : {&b, &total}) {
      x->tensors += 1;
      x->params += t.role == "rope_freqs" ? 0 : t.numel();  // rope_freqs is not a weight
      x->bytes += t.bytes();
    }
  }
  std::printf("by type:\n");
  for (const auto& [type, b] : by_type) {
    std::printf("  %-5s %4d tensors %14llu params %14llu bytes\n", type.c_str(), b.tensors,
                static_cast<unsigned long long>(b.params), static_cast<unsigned long long>(b.bytes));
  }
  std::printf("tensors: %d  parameters: %llu  tensor bytes: %llu\n", total.tensors,
              static_cast<unsigned long long>(total.params), static_cast<unsigned long long>(total.bytes));
}

void PrintFileBytes(uint64_t bytes, const char* what) {
  std::printf("file bytes: %llu (%.3f GB, %.3f GiB; %s)\n", static_cast<unsigned long long>(bytes), bytes / 1e9,
              bytes / 1073741824.0, what);
}

int Run(int argc, char** argv) {
  Args a;
  int rc = 0;
  if (!ParseArgs(argc, argv, &a, &rc)) return rc;
  if (a.help) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  const Shape* shape = FindShape(a.shape);
  if (!shape) return Fail("unknown --shape '" + a.shape + "'", "pass --shape " + ShapeNames());
  FileType ft;
  if (!ParseFileType(a.type, &ft))
    return Fail("unknown --type '" + a.type + "'", "pass --type q4_k_m|q8_0|f16|bf16|mxfp4_moe");
  const bool gguf = a.format == "gguf";
  if (!gguf && shape->arch != SynthArch::kLlama) {
    return Fail("--format safetensors writes the Llama shapes only, not " + a.shape, "pass --format gguf");
  }
  if (ft == FileType::kQ4_K_M && shape->d_model % 256 != 0) {
    return Fail("--type q4_k_m needs rows of whole 256-element K-quant blocks; " + a.shape + "'s hidden size is " +
                    std::to_string(shape->d_model),
                "pass --type mxfp4_moe (as published) or q8_0");
  }
  if (ft == FileType::kMXFP4_MOE && shape->n_experts == 0) {
    return Fail("--type mxfp4_moe quantizes experts, and " + a.shape + " has none", "pass --type q4_k_m or q8_0");
  }
  if (!gguf && ft != FileType::kF16 && ft != FileType::kBF16) {
    return Fail("--format safetensors holds f16/bf16 weights, not " + a.type,
                "pass --type bf16 or f16, or --format gguf");
  }
  auto vocab = GgufFile::Open(a.vocab);
  if (!vocab) {  // the reader's message names the file and ends with its hint
    std::fprintf(stderr, "%s: --vocab %s\n", kTool, vocab.error().message.c_str());
    return 2;
  }
  if (const GgufValue* tokens = vocab->Find("tokenizer.ggml.tokens");
      !tokens || static_cast<int64_t>(tokens->strings.size()) > shape->vocab) {
    return Fail(a.vocab + ": " +
                    (tokens ? std::to_string(tokens->strings.size()) + " tokens, more than the model's vocabulary of " +
                                  std::to_string(shape->vocab)
                            : std::string("no tokenizer.ggml.tokens")),
                "pass the vocabulary of this model family (Llama-3: ggml-vocab-llama-bpe.gguf)");
  }

  const std::vector<TensorPlan> plan = PlanTensors(*shape, ft, gguf);
  PrintPlan(a, *shape, ft, plan);
  const auto start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  if (gguf) {
    auto layout = LayOutGguf(*shape, ft, plan, *vocab);
    if (!layout) return FailWith(layout.error());
    bytes = layout->file_bytes;
    PrintFileBytes(bytes, "the whole GGUF");
    if (a.dry_run) return 0;
    if (Status st = WriteGguf(a.out, *layout, *shape, plan, a.seed); !st) return FailWith(st.error());
  } else {
    const std::vector<SafetensorsShard> shards = LayOutSafetensors(plan, a.max_shard_bytes);
    for (const SafetensorsShard& sh : shards) {
      std::printf("  %s: %llu bytes, %zu tensors\n", sh.file.c_str(), static_cast<unsigned long long>(sh.file_bytes),
                  sh.tensors.size());
      bytes += sh.file_bytes;
    }
    PrintFileBytes(bytes, "the .safetensors files; config.json and tokenizer files not counted");
    if (a.dry_run) return 0;
    if (Status st = WriteSafetensorsDir(a.out, *shape, ft, plan, shards, *vocab, a.seed); !st)
      return FailWith(st.error());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %llu bytes in %.1f s (%.0f MB/s)\n", a.out.c_str(), static_cast<unsigned long long>(bytes), s,
              bytes / 1e6 / (s > 0 ? s : 1e-9));
  return 0;
}

}  // namespace
}  // namespace kvaudit::synth

int main(int argc, char** argv) { return kvaudit::synth::Run(argc, argv); }
