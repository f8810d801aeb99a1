// The probe's work units (docs/scale-out.md), in the one order results list them:
// every instance, then every variance prompt, then every drift prompt; unit u is the u-th of
// that list. What `--shard I/N` splits and `kvaudit merge` puts back in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "probe/plan.h"

namespace kvaudit {

enum class ProbeUnitKind { kInstance, kVariance, kDrift };

struct ProbeUnitCounts {
  size_t instances = 0, variance = 0, drift = 0;
  size_t total() const { return instances + variance + drift; }
  ProbeUnitKind KindOf(size_t u) const {
    return u < instances              ? ProbeUnitKind::kInstance
           : u < instances + variance ? ProbeUnitKind::kVariance
                                      : ProbeUnitKind::kDrift;
  }
};

ProbeUnitCounts UnitCounts(const ProbePlan& plan);
std::string UnitId(const ProbePlan& plan, size_t u);

// [n_units] tokens each unit puts through every cache: (prompt + tokens generated) x
// (1 + configurations); a variance prompt counts once per sample.
std::vector<int64_t> UnitCosts(const ProbePlan& plan);

}  // namespace kvaudit
