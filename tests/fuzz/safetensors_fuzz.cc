// libFuzzer target: SafetensorsFile::Parse on arbitrary bytes, then a dequantization of every
// float tensor. Any crash, sanitizer report or trap is a bug.
#include <cstddef>
#include <cstdint>

#include "fuzz_dequantize.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto st = kvaudit::SafetensorsFile::Parse(data, size, "fuzz.safetensors");
  if (!st.ok()) return 0;
  kvaudit::FuzzDequantizeAll(st->tensors());
  for (const auto& t : st->tensors()) {
    if (st->Find(t.name) == nullptr) __builtin_trap();
  }
  return 0;
}
