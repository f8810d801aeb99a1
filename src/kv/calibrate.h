// Calibration for the formats that need it (fp8 `calib` scales, outlier key channels).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kv/config/calibration.h"

namespace kvaudit {

class Model;

// Runs the model (f32 cache) over `tokens` in windows of at most `ctx` tokens and records the
// KvCalibration statistics. Error if tokens is empty. run_context: the context of the run the
// statistics are for (LongRoPE applies that run's factors: model/forward.h); 0 = ctx.
Expected<KvCalibration> CalibrateKv(const Model& model, const std::vector<int32_t>& tokens, int ctx, ThreadPool& pool,
                                    int run_context = 0);

}  // namespace kvaudit
