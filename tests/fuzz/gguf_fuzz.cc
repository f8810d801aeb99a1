// libFuzzer target: GgufFile::Parse on arbitrary bytes, then every getter on every key and a
// dequantization of every tensor. Any crash, sanitizer report or trap is a bug.
#include <cstddef>
#include <cstdint>

#include "fuzz_dequantize.h"
#include "io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = kvaudit::GgufFile::Parse(data, size, "fuzz.gguf");
  if (!g.ok()) return 0;
  for (const auto& [key, value] : g->metadata()) {
    (void)g->GetString(key);
    (void)g->GetInt(key);
    (void)g->GetFloat(key);
    (void)g->GetBool(key);
    (void)g->GetStringArray(key);
    (void)g->GetIntArray(key);
    (void)g->GetFloatArray(key);
  }
  kvaudit::FuzzDequantizeAll(g->tensors());
  for (const auto& t : g->tensors()) {
    if (g->FindTensor(t.name) == nullptr) __builtin_trap();
  }
  return 0;
}
