#include "kv/config/calibration.h"

#include <algorithm>
#include <numeric>

#include "base/status.h"

namespace kvaudit {

float KvCalibration::KLayerAmax(int layer) const {
  const auto* a = k_amax.data() + static_cast<size_t>(layer) * n_kv_heads;
  return *std::max_element(a, a + n_kv_heads);
}

float KvCalibration::VLayerAmax(int layer) const {
  const auto* a = v_amax.data() + static_cast<size_t>(layer) * n_kv_heads;
  return *std::max_element(a, a + n_kv_heads);
}

std::vector<int> KvCalibration::TopKeyChannels(int layer, int head, int n, bool pre_rope) const {
  KV_CHECK(n >= 0 && n <= head_dim && layer >= 0 && layer < n_layers && head >= 0 && head < n_kv_heads);
  const std::vector<float>& src = pre_rope ? k_pre_rope_channel_amax : k_channel_amax;
  const float* a = src.data() + (static_cast<size_t>(layer) * n_kv_heads + head) * head_dim;
  std::vector<int> idx(head_dim);
  std::iota(idx.begin(), idx.end(), 0);
  // Largest first; ties to the lower channel so the choice is deterministic.
  std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return a[x] > a[y]; });
  idx.resize(n);
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace kvaudit
