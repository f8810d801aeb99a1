#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

namespace kvaudit {
namespace {

using nlohmann::json;

Error Fail(const std::string& label, const std::string& what, const std::string& tensor, const std::string& hint) {
  std::string msg = label + ": " + what;
  if (!tensor.empty()) msg += " (tensor '" + tensor + "')";
  return BadInput(msg + "; hint: " + hint);
}

constexpr const char* kSafetensorsCorruptHint = "the file is corrupt or was not written by a safetensors writer";

// A JSON number usable as a non-negative 63-bit integer (shape dims, offsets).
bool AsNonNegInt(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return *out <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    *out = static_cast<uint64_t>(i);
    return i >= 0;
  }
  return false;
}

// Parses the header JSON, rejecting duplicate keys in any object (nlohmann would keep the last,
// silently picking one of two tensors with the same name). Never throws.
json ParseHeader(const uint8_t* begin, const uint8_t* end, std::string* dup_key) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto cb = [&](int /*depth*/, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start)
      keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty())
      keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second && dup_key->empty()) *dup_key = k;
    }
    return true;
  };
  return json::parse(begin, end, cb, /*allow_exceptions=*/false);
}

struct Span {
  uint64_t begin, end;
  size_t index;
};

}  // namespace

Expected<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  KV_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  KV_ASSIGN_OR_RETURN(SafetensorsFile st, Parse(file->data(), file->size(), path));
  st.file_ = std::move(file);
  return st;
}

Expected<SafetensorsFile> SafetensorsFile::Parse(const uint8_t* data, uint64_t size, const std::string& label) {
  if (size < 8) {
    return Fail(label, "file too small (" + std::to_string(size) + " bytes) for the 8-byte header length", "",
                "is this a safetensors file?");
  }
  uint64_t header_len;
  std::memcpy(&header_len, data, 8);  // little-endian u64 (safetensors format); we run on LE hosts
  if (header_len > size - 8) {
    const bool is_gguf = std::memcmp(data, "GGUF", 4) == 0;
    return Fail(label, "header length " + std::to_string(header_len) + " exceeds the file size " + std::to_string(size),
                "", is_gguf ? "this is a GGUF file; open it as GGUF" : "the file is truncated or not safetensors");
  }
  std::string dup;
  const json header = ParseHeader(data + 8, data + 8 + header_len, &dup);
  if (header.is_discarded()) return Fail(label, "header is not valid JSON", "", kSafetensorsCorruptHint);
  if (!header.is_object()) return Fail(label, "header is not a JSON object", "", kSafetensorsCorruptHint);
  if (!dup.empty()) return Fail(label, "duplicate key in header", dup, kSafetensorsCorruptHint);

  const uint8_t* base = data + 8 + header_len;  // the data section; offsets are relative to it
  const uint64_t data_size = size - 8 - header_len;
  SafetensorsFile st;
  std::vector<Span> spans;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return Fail(label, "__metadata__ is not an object", "", kSafetensorsCorruptHint);
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) {
          return Fail(label, "__metadata__ value for key '" + k + "' is not a string", "", kSafetensorsCorruptHint);
        }
        st.metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) return Fail(label, "entry is not an object", name, kSafetensorsCorruptHint);
    const auto dt = v.find("dtype");
    const auto sh = v.find("shape");
    const auto off = v.find("data_offsets");
    if (dt == v.end() || sh == v.end() || off == v.end()) {
      return Fail(label, "entry lacks dtype, shape or data_offsets", name, kSafetensorsCorruptHint);
    }
    if (!dt->is_string()) return Fail(label, "dtype is not a string", name, kSafetensorsCorruptHint);
    const std::string dtype_name = dt->get<std::string>();
    const auto dtype = DTypeFromName(dtype_name);
    if (!dtype || GetDTypeInfo(*dtype).block_elems != 1) {
      return Fail(label, "unsupported dtype '" + dtype_name + "'", name,
                  "kvaudit reads F32, F16, BF16, F64, I8, I16, I32, I64, U8, BOOL");
    }
    if (!sh->is_array()) return Fail(label, "shape is not an array", name, kSafetensorsCorruptHint);
    TensorView t;
    t.name = name;
    t.dtype = *dtype;
    // The product of the non-zero dims must fit in i64 even when another dim is 0, so that
    // TensorView::numel() can never overflow whatever order it multiplies in.
    uint64_t nonzero = 1;
    bool any_zero = false;
    for (const auto& d : *sh) {
      uint64_t dim;
      if (!AsNonNegInt(d, &dim))
        return Fail(label, "shape has a negative or non-integer dimension", name, kSafetensorsCorruptHint);
      t.shape.push_back(static_cast<int64_t>(dim));
      if (dim == 0) {
        any_zero = true;
        continue;
      }
      if (nonzero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
        return Fail(label, "shape element count overflows", name, kSafetensorsCorruptHint);
      }
      nonzero *= dim;
    }
    const int64_t numel = any_zero ? 0 : static_cast<int64_t>(nonzero);
    uint64_t begin, end;
    if (!off->is_array() || off->size() != 2 || !AsNonNegInt((*off)[0], &begin) || !AsNonNegInt((*off)[1], &end)) {
      return Fail(label, "data_offsets is not [begin, end] of non-negative integers", name, kSafetensorsCorruptHint);
    }
    if (begin > end || end > data_size) {
      return Fail(label,
                  "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] outside the data section of " + std::to_string(data_size) + " bytes",
                  name, "the file is truncated or corrupt");
    }
    auto want = ByteSize(*dtype, numel);
    if (!want.ok() || *want != end - begin) {
      return Fail(label,
                  "data_offsets span " + std::to_string(end - begin) + " bytes but shape and dtype need " +
                      (want.ok() ? std::to_string(*want) : std::string("an impossible size")),
                  name, kSafetensorsCorruptHint);
    }
    t.data = base + begin;
    t.nbytes = end - begin;
    spans.push_back({begin, end, st.tensors_.size()});
    st.index_[name] = st.tensors_.size();
    st.tensors_.push_back(std::move(t));
  }
  // Overlap check: sorted by begin, each tensor must end at or before the next one starts.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      return Fail(label, "data overlaps tensor '" + st.tensors_[spans[i - 1].index].name + "'",
                  st.tensors_[spans[i].index].name, kSafetensorsCorruptHint);
    }
  }
  return st;
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(name);
  return out;
}

const TensorView* SafetensorsSet::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Expected<SafetensorsSet> SafetensorsSet::OpenDir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  SafetensorsSet set;
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name
  if (fs::exists(single, ec)) {
    KV_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(single.string()));
    set.files_.push_back(std::move(f));
  } else if (fs::exists(index_path, ec)) {
    const std::string label = index_path.string();
    KV_ASSIGN_OR_RETURN(auto raw, MappedFile::Open(label));
    const json index = json::parse(raw->data(), raw->data() + raw->size(), nullptr, false);
    if (index.is_discarded() || !index.is_object())
      return Fail(label, "not a JSON object", "", kSafetensorsCorruptHint);
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      return Fail(label, "no \"weight_map\" object", "", "a Hugging Face shard index maps tensor names to shard files");
    }
    std::map<std::string, size_t> shard_pos;  // shard file -> index in files_
    for (const auto& [tensor, shard_v] : wm->items()) {
      if (!shard_v.is_string())
        return Fail(label, "weight_map value is not a file name", tensor, kSafetensorsCorruptHint);
      const std::string shard = shard_v.get<std::string>();
      const fs::path rel(shard);
      if (shard.empty() || rel.is_absolute() || rel.filename() != rel) {
        return Fail(label, "shard name '" + shard + "' is not a plain file name", tensor, kSafetensorsCorruptHint);
      }
      weight_map[tensor] = shard;
      if (shard_pos.count(shard)) continue;
      const fs::path shard_path = fs::path(dir) / rel;
      if (!fs::exists(shard_path, ec)) {
        return Fail(label, "shard '" + shard + "' listed in weight_map does not exist", tensor,
                    "download every shard named in the index into " + dir);
      }
      KV_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(shard_path.string()));
      shard_pos[shard] = set.files_.size();
      set.files_.push_back(std::move(f));
    }
    for (const auto& [tensor, shard] : weight_map) {
      if (set.files_[shard_pos[shard]].Find(tensor) == nullptr) {
        return Fail(label, "weight_map assigns the tensor to shard '" + shard + "', which lacks it", tensor,
                    "the index and shards come from different checkpoints; re-download them");
      }
    }
  } else {
    return BadInput(dir +
                    ": no model.safetensors or model.safetensors.index.json; hint: pass a Hugging Face "
                    "model directory with safetensors weights (or a .gguf file)");
  }
  // files_ is complete: pointers into its tensors_ vectors are now stable (moves keep buffers).
  for (const SafetensorsFile& f : set.files_) {
    for (const TensorView& t : f.tensors()) {
      if (!set.by_name_.emplace(t.name, &t).second) {
        return Fail(dir, "tensor appears in more than one shard", t.name, "the shards are inconsistent; re-download");
      }
    }
  }
  return set;
}

}  // namespace kvaudit
