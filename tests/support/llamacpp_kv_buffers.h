// The KV cache sizes llama.cpp printed (tests/data/llamacpp_kv_buffers.tsv, written by
// scripts/llamacpp_kv_buffers.sh), and the check of one of them against kvaudit's llama.cpp memory
// model (decide/targets/kv_memory.h): the unit test for real attention shapes, the golden test for
// the tiny goldens' GGUFs read by kvaudit's own loader.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace kvaudit::testing {

struct KvBufferRow {
  std::string model;  // "gpt-oss-20b", ... ; "golden-<folder>" for ../shared/golden/llamacpp/<folder>
  int ctx = 0;
  std::string type;  // -ctk and -ctv
  bool swa_full = false;
  std::string cache;  // "base" (llama.cpp's non-SWA cache), "swa", or "all" (a model without a window)
  int cells = 0, layers = 0;
  std::string k_mib, v_mib, buffer_mib;  // as llama.cpp printed them

  std::string What() const;  // "gpt-oss-20b -c 4096 q8_0 --swa-full swa"
};

std::vector<KvBufferRow> ReadKvBufferRows();

// EXPECTs that kvaudit's llama.cpp figure for `config` holds this cache's cells and layers, and its
// K, V and buffer bytes printed as llama.cpp prints them ("%7.2f" of (float)bytes / 2^20). Returns
// whether the printed K was a whole number of bytes (then checked to the byte).
bool ExpectKvBufferRow(const KvBufferRow& row, const ModelConfig& config);

}  // namespace kvaudit::testing
