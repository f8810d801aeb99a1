#include "run/shard_manifest.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_text.h"
#include "run/provenance.h"
#include "run/run_dir.h"

namespace kvaudit {

nlohmann::json ShardFingerprint(const nlohmann::json& fingerprint, const ShardSpec& shard) {
  nlohmann::json fp = fingerprint;
  fp["shard"] = shard.ToJson();
  return fp;
}

Status WriteShardManifest(const std::string& dir, const ShardManifest& m) {
  const nlohmann::json j = {{"kvaudit_shard", 1},
                            {"kind", m.kind},
                            {"journal_kind", m.journal_kind},
                            {"kvaudit_version", ProvenanceJson()["kvaudit_version"]},
                            {"fingerprint", m.fingerprint},
                            {"shard", m.shard.ToJson()},
                            {"units", m.units},
                            {"finished", m.finished},
                            {"run", m.run},
                            {"summary", m.summary}};
  return WriteFileAtomically(SubDir(dir, ShardManifest::kFile), JsonText(j) + "\n");
}

ShardRound ShardRound::Prefixed(const std::string& prefix) const {
  ShardRound out = *this;
  for (std::string& s : out.stages) s = prefix + "/" + s;
  return out;
}

Status WriteStagedShardManifest(const std::string& dir, const std::string& kind, const ShardSpec& shard,
                                const ShardRound& round, const nlohmann::json& run, bool finished) {
  ShardManifest m;
  m.kind = kind, m.shard = shard, m.finished = finished;
  m.fingerprint = {{"stages", round.stages}};  // the stages' own manifests carry the run's inputs
  m.summary = {{"stages", round.stages}, {"more_rounds", round.more_rounds}};
  m.run = run;
  return WriteShardManifest(dir, m);
}

Expected<ShardManifest> ReadShardManifest(const std::string& dir) {
  const std::string path = SubDir(dir, ShardManifest::kFile);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return BadInput(path + ": no shard manifest (the shard has not started, or " + dir +
                    " is not a --shard run); hint: run the shard, or pass the directory of one");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  ShardManifest m;
  try {
    if (j.is_discarded() || j.at("kvaudit_shard") != 1)
      throw nlohmann::json::other_error::create(501, "not a manifest", nullptr);
    j.at("kind").get_to(m.kind), j.at("journal_kind").get_to(m.journal_kind);
    j.at("kvaudit_version").get_to(m.kvaudit_version);
    m.fingerprint = j.at("fingerprint");
    j.at("shard").at("index").get_to(m.shard.index), j.at("shard").at("count").get_to(m.shard.count);
    j.at("units").get_to(m.units), j.at("finished").get_to(m.finished);
    m.run = j.at("run"), m.summary = j.at("summary");
  } catch (const nlohmann::json::exception&) {
    return BadInput(path + ": damaged shard manifest; hint: rerun the shard (it resumes from its journal)");
  }
  if (m.shard.count < 1 || m.shard.index < 0 || m.shard.index >= m.shard.count || !m.fingerprint.is_object()) {
    return BadInput(path + ": damaged shard manifest (shard " + m.shard.Text() + "); hint: rerun the shard");
  }
  return m;
}

}  // namespace kvaudit
