// Writers for small GGUF and safetensors files used by the io tests (valid by default; every field
// can be overridden to build the malformed variants).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace kvaudit::testing {

using Bytes = std::vector<uint8_t>;

inline void Append(Bytes* b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b->insert(b->end(), c, c + n);
}
template <class T>
void AppendPod(Bytes* b, T v) {
  Append(b, &v, sizeof v);
}
inline void AppendStr(Bytes* b, const std::string& s) {
  AppendPod<uint64_t>(b, s.size());
  Append(b, s.data(), s.size());
}

inline std::filesystem::path WriteBytes(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}
inline std::filesystem::path WriteText(const std::filesystem::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
  return p;
}

template <class T>
Bytes PodBytes(const std::vector<T>& v) {
  Bytes b;
  Append(&b, v.data(), v.size() * sizeof(T));
  return b;
}

// GGUF: metadata values are given pre-encoded (type id + payload bytes).
struct GgufBuilder {
  struct Kv {
    std::string key;
    uint32_t type;
    Bytes payload;
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t ggml_type;
    Bytes data;
    std::optional<uint64_t> offset;  // default: packed, aligned
  };
  char magic[4] = {'G', 'G', 'U', 'F'};
  uint32_t version = 3;
  uint64_t alignment = 32;
  std::optional<uint64_t> n_kv_override, n_tensors_override;
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;

  template <class T>
  GgufBuilder& Scalar(const std::string& key, uint32_t type, T v) {
    Bytes p;
    AppendPod(&p, v);
    kvs.push_back({key, type, p});
    return *this;
  }
  GgufBuilder& U32(const std::string& k, uint32_t v) { return Scalar(k, 4, v); }
  GgufBuilder& I32(const std::string& k, int32_t v) { return Scalar(k, 5, v); }
  GgufBuilder& F32(const std::string& k, float v) { return Scalar(k, 6, v); }
  GgufBuilder& Bool(const std::string& k, bool v) { return Scalar<uint8_t>(k, 7, v ? 1 : 0); }
  GgufBuilder& U64(const std::string& k, uint64_t v) { return Scalar(k, 10, v); }
  GgufBuilder& Str(const std::string& k, const std::string& v) {
    Bytes p;
    AppendStr(&p, v);
    kvs.push_back({k, 8, p});
    return *this;
  }
  GgufBuilder& StrArray(const std::string& k, const std::vector<std::string>& v) {
    Bytes p;
    AppendPod<uint32_t>(&p, 8);
    AppendPod<uint64_t>(&p, v.size());
    for (const auto& s : v) AppendStr(&p, s);
    kvs.push_back({k, 9, p});
    return *this;
  }
  GgufBuilder& I32Array(const std::string& k, const std::vector<int32_t>& v) {
    Bytes p;
    AppendPod<uint32_t>(&p, 5);
    AppendPod<uint64_t>(&p, v.size());
    Append(&p, v.data(), v.size() * 4);
    kvs.push_back({k, 9, p});
    return *this;
  }
  GgufBuilder& F32Array(const std::string& k, const std::vector<float>& v) {
    Bytes p;
    AppendPod<uint32_t>(&p, 6);
    AppendPod<uint64_t>(&p, v.size());
    Append(&p, v.data(), v.size() * 4);
    kvs.push_back({k, 9, p});
    return *this;
  }
  GgufBuilder& AddTensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, Bytes data) {
    tensors.push_back({name, std::move(ne), type, std::move(data), std::nullopt});
    return *this;
  }

  Bytes Build() const {
    Bytes b;
    Append(&b, magic, 4);
    AppendPod(&b, version);
    AppendPod<uint64_t>(&b, n_tensors_override.value_or(tensors.size()));
    AppendPod<uint64_t>(&b, n_kv_override.value_or(kvs.size()));
    for (const Kv& kv : kvs) {
      AppendStr(&b, kv.key);
      AppendPod(&b, kv.type);
      Append(&b, kv.payload.data(), kv.payload.size());
    }
    Bytes data;
    for (const Tensor& t : tensors) {
      while (data.size() % alignment) data.push_back(0);
      AppendStr(&b, t.name);
      AppendPod<uint32_t>(&b, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t n : t.ne) AppendPod(&b, n);
      AppendPod(&b, t.ggml_type);
      AppendPod<uint64_t>(&b, t.offset.value_or(data.size()));
      Append(&data, t.data.data(), t.data.size());
    }
    if (!tensors.empty()) {
      while (b.size() % alignment) b.push_back(0);
      Append(&b, data.data(), data.size());
    }
    return b;
  }
};

// safetensors: u64 header length, the JSON header, then the data section.
inline Bytes MakeSafetensors(const std::string& header, const Bytes& data,
                             std::optional<uint64_t> header_len_override = std::nullopt) {
  Bytes b;
  AppendPod<uint64_t>(&b, header_len_override.value_or(header.size()));
  Append(&b, header.data(), header.size());
  Append(&b, data.data(), data.size());
  return b;
}

}  // namespace kvaudit::testing
