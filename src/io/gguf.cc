// GGUF parsing. Layout (ggml-org/ggml:docs/gguf.md, GGUF v2/v3, little-endian):
//   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x { string key | u32 value_type | value }       string = u64 length + bytes
//   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to general.alignment (default 32) | tensor data (offsets relative to here)
#include "io/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace kvaudit {
namespace {

constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr const char* kGgufCorruptHint = "the file is truncated or corrupt; re-download or re-convert it";

// Bounds-checked little-endian reads over the whole file.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  template <class T>
  bool Read(T* v) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool ReadString(std::string* s) {
    uint64_t len;
    if (!Read(&len) || len > remaining()) return false;  // also rejects absurd lengths (no alloc)
    s->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

const char* TypeName(GgufType t) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "unknown";
}

// Bytes a scalar of type t occupies (strings: the minimum, an empty one).
uint64_t MinSize(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool: return 1;
    case GgufType::kU16:
    case GgufType::kI16: return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32: return 4;
    default: return 8;  // u64, i64, f64, string length
  }
}

template <class T>
bool ReadNum(Cursor* c, GgufValue* v) {
  T x;
  if (!c->Read(&x)) return false;
  if constexpr (std::is_floating_point_v<T>) {
    v->f = static_cast<double>(x);
  } else if constexpr (std::is_unsigned_v<T>) {
    v->u = x;
    v->i = static_cast<int64_t>(x);
  } else {
    v->i = x;
    v->u = static_cast<uint64_t>(x);
  }
  return true;
}

// One non-array value of type t into v (i/u/f/s).
bool ReadScalar(Cursor* c, GgufType t, GgufValue* v) {
  switch (t) {
    case GgufType::kU8: return ReadNum<uint8_t>(c, v);
    case GgufType::kI8: return ReadNum<int8_t>(c, v);
    case GgufType::kU16: return ReadNum<uint16_t>(c, v);
    case GgufType::kI16: return ReadNum<int16_t>(c, v);
    case GgufType::kU32: return ReadNum<uint32_t>(c, v);
    case GgufType::kI32: return ReadNum<int32_t>(c, v);
    case GgufType::kU64: return ReadNum<uint64_t>(c, v);
    case GgufType::kI64: return ReadNum<int64_t>(c, v);
    case GgufType::kF32: return ReadNum<float>(c, v);
    case GgufType::kF64: return ReadNum<double>(c, v);
    case GgufType::kBool: {
      uint8_t b;
      if (!c->Read(&b)) return false;
      v->i = v->u = (b != 0);
      return true;
    }
    case GgufType::kString: return c->ReadString(&v->s);
    default: return false;
  }
}

struct TensorInfo {
  uint64_t offset;
  size_t index;
};

class Parser {
 public:
  Parser(const uint8_t* data, uint64_t size, const std::string& label)
      : data_(data), size_(size), c_(data, size), label_(label) {}

  Error Fail(const std::string& what, const std::string& where, const char* hint = kGgufCorruptHint) const {
    return BadInput(label_ + ": " + what + (where.empty() ? "" : " (" + where + ")") + "; hint: " + hint);
  }
  static std::string Key(const std::string& k) { return "key '" + k + "'"; }
  static std::string Tensor(const std::string& t) { return "tensor '" + t + "'"; }

  Status Header(uint32_t* version, uint64_t* n_tensors, uint64_t* n_kv) {
    char magic[4];
    if (!c_.Read(&magic) || std::memcmp(magic, "GGUF", 4) != 0) {
      return Fail("not a GGUF file (magic is not \"GGUF\")", "", "pass a .gguf model file");
    }
    if (!c_.Read(version)) return Fail("truncated header", "");
    if (*version == 1) {
      return Fail("GGUF v1 is not supported", "", "re-convert the model with a current llama.cpp (writes v3)");
    }
    if (*version != 2 && *version != 3) {
      const bool swapped = (*version & 0xFFFFu) == 0;
      return Fail(
          "unsupported GGUF version " + std::to_string(*version), "",
          swapped ? "this looks like a big-endian GGUF; convert it to little-endian" : "kvaudit reads GGUF v2 and v3");
    }
    if (!c_.Read(n_tensors) || !c_.Read(n_kv)) return Fail("truncated header", "");
    return Status::Ok();
  }

  Status Metadata(uint64_t n_kv, std::map<std::string, GgufValue>* kv) {
    // Each pair takes at least 13 bytes (empty key, type, u8 value): caps absurd counts.
    if (n_kv > c_.remaining() / 13) {
      return Fail("metadata count " + std::to_string(n_kv) + " exceeds what the file can hold", "");
    }
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key;
      if (!c_.ReadString(&key)) return Fail("truncated metadata key #" + std::to_string(i), "");
      uint32_t type;
      if (!c_.Read(&type)) return Fail("truncated metadata value", Key(key));
      if (type > static_cast<uint32_t>(GgufType::kF64)) {
        return Fail("unknown metadata value type " + std::to_string(type), Key(key));
      }
      GgufValue v;
      v.type = static_cast<GgufType>(type);
      if (v.type == GgufType::kArray) {
        KV_RETURN_IF_ERROR(Array(key, &v));
      } else if (!ReadScalar(&c_, v.type, &v)) {
        return Fail("truncated " + std::string(TypeName(v.type)) + " value", Key(key));
      }
      if (!kv->emplace(key, std::move(v)).second) return Fail("duplicate metadata key", Key(key));
    }
    return Status::Ok();
  }

  Status Array(const std::string& key, GgufValue* v) {
    uint32_t elem;
    uint64_t count;
    if (!c_.Read(&elem) || !c_.Read(&count)) return Fail("truncated array header", Key(key));
    if (elem == static_cast<uint32_t>(GgufType::kArray)) return Fail("nested arrays are not supported", Key(key));
    if (elem > static_cast<uint32_t>(GgufType::kF64)) {
      return Fail("unknown array element type " + std::to_string(elem), Key(key));
    }
    v->elem_type = static_cast<GgufType>(elem);
    if (count > c_.remaining() / MinSize(v->elem_type)) {
      return Fail("array of " + std::to_string(count) + " elements exceeds the file", Key(key));
    }
    const bool is_float = v->elem_type == GgufType::kF32 || v->elem_type == GgufType::kF64;
    if (v->elem_type == GgufType::kString)
      v->strings.reserve(count);
    else if (is_float)
      v->floats.reserve(count);
    else
      v->ints.reserve(count);
    for (uint64_t j = 0; j < count; ++j) {
      GgufValue e;
      if (!ReadScalar(&c_, v->elem_type, &e)) {
        return Fail("truncated array element #" + std::to_string(j), Key(key));
      }
      if (v->elem_type == GgufType::kString)
        v->strings.push_back(std::move(e.s));
      else if (is_float)
        v->floats.push_back(e.f);
      else
        v->ints.push_back(e.i);
    }
    return Status::Ok();
  }

  Expected<uint64_t> Alignment(const std::map<std::string, GgufValue>& kv) {
    auto it = kv.find("general.alignment");
    if (it == kv.end()) return kDefaultAlignment;
    const GgufValue& v = it->second;
    const uint64_t a = static_cast<uint64_t>(v.i);
    if (!IsGgufIntType(v.type) || v.i <= 0 || (a & (a - 1)) != 0 || a > (uint64_t{1} << 30)) {
      return Fail("general.alignment must be a power of two (got " + std::to_string(v.i) + ")",
                  Key("general.alignment"));
    }
    return a;
  }

  Status TensorInfos(uint64_t n_tensors, std::vector<TensorView>* out, std::vector<TensorInfo>* infos,
                     std::map<std::string, size_t>* index) {
    // Each info takes at least 24 bytes (empty name, n_dims, type, offset).
    if (n_tensors > c_.remaining() / 24) {
      return Fail("tensor count " + std::to_string(n_tensors) + " exceeds what the file can hold", "");
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
      TensorView t;
      if (!c_.ReadString(&t.name)) return Fail("truncated tensor info #" + std::to_string(i), "");
      uint32_t n_dims;
      if (!c_.Read(&n_dims)) return Fail("truncated tensor info", Tensor(t.name));
      if (n_dims > kMaxDims) {
        return Fail("tensor has " + std::to_string(n_dims) + " dimensions (max 4)", Tensor(t.name));
      }
      uint64_t ne[kMaxDims] = {1, 1, 1, 1};
      // The product of the non-zero dims must fit in i64 even when another dim is 0: TensorView
      // multiplies the dims in a different order (found by gguf_fuzz, see docs/fuzzing.md).
      uint64_t nonzero = 1;
      bool any_zero = false;
      for (uint32_t d = 0; d < n_dims; ++d) {
        if (!c_.Read(&ne[d])) return Fail("truncated tensor info", Tensor(t.name));
        constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (ne[d] == 0) {
          any_zero = true;
          continue;
        }
        if (ne[d] > kMax || nonzero > kMax / ne[d]) return Fail("tensor element count overflows", Tensor(t.name));
        nonzero *= ne[d];
      }
      const uint64_t numel = any_zero ? 0 : nonzero;
      for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[d]));  // outermost first
      uint32_t type;
      uint64_t offset;
      if (!c_.Read(&type) || !c_.Read(&offset)) return Fail("truncated tensor info", Tensor(t.name));
      const auto dtype = DTypeFromGgmlType(type);
      if (!dtype) {
        return Fail("unsupported ggml type id " + std::to_string(type), Tensor(t.name),
                    "kvaudit reads F32, F16, BF16, F64, I8-I64, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K-Q6_K, IQ4_NL, "
                    "IQ4_XS, MXFP4; requantize with llama-quantize");
      }
      t.dtype = *dtype;
      const DTypeInfo& info = GetDTypeInfo(t.dtype);
      if (ne[0] % static_cast<uint64_t>(info.block_elems) != 0) {
        return Fail("row length ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " +
                        std::string(info.name) + " block size " + std::to_string(info.block_elems),
                    Tensor(t.name));
      }
      auto nbytes = ByteSize(t.dtype, static_cast<int64_t>(numel));
      if (!nbytes.ok()) return Fail(nbytes.error().message, Tensor(t.name));
      t.nbytes = *nbytes;
      if (!index->emplace(t.name, out->size()).second) return Fail("duplicate tensor name", Tensor(t.name));
      infos->push_back({offset, out->size()});
      out->push_back(std::move(t));
    }
    return Status::Ok();
  }

  // Places every tensor in the data section: aligned, inside the file, no two overlapping.
  Status PlaceTensors(uint64_t alignment, std::vector<TensorView>* tensors, std::vector<TensorInfo>* infos) {
    if (tensors->empty()) return Status::Ok();  // vocab-only files may end right after the infos
    const uint64_t pos = c_.pos();
    const uint64_t data_start = pos + (alignment - pos % alignment) % alignment;  // pos <= size, no overflow
    if (data_start > size_) return Fail("data section starts beyond the end of the file", "");
    const uint64_t data_size = size_ - data_start;
    for (const TensorInfo& ti : *infos) {
      TensorView& t = (*tensors)[ti.index];
      if (ti.offset % alignment != 0) {
        return Fail("data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                        std::to_string(alignment),
                    Tensor(t.name));
      }
      if (ti.offset > data_size || t.nbytes > data_size - ti.offset) {
        return Fail("data [" + std::to_string(ti.offset) + ", +" + std::to_string(t.nbytes) +
                        ") extends beyond the end of the file",
                    Tensor(t.name));
      }
      t.data = data_ + data_start + ti.offset;
    }
    std::sort(infos->begin(), infos->end(), [&](const TensorInfo& a, const TensorInfo& b) {
      return a.offset != b.offset ? a.offset < b.offset : (*tensors)[a.index].nbytes < (*tensors)[b.index].nbytes;
    });
    for (size_t i = 1; i < infos->size(); ++i) {
      const TensorView& prev = (*tensors)[(*infos)[i - 1].index];
      if ((*infos)[i - 1].offset + prev.nbytes > (*infos)[i].offset) {
        return Fail("data overlaps tensor '" + prev.name + "'", Tensor((*tensors)[(*infos)[i].index].name));
      }
    }
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  Cursor c_;
  const std::string& label_;
};

}  // namespace

std::optional<DType> DTypeFromGgmlType(uint32_t id) {
  switch (id) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 10: return DType::kQ2_K;
    case 11: return DType::kQ3_K;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 20: return DType::kIQ4_NL;
    case 23: return DType::kIQ4_XS;
    case 24: return DType::kI8;
    case 25: return DType::kI16;
    case 26: return DType::kI32;
    case 27: return DType::kI64;
    case 28: return DType::kF64;
    case 30: return DType::kBF16;
    case 39: return DType::kMXFP4;  // GGML_TYPE_MXFP4
    default: return std::nullopt;
  }
}

Expected<GgufFile> GgufFile::Open(const std::string& path) {
  KV_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  KV_ASSIGN_OR_RETURN(GgufFile g, Parse(file->data(), file->size(), path));
  g.file_ = std::move(file);
  return g;
}

Expected<GgufFile> GgufFile::Parse(const uint8_t* data, uint64_t size, const std::string& label) {
  GgufFile g;
  g.label_ = label;
  Parser p(data, size, g.label_);
  uint64_t n_tensors = 0, n_kv = 0;
  KV_RETURN_IF_ERROR(p.Header(&g.version_, &n_tensors, &n_kv));
  KV_RETURN_IF_ERROR(p.Metadata(n_kv, &g.kv_));
  KV_ASSIGN_OR_RETURN(g.alignment_, p.Alignment(g.kv_));
  std::vector<TensorInfo> infos;
  KV_RETURN_IF_ERROR(p.TensorInfos(n_tensors, &g.tensors_, &infos, &g.tensor_index_));
  KV_RETURN_IF_ERROR(p.PlaceTensors(g.alignment_, &g.tensors_, &infos));
  return g;
}

const TensorView* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

}  // namespace kvaudit
