// GGUF v3 reader (spec: ggml-org/ggml:docs/gguf.md): header, typed metadata key/values (including arrays),
// tensor infos, aligned data section. Everything is bounds-checked; a malformed file is an error
// naming the file and the key or tensor at fault, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor_view.h"

namespace kvaudit {

// GGUF metadata value types (gguf.md: GGUF_TYPE_UINT8 = 0 ... GGUF_TYPE_FLOAT64 = 12).
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// u8..i64 (not bool, not float).
bool IsGgufIntType(GgufType t);

struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType elem_type = GgufType::kU8;  // for arrays
  // Scalars: integers in i/u, floats in f, bool in i (0/1), strings in s.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;
  // Arrays (nested arrays are rejected): numbers widened, strings kept.
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
};

// ggml tensor type ids (ggml/include/ggml.h enum ggml_type: F32 = 0, F16 = 1, Q4_0 = 2, ...
// BF16 = 30, MXFP4 = 39) to DType; nullopt where DType has no equivalent.
std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type);

// Tensor data is aligned to alignment() within the file (gguf.md); GGUF weights are rows of
// ne[0] = cols() elements, whole blocks per row: use DequantizeToF32 / DequantizeRowsToF32.
class GgufFile {
 public:
  static Expected<GgufFile> Open(const std::string& path);
  // Same parser over bytes in memory (fuzz target); bytes must outlive the object.
  static Expected<GgufFile> Parse(const uint8_t* data, uint64_t size, const std::string& label);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }  // general.alignment, default 32
  const std::string& label() const { return label_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(const std::string& name) const;

  bool Has(const std::string& key) const { return kv_.count(key) != 0; }
  const GgufValue* Find(const std::string& key) const;
  // Typed getters: error naming the key when missing or of the wrong type. GetInt accepts any
  // integer type (and bool), GetFloat any float or integer type.
  Expected<std::string> GetString(const std::string& key) const;
  Expected<int64_t> GetInt(const std::string& key) const;
  Expected<double> GetFloat(const std::string& key) const;
  Expected<bool> GetBool(const std::string& key) const;
  Expected<std::vector<std::string>> GetStringArray(const std::string& key) const;
  Expected<std::vector<int64_t>> GetIntArray(const std::string& key) const;
  Expected<std::vector<double>> GetFloatArray(const std::string& key) const;
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  // The mapping the tensors point into (null for Parse()): hold it to keep TensorView::data valid
  // after this object is gone (model/weights.cc reads matrices in place).
  std::shared_ptr<const MappedFile> mapping() const { return file_; }

 private:
  std::shared_ptr<MappedFile> file_;
  std::string label_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> kv_;
  std::vector<TensorView> tensors_;             // in file order
  std::map<std::string, size_t> tensor_index_;  // name -> position in tensors_
};

}  // namespace kvaudit
