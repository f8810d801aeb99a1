// Streaming output for kvaudit-synth-model: a file written through one buffer (a real-size model
// is GBs: never held in memory), and a tensor's bytes generated chunk by chunk straight into it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "synth_plan.h"

namespace kvaudit::synth {

class OutFile {
 public:
  static Expected<OutFile> Create(const std::string& path);
  Status Write(const void* data, size_t n);
  Status PadTo(uint64_t alignment);  // zero bytes up to the next multiple of alignment
  Status Close();                    // flushes; the file is complete only when this succeeds
  uint64_t pos() const { return pos_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  Status Flush();
  std::unique_ptr<std::FILE, Closer> f_;
  std::string path_;
  std::vector<uint8_t> buf_;
  size_t used_ = 0;
  uint64_t pos_ = 0;
};

// Tensor `index` of a plan: random weights from Rng(seed, index) (the same seed gives the same
// bytes, whatever else the file holds), 1.0 for norms, the llama3 divisors for rope_freqs.
Status WriteTensorData(const TensorPlan& t, const Shape& s, uint64_t seed, size_t index, OutFile& out);

}  // namespace kvaudit::synth
