# Thin wrapper over CMake. `make run` installs what is missing, builds, and
# trains on the embedded default; `make test` runs the whole suite (CTest).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test run bench clean
all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure

run: build
	$(BUILD)/axonn train

clean:
	rm -rf $(BUILD)
