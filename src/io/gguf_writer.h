// Writing GGUF v3 headers (ggml-org/ggml docs/gguf.md): the key/value section, little-endian and
// counted, and the header around it with the tensor infos, for the tools and tests that write GGUF
// files (kvaudit-synth-model; the goldens' variants in tests/support/gguf_rewrite.h). The tensor
// data is the caller's: each tensor at its offset, padded to the alignment after (gguf-py's layout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"

namespace kvaudit {

class GgufMetaWriter {
 public:
  uint64_t count() const { return n_; }            // key/value pairs written
  const std::string& bytes() const { return b_; }  // their serialization, in order

  void U32(const std::string& key, uint32_t v);
  void F32(const std::string& key, float v);
  void Str(const std::string& key, const std::string& v);
  // A value read by io/gguf.h, written back with its own type (arrays with their element type).
  Status Copy(const std::string& key, const GgufValue& v);

 private:
  template <class T>
  void Raw(T v) {
    b_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void String(const std::string& s);
  void Key(const std::string& key, GgufType t);
  Status Scalar(const std::string& key, GgufType t, int64_t i, double f, const std::string& s);

  std::string b_;
  uint64_t n_ = 0;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // outermost first, as TensorView (written reversed: ne[0] innermost)
  uint32_t ggml_type = 0;      // ggml.h enum ggml_type (F32 = 0)
  uint64_t nbytes = 0;         // the tensor's data bytes, before padding
};

struct GgufHeader {
  std::string bytes;              // magic .. tensor infos, padded to the alignment
  std::vector<uint64_t> offsets;  // [tensors] each tensor's offset in the data section
  uint64_t data_bytes = 0;        // the data section, every tensor padded
};

// The header of a GGUF v3 file with `meta`'s keys and these tensors, in order.
GgufHeader LayOutGgufHeader(const GgufMetaWriter& meta, const std::vector<GgufTensorInfo>& tensors, uint64_t alignment);

// Zero bytes that pad n to a multiple of alignment.
inline uint64_t GgufPadding(uint64_t n, uint64_t alignment) { return (alignment - n % alignment) % alignment; }

}  // namespace kvaudit
