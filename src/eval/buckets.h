// Context-position buckets for the by-length tables. A position is counted as the number of
// tokens the prediction sees (context length = 0-based index of the predicting token + 1), so
// the default edges 1–16, 17–32, …, 2049–4096 line up with llama.cpp's scored half: positions
// ≥ 2048 (0-based) of a 4096-token window are exactly bucket 2049–4096.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

struct Bucket {
  int from = 1, to = 1;  // inclusive context lengths
};

// 1–16, 17–32, 33–64, … doubling, the last bucket ending at ctx (ctx ≥ 2).
std::vector<Bucket> DefaultBuckets(int ctx);

// "--buckets 16,64,256": ascending inclusive upper edges → 1–16, 17–64, 65–256, then 257–ctx if
// the edges stop short of ctx. Edges beyond ctx are an error (the bucket would be empty).
Expected<std::vector<Bucket>> ParseBuckets(const std::string& spec, int ctx);

// Index of the bucket holding context length `len`, or -1 when none does.
int BucketIndex(const std::vector<Bucket>& buckets, int len);

}  // namespace kvaudit
