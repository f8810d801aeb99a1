#include "eval/reference_file.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/json_text.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

static_assert(std::endian::native == std::endian::little, "the reference layout is little-endian");

constexpr std::string_view kMagic = "KVAUDIT-REFERENCE\n";
constexpr std::string_view kEnd = "END\n";
constexpr uint32_t kMaxIds = 1u << 22, kMaxTop = 1u << 16, kMaxHeader = 1u << 20;

template <typename T>
void Put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

// Reads fixed-size values from the file's bytes; the first short read makes every later one fail.
class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : b_(bytes) {}
  template <typename T>
  bool Get(T* v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool Take(size_t n, std::string* s) {
    if (b_.size() - at_ < n) return false;
    *s = b_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool AtEnd() const { return at_ == b_.size(); }

 private:
  const std::string& b_;
  size_t at_ = 0;
};

Error Bad(const std::string& path, const std::string& what) {
  return BadInput(path + ": " + what + "; hint: make it again with kvaudit reference (docs/endpoints.md)");
}

Expected<ReferenceWindow> ReadWindow(Cursor& c, const std::string& path, size_t w) {
  const std::string where = "window record " + std::to_string(w);
  ReferenceWindow win;
  uint32_t index = 0, n = 0, first = 0;
  if (!c.Get(&index) || !c.Get(&n)) return Bad(path, "truncated at " + where);
  if (n < 2 || n > kMaxIds) return Bad(path, where + " has " + std::to_string(n) + " tokens");
  win.window = static_cast<int>(index);
  win.ids.resize(n);
  for (int32_t& id : win.ids) {
    if (!c.Get(&id) || id < 0) return Bad(path, where + ": a token id is missing or negative");
  }
  if (!c.Get(&first) || first > n - 1) return Bad(path, where + ": bad first scored position");
  win.first_pos = static_cast<int>(first);
  win.rows.resize(n - 1 - first);
  for (size_t i = 0; i < win.rows.size(); ++i) {
    TopKRow& r = win.rows[i];
    uint32_t n_top = 0;
    r.token = win.ids[first + i + 1];
    if (!c.Get(&r.logprob) || !c.Get(&n_top) || n_top == 0 || n_top > kMaxTop) {
      return Bad(path, where + ": the row of position " + std::to_string(first + i + 1) + " is cut or empty");
    }
    r.top.resize(n_top);
    for (auto& [id, lp] : r.top) {
      if (!c.Get(&id) || !c.Get(&lp) || id < 0) return Bad(path, where + ": a top entry is cut");
    }
  }
  return win;
}

}  // namespace

Status WriteReference(const std::string& path, const ReferenceFile& ref) {
  std::string out(kMagic);
  const std::string header = JsonText(ref.header);
  Put<uint32_t>(out, static_cast<uint32_t>(header.size()));
  out += header;
  Put<uint32_t>(out, static_cast<uint32_t>(ref.windows.size()));
  for (const ReferenceWindow& w : ref.windows) {
    KV_CHECK(w.rows.size() + 1 + static_cast<size_t>(w.first_pos) == w.ids.size());
    Put<uint32_t>(out, static_cast<uint32_t>(w.window));
    Put<uint32_t>(out, static_cast<uint32_t>(w.ids.size()));
    for (int32_t id : w.ids) Put<int32_t>(out, id);
    Put<uint32_t>(out, static_cast<uint32_t>(w.first_pos));
    for (const TopKRow& r : w.rows) {
      KV_CHECK(!r.top.empty());
      Put<double>(out, r.logprob);
      Put<uint32_t>(out, static_cast<uint32_t>(r.top.size()));
      for (const auto& [id, lp] : r.top) Put<int32_t>(out, id), Put<double>(out, lp);
    }
  }
  out += kEnd;
  return WriteFileAtomically(path, out);
}

Expected<ReferenceFile> ReadReference(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput("--reference " + path + ": cannot open it; hint: make one with kvaudit reference");
  std::ostringstream all;
  all << in.rdbuf();
  const std::string bytes = all.str();
  Cursor c(bytes);
  std::string magic, header;
  uint32_t header_len = 0, n_windows = 0;
  if (!c.Take(kMagic.size(), &magic) || magic != kMagic) return Bad(path, "not a kvaudit reference");
  if (!c.Get(&header_len) || header_len > kMaxHeader || !c.Take(header_len, &header))
    return Bad(path, "the header is cut");
  ReferenceFile ref;
  ref.header = nlohmann::json::parse(header, nullptr, false);
  if (!ref.header.is_object() || ref.header.value("kind", "") != "kvaudit-reference" ||
      ref.header.value("version", 0) != 1) {
    return Bad(path, "the header is not a version-1 kvaudit reference's");
  }
  if (!c.Get(&n_windows) || n_windows == 0) return Bad(path, "no windows");
  for (uint32_t w = 0; w < n_windows; ++w) {
    KV_ASSIGN_OR_RETURN(ReferenceWindow win, ReadWindow(c, path, w));
    ref.windows.push_back(std::move(win));
  }
  std::string end;
  if (!c.Take(kEnd.size(), &end) || end != kEnd || !c.AtEnd()) return Bad(path, "the end marker is missing");
  return ref;
}

}  // namespace kvaudit
