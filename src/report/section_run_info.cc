// Section 8: where the results came from, so a report can be archived and compared: the model
// (path, architecture, the hash of every weight byte as loaded, or of the config and tokenizer for
// an all-remote run), kvaudit's version and commit, the
// command line, the date, the machine, threads, wall time and peak memory (each results.json's
// run block, run/provenance.h), one column per directory.
#include "report/html_escape.h"
#include "report/sections.h"
#include "report/value_ref.h"

namespace kvaudit::report {
namespace {

// The directory's own results.json (the one its kind wrote), else any it has.
const ResultsFile* TopFile(const RunDirectory& d) {
  for (const auto* f : {&d.audit, &d.recommend, &d.eval, &d.probe, &d.sensitivity}) {
    if (*f) return &**f;
  }
  return nullptr;
}

struct MetaRow {
  const char* label;
  const char* pointer;
  ValueFormat format;
  bool from_eval;  // the eval's file holds it (model_info)
};

constexpr MetaRow kRows[] = {
    {"model", "/model", ValueFormat::kText, false},
    {"architecture", "/model_info/architecture", ValueFormat::kText, true},
    {"layers", "/model_info/layers", ValueFormat::kInt, true},
    {"KV heads", "/model_info/kv_heads", ValueFormat::kInt, true},
    {"head dim", "/model_info/head_dim", ValueFormat::kInt, true},
    {"model hash", "/model_hash", ValueFormat::kText, false},
    {"model hash of", "/model_hash_kind", ValueFormat::kText, false},  // weights, or config+tokenizer (all-remote)
    {"kvaudit version", "/run/kvaudit_version", ValueFormat::kText, false},
    {"commit", "/run/commit", ValueFormat::kText, false},
    {"command", "/run/command", ValueFormat::kText, false},
    {"started (UTC)", "/run/started_utc", ValueFormat::kText, false},
    {"CPU", "/run/machine/cpu", ValueFormat::kText, false},
    {"logical cores", "/run/machine/logical_cores", ValueFormat::kInt, false},
    {"SIMD path", "/run/machine/simd", ValueFormat::kText, false},
    {"threads", "/run/threads", ValueFormat::kInt, false},
    {"wall time (s)", "/run/wall_s", ValueFormat::kSig, false},
    {"peak RSS (MB)", "/run/peak_rss_mb", ValueFormat::kSig, false},
};

std::string Cell(const RunDirectory& d, const MetaRow& row) {
  const ResultsFile* f = row.from_eval && d.eval ? &*d.eval : TopFile(d);
  // Absent (older files; audit and recommend results carry no model_hash_kind): a plain dash,
  // not a tagged value pointing at nothing.
  if (!f || !Lookup(*f, row.pointer)) return "<td>–</td>";
  std::string cell = "<td>" + ValueSpan(d, *f, row.pointer, row.format);
  return cell + "</td>";
}

std::string RunInfoBody(const ReportContext& ctx) {
  std::string out;
  out += "<table class=\"meta\"><thead><tr><th></th>";
  for (const RunDirectory& d : ctx.dirs) out += "<th>" + EscapeHtml(d.label) + "</th>";
  out += "</tr></thead><tbody>\n<tr><th>directory</th>";
  for (const RunDirectory& d : ctx.dirs) out += "<td><code>" + EscapeHtml(d.path) + "</code></td>";
  out += "</tr>\n<tr><th>kind</th>";
  for (const RunDirectory& d : ctx.dirs)
    out += "<td>" + EscapeHtml(d.kind) + (d.complete ? "" : " (interrupted)") + "</td>";
  out += "</tr>\n";
  for (const MetaRow& row : kRows) {
    out += std::string("<tr><th>") + row.label + "</th>";
    for (const RunDirectory& d : ctx.dirs) out += Cell(d, row);
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  for (const RunDirectory& d : ctx.dirs) {
    if (d.missing.empty()) continue;
    out += "<h3>Missing from " + EscapeHtml(d.label) + "</h3>\n<ul class=\"missing\">";
    for (const std::string& m : d.missing) out += "<li>" + EscapeHtml(m) + "</li>";
    out += "</ul>\n";
  }
  return out;
}

}  // namespace

const Section kRunInfoSection = {"run-info", "Run", "Run metadata",
                                 "What produced these numbers. Results are comparable when the model hash, the data "
                                 "and the command agree; a dash is a value older results files do not record.",
                                 RunInfoBody};

}  // namespace kvaudit::report
