// Variants of a GGUF golden: the same file with metadata keys and 1-D f32 tensors added (e.g. a
// Phi-3 golden with LongRoPE factors), written in GGUF v3 as gguf-py does (tensor data aligned to
// general.alignment, every tensor padded after). Only files whose tensors are all f32 are copied.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"

namespace kvaudit::testing {

struct AddedF32Tensor {
  std::string name;
  std::vector<float> data;  // [n], one dimension
};

// The keys of `in` (sorted by name, as GgufFile keeps them; one named in `keys` takes that value),
// then the rest of `keys` in order; the tensors of `in` in file order, then `tensors`.
Status RewriteGguf(const std::string& in, const std::string& out,
                   const std::vector<std::pair<std::string, GgufValue>>& keys,
                   const std::vector<AddedF32Tensor>& tensors);

}  // namespace kvaudit::testing
