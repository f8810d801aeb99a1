#include "io/mapped_file.h"

#include <gtest/gtest.h>

#include "support/fixtures.h"
#include "unit/io_builders.h"

namespace kvaudit {
namespace {

using testing::MakeTempDir;

TEST(IoMappedFile, MapsContents) {
  const auto p = testing::WriteText(MakeTempDir("mf") / "a.bin", "hello");
  auto f = MappedFile::Open(p.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ((*f)->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*f)->data()), 5), "hello");
  EXPECT_EQ((*f)->path(), p.string());
}

TEST(IoMappedFile, EmptyFileHasSizeZero) {
  const auto p = testing::WriteText(MakeTempDir("mf") / "empty.bin", "");
  auto f = MappedFile::Open(p.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->size(), 0u);
}

TEST(IoMappedFile, MissingFileNamesPathAndErrno) {
  const auto p = MakeTempDir("mf") / "nope.gguf";
  auto f = MappedFile::Open(p.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().exit_code(), 2);
  EXPECT_NE(f.error().message.find(p.string()), std::string::npos);
  EXPECT_NE(f.error().message.find("No such file or directory"), std::string::npos);
  EXPECT_NE(f.error().message.find("hint:"), std::string::npos);
}

TEST(IoMappedFile, DirectoryIsAnError) {
  const auto d = MakeTempDir("mf");
  auto f = MappedFile::Open(d.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().exit_code(), 2);
  EXPECT_NE(f.error().message.find(d.string()), std::string::npos);
}

}  // namespace
}  // namespace kvaudit
