#!/usr/bin/env bash
# Builds llama.cpp's own tools (llama-server, llama-bench, llama-perplexity, llama-cli, llama-quantize,
# and kvaudit's llamacpp_matmul_dump linked against its libraries) from the
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
readonly TOOLS=(llama-server llama-bench llama-perplexity llama-cli llama-quantize)

cache="${KVAUDIT_LLAMACPP_CACHE:-$HOME/.cache/kvaudit/llamacpp}/$COMMIT"
bin="$cache/build/bin"

built() {
  local t
  for t in "${TOOLS[@]}"; do [[ -x "$bin/$t" ]] || return 1; done
}

# kvaudit's probe into llama.cpp's weight products (scripts/llamacpp_matmul_dump.cc), linked against
# the static libraries of this build; rebuilt when its source changes (sha256 kept beside it).
dump_tool() {
  local root src out sum
  root="$(cd "$(dirname "$0")/.." && pwd)"
  src="$root/scripts/llamacpp_matmul_dump.cc"
  out="$bin/llamacpp_matmul_dump"
  sum="$(sha256sum "$src" | cut -d' ' -f1)"
  [[ -x "$out" && "$(cat "$out.sha256" 2>/dev/null)" == "$sum" ]] && return 0
  "${CXX:-c++}" -std=c++17 -O2 -I"$cache/src/include" -I"$cache/src/ggml/include" "$src" -o "$out" \
    "$cache/build/src/libllama.a" "$cache/build/ggml/src/libggml.a" "$cache/build/ggml/src/libggml-cpu.a" \
    "$cache/build/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl -lm >&2
  echo "$sum" >"$out.sha256"
}

if built; then
  dump_tool
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
dump_tool
echo "$bin"
