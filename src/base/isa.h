// Which kernel path runs: chosen once per process at run time from the CPU, so one binary runs on
// any x86-64 CPU (docs/architecture.md "Kernel paths"). Every SIMD kernel is compiled once per path
// (base/isa_passes.h) and its public entry point dispatches on ActiveIsa(). The canonical orders
// (ops/dot.h) are defined independently of the vector width, so every path gives the same bits.
//
// KVAUDIT_ISA=avx512|avx2|portable forces a path (tests run the suite on each; users compare
// paths or work around a CPU quirk); asking for a path this CPU lacks, or an unknown name, is a
// bad-input error (one line, exit 2).
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvaudit {

// Ordered: a path needs everything the ones below it need.
enum class Isa : int {
  kPortable = 0,  // x86-64 baseline (SSE2), scalar twins
  kAvx2 = 1,      // AVX2 + FMA + F16C (x86-64-v3: Haswell, Zen 1 and later)
  kAvx512 = 2,    // AVX-512 F/BW/VL/DQ + VNNI (Cascade Lake, Ice Lake, Sapphire Rapids, Zen 4 and later)
};

const char* IsaName(Isa isa);  // "avx512" | "avx2" | "portable"
std::optional<Isa> ParseIsa(std::string_view name);
Isa BestSupportedIsa();  // what this CPU (and OS: XSAVE state) can run
bool IsaSupported(Isa isa);
std::vector<Isa> SupportedIsas();  // ascending, always starts with kPortable
// The CPU features a path needs that this CPU lacks ("avx512vnni, avx512dq"); empty if none.
std::string MissingFeatures(Isa isa);

// The path from KVAUDIT_ISA (unset or empty: BestSupportedIsa()), or the error naming the bad value.
Expected<Isa> IsaFromEnvironment();

namespace detail {
inline std::atomic<int> g_active_isa{-1};  // -1: not chosen yet
Isa ChooseActiveIsa();                     // first use: IsaFromEnvironment(), or exit 2 with its message
}  // namespace detail

// The path every dispatched kernel takes. Chosen on first use; the CLI calls InitActiveIsa() first
// so a bad KVAUDIT_ISA is reported like any other bad input.
inline Isa ActiveIsa() {
  const int v = detail::g_active_isa.load(std::memory_order_relaxed);
  return v >= 0 ? static_cast<Isa>(v) : detail::ChooseActiveIsa();
}
Status InitActiveIsa();

// Tests (and benchmarks comparing paths): switch the path. The CPU must support it (checked).
// Not for use while other threads run kernels; codecs and stores made before keep their kernels.
void ForceIsaForTesting(Isa isa);

// Runs `body` once per path this CPU supports with that path active, then restores the previous one.
template <class Body>
void ForEachSupportedIsa(Body&& body) {
  const Isa saved = ActiveIsa();
  for (Isa isa : SupportedIsas()) {
    ForceIsaForTesting(isa);
    body(isa);
  }
  ForceIsaForTesting(saved);
}

}  // namespace kvaudit

// In a dispatching entry point: call `fn` of the active path's namespace (isa_avx512 / isa_avx2 /
// isa_portable, base/isa_passes.h) with the arguments and return its result.
#define KVAUDIT_DISPATCH(fn, ...)                                       \
  do {                                                                  \
    switch (::kvaudit::ActiveIsa()) {                                   \
      case ::kvaudit::Isa::kAvx512: return isa_avx512::fn(__VA_ARGS__); \
      case ::kvaudit::Isa::kAvx2: return isa_avx2::fn(__VA_ARGS__);     \
      case ::kvaudit::Isa::kPortable: break;                            \
    }                                                                   \
    return isa_portable::fn(__VA_ARGS__);                               \
  } while (0)

// Declares `decl` in each path's namespace: a kernel file's functions that kernels of the same path
// in other files call directly (unqualified from inside a pass, they are found before the
// dispatcher in kvaudit::), e.g. KVAUDIT_DECLARE_PER_PATH(float DotF32(const float*, const float*, int64_t);)
// inside namespace kvaudit.
#define KVAUDIT_DECLARE_PER_PATH(...) \
  namespace isa_avx512 {              \
  __VA_ARGS__                         \
  }                                   \
  namespace isa_avx2 {                \
  __VA_ARGS__                         \
  }                                   \
  namespace isa_portable {            \
  __VA_ARGS__                         \
  }
