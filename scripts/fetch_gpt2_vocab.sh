#!/usr/bin/env bash
# Fetches GPT-2's BPE ranks (gpt2.tiktoken, 835,554 bytes) for the tokenizer
# tests, into tests/fixtures/tokenizer/gpt2.tiktoken (or the path $1). It ships
# inside the openai-whisper source package on PyPI, so it comes through pip
# (pinned version, checked by SHA-256) rather than from an ad-hoc URL.
# Idempotent: exits 0 at once when the file is already there and intact.
set -euo pipefail
dest="${1:-}"
[ -n "$dest" ] && [ "${dest#/}" = "$dest" ] && dest="$PWD/$dest"     # relative to the caller
cd "$(dirname "$0")/.."
dest="${dest:-tests/fixtures/tokenizer/gpt2.tiktoken}"
version=20250625
sha=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930
py="${PYTHON:-python3}"

check() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha" ]; }
check "$dest" && exit 0

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download --quiet --no-deps "openai-whisper==$version" -d "$tmp" >&2
# The release is an sdist (.tar.gz); a wheel (.whl, a zip) is handled too.
"$py" - "$tmp" "$tmp/gpt2.tiktoken" <<'PY'
import glob, sys, tarfile, zipfile
src, out = sys.argv[1], sys.argv[2]
pkg = sorted(glob.glob(src + "/openai*whisper*"))[0]
name = "whisper/assets/gpt2.tiktoken"
if pkg.endswith(".whl"):
    data = zipfile.ZipFile(pkg).read(name)
else:
    with tarfile.open(pkg) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("/" + name))
        data = tf.extractfile(member).read()
open(out, "wb").write(data)
PY
check "$tmp/gpt2.tiktoken" || { echo "fetch_gpt2_vocab: SHA-256 mismatch for gpt2.tiktoken" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
mv "$tmp/gpt2.tiktoken" "$dest.tmp.$$" && mv "$dest.tmp.$$" "$dest"
echo "fetch_gpt2_vocab: wrote $dest" >&2
