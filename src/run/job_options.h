// The options every job (eval, probe, sensitivity, recommend, audit) takes, declared once: what it
// runs on, where it writes, and which shard of it this run is. Each job's options derive from it and
// add their own; the flags are one meaning across commands (docs/cli.md).
#pragma once

#include <string>

#include "run/kv_configs.h"
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
};

}  // namespace kvaudit
