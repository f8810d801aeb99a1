// kvaudit formats: every KV format with its exact storage cost and where users meet it.
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "base/text_columns.h"
#include "cli/flags.h"
#include "kv/formats/format_table.h"
#include "kv/config/cache_config.h"

namespace kvaudit::cli {

CommandRunner AddFormatsCommand(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  AddJsonFlag(app, *json);
  return [json] {
    HeadConfig defaults;  // format defaults: int group 64, KIVI group 32, fp8 per-layer scale
    nlohmann::json rows = nlohmann::json::array();
    size_t name_w = 0, layout_w = 0;  // the widest name and layout: the columns fit every row
    for (const FormatRow& r : FormatTable())
      name_w = std::max(name_w, r.name.size()), layout_w = std::max(layout_w, r.layout.size());
    if (!*json) {
      std::printf("%s %9s %9s  %s%s\n", PadColumn("format", name_w + 1).c_str(), "bits@64", "bits@128",
                  PadColumn("layout", layout_w + 1).c_str(), "deployed by");
    }
    for (const FormatRow& r : FormatTable()) {
      const double b64 = defaults.BitsPerElement(r.id, 64), b128 = defaults.BitsPerElement(r.id, 128);
      if (*json) {
        rows.push_back({{"format", std::string(KvFormatName(r.id))},
                        {"bits_per_element_hd64", b64},
                        {"bits_per_element_hd128", b128},
                        {"layout", std::string(r.layout)},
                        {"deployed_by", std::string(r.deployed_by)}});
      } else {
        std::printf("%s %9.3f %9.3f  %s%s\n", PadColumn(std::string(r.name), name_w + 1).c_str(), b64, b128,
                    PadColumn(std::string(r.layout), layout_w + 1).c_str(), std::string(r.deployed_by).c_str());
      }
    }
    // vLLM's TurboQuant presets: pairs of the formats above (kv=NAME), their end layers unquantized.
    nlohmann::json presets = nlohmann::json::array();
    if (!*json) std::printf("\nvLLM TurboQuant presets (kv=NAME: K and V formats; layers 0, 1, N-2, N-1 stay bf16):\n");
    for (const TurboQuantPreset& p : TurboQuantPresets()) {
      const double b64 = (defaults.BitsPerElement(p.k, 64) + defaults.BitsPerElement(p.v, 64)) / 2;
      const double b128 = (defaults.BitsPerElement(p.k, 128) + defaults.BitsPerElement(p.v, 128)) / 2;
      const std::string kv = "k=" + std::string(KvFormatName(p.k)) + ",v=" + std::string(KvFormatName(p.v));
      if (*json) {
        presets.push_back({{"preset", std::string(p.name)},
                           {"k", std::string(KvFormatName(p.k))},
                           {"v", std::string(KvFormatName(p.v))},
                           {"bits_per_element_hd64", b64},
                           {"bits_per_element_hd128", b128},
                           {"deployed_by", "vLLM --kv-cache-dtype " + std::string(p.name)}});
      } else {
        std::printf("%s %9.3f %9.3f  %s\n", PadColumn(std::string(p.name), name_w + 1).c_str(), b64, b128, kv.c_str());
      }
    }
    if (*json) {
      std::printf("%s\n", JsonText(nlohmann::json{{"formats", rows}, {"turboquant_presets", presets}}, 2).c_str());
    } else {
      HeadConfig dyn;
      dyn.scale = Fp8ScaleMode::kDynamic;
      std::printf("\nfp8 scale=dynamic: %.3f bits/element (f32 scale per 32 elements)\n",
                  dyn.BitsPerElement(KvFormat::kFp8E4M3, 128));
      std::printf(
          "int8/int4 use group=64 by default (HF QuantizedCache); kivi2/kivi4 group=32, recent=128.\n"
          "fp8 and nvfp4 store x under one f32 scale per layer (scale=unit: 1.0, what an engine runs when the "
          "checkpoint carries no k_scale/v_scale; scale=calib: calibrated; scale=ckpt: the checkpoint's own).\n"
          "Bits exclude full-precision protections (sink=, recent=, outliers=), which `info --kv` counts.\n");
    }
    return 0;
  };
}

}  // namespace kvaudit::cli
