// Writing GGUF v3 metadata (ggml-org/ggml docs/gguf.md "Standardized key-value pairs"): the
// key/value section of a header, little-endian, counted, for the tools and tests that write GGUF
// files (kvaudit-synth-model; the goldens' variants in tests/support/gguf_rewrite.h).
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace kvaudit
