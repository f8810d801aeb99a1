// Word lists and value draws shared by the probe generators. Changing a list changes
// every generated prompt: treat them as part of the probe definition (docs/probes.md).
#pragma once

#include <string>
#include <vector>

#include "probe/instance.h"

namespace kvaudit::probe_words {

// Lower-case words for identifiers: NAME = "value" names (upper-cased), function and key names.
inline const std::vector<std::string> kNouns = {
    "cache",  "buffer", "socket", "record", "config", "header",  "packet",  "cursor",  "ledger", "bucket",
    "token",  "window", "signal", "stream", "thread", "vector",  "matrix",  "folder",  "filter", "parser",
    "anchor", "beacon", "harbor", "meadow", "canyon", "glacier", "lantern", "orchard", "quarry", "summit",
    "tunnel", "valley", "wizard", "falcon", "badger", "otter",   "heron",   "walrus",  "jaguar", "marlin"};
inline const std::vector<std::string> kAdjectives = {
    "amber", "silent", "rapid",  "hidden",  "frozen", "golden", "hollow", "lunar",  "misty", "noble",
    "polar", "quiet",  "rustic", "scarlet", "solar",  "stormy", "tidal",  "velvet", "wild",  "zesty"};
inline const std::vector<std::string> kVerbs = {"fetch",  "parse",  "render",  "load",    "store",  "merge", "split",
                                                "encode", "decode", "resolve", "build",   "scan",   "flush", "sync",
                                                "probe",  "index",  "rotate",  "compact", "verify", "export"};
// Values of kind "word": common, single-token-ish English words that are not Python keywords.
inline const std::vector<std::string> kValueWords = {
    "apricot", "blizzard",  "cinnamon", "dolphin",  "emerald",  "flamingo", "gondola", "hazelnut",
    "iceberg", "jasmine",   "kangaroo", "lavender", "mosaic",   "nutmeg",   "octopus", "pelican",
    "quartz",  "raspberry", "saffron",  "tornado",  "umbrella", "volcano",  "walnut",  "zeppelin"};
// Prose needles: "The <attribute> for the <project> project is <value>."
inline const std::vector<std::string> kProjects = {"Nimbus",  "Orchid",   "Juniper", "Cobalt", "Sequoia", "Tundra",
                                                   "Zephyr",  "Marigold", "Basalt",  "Osprey", "Willow",  "Comet",
                                                   "Saffron", "Granite",  "Heron",   "Aurora"};
inline const std::vector<std::string> kAttributes = {"access code", "release tag", "backup key", "vault number",
                                                     "launch word", "gate code",   "badge id",   "archive label"};

inline std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

// "adjective_noun": 800 combinations.
inline std::string SnakeName(ProbeRng& rng) { return rng.Pick(kAdjectives) + "_" + rng.Pick(kNouns); }

inline std::string Digits(ProbeRng& rng, int n) {
  std::string s(1, static_cast<char>('1' + rng.Below(9)));
  while (static_cast<int>(s.size()) < n) s += static_cast<char>('0' + rng.Below(10));
  return s;
}

// Lower-case hex with at least one letter and one digit, so it reads as neither a number nor a word.
inline std::string Hex(ProbeRng& rng, int n) {
  static const char kHex[] = "0123456789abcdef";
  while (true) {
    std::string s;
    for (int i = 0; i < n; ++i) s += kHex[rng.Below(16)];
    if (s.find_first_of("0123456789") != std::string::npos && s.find_first_of("abcdef") != std::string::npos) {
      return s;
    }
  }
}

}  // namespace kvaudit::probe_words
