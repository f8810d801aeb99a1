// Where tests find their inputs. Fixtures come from KVAUDIT_FIXTURES (default ../shared beside the
// repository); a missing fixture is a test failure, never a skip (CI must not pass on nothing).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kvaudit::testing {

std::filesystem::path RepoDir();          // the source tree
std::filesystem::path FixturesDir();      // KVAUDIT_FIXTURES or RepoDir()/../shared
std::filesystem::path BundledModelDir();  // RepoDir()/models/kvq-code-16m
std::filesystem::path KvauditBinary();    // the built CLI, for end-to-end tests
// "--model <bundled model> --data <bundled eval docs> --threads 2 ": a CLI job on the bundled inputs.
std::string BundledJobFlags();
// Returns FixturesDir()/relative and records a gtest failure (ADD_FAILURE) if it is missing.
std::filesystem::path Fixture(const std::string& relative);
// A fresh empty directory under the system temp dir, unique per call.
std::filesystem::path MakeTempDir(const std::string& tag);
// The regular files directly in dir, sorted by name (corpora replayed as tests); records a gtest
// failure if there are none, so a moved corpus cannot pass as an empty one.
std::vector<std::filesystem::path> FilesIn(const std::filesystem::path& dir);
// A file's bytes (empty if it cannot be read).
std::vector<uint8_t> ReadBytes(const std::filesystem::path& p);
// Replays a fuzz corpus of seeds and bad_* inputs: parse(name, text) checks one file's invariants
// and returns whether the parser accepted it, with what it made of it (the error, or a summary).
// Every bad_* file must be rejected, every other one accepted, and the corpus must hold both kinds
// (gtest failures otherwise, under the file's name).
using CorpusParse = std::function<std::pair<bool, std::string>(const std::string& name, const std::string& text)>;
void ReplayCorpus(const std::filesystem::path& dir, const CorpusParse& parse);

}  // namespace kvaudit::testing
