// Typed access to GGUF metadata values; errors name the file and key.
#include <limits>

#include "io/gguf.h"

namespace kvaudit {
namespace {

const char* TypeWord(GgufType t) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "unknown";
}

std::string Describe(const GgufValue& v) {
  if (v.type == GgufType::kArray) return std::string("array of ") + TypeWord(v.elem_type);
  return TypeWord(v.type);
}

bool IsUnsigned(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kU16 || t == GgufType::kU32 || t == GgufType::kU64;
}

}  // namespace

bool IsGgufIntType(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kI8 || t == GgufType::kU16 || t == GgufType::kI16 ||
         t == GgufType::kU32 || t == GgufType::kI32 || t == GgufType::kU64 || t == GgufType::kI64;
}

namespace {

// Looks up key; error if missing or if `accept` rejects its type (`want` describes what we need).
template <class Pred>
Expected<const GgufValue*> Lookup(const GgufFile& g, const std::string& key, const char* want, Pred accept) {
  const GgufValue* v = g.Find(key);
  if (v == nullptr) {
    return BadInput(g.label() + ": missing metadata (key '" + key +
                    "'); hint: the GGUF was written without it; "
                    "re-convert with a current llama.cpp");
  }
  if (!accept(*v)) {
    return BadInput(g.label() + ": metadata is " + Describe(*v) + ", expected " + want + " (key '" + key +
                    "'); hint: the GGUF does not follow the llama.cpp key conventions");
  }
  return v;
}

}  // namespace

Expected<std::string> GgufFile::GetString(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v,
                      Lookup(*this, key, "string", [](const GgufValue& x) { return x.type == GgufType::kString; }));
  return v->s;
}

Expected<int64_t> GgufFile::GetInt(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v, Lookup(*this, key, "integer", [](const GgufValue& x) {
                        return IsGgufIntType(x.type) || x.type == GgufType::kBool;
                      }));
  if (v->type == GgufType::kU64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return BadInput(label_ + ": value " + std::to_string(v->u) + " out of range (key '" + key +
                    "'); hint: corrupt file");
  }
  return v->i;
}

Expected<double> GgufFile::GetFloat(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v, Lookup(*this, key, "number", [](const GgufValue& x) {
                        return IsGgufIntType(x.type) || x.type == GgufType::kF32 || x.type == GgufType::kF64;
                      }));
  if (IsGgufIntType(v->type)) return IsUnsigned(v->type) ? static_cast<double>(v->u) : static_cast<double>(v->i);
  return v->f;
}

Expected<bool> GgufFile::GetBool(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v, Lookup(*this, key, "bool", [](const GgufValue& x) { return x.type == GgufType::kBool; }));
  return v->i != 0;
}

Expected<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v, Lookup(*this, key, "array of string", [](const GgufValue& x) {
                        return x.type == GgufType::kArray && x.elem_type == GgufType::kString;
                      }));
  return v->strings;
}

Expected<std::vector<int64_t>> GgufFile::GetIntArray(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(auto v, Lookup(*this, key, "array of integer", [](const GgufValue& x) {
                        return x.type == GgufType::kArray &&
                               (IsGgufIntType(x.elem_type) || x.elem_type == GgufType::kBool);
                      }));
  return v->ints;
}

Expected<std::vector<double>> GgufFile::GetFloatArray(const std::string& key) const {
  KV_ASSIGN_OR_RETURN(
      auto v, Lookup(*this, key, "array of number", [](const GgufValue& x) {
        return x.type == GgufType::kArray &&
               (IsGgufIntType(x.elem_type) || x.elem_type == GgufType::kF32 || x.elem_type == GgufType::kF64);
      }));
  if (!v->floats.empty() || v->ints.empty()) return v->floats;
  std::vector<double> out(v->ints.begin(), v->ints.end());  // integer arrays widen (u64 > 2^63 wraps)
  return out;
}

}  // namespace kvaudit
