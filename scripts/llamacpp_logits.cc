// Dumps llama.cpp's own logits for a token sequence, with the run settings of the llama.cpp goldens
// ($KVAUDIT_FIXTURES/golden/llamacpp/README.md), through llama.cpp's public C API (include/llama.h).
// Built and run by scripts/llamacpp_longrope_golden.sh against the static libraries of
// scripts/build_llamacpp.sh; never built with kvaudit.
//
//   llamacpp_logits MODEL.gguf IDS.txt N_CTX OUT_LOGITS.f32 [GREEDY_OUT.txt]
//
// IDS.txt: token ids, whitespace-separated. OUT_LOGITS.f32: raw little-endian f32 [n][n_vocab], row i
// = the next-token logits after ids[0..i], all n ids decoded by ONE llama_decode (positions 0..n-1,
// sequence 0, an output at every position). GREEDY_OUT.txt: the memory is cleared, ids[0..15] are
// decoded as one batch, then 16 greedy tokens (argmax, lowest id on ties) one per llama_decode; line 1
// the 16 prompt ids, line 2 the 16 greedy ids. Any failure: one line on stderr, exit status 2.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

constexpr int kPrompt = 16;  // greedy: prompt length and number of generated tokens

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "llamacpp_logits: %s\n", what.c_str());
  std::exit(2);
}

// One llama_decode of tokens[0..n) at positions pos0.., sequence 0, an output at every position
// when all_outputs (else only the last, all a greedy step needs).
void decode(llama_context* ctx, const std::vector<llama_token>& tokens, int pos0, bool all_outputs, const char* what) {
  const int n = static_cast<int>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = pos0 + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = all_outputs || i == n - 1;
  }
  batch.n_tokens = n;
  const int32_t rc = llama_decode(ctx, batch);
  llama_batch_free(batch);
  // llama_decode: 0 = success, 1 = no KV slot, 2 = aborted, -1 = invalid batch, < -1 = error.
  if (rc != 0) fail(std::string("llama_decode (") + what + ") returned " + std::to_string(rc));
}

// The logits of output i of the last decode (llama_get_logits_ith returns NULL on a bad index).
const float* logits_at(llama_context* ctx, int i) {
  const float* row = llama_get_logits_ith(ctx, i);
  if (row == nullptr) fail("llama_get_logits_ith(" + std::to_string(i) + ") returned NULL");
  return row;
}

llama_token argmax(const float* row, int n_vocab) {
  int best = 0;
  for (int v = 1; v < n_vocab; ++v) {
    if (row[v] > row[best]) best = v;  // strict: the lowest id wins a tie
  }
  return best;
}

std::vector<llama_token> read_ids(const char* path, int n_vocab) {
  std::ifstream in(path);
  if (!in) fail(std::string("cannot open ") + path);
  std::vector<llama_token> ids;
  long long id = 0;
  while (in >> id) {
    if (id < 0 || id >= n_vocab) fail(std::string(path) + ": id " + std::to_string(id) + " outside the vocabulary");
    ids.push_back(static_cast<llama_token>(id));
  }
  if (!in.eof()) fail(std::string(path) + ": not a list of integers");
  if (ids.empty()) fail(std::string(path) + ": no ids");
  return ids;
}

void write_all(const char* path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) fail(std::string("cannot create ") + path);
  const bool ok = std::fwrite(data, 1, bytes, f) == bytes;
  if (std::fclose(f) != 0 || !ok) fail(std::string("cannot write ") + path);
}

std::string join(const std::vector<llama_token>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fail("usage: llamacpp_logits MODEL.gguf IDS.txt N_CTX OUT_LOGITS.f32 [GREEDY_OUT.txt]");
  }
  char* end = nullptr;
  const long n_ctx = std::strtol(argv[3], &end, 10);
  if (*end != '\0' || n_ctx <= 0 || n_ctx > 1 << 20) fail(std::string("bad N_CTX ") + argv[3]);

  // The static build registers the CPU backend itself (ggml-backend-reg.cpp); llama_backend_init
  // sets up ggml's tables.
  llama_backend_init();

  // Default model params, as the goldens (weight repacking on: it changes nothing for F32 weights).
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) fail(std::string("llama.cpp could not load ") + argv[1]);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const std::vector<llama_token> ids = read_ids(argv[2], n_vocab);
  const int n = static_cast<int>(ids.size());

  // The goldens' settings. llama-context.cpp pads n_ctx to a multiple of 256, and with one
  // sequence n_ctx_seq = n_ctx: that is what get_rope_factors (llama-model.cpp) compares with
  // the model's original context to pick the long or short rope factors.
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = 128;
  cp.n_ubatch = 128;
  cp.n_seq_max = 1;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;  // an f32 cache: no f16 rounding of K and V
  cp.type_v = GGML_TYPE_F32;
  // Flash attention on casts the f32 cache to f16 (llama-graph.cpp build_attn_mha): off.
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama_init_from_model failed");
  // n_batch is clamped to n_ctx (causal attention): all ids must still fit one decode.
  if (n > static_cast<int>(llama_n_batch(ctx))) {
    fail(std::to_string(n) + " ids do not fit one batch of " + std::to_string(llama_n_batch(ctx)));
  }

  std::fprintf(stderr, "llamacpp_logits: %d ids, n_ctx %u, n_ctx_seq %u\n", n, llama_n_ctx(ctx), llama_n_ctx_seq(ctx));

  decode(ctx, ids, 0, true, "all ids");
  std::vector<float> logits(static_cast<size_t>(n) * n_vocab);
  for (int i = 0; i < n; ++i) {
    std::memcpy(&logits[static_cast<size_t>(i) * n_vocab], logits_at(ctx, i), sizeof(float) * n_vocab);
  }
  write_all(argv[4], logits.data(), logits.size() * sizeof(float));  // x86/ARM: little-endian already

  if (argc == 6) {
    if (n < kPrompt) fail("greedy needs at least " + std::to_string(kPrompt) + " ids");
    if (n_ctx < 2 * kPrompt) fail("greedy needs N_CTX >= " + std::to_string(2 * kPrompt));
    llama_memory_t mem = llama_get_memory(ctx);
    if (mem == nullptr) fail("llama_get_memory returned NULL");
    llama_memory_clear(mem, true);
    const std::vector<llama_token> prompt(ids.begin(), ids.begin() + kPrompt);
    decode(ctx, prompt, 0, false, "greedy prompt");
    std::vector<llama_token> greedy;
    llama_token next = argmax(logits_at(ctx, -1), n_vocab);
    for (int step = 0; step < kPrompt; ++step) {
      greedy.push_back(next);
      if (step + 1 == kPrompt) break;  // the 16th token is not decoded
      decode(ctx, {next}, kPrompt + step, false, "greedy step");
      next = argmax(logits_at(ctx, -1), n_vocab);
    }
    const std::string text = join(prompt) + "\n" + join(greedy) + "\n";
    write_all(argv[5], text.data(), text.size());
  }

  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
