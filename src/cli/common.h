// Shared pieces of the subcommand mains: reading inputs, reporting errors as one line, printing a
// job's results.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/shard.h"
#include "run/shard_manifest.h"

namespace kvaudit::cli {

// Prints "kvaudit: error: <message>" on stderr; returns the exit code (2 for bad input).
int ReportError(const Error& error);

Expected<std::string> ReadTextFile(const std::string& path);  // an empty file is an error
// Whitespace-separated token ids; each must be an integer in [0, vocab).
Expected<std::vector<int32_t>> ReadIdsFile(const std::string& path, int32_t vocab);

// The end of a job that wrote results.json: the table then the footer line on stdout, or with
// --json the results document on stdout and the footer on stderr. Returns 0.
int PrintResults(const std::string& table, const nlohmann::json& results, const std::string& footer, bool json);

// The end of a --shard run: one line on stdout (what it recorded, where, and that merge is next).
// The line a staged job's shard round prints: what it computed, and what to run next.
int PrintStagedShardDone(const ShardSpec& shard, const ShardRound& round, const std::string& computed, double wall_s,
                         const std::string& manifest_path);
int PrintShardDone(const ShardSpec& shard, int units, const std::string& unit_name, double wall_s,
                   const std::string& manifest_path);

}  // namespace kvaudit::cli
