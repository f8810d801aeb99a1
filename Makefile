# Entry points. `make demo` and `make test` work on a fresh Debian 12 machine (they install the
# Debian packages they need via scripts/setup.sh first).
JOBS ?= 2
BIN := build/release/kvaudit
MODEL := models/kvq-code-16m

.PHONY: setup build test test-paths demo asan fuzz fuzz-smoke clean

setup:
	bash scripts/setup.sh

build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

test: build
	ctest --preset release -j $(JOBS)

# The suite again on the other kernel paths of the same binary (KVAUDIT_ISA forces one; `make test`
# runs the CPU's best): the whole suite on avx2, the unit and golden suites on portable (every
# kernel and its twin, the bit hashes of tests/unit/kv_cross_build_bits_test.cc). Portable's twins
# use libm's fma() per element (no FMA instruction in baseline x86-64): ~15x the avx512 path's time,
# so its model/cli suites are left to tests/model/model_isa_paths_test.cc, which compares the
# portable path's logits with the others in every run. A path this CPU lacks is skipped.
test-paths: build
	@if KVAUDIT_ISA=avx2 $(BIN) formats >/dev/null 2>&1; then \
	  echo "== whole suite on the avx2 kernel path"; KVAUDIT_ISA=avx2 ctest --preset release -j $(JOBS) || exit 1; \
	else echo "== avx2: this CPU cannot run it, skipped"; fi
	@echo "== unit and golden suites on the portable kernel path"
	KVAUDIT_ISA=portable ctest --preset release -j $(JOBS) -L 'unit|golden'

# The main job on the bundled model (docs/audit.md): eval, the code workload's probes, a
# recommendation under 1800 bytes per token, the verdict block, and the page
# build/demo-audit/report.html (docs/report.md). About 2.5 minutes on 2 threads
# (BENCHMARKS.md "kvaudit audit"). Exit 1 is a verdict (a configuration fails the policy), not a
# failure of the demo; exit 2 (bad input) is.
demo: build
	$(BIN) info --model $(MODEL)
	$(BIN) audit --model $(MODEL) --data data/eval-docs.jsonl --ctx 1024 --windows 4 --budget 1800 --policy balanced \
	  --threads 2 --out build/demo-audit --restart || [ $$? -eq 1 ]

asan: setup
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

fuzz: setup
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS) --target kvaudit_fuzz

fuzz-smoke: fuzz
	bash scripts/fuzz_smoke.sh build/fuzz

clean:
	rm -rf build
