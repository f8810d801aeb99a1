// The options every job (eval, probe, sensitivity, recommend, audit) takes, declared once: what it
// runs on, where it writes, and which shard of it this run is. Each job's options derive from it and
// add their own; the flags are one meaning across commands (docs/cli.md).
#pragma once

#include <cstdint>
#include <string>

#include "run/kv_configs.h"
#include "run/run_dir.h"
#include "run/shard.h"

namespace kvaudit {

struct JobOptions {
  std::string model;     // Hugging Face directory or .gguf file
  int threads = 0;       // 0 = all cores
  KvConfigOptions kv;    // the baseline, the in-process configurations (eval, probe, audit), calibration text
  std::string data;      // text: file, folder of text files, or JSONL ("" where the job needs none)
  std::string out;       // the run directory (each job's own default)
  bool restart = false;  // discard what out holds instead of resuming it
  // --shard I/N (docs/scale-out.md): run only this shard's units and write DIR/shard.json.
  ShardSpec shard;
  // The memory the job's caches and their runs may hold at once, in bytes; 0 = what the machine has
  // available (base/system_memory.h). An eval whose configurations need more runs them in groups
  // (eval/config_groups.h); tests set it to force groups.
  uint64_t memory_limit = 0;
};

// The options of a stage that `job` runs in DIR/sub (audit's eval/, recommend's sensitivity/):
// Stage's own defaults, then every option of the job (the same model, threads, configurations,
// data, --restart and shard), out = DIR/sub.
template <class Stage>
Stage StageOptions(const JobOptions& job, const std::string& sub) {
  Stage stage;
  static_cast<JobOptions&>(stage) = job;
  stage.out = SubDir(job.out, sub);
  return stage;
}

}  // namespace kvaudit
