#include "io/gguf_writer.h"

namespace kvaudit {

void GgufMetaWriter::U32(const std::string& key, uint32_t v) {
  Key(key, GgufType::kU32);
  Raw(v);
}

void GgufMetaWriter::F32(const std::string& key, float v) {
  Key(key, GgufType::kF32);
  Raw(v);
}

void GgufMetaWriter::Str(const std::string& key, const std::string& v) {
  Key(key, GgufType::kString);
  String(v);
}

Status GgufMetaWriter::Copy(const std::string& key, const GgufValue& v) {
  Key(key, v.type);
  if (v.type != GgufType::kArray) return Scalar(key, v.type, v.i, v.f, v.s);
  Raw(static_cast<uint32_t>(v.elem_type));
  const bool floats = v.elem_type == GgufType::kF32 || v.elem_type == GgufType::kF64;
  const size_t n = v.elem_type == GgufType::kString ? v.strings.size() : floats ? v.floats.size() : v.ints.size();
  Raw(static_cast<uint64_t>(n));
  for (size_t j = 0; j < n; ++j) {
    if (v.elem_type == GgufType::kString) {
      String(v.strings[j]);
    } else if (floats) {
      KV_RETURN_IF_ERROR(Scalar(key, v.elem_type, 0, v.floats[j], ""));
    } else {
      KV_RETURN_IF_ERROR(Scalar(key, v.elem_type, v.ints[j], 0, ""));
    }
  }
  return Status::Ok();
}

void GgufMetaWriter::String(const std::string& s) {
  Raw(static_cast<uint64_t>(s.size()));
  b_ += s;
}

void GgufMetaWriter::Key(const std::string& key, GgufType t) {
  ++n_;
  String(key);
  Raw(static_cast<uint32_t>(t));
}

Status GgufMetaWriter::Scalar(const std::string& key, GgufType t, int64_t i, double f, const std::string& s) {
  switch (t) {
    case GgufType::kU8: Raw(static_cast<uint8_t>(i)); break;
    case GgufType::kI8: Raw(static_cast<int8_t>(i)); break;
    case GgufType::kU16: Raw(static_cast<uint16_t>(i)); break;
    case GgufType::kI16: Raw(static_cast<int16_t>(i)); break;
    case GgufType::kU32: Raw(static_cast<uint32_t>(i)); break;
    case GgufType::kI32: Raw(static_cast<int32_t>(i)); break;
    case GgufType::kU64: Raw(static_cast<uint64_t>(i)); break;
    case GgufType::kI64: Raw(static_cast<int64_t>(i)); break;
    case GgufType::kBool: Raw(static_cast<uint8_t>(i != 0)); break;
    case GgufType::kF32: Raw(static_cast<float>(f)); break;
    case GgufType::kF64: Raw(f); break;
    case GgufType::kString: String(s); break;
    default:
      return BadInput("GGUF key '" + key +
                      "' has a value type that cannot be copied (a nested array); hint: pass a GGUF from llama.cpp");
  }
  return Status::Ok();
}

GgufHeader LayOutGgufHeader(const GgufMetaWriter& meta, const std::vector<GgufTensorInfo>& tensors,
                            uint64_t alignment) {
  GgufHeader h;
  auto raw = [&](const void* p, size_t n) { h.bytes.append(static_cast<const char*>(p), n); };
  auto u32 = [&](uint32_t v) { raw(&v, 4); };
  auto u64 = [&](uint64_t v) { raw(&v, 8); };
  raw("GGUF", 4);
  u32(3);
  u64(tensors.size());
  u64(meta.count());
  h.bytes += meta.bytes();
  for (const GgufTensorInfo& t : tensors) {
    u64(t.name.size());
    h.bytes += t.name;
    u32(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) u64(static_cast<uint64_t>(t.shape[d]));
    u32(t.ggml_type);
    u64(h.data_bytes);
    h.offsets.push_back(h.data_bytes);
    // Every tensor is padded after, the last one too (gguf-py GGUFWriter.write_tensors_to_file).
    h.data_bytes += t.nbytes + GgufPadding(t.nbytes, alignment);
  }
  h.bytes.append(GgufPadding(h.bytes.size(), alignment), '\0');
  return h;
}

}  // namespace kvaudit
