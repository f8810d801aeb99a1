// What a TensorStore factory needs to build the store of one tensor of one (layer, KV head).
#pragma once

#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "model/config.h"
#include "ops/rope.h"

namespace kvaudit {

struct StoreSpec {
  int layer = 0;
  int kv_head = 0;
  bool is_key = true;  // K (dot with queries) or V (weighted sums)
  HeadConfig head;     // the configuration resolved for this (layer, head); head.k / head.v is this tensor's format
  int head_dim = 0;
  int max_positions = 0;                 // the hard limit; storage follows Append / Reserve (kv/store/chunked_rows.h)
  const KvCalibration* calib = nullptr;  // null when the configuration needs none
  const CheckpointKvScales* ckpt_scales = nullptr;  // the model's k_scale/v_scale tensors (scale=ckpt)
  const RopeTable* rope = nullptr;                  // for pre-RoPE keys: RoPE applied after dequantization
                                                    // (the cache keeps it covering the positions it holds)

  KvFormat format() const { return is_key ? head.k : head.v; }
};

}  // namespace kvaudit
