# tessel's front door. `make demo` and `make test` each do their own set-up: install the Debian
# packages (scripts/setup.sh, idempotent), configure with CMake + Ninja, build, then run.
BUILD ?= build
BUILD_TYPE ?= RelWithInfoAndAsserts
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test test-gpu test-sanitize bundle bench clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD)

# The main job on its embedded default: a small built-in CNN imported, built on its default
# schedules, tuned on this CPU for about two minutes, built again from the tuning log, and both
# builds run side by side.
demo: build
	$(BUILD)/tools/tessel demo

# Every test has its own CTest timeout (tests/CMakeLists.txt). Tests that need a GPU are reported as
# skipped on a machine without one.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j2

# On a GPU host: the tests tagged [gpu] (CUDA kernels, the GPU measurement harness), run by their
# programs directly, so that a skip (no usable GPU) fails this target. The bundle's bin/test-gpu
# runs the same tests where there is no build.
GPU_TESTS = tests/cuda/test_cuda tests/measure/test_measure tests/runtime/test_runtime tests/tools/test_tools
test-gpu: build
	@status=0; for t in $(GPU_TESTS); do \
	  $(BUILD)/$$t "[gpu]"; rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "test-gpu: $$t skipped its GPU tests: no usable GPU here" >&2; status=1; \
	  elif [ $$rc -ne 0 ]; then echo "test-gpu: $$t failed" >&2; status=1; fi; \
	done; exit $$status

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS=-DTESSEL_SANITIZE=ON

# A self-contained directory (static LLVM, rpath'd shared libraries) for a GPU host.
bundle: setup
	bash scripts/make_bundle.sh

# CPU benchmarks against OpenBLAS and memcpy (see experiments/README.md).
bench: setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTESSEL_BUILD_EXPERIMENTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)
	BUILD=$(BUILD) bash experiments/cpu_baselines/run.sh
	BUILD=$(BUILD) bash experiments/cpu_baselines/run_matmul.sh

clean:
	rm -rf $(BUILD) build-asan bundle
