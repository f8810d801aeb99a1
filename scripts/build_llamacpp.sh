#!/usr/bin/env bash
# Builds llama.cpp's own tools (llama-server, llama-bench, llama-perplexity, llama-cli) from the
# source that the npm package node-llama-cpp carries as a git bundle (llama/gitRelease.bundle),
# outside the repository, and prints the directory holding the binaries. The references kvaudit is
# checked against (docs/testing.md "llama.cpp, built here"): the goldens in ../shared/golden/llamacpp
# were made with this very commit.
#
#   scripts/build_llamacpp.sh            # builds once, then prints the cached bin directory
#   KVAUDIT_LLAMACPP_CACHE=DIR scripts/build_llamacpp.sh
#
# Cached by commit under $KVAUDIT_LLAMACPP_CACHE (default ~/.cache/kvaudit/llamacpp): a second run
# prints the path and builds nothing. Nothing of llama.cpp enters the repository.
set -euo pipefail

# node-llama-cpp 3.22.1 bundles llama.cpp release v0.5.0 of its binaries, commit de3ff815 (its
# llama/llama.cpp.info.json and the bundle's HEAD).
readonly PACKAGE="node-llama-cpp@3.22.1"
readonly COMMIT="de3ff815ea7d559ee917f063901b8986f038abc6"
readonly TOOLS=(llama-server llama-bench llama-perplexity llama-cli)

cache="${KVAUDIT_LLAMACPP_CACHE:-$HOME/.cache/kvaudit/llamacpp}/$COMMIT"
bin="$cache/build/bin"

built() {
  local t
  for t in "${TOOLS[@]}"; do [[ -x "$bin/$t" ]] || return 1; done
}

if built; then
  echo "$bin"
  exit 0
fi

for tool in npm git cmake tar; do
  command -v "$tool" >/dev/null || { echo "build_llamacpp.sh: $tool is missing; hint: apt-get install $tool (Debian 12 has npm, git, cmake, tar)" >&2; exit 2; }
done

mkdir -p "$cache"
if [[ ! -d "$cache/src/.git" ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
  tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/gitRelease.bundle
  head="$(git bundle list-heads "$work/package/llama/gitRelease.bundle" | awk '{print $1; exit}')"
  if [[ "$head" != "$COMMIT" ]]; then
    echo "build_llamacpp.sh: $PACKAGE bundles llama.cpp $head, not $COMMIT; hint: update COMMIT and the goldens' notes together" >&2
    exit 2
  fi
  rm -rf "$cache/src"
  git clone --quiet "$work/package/llama/gitRelease.bundle" "$cache/src"
  git -C "$cache/src" checkout --quiet "$COMMIT"
fi

# GGML_NATIVE: this machine's ISA (the peer figures are llama.cpp at its best here); no curl (no
# network at run time); no tests or examples beyond the tools.
cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$cache/build" --target "${TOOLS[@]}" -j "$(nproc)" >&2
built || { echo "build_llamacpp.sh: the build did not produce ${TOOLS[*]} in $bin" >&2; exit 1; }
echo "$bin"
