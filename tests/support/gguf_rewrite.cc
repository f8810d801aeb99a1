#include "support/gguf_rewrite.h"

#include <fstream>
#include <map>

#include "io/gguf_meta_writer.h"

namespace kvaudit::testing {

namespace {
struct OutTensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first, as TensorView
  const char* data = nullptr;
  uint64_t nbytes = 0;
};

template <class T>
void Put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
}  // namespace

Status RewriteGguf(const std::string& in, const std::string& out,
                   const std::vector<std::pair<std::string, GgufValue>>& keys,
                   const std::vector<AddedF32Tensor>& tensors) {
  KV_ASSIGN_OR_RETURN(GgufFile g, GgufFile::Open(in));
  GgufMetaWriter meta;
  std::map<std::string, GgufValue> replaced(keys.begin(), keys.end());
  for (const auto& [key, value] : g.metadata()) {
    const auto it = replaced.find(key);
    KV_RETURN_IF_ERROR(meta.Copy(key, it != replaced.end() ? it->second : value));
  }
  for (const auto& [key, value] : keys) {
    if (!g.Has(key)) KV_RETURN_IF_ERROR(meta.Copy(key, value));
  }
  std::vector<OutTensor> all;
  for (const TensorView& t : g.tensors()) {
    if (t.dtype != DType::kF32)
      return BadInput(in + ": tensor '" + t.name + "' is not f32; hint: RewriteGguf copies f32 files");
    all.push_back({t.name, t.shape, reinterpret_cast<const char*>(t.data), t.nbytes});
  }
  for (const AddedF32Tensor& t : tensors) {
    all.push_back({t.name,
                   {static_cast<int64_t>(t.data.size())},
                   reinterpret_cast<const char*>(t.data.data()),
                   t.data.size() * sizeof(float)});
  }
  const uint64_t align = g.alignment();
  std::string head = "GGUF";
  Put<uint32_t>(head, 3);
  Put<uint64_t>(head, all.size());
  Put<uint64_t>(head, meta.count());
  head += meta.bytes();
  uint64_t offset = 0;
  for (const OutTensor& t : all) {
    Put<uint64_t>(head, t.name.size());
    head += t.name;
    Put<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;)
      Put<uint64_t>(head, static_cast<uint64_t>(t.shape[d]));  // ne[0] innermost
    Put<uint32_t>(head, 0);                                    // GGML_TYPE_F32
    Put<uint64_t>(head, offset);
    offset += (t.nbytes + align - 1) / align * align;
  }
  head.append((align - head.size() % align) % align, '\0');
  std::ofstream f(out, std::ios::binary);
  f.write(head.data(), static_cast<std::streamsize>(head.size()));
  for (const OutTensor& t : all) {
    f.write(t.data, static_cast<std::streamsize>(t.nbytes));
    const std::string pad((align - t.nbytes % align) % align, '\0');
    f.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  }
  if (!f) return BadInput(out + ": cannot write; hint: check the directory");
  return Status::Ok();
}

}  // namespace kvaudit::testing
