# Entry points. `make demo` and `make test` work on a fresh Debian 12 machine (they install the
# Debian packages they need via scripts/setup.sh first). `make demo` installs and compiles only what
# the kvaudit binary needs; `make test` adds the test suite's packages and targets.
JOBS ?= 2
BIN := build/release/kvaudit
MODEL := models/kvq-code-16m

.PHONY: setup setup-tests tool build test test-paths demo asan fuzz fuzz-smoke clean

setup:
	bash scripts/setup.sh

setup-tests:
	bash scripts/setup.sh tests

# The kvaudit binary alone (the library and the CLI; no tests, tools or benchmarks).
tool: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS) --target kvaudit

build: setup-tests
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

# The endpoint tests run llama.cpp's own llama-server, built once outside the repository and cached
# (scripts/build_llamacpp.sh prints its bin directory; docs/testing.md).
test: build
	bin="$$(bash scripts/build_llamacpp.sh)" && KVAUDIT_LLAMACPP_BIN="$$bin" ctest --preset release -j $(JOBS)

# The suites where kernel paths can differ, again on the other paths of the same binary (KVAUDIT_ISA
# forces one; `make test` runs the CPU's best): unit, golden and model on avx2 (every kernel and its
# twin, the bit hashes of tests/unit/kv_cross_build_bits_test.cc, the engine end to end), unit and
# golden on portable. The orchestration suites (cli, browser: servers, Slurm, audits, the report)
# run once, on the best path: the numbers they consume are the engine's, and those are pinned
# bitwise across paths by the suites above. Portable's twins use libm's fma() per element (no FMA
# instruction in baseline x86-64): ~15x the avx512 path's time, so its model suite is left to
# tests/model/model_isa_paths_test.cc, which compares the portable path's logits with the others in
# every run. A path this CPU lacks is skipped, and so is a rerun of the path `make test` ran (on a
# CPU without AVX-512, avx2 is the best path: the same suites on the same path give the same result).
# The golden suite runs llama.cpp itself (the engine=llama.cpp arithmetic check): its tools too.
test-paths: build
	@bin="$$(bash scripts/build_llamacpp.sh)" && export KVAUDIT_LLAMACPP_BIN="$$bin" && \
	if ! KVAUDIT_ISA=avx2 $(BIN) formats >/dev/null 2>&1; then \
	  echo "== avx2: this CPU cannot run it, skipped"; \
	elif ! KVAUDIT_ISA=avx512 $(BIN) formats >/dev/null 2>&1; then \
	  echo "== avx2: this CPU's best path, which make test ran: not repeated"; \
	else \
	  echo "== unit, golden and model suites on the avx2 kernel path"; \
	  KVAUDIT_ISA=avx2 ctest --preset release -j $(JOBS) -L 'unit|golden|model' || exit 1; \
	fi
	@echo "== unit and golden suites on the portable kernel path"
	bin="$$(bash scripts/build_llamacpp.sh)" && KVAUDIT_LLAMACPP_BIN="$$bin" KVAUDIT_ISA=portable \
	  ctest --preset release -j $(JOBS) -L 'unit|golden'

# The main job on the bundled model (docs/audit.md): eval, the code workload's probes, a
# recommendation under 1800 bytes per token, the verdict block, and the page
# build/demo-audit/report.html (docs/report.md). About 2.5 minutes on 2 threads
# (BENCHMARKS.md "kvaudit audit"). Exit 1 is a verdict (a configuration fails the policy), not a
# failure of the demo; exit 2 (bad input) is.
demo: tool
	$(BIN) info --model $(MODEL)
	$(BIN) audit --model $(MODEL) --data data/eval-docs.jsonl --ctx 1024 --windows 4 --budget 1800 --policy balanced \
	  --threads 2 --out build/demo-audit --restart || [ $$? -eq 1 ]

# ASan + UBSan: the unit and golden suites (every parser, kernel and twin; the model and cli suites
# under the sanitizers take hours on 2 cores and exercise the same code through the engine).
asan: setup
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS) --target kvaudit_unit_tests kvaudit_golden_tests
	ctest --preset asan -j $(JOBS) -L 'unit|golden'

fuzz:
	bash scripts/setup.sh fuzz
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS) --target kvaudit_fuzz

fuzz-smoke: fuzz
	bash scripts/fuzz_smoke.sh build/fuzz

clean:
	rm -rf build
