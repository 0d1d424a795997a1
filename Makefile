# tprof's short commands. Everything builds into build/ through CMake (see CMakeLists.txt).
#   make deps      install the Debian packages (apt-get; sudo when not root) and make the project's
#                  Python environment .venv (requirements-dev.txt)
#   make           build the library, the tprof command, examples, benchmarks and tests
#   make demo      run the bundled training loop profiled and print its report
#   make test      run every test (ctest)
#   make sanitize  run the tests under AddressSanitizer and UndefinedBehaviorSanitizer
#   make fuzz      run each libFuzzer target for FUZZ_SECONDS
#   make bench     run the benchmarks (figures go into BENCHMARKS.md by hand)
#   make lint      clang-tidy, cppcheck and a clang-format check; ruff and mypy --strict
#   make profile   run the demo training loop (C) profiled: run directories under PROFILE_DIR
#                  (tprof_runs), each with its traces, summary files and report.html (in tprof/)
#   make profile-train      train the PyTorch example (examples/train_torch.py, CPU, .venv)
#                           profiled into PROFILE_DIR/train: STEPS steps per epoch (30), 2 epochs
#   make profile-check      tprof check on every run directory of PROFILE_DIR
#                           (ARGS="--analysis --report": each run's analysis and report.html too)
#   make profile-dashboard  tprof serve PROFILE_DIR: the live dashboard (127.0.0.1:PORT)
#   make profile-clean      remove PROFILE_DIR (the runs, not the build)
#                  ARGS: more arguments for a profile target's command, after its own: tprof keys
#                  for profile and profile-train (ARGS="--profiling.active=5"), options of
#                  tprof check and tprof serve for profile-check and profile-dashboard
#   make install   install the header, libraries, command, tprof.pc and the CMake package
#                  under PREFIX (default /usr/local; DESTDIR is honoured)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
PREFIX ?= /usr/local
PROFILE_DIR ?= tprof_runs
PORT ?= 8000
STEPS ?= 30
ARGS ?=
export ARGS

.PHONY: all build deps demo test sanitize fuzz bench lint format install clean \
	profile profile-train profile-check profile-dashboard profile-clean

all: build

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

deps:
	scripts/install-deps

demo: build
	scripts/demo $(BUILD)

# The profiled demos (scripts/demo writes PROFILE_DIR/demo, or PROFILE_DIR/train for the PyTorch
# example), their check and their dashboard; ARGS reaches each command through the environment.
profile: build
	PROFILE_DIR=$(PROFILE_DIR) scripts/demo $(BUILD) mlp

profile-train: build
	PROFILE_DIR=$(PROFILE_DIR) STEPS=$(STEPS) scripts/demo $(BUILD) torch

profile-check: build
	@dirs=; for d in $(PROFILE_DIR)/*/; do [ -d "$$d" ] && dirs="$$dirs $$d"; done; \
	[ -n "$$dirs" ] || { echo "no run directories in $(PROFILE_DIR): run make profile" \
	  "or make profile-train" >&2; exit 2; }; \
	set -f; $(BUILD)/tprof check $$dirs $$ARGS

profile-dashboard: build
	$(BUILD)/tprof serve $(PROFILE_DIR) --port $(PORT) $$ARGS

profile-clean:
	rm -rf $(PROFILE_DIR)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# intercept_tls_get_addr=0: up to GCC 13 (Debian 12's) the sanitizer runtime's __tls_get_addr
# interceptor takes a dynamic TLS block that happens to sit at offset 0x10 of a page for a pre-2.25
# glibc header and reads the words before it; LeakSanitizer's tracer then dies with "Tracer caught
# signal 11" after every test passed (under load, on most runs of test_record_windows). Leaks are
# still reported with it off (a pointer held only in a dynamic TLS block could read as one; none does).
sanitize:
	cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DTPROF_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-sanitize -j$(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS) -LE python

fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPROF_FUZZ=ON -DTPROF_TESTS=OFF
	cmake --build build-fuzz -j$(JOBS)
	scripts/fuzz build-fuzz $(FUZZ_SECONDS)

bench: build
	scripts/bench $(BUILD)

lint: build
	scripts/lint $(BUILD)

# tprof.pc and the CMake package find the prefix from their own place: any PREFIX works.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-sanitize build-fuzz
