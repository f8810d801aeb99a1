// llama.cpp's repacked q4_K product (ops/ggml/q4_k_repack.h) computed with a group's 8 weight rows
// in the 8 lanes of a register, as block_q4_Kx8 holds them: a row's integer sums never leave its
// lane, so no horizontal sums. The group is first packed into that layout (one pass over its rows),
// which pays for itself once the group meets enough activation rows (a prefill); a decode keeps
// Q4KGroupRows, which reads the rows as stored. The two give the same bits: each output's integer
// sums are exact in any order, and its f32 steps are the ones the header states, in its order.
#pragma once

#include <cstdint>

#include "ops/ggml/q4_k_repack.h"

namespace kvaudit::ggml {

// One packed super-block of a group of 8 rows, in bytes (the layout is in q4_k_lanes.cc). Packed
// blocks follow one another, so a multiple of 32 keeps every register load aligned to its size.
inline constexpr int64_t kQ4KLaneBlockBytes = 1472;

// Packs super-blocks [0, nb) of up to 8 q4_K rows (row l's blocks at rows[l], l < count; the lanes
// past count get zeros) into out [nb · kQ4KLaneBlockBytes]. A SIMD kernel of each kernel path (an
// 8 × 8 transpose of 4-byte words); the scalar twin writes the same bytes.
void PackQ4KLanes(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out);
void PackQ4KLanesScalar(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out);

// Q4KGroupRows (q4_k_repack.h) on a packed group: the same contract and the same bits. A SIMD
// kernel of each kernel path; the scalar twin reads the packed bytes one by one.
void Q4KLaneRows(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps, float* y,
                 int64_t ldy);
void Q4KLaneRowsScalar(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                       float* y, int64_t ldy);

}  // namespace kvaudit::ggml
