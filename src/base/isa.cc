// Run-time choice of the kernel path (base/isa.h). __builtin_cpu_supports reads CPUID through
// libgcc, which also checks XGETBV that the OS saves the AVX / AVX-512 register state: a CPU whose
// kernel disabled AVX-512 reports it missing.
#include "base/isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "base/status.h"

namespace kvaudit {
namespace {

struct Feature {
  const char* name;
  bool (*present)();
};

// F16C from CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c"); the OS
// state check is AVX's, which the "avx2" entry already requires.
bool F16cPresent() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
#else
  return false;
#endif
}

#if defined(__x86_64__) || defined(__i386__)
#define KVAUDIT_CPU_FEATURE(name)                          \
  Feature {                                                \
    name, [] { return __builtin_cpu_supports(name) != 0; } \
  }
#else
#define KVAUDIT_CPU_FEATURE(name) \
  Feature {                       \
    name, [] { return false; }    \
  }
#endif

// What each path's kernels are compiled with (base/isa_passes.h: the target strings name the same
// features; BMI/LZCNT/POPCNT come with every AVX2 CPU).
const Feature kAvx2Features[] = {KVAUDIT_CPU_FEATURE("avx2"),  KVAUDIT_CPU_FEATURE("fma"),
                                 Feature{"f16c", F16cPresent}, KVAUDIT_CPU_FEATURE("bmi"),
                                 KVAUDIT_CPU_FEATURE("bmi2"),  KVAUDIT_CPU_FEATURE("popcnt")};
const Feature kAvx512Features[] = {KVAUDIT_CPU_FEATURE("avx512f"), KVAUDIT_CPU_FEATURE("avx512bw"),
                                   KVAUDIT_CPU_FEATURE("avx512vl"), KVAUDIT_CPU_FEATURE("avx512dq"),
                                   KVAUDIT_CPU_FEATURE("avx512vnni")};

template <size_t N>
void AppendMissing(const Feature (&features)[N], std::string& out) {
  for (const Feature& f : features) {
    if (f.present()) continue;
    if (!out.empty()) out += ", ";
    out += f.name;
  }
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kPortable: return "portable";
  }
  return "portable";
}

std::optional<Isa> ParseIsa(std::string_view name) {
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return std::nullopt;
}

std::string MissingFeatures(Isa isa) {
  std::string missing;
  if (isa >= Isa::kAvx2) AppendMissing(kAvx2Features, missing);
  if (isa >= Isa::kAvx512) AppendMissing(kAvx512Features, missing);
  return missing;
}

bool IsaSupported(Isa isa) { return MissingFeatures(isa).empty(); }

Isa BestSupportedIsa() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (IsaSupported(isa)) return isa;
  }
  return Isa::kPortable;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

Expected<Isa> IsaFromEnvironment() {
  const char* env = std::getenv("KVAUDIT_ISA");
  if (env == nullptr || env[0] == '\0') return BestSupportedIsa();
  const std::optional<Isa> isa = ParseIsa(env);
  if (!isa) {
    return BadInput(std::string("KVAUDIT_ISA=") + env +
                    ": unknown kernel path; hint: use avx512, avx2 or portable, or unset it to pick the CPU's best");
  }
  const std::string missing = MissingFeatures(*isa);
  if (!missing.empty()) {
    return BadInput(std::string("KVAUDIT_ISA=") + env + ": this CPU lacks " + missing + "; hint: use " +
                    IsaName(BestSupportedIsa()) + " or a lower path, or unset KVAUDIT_ISA");
  }
  return *isa;
}

namespace detail {
Isa ChooseActiveIsa() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const int v = g_active_isa.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<Isa>(v);
  Expected<Isa> isa = IsaFromEnvironment();
  if (!isa) {
    std::fprintf(stderr, "kvaudit: error: %s\n", isa.error().message.c_str());
    std::exit(2);
  }
  g_active_isa.store(static_cast<int>(*isa), std::memory_order_relaxed);
  return *isa;
}
}  // namespace detail

Status InitActiveIsa() {
  if (detail::g_active_isa.load(std::memory_order_relaxed) >= 0) return Status::Ok();
  Expected<Isa> isa = IsaFromEnvironment();
  if (!isa) return isa.error();
  detail::g_active_isa.store(static_cast<int>(*isa), std::memory_order_relaxed);
  return Status::Ok();
}

void ForceIsaForTesting(Isa isa) {
  KV_CHECK_MSG(IsaSupported(isa), "ForceIsaForTesting: this CPU lacks the path");
  detail::g_active_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace kvaudit
