# Entry points. `make demo` and `make test` work on a fresh Debian 12 machine (they install the
# Debian packages they need via scripts/setup.sh first).
JOBS ?= 2
BIN := build/release/kvaudit
MODEL := models/kvq-code-16m

.PHONY: setup build test test-avx2 demo asan fuzz fuzz-smoke clean

setup:
	bash scripts/setup.sh

build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

test: build
	ctest --preset release -j $(JOBS)

# The portable build (-march=x86-64-v3: AVX2, no AVX-512) and its whole suite; the same bits as
# the native build (tests/unit/kv_cross_build_bits_test.cc).
test-avx2: setup
	cmake --preset avx2 >/dev/null
	cmake --build --preset avx2 -j $(JOBS)
	ctest --preset avx2 -j $(JOBS)

demo: build
	$(BIN) info --model $(MODEL)
	$(BIN) generate --model $(MODEL) --prompt "def fibonacci(n):" --max-tokens 64 --temp 0
	$(BIN) score --model $(MODEL) --data data/eval-docs.jsonl --ctx 1024
	$(BIN) formats
	$(BIN) eval --model $(MODEL) --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --ctx 1024 --windows 4 --out build/demo-eval --restart
	$(BIN) probe --model $(MODEL) --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --family needle,drift --variant code \
	  --lengths 512,1024 --depths 0,50,100 --n 2 --out build/demo-probe --restart

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
