# Convenience wrapper; the scripts are the source of truth.
.PHONY: all test run clean
all:
	bash scripts/build.sh
test:
	bash scripts/test.sh
run:
	bash scripts/run.sh
clean:
	rm -rf build
