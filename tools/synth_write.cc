#include "synth_write.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>

#include "synth_blocks.h"

namespace kvaudit::synth {
namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;     // one write() per 8 MiB
constexpr uint64_t kChunkBytes = uint64_t{8} << 20;  // tensor bytes generated at a time

Error IoFailed(const std::string& path, const std::string& what) {
  return Internal(path + ": " + what + ": " + std::strerror(errno) +
                  "; hint: check the disk has space and the folder is writable");
}

}  // namespace

Expected<OutFile> OutFile::Create(const std::string& path) {
  OutFile f;
  f.path_ = path;
  f.f_.reset(std::fopen(path.c_str(), "wb"));
  if (!f.f_) {
    return BadInput(path + ": cannot create: " + std::string(std::strerror(errno)) +
                    "; hint: check --out names a writable place");
  }
  f.buf_.resize(kBufferBytes);
  return f;
}

Status OutFile::Flush() {
  if (used_ > 0 && std::fwrite(buf_.data(), 1, used_, f_.get()) != used_) return IoFailed(path_, "write failed");
  used_ = 0;
  return Status::Ok();
}

Status OutFile::Write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  pos_ += n;
  while (n > 0) {
    if (used_ == buf_.size()) KV_RETURN_IF_ERROR(Flush());
    const size_t take = std::min(n, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
  }
  return Status::Ok();
}

Status OutFile::PadTo(uint64_t alignment) {
  static const uint8_t kZeros[256] = {};
  uint64_t n = (alignment - pos_ % alignment) % alignment;
  while (n > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, sizeof(kZeros)));
    KV_RETURN_IF_ERROR(Write(kZeros, take));
    n -= take;
  }
  return Status::Ok();
}

Status OutFile::Close() {
  KV_RETURN_IF_ERROR(Flush());
  std::FILE* f = f_.release();
  if (std::fclose(f) != 0) return IoFailed(path_, "close failed");
  return Status::Ok();
}

Status WriteTensorData(const TensorPlan& t, const Shape& s, uint64_t seed, size_t index, OutFile& out) {
  if (t.role == "rope_freqs") {
    const std::vector<float> divisors = RopeFreqDivisors(s);  // [head_dim/2] f32
    return out.Write(divisors.data(), divisors.size() * sizeof(float));
  }
  Rng rng(SplitMix64(seed) + static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull);
  if (t.bias || t.role == "attn_sinks" || t.role == "ffn_gate_inp") {
    // Biases and sinks 0; the router uniform with std kWeightStd, so that tokens spread over the
    // experts as in a trained model (a constant router would send every token to the same k).
    std::vector<float> v(t.numel(), 0.0f);  // [numel] f32
    if (t.role == "ffn_gate_inp" && !t.bias) {
      const double a = kWeightStd * std::sqrt(3.0);
      for (float& x : v) x = static_cast<float>((static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * 2 - 1) * a);
    }
    return out.Write(v.data(), v.size() * sizeof(float));
  }
  const uint64_t cols = static_cast<uint64_t>(t.shape.back());
  const uint64_t rows = t.numel() / cols;
  const uint64_t row_bytes = t.bytes() / rows;
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkBytes / row_bytes);
  std::vector<uint8_t> chunk(
      static_cast<size_t>(std::min(rows, rows_per_chunk) * row_bytes));  // [rows_per_chunk, row_bytes]
  for (uint64_t r = 0; r < rows; r += rows_per_chunk) {
    const uint64_t n_rows = std::min(rows_per_chunk, rows - r);
    FillRandom(t.type, n_rows * cols, rng, chunk.data());
    KV_RETURN_IF_ERROR(out.Write(chunk.data(), static_cast<size_t>(n_rows * row_bytes)));
  }
  return Status::Ok();
}

}  // namespace kvaudit::synth
