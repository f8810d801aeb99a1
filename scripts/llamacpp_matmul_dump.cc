// Dumps every weight matrix product llama.cpp's CPU backend computes while it runs a GGUF model:
// for each MUL_MAT node whose first operand is a weight tensor, the weight's name and ggml type,
// the f32 activation rows it was given and the f32 rows it produced. kvaudit's emulation of
// llama.cpp's weight arithmetic (engine=llama.cpp, src/ops/ggml/) is checked against these, product
// by product, on the same inputs (tests/golden/llamacpp_arithmetic_golden_test.cc). Built by
// scripts/build_llamacpp.sh against its static libraries, outside the repository; never built with
// kvaudit.
//
//   llamacpp_matmul_dump MODEL.gguf OUT.bin N_PREFILL N_DECODE
//
// The run: N_PREFILL ids (id i = 1 + (i·7919) mod (n_vocab − 1)) in ONE llama_decode with an output
// at every position (prefill: llama.cpp's batched kernels, tinyBLAS and the repacked gemm), then
// N_DECODE single-token decodes (the gemv / vec_dot kernels). llama.cpp's defaults otherwise: flash
// attention on, f16 cache, weight repacking on, 2 threads.
//
// OUT.bin, little-endian, one record per product in graph order:
//   u32 name_len, name bytes, u32 ggml_type (of the weight), i64 k (weight columns),
//   i64 m (weight rows), i64 n (activation rows), f32 x[n][k], f32 y[n][m]
// Any failure: one line on stderr, exit status 2.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "llamacpp_matmul_dump: %s\n", what.c_str());
  std::exit(2);
}

struct Dump {
  FILE* out = nullptr;
  int records = 0;
};

void put(FILE* f, const void* p, size_t bytes) {
  if (std::fwrite(p, 1, bytes, f) != bytes) fail("write failed");
}

// A product worth recording: a 2-D weight (named *.weight, in a model buffer) times contiguous f32
// activation rows.
bool is_weight_product(const ggml_tensor* t) {
  if (t->op != GGML_OP_MUL_MAT) return false;
  const ggml_tensor* w = t->src[0];
  const ggml_tensor* x = t->src[1];
  const std::string name = w->name;
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0 && w->ne[2] == 1 && w->ne[3] == 1 &&
         x->type == GGML_TYPE_F32 && ggml_is_contiguous(x) && x->ne[2] == 1 && x->ne[3] == 1 &&
         t->type == GGML_TYPE_F32 && ggml_is_contiguous(t);
}

bool observe(ggml_tensor* t, bool ask, void* user) {
  if (ask) return is_weight_product(t);
  if (!is_weight_product(t)) return true;
  Dump& d = *static_cast<Dump*>(user);
  const ggml_tensor* w = t->src[0];
  const ggml_tensor* x = t->src[1];
  const std::string name = w->name;
  const uint32_t name_len = static_cast<uint32_t>(name.size());
  const uint32_t type = static_cast<uint32_t>(w->type);
  const int64_t k = w->ne[0], m = w->ne[1], n = x->ne[1];
  std::vector<float> xs(static_cast<size_t>(n * k)), ys(static_cast<size_t>(n * m));
  ggml_backend_tensor_get(x, xs.data(), 0, xs.size() * sizeof(float));
  ggml_backend_tensor_get(t, ys.data(), 0, ys.size() * sizeof(float));
  put(d.out, &name_len, 4);
  put(d.out, name.data(), name_len);
  put(d.out, &type, 4);
  put(d.out, &k, 8);
  put(d.out, &m, 8);
  put(d.out, &n, 8);
  put(d.out, xs.data(), xs.size() * sizeof(float));
  put(d.out, ys.data(), ys.size() * sizeof(float));
  ++d.records;
  return true;
}

void decode(llama_context* ctx, const std::vector<llama_token>& tokens, int pos0) {
  const int n = static_cast<int>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = pos0 + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = true;
  }
  batch.n_tokens = n;
  const int32_t rc = llama_decode(ctx, batch);
  llama_batch_free(batch);
  if (rc != 0) fail("llama_decode returned " + std::to_string(rc));
}

long parse_count(const char* s, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v < 0 || v > 4096) fail(std::string("bad ") + what + " " + s);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) fail("usage: llamacpp_matmul_dump MODEL.gguf OUT.bin N_PREFILL N_DECODE");
  const long n_prefill = parse_count(argv[3], "N_PREFILL");
  const long n_decode = parse_count(argv[4], "N_DECODE");
  if (n_prefill < 2) fail("N_PREFILL must be at least 2 (one token is a decode)");

  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) fail(std::string("llama.cpp could not load ") + argv[1]);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  Dump dump;
  dump.out = std::fopen(argv[2], "wb");
  if (dump.out == nullptr) fail(std::string("cannot create ") + argv[2]);

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_prefill + n_decode + 256);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n_prefill);
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.cb_eval = observe;
  cp.cb_eval_user_data = &dump;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama_init_from_model failed");

  std::vector<llama_token> ids;
  for (long i = 0; i < n_prefill + n_decode; ++i)
    ids.push_back(static_cast<llama_token>(1 + (i * 7919) % (n_vocab - 1)));
  decode(ctx, std::vector<llama_token>(ids.begin(), ids.begin() + n_prefill), 0);
  for (long i = 0; i < n_decode; ++i) decode(ctx, {ids[n_prefill + i]}, static_cast<int>(n_prefill + i));

  if (std::fclose(dump.out) != 0) fail(std::string("cannot write ") + argv[2]);
  std::fprintf(stderr, "llamacpp_matmul_dump: %d products\n", dump.records);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return dump.records > 0 ? 0 : 2;
}
