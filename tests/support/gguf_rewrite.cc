#include "support/gguf_rewrite.h"

#include <fstream>
#include <map>

#include "io/gguf_writer.h"

namespace kvaudit::testing {

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
  std::vector<GgufTensorInfo> infos;
  std::vector<const void*> data;  // [tensors] each tensor's bytes
  for (const TensorView& t : g.tensors()) {
    if (t.dtype != DType::kF32)
      return BadInput(in + ": tensor '" + t.name + "' is not f32; hint: RewriteGguf copies f32 files");
    infos.push_back({t.name, t.shape, 0, t.nbytes});  // GGML_TYPE_F32
    data.push_back(t.data);
  }
  for (const AddedF32Tensor& t : tensors) {
    infos.push_back({t.name, {static_cast<int64_t>(t.data.size())}, 0, t.data.size() * sizeof(float)});
    data.push_back(t.data.data());
  }
  const uint64_t align = g.alignment();
  const GgufHeader h = LayOutGgufHeader(meta, infos, align);
  std::ofstream f(out, std::ios::binary);
  f.write(h.bytes.data(), static_cast<std::streamsize>(h.bytes.size()));
  for (size_t i = 0; i < infos.size(); ++i) {
    f.write(static_cast<const char*>(data[i]), static_cast<std::streamsize>(infos[i].nbytes));
    const std::string pad(GgufPadding(infos[i].nbytes, align), '\0');
    f.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  }
  if (!f) return BadInput(out + ": cannot write; hint: check the directory");
  return Status::Ok();
}

}  // namespace kvaudit::testing
