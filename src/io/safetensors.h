// Hugging Face safetensors: one file, or a sharded set described by model.safetensors.index.json.
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data block; offsets are relative to the data block. Every header field is validated:
// bad magic/length, non-JSON header, offsets beyond the file, overlapping tensors and
// dtype/shape/byte-count mismatches are errors naming the file and tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor_view.h"

namespace kvaudit {

class SafetensorsFile {
 public:
  static Expected<SafetensorsFile> Open(const std::string& path);
  // Same validation over bytes already in memory (used by the fuzz target); `label` names them
  // in messages. The bytes must outlive the object.
  static Expected<SafetensorsFile> Parse(const uint8_t* data, uint64_t size, const std::string& label);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* Find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  // Tensor data is NOT necessarily aligned (offsets are arbitrary): read it with memcpy or
  // DequantizeToF32, never through a reinterpret_cast<const float*>.

 private:
  std::shared_ptr<MappedFile> file_;  // null for Parse(): the caller owns the bytes
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory: model.safetensors, or the shards listed in
// model.safetensors.index.json (every shard must exist and hold the tensors the index assigns it).
class SafetensorsSet {
 public:
  static Expected<SafetensorsSet> OpenDir(const std::string& dir);
  // Not copyable: by_name_ points into files_.
  SafetensorsSet() = default;
  SafetensorsSet(const SafetensorsSet&) = delete;
  SafetensorsSet& operator=(const SafetensorsSet&) = delete;
  SafetensorsSet(SafetensorsSet&&) = default;
  SafetensorsSet& operator=(SafetensorsSet&&) = default;

  const TensorView* Find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const TensorView*> by_name_;
};

}  // namespace kvaudit
