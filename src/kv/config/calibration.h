// Calibration statistics for formats that need them (fp8 `calib` scales, full-precision outlier
// key channels). Gathered by CalibrateKv (kv/calibrate.h); stores only read them.
#pragma once

#include <vector>

#include "base/status.h"

namespace kvaudit {

struct KvCalibration {
  int n_layers = 0, n_kv_heads = 0, head_dim = 0;
  int64_t tokens = 0;  // calibration tokens seen
  // max |x| over all calibration tokens and channels: [n_layers, n_kv_heads]
  std::vector<float> k_amax, v_amax;
  // max |k| per channel (keys after RoPE, and before RoPE for pre-RoPE formats):
  // [n_layers, n_kv_heads, head_dim]
  std::vector<float> k_channel_amax, k_pre_rope_channel_amax;

  float KAmax(int layer, int head) const { return k_amax[static_cast<size_t>(layer * n_kv_heads + head)]; }
  float VAmax(int layer, int head) const { return v_amax[static_cast<size_t>(layer * n_kv_heads + head)]; }
  // amax over all heads of a layer (per-layer scales, vLLM's per-tensor k_scale/v_scale)
  float KLayerAmax(int layer) const;
  float VLayerAmax(int layer) const;
  // The n channels of (layer, head) with the largest per-channel amax, ascending channel order.
  std::vector<int> TopKeyChannels(int layer, int head, int n, bool pre_rope) const;
};

}  // namespace kvaudit
