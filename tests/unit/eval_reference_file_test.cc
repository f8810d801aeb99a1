// The reference file (eval/reference_file.h): what is written is read back exactly (doubles bit for
// bit, windows in order), and anything but a whole version-1 file — another file, a cut one, a bad
// header, trailing bytes, a row without top entries — is one BadInput line naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "eval/reference_file.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

ReferenceFile Sample() {
  ReferenceFile ref;
  ref.header = {{"kind", "kvaudit-reference"}, {"version", 1}, {"top_k", 2}, {"ctx", 4}};
  ReferenceWindow w;
  w.window = 3, w.ids = {1, 7, 5, 9}, w.first_pos = 1;
  w.rows.push_back({5, -2.5, {{9, -0.5}, {5, std::nextafter(-2.5, 0.0)}}});
  w.rows.push_back({9, -1e-300, {{9, -1e-300}, {2, -700.25}}});
  ref.windows.push_back(w);
  w.window = 4, w.ids = {2, 2}, w.first_pos = 0;
  w.rows = {{2, -0.125, {{2, -0.125}}}};
  ref.windows.push_back(w);
  return ref;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void ExpectBad(const std::string& path, const std::string& says) {
  const auto r = ReadReference(path);
  ASSERT_FALSE(r.ok()) << path;
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
}

TEST(ReferenceFileTest, WhatIsWrittenIsReadBackExactly) {
  const std::string path = (testing::MakeTempDir("ref-file") / "a.kvref").string();
  const ReferenceFile ref = Sample();
  ASSERT_TRUE(WriteReference(path, ref).ok());
  const auto back = ReadReference(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->header, ref.header);
  ASSERT_EQ(back->windows.size(), 2u);
  for (size_t w = 0; w < 2; ++w) {
    const ReferenceWindow &a = ref.windows[w], &b = back->windows[w];
    EXPECT_EQ(a.window, b.window);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.first_pos, b.first_pos);
    ASSERT_EQ(a.rows.size(), b.rows.size());
    for (size_t i = 0; i < a.rows.size(); ++i) {
      EXPECT_EQ(a.rows[i].token, b.rows[i].token);
      EXPECT_EQ(a.rows[i].logprob, b.rows[i].logprob);
      EXPECT_EQ(a.rows[i].top, b.rows[i].top);
    }
  }
}

TEST(ReferenceFileTest, AnythingButAWholeReferenceIsOneLine) {
  const auto dir = testing::MakeTempDir("ref-file-bad");
  const std::string good = (dir / "good.kvref").string();
  ASSERT_TRUE(WriteReference(good, Sample()).ok());
  const std::string bytes = Bytes(good);
  auto write = [&](const std::string& name, const std::string& b) {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << b;
    return p;
  };
  ExpectBad((dir / "missing.kvref").string(), "cannot open it");
  ExpectBad(write("text.kvref", "hello\n"), "text.kvref: not a kvaudit reference");
  for (size_t cut : {size_t{20}, size_t{60}, bytes.size() / 2, bytes.size() - 1}) {
    ExpectBad(write("cut" + std::to_string(cut) + ".kvref", bytes.substr(0, cut)), ".kvref: ");
  }
  ExpectBad(write("trailing.kvref", bytes + "x"), "the end marker is missing");
  std::string other_kind = bytes;
  other_kind.replace(other_kind.find("kvaudit-reference"), 17, "kvaudit-reFerence");
  ExpectBad(write("kind.kvref", other_kind), "the header is not a version-1 kvaudit reference's");
  // The first row of window 3 with n_top = 0: after magic, header, n_windows, the window's fields.
  const size_t header_len = static_cast<size_t>(static_cast<unsigned char>(bytes[18]));
  const size_t n_top_at = 18 + 4 + header_len + 4 + 4 + 4 + 4 * 4 + 4 + 8;
  std::string empty_row = bytes;
  for (size_t i = 0; i < 4; ++i) empty_row[n_top_at + i] = 0;
  ExpectBad(write("empty.kvref", empty_row), "is cut or empty");
}

}  // namespace
}  // namespace kvaudit
