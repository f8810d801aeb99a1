#!/usr/bin/env bash
# Installs kvaudit's dependencies from Debian 12 packages, in three sets, so that `make demo` waits
# only for what it compiles against:
#   bash scripts/setup.sh          the build: compiler, CMake, the libraries, GoogleTest and the two
#                                  test-only libraries the release configure looks for
#   bash scripts/setup.sh tests    + what the test suite runs: Chromium, a local Slurm cluster
#   bash scripts/setup.sh fuzz     + clang and libFuzzer's runtime
# Nothing else is downloaded at build or run time. Why each package: docs/dependencies.md.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libpcre2-dev           # Unicode regexes for BPE pre-tokenizers
      nlohmann-json3-dev     # config.json, tokenizer.json, results.json
      libcli11-dev           # CLI flags and --help
      libtomlplusplus-dev    # the acceptance policy file (TOML, kvaudit gate)
      libcpp-httplib-dev     # kvaudit serve's HTTP server, and the client its tests use (cpp-httplib 0.11)
      libgtest-dev libgmock-dev googletest
      libtinyxml2-dev        # tests only: the gate's JUnit XML parsed back
      libgumbo-dev)          # tests only: the report's strict HTML5 parse (tests/support/html_strict.h)
for set in "$@"; do
  case "$set" in
    tests) pkgs+=(chromium         # the report's browser test (tests/support/headless_chromium.h)
                  slurm-wlm munge) # the scale-out test's local cluster (scripts/slurm-local.sh)
           # llama.cpp's own llama-server for the endpoint tests (scripts/build_llamacpp.sh) needs
           # npm and git: Debian's, unless the machine has its own (a Node install whose npm the
           # Debian package would conflict with)
           command -v npm >/dev/null || pkgs+=(npm)
           command -v git >/dev/null || pkgs+=(git)
           ;;
    fuzz) pkgs+=(clang libclang-rt-14-dev) ;;  # libFuzzer targets
    *) echo "setup: unknown package set '$set'; hint: tests or fuzz" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
