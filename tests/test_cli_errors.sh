#!/usr/bin/env bash
# cli_errors: every bad input makes `axonn` exit with status 2 after printing
# exactly one line "axonn: error: ..." on stderr that names the offending input
# (flag or file), and leaves nothing half-written (no new files in --out or
# anywhere in the work dir, no *.tmp* files). Multi-rank errors must not hang
# and are printed once, by rank 0. Also: --help of each command exits 0.
. "$(dirname "$0")/cli_lib.sh"
mkdir -p "$W/cap"     # captured stdout/stderr live here (excluded from snapshots)

# QUIET=1: the launcher takes -q (Open MPI: no banner when a rank exits non-zero), so
# stderr is the program's alone and must be exactly one line; otherwise only the
# "axonn:" lines are counted. TAG=1: --tag-output names the rank of each line.
QUIET=0; TAG=0
if "${MPI[@]}" -q -np 1 true >/dev/null 2>&1; then MPI+=(-q); QUIET=1; fi
if "${MPI[@]}" --tag-output -np 1 true >/dev/null 2>&1; then TAG=1; fi

TINY=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 16 --batch 8 --threads 1 --quiet)

# ---------------------------------------------------------------- inputs
python3 - "$W" "$FIX" <<'EOF'
import json, os, shutil, struct, sys
W, FIX = sys.argv[1], sys.argv[2]
def shard(path, toks, magic=20240520, version=1, count=None, cut=0):
    hdr = [0] * 256
    hdr[0], hdr[1], hdr[2] = magic, version, len(toks) if count is None else count
    b = struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks)
    with open(path, 'wb') as f: f.write(b[:len(b) - cut])
toks = [(i * 31 + 7) % 97 for i in range(400)]
os.makedirs(W + '/in', exist_ok=True)
shard(W + '/in/good.bin', toks)
shard(W + '/in/badmagic.bin', toks, magic=20240521)
shard(W + '/in/trunc.bin', toks, cut=100)
shard(W + '/in/bigtok.bin', toks[:200] + [97] + toks[201:])
# models: a copy of the fixture, then broken variants
src = FIX + '/gpt_tiny'
def model_dir(name):
    d = W + '/in/' + name; os.makedirs(d)
    shutil.copy(src + '/model.safetensors', d); shutil.copy(src + '/config.json', d)
    return d
model_dir('good')
d = model_dir('trunc')
b = open(d + '/model.safetensors', 'rb').read(); open(d + '/model.safetensors', 'wb').write(b[:len(b) - 1000])
d = model_dir('nocfg'); os.remove(d + '/config.json')
d = model_dir('badcfg'); open(d + '/config.json', 'w').write('{"n_layer": 2, "n_head": 4,, }\n')
# a well-formed safetensors without the tensor h.1.mlp.c_proj.bias
d = model_dir('missing')
b = open(d + '/model.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]; hdr = json.loads(b[8:8 + n]); data = b[8 + n:]
out, blobs, off = {}, [], 0
for k, v in hdr.items():
    if k == '__metadata__': out[k] = v; continue
    if k == 'h.1.mlp.c_proj.bias': continue
    s, e = v['data_offsets']; blob = data[s:e]
    out[k] = {'dtype': v['dtype'], 'shape': v['shape'], 'data_offsets': [off, off + len(blob)]}
    blobs.append(blob); off += len(blob)
h = json.dumps(out).encode(); h += b' ' * ((8 - len(h) % 8) % 8)
open(d + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(blobs))
os.makedirs(W + '/in/emptyrun/sub')
os.makedirs(W + '/in/emptyrun2/ckpt-000004')        # a checkpoint directory without its files
open(W + '/in/emptyrun/notes.txt', 'w').write('no checkpoint here\n')
json.dump({'steps': 3, 'no_such_option': 1}, open(W + '/in/unknown.json', 'w'))
open(W + '/in/noloss.jsonl', 'w').write('{"step": 1, "skipped": true}\n{"step": 2, "val_loss": 3.5}\n')
open(W + '/in/notokens.jsonl', 'w').write('{"step": 1, "loss": 3.5}\n')
open(W + '/in/invalid.json', 'w').write('{"steps": 3,\n "batch": }\n')
EOF
[ -f "$W/in/missing/model.safetensors" ] || { echo "cli_errors: 0 passed, 1 failed (input generation)"; exit 1; }

snapshot() { (cd "$W" && find . -path ./cap -prune -o -print | LC_ALL=C sort) >"$1"; }

# expect_err NAME NRANKS REGEX -- ARGS...: exit 2, one stderr line "axonn: error: ..." matching REGEX
# (extended regex; the flag or file that is at fault), no new files, no *.tmp*.
expect_err() {
  local name=$1 np=$2 re=$3; shift 4
  local out="$W/cap/$name.out" err="$W/cap/$name.err" rc
  snapshot "$W/cap/before"
  local tmo=${TMO:-60}
  # without --data, train would build the default corpus: these cases use the synthetic stream
  if [ "$1" = train ] && ! printf '%s\n' "$@" | grep -qx -- '--data'; then set -- "$@" --synthetic; fi
  if [ "$np" = 0 ]; then
    timeout "$tmo" "$BIN" "$@" >"$out" 2>"$err"; rc=$?
  elif [ "$np" = split4 ]; then   # ranks 0-2 run in $W/r012, rank 3 in $W/r3: same arguments, other files
    timeout "$tmo" "${MPI[@]}" -np 3 -wdir "$W/r012" "$BIN" "$@" : -np 1 -wdir "$W/r3" "$BIN" "$@" >"$out" 2>"$err"; rc=$?
  else
    timeout "$tmo" "${MPI[@]}" -np "$np" "$BIN" "$@" >"$out" 2>"$err"; rc=$?
  fi
  snapshot "$W/cap/after"
  local lines nerr first why=""
  lines=$(grep -c '' "$err")
  nerr=$(grep -c '^axonn: error:' "$err")
  first=$(head -n 1 "$err")
  if [ "$rc" = 124 ]; then why="hung (killed after $tmo s)"
  elif [ "$rc" != 2 ]; then why="exit code $rc, expected 2"
  elif [ "$nerr" != 1 ]; then why="$nerr 'axonn: error:' lines on stderr, expected 1"
  elif [ "$QUIET" = 1 ] || [ "$np" = 0 ]; then [ "$lines" = 1 ] || why="$lines lines on stderr, expected 1"
  fi
  if [ -z "$why" ] && [ "$QUIET" = 0 ] && [ "$np" != 0 ]; then first=$(grep -m1 '^axonn: error:' "$err"); fi
  if [ -z "$why" ]; then
    case "$first" in "axonn: error: "*) ;; *) why="stderr line does not start with 'axonn: error:'" ;; esac
  fi
  if [ -z "$why" ] && ! grep -qE -- "$re" <<<"$first"; then why="message does not name /$re/"; fi
  if [ -z "$why" ] && ! cmp -s "$W/cap/before" "$W/cap/after"; then
    why="files appeared: $(comm -13 "$W/cap/before" "$W/cap/after" | tr '\n' ' ')"
  fi
  if [ -z "$why" ]; then
    local tmps; tmps=$(find "$W" -path "$W/cap" -prune -o -name '*.tmp*' -print)
    [ -n "$tmps" ] && why="left temporary files: $tmps"
  fi
  if [ -z "$why" ]; then ok "$name: rc 2, '$first'"
  else
    bad "$name: $why"
    sed 's/^/       stderr: /' "$err" | head -n 12
  fi
}

# ---------------------------------------------------------------- command line
expect_err unknown_command 0 "frobnicate" -- frobnicate --steps 1
expect_err unknown_flag 0 "--bogus-flag" -- train "${TINY[@]}" --bogus-flag 3 --out "$W/o1"
expect_err steps_not_int 0 "--steps.*abc" -- train "${TINY[@]}" --steps abc --out "$W/o2"
expect_err lr_negative 0 "--lr" -- train "${TINY[@]}" --steps 2 --lr -1 --out "$W/o3"
expect_err grid_vs_ranks 0 "--grid" -- train "${TINY[@]}" --steps 2 --grid 2,1,1,1 --out "$W/o4"
expect_err grid_heads_3ranks 3 "--grid.*(n_head|n-head)|(n_head|n-head).*G_y" -- \
  train "${TINY[@]}" --steps 2 --grid 1,1,3,1 --out "$W/o5"
if [ "$TAG" = 1 ]; then   # which rank printed it: rank 0 only
  timeout 60 "${MPI[@]}" --tag-output -np 3 "$BIN" train "${TINY[@]}" --steps 2 --grid 1,1,3,1 --out "$W/o5" \
    >"$W/cap/tag.out" 2>"$W/cap/tag.err"
  tagged=$(grep -c 'axonn: error:' "$W/cap/tag.err"); r0=$(grep -c '^\[[0-9]*,0\]<stderr>:axonn: error:' "$W/cap/tag.err")
  if [ "$tagged" = 1 ] && [ "$r0" = 1 ]; then ok "grid_heads_3ranks: printed by rank 0 only"
  else bad "grid_heads_3ranks: $tagged error lines, $r0 from rank 0 (expected 1 and 1)"; sed 's/^/       stderr: /' "$W/cap/tag.err" | head; fi
fi
expect_err batch_vs_dz_3ranks 3 "--batch" -- train "${TINY[@]}" --steps 2 --grid 1,1,1,3 --out "$W/o6"
# context parallelism: the sequence must cut into 2C chunks, C must divide the ranks, and
# learned positions must reach the sequence length
expect_err cp_seq_3ranks 3 "--cp 3: the sequence length 16 must be a multiple of 2C = 6" -- \
  train "${TINY[@]}" --steps 2 --cp 3 --out "$W/o6b"
expect_err cp_vs_ranks 2 "--cp 3: D\*X\*Y\*Z\*C = 3, expected the number of ranks 2" -- \
  train "${TINY[@]}" --steps 2 --cp 3 --out "$W/o6c"
expect_err cp_positions 2 "--seq 32: expected 1..16 \(the model's n_positions\)" -- \
  train --n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 32 --batch 8 --threads 1 --quiet \
  --steps 2 --cp 2 --out "$W/o6d"
expect_err embd_vs_heads 0 "n[-_]embd" -- train "${TINY[@]}" --steps 2 --n-embd 30 --n-head 4 --out "$W/o7"
expect_err batch_vs_accum 0 "--batch|--grad-accum" -- train "${TINY[@]}" --steps 2 --batch 6 --grad-accum 4 --out "$W/o8"
expect_err seq_gt_block 0 "--seq" -- train "${TINY[@]}" --steps 2 --seq 32 --out "$W/o9"
expect_err recompute_unknown 0 "--recompute.*none, attn or block" -- train "${TINY[@]}" --steps 2 --recompute some --out "$W/o9r"
expect_err dtype_unknown 0 "--dtype fp16: expected fp32 or bf16" -- train "${TINY[@]}" --steps 2 --dtype fp16 --out "$W/o9d"
expect_err overlap_unknown 0 "--overlap oar,xyz: expected none, all or a comma list of oar, ors, oag, dp" -- train "${TINY[@]}" --steps 2 --overlap oar,xyz --out "$W/o9o"
expect_err bucket_zero 0 "--bucket-mb" -- train "${TINY[@]}" --steps 2 --bucket-mb 0 --out "$W/o9b"
expect_err zero_range 2 "--zero 2: expected an integer in \\[0, 1\\]" -- train "${TINY[@]}" --steps 2 --zero 2 --out "$W/o9z"
expect_err plan_zero_range 0 "--zero 3: expected an integer in \\[0, 1\\]" -- plan --ranks 4 --preset small --zero 3
expect_err peak_zero 0 "--peak-tflops" -- train "${TINY[@]}" --steps 2 --peak-tflops 0 --out "$W/o9p"
expect_err backend_unknown 0 "--backend nosuch.*compiled backends" -- train "${TINY[@]}" --steps 2 --backend nosuch --out "$W/o9b"
expect_err device_comm_unknown 0 "--device-comm nccl: expected auto .* or mpi" -- train "${TINY[@]}" --steps 2 --device-comm nccl --out "$W/o9n"
expect_err cuda_graph_cpu 0 "--cuda-graph: the cpu backend captures no graphs \(expected --backend cuda\)" -- train "${TINY[@]}" --steps 2 --cuda-graph --out "$W/o9g"
# a build with the CUDA backend on a machine without a GPU: one line, exit 2;
# without the backend compiled, the unknown-backend line
if ! "$BIN" --version | grep -q 'backends:.*cuda'; then
  expect_err backend_cuda_absent 0 "--backend cuda.*compiled backends" -- train "${TINY[@]}" --steps 2 --backend cuda --out "$W/o9c"
elif ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  expect_err backend_cuda_no_gpu 0 "--backend cuda: no usable CUDA device" -- train "${TINY[@]}" --steps 2 --backend cuda --out "$W/o9c"
  # bench comm takes the backend too (the calibration on the device path)
  expect_err bench_comm_cuda_no_gpu 0 "--backend cuda: no usable CUDA device" -- bench comm --backend cuda --max-kib 4
  # the devices a launcher left visible are named
  CUDA_VISIBLE_DEVICES=7 expect_err backend_cuda_visible_none 2 "--backend cuda: no usable CUDA device.*CUDA_VISIBLE_DEVICES=7" -- train "${TINY[@]}" --steps 2 --backend cuda --out "$W/o9c"
else
  echo "SKIP backend_cuda_no_gpu: this machine has a GPU"
fi
# an attention path the CUDA backend does not know: one line at start-up, with or without a GPU
if "$BIN" --version | grep -q 'backends:.*cuda'; then
  AXONN_CUDA_ATTN=fast expect_err cuda_attn_unknown 0 "AXONN_CUDA_ATTN=fast: expected tiled, mm, flash or auto" -- train "${TINY[@]}" --steps 2 --backend cuda --out "$W/o9c"
fi

# ---------------------------------------------------------------- option values
# zero, negative, non-finite and absurd values: one line naming the option and
# the accepted range, never a silent default. Rows: name | regex | flags.
printf '{"batch": 0}\n' >"$W/in/batch0.json"
printf '{"lr": "nan"}\n' >"$W/in/lrnan.json"
printf '{"text": "a b c"}\n' >"$W/in/docs.jsonl"
while IFS='|' read -r name re flags; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086
  expect_err "$name" 0 "$re" -- train "${TINY[@]}" --out "$W/ov" $flags
done <<ROWS
opt_batch_zero|--batch 0: .*\[1, 1048576\]|--batch 0
opt_batch_negative|--batch -8: .*\[1, |--batch -8
opt_steps_negative|--steps -1: .*\[1, |--steps -1
opt_steps_zero|--steps 0: |--steps 0
opt_seq_zero|--seq 0: .*\[1, |--seq 0
opt_lr_nan|--lr 'nan': expected a finite number|--lr nan
opt_lr_inf|--lr 'inf': expected a finite number|--lr inf
opt_lr_zero|--lr 0: .*\(0, 10\]|--lr 0
opt_lr_absurd|--lr 1e6: .*\(0, 10\]|--lr 1e6
opt_beta1_one|--beta1 1: .*\[0, 1\)|--beta1 1
opt_beta2_negative|--beta2 -0.1: .*\[0, 1\)|--beta2 -0.1
opt_eps_zero|--eps 0: .*\(0, 1\]|--eps 0
opt_clip_negative|--clip -1: |--clip -1
opt_weight_decay_nan|--weight-decay 'nan'|--weight-decay nan
opt_warmup_negative|--warmup -5: |--warmup -5
opt_grad_accum_zero|--grad-accum 0: |--grad-accum 0
opt_min_lr_frac_above_1|--min-lr-frac 2: .*\[0, 1\]|--min-lr-frac 2
opt_log_every_zero|--log-every 0: |--log-every 0
opt_val_batches_zero|--val-batches 0: |--val-batches 0
opt_threads_negative|--threads -2: |--threads -2
opt_n_embd_absurd|--n-embd 100000000: .*\[1, 65536\]|--n-embd 100000000
opt_n_layer_zero|--n-layer 0: |--n-layer 0
opt_vocab_negative|--vocab-size -1: |--vocab-size -1
opt_gx_zero|--gx 0: |--gx 0
opt_goldfish_h_zero|--goldfish-h 0: |--goldfish-h 0
opt_int_overflow|--steps '99999999999': expected an integer|--steps 99999999999
opt_config_batch_zero|batch0\.json: --batch 0: |--config $W/in/batch0.json
opt_config_lr_nan|lrnan\.json: --lr 'nan'|--config $W/in/lrnan.json
ROWS
expect_err opt_eval_batch_zero 0 "--batch 0: " -- eval --model "$W/in/good/model.safetensors" --data "$W/in/good.bin" --batch 0
expect_err opt_eval_seq_zero 0 "--seq 0: " -- eval --model "$W/in/good/model.safetensors" --data "$W/in/good.bin" --seq 0
expect_err opt_sample_temperature_nan 0 "--temperature 'nan'" -- sample --model "$W/in/good/model.safetensors" --prompt-tokens 1,2 --temperature nan
expect_err opt_sample_max_new_negative 0 "--max-new -1: " -- sample --model "$W/in/good/model.safetensors" --prompt-tokens 1,2 --max-new -1
expect_err opt_memorize_suffix_zero 0 "--suffix 0: " -- memorize --model "$W/in/good/model.safetensors" --docs "$W/in/docs.jsonl" --suffix 0
expect_err opt_prepare_val_frac_one 0 "--val-frac 1: .*\[0, 1\)" -- prepare --tokenizer x.json --out "$W/op" --val-frac 1 a.txt
expect_err opt_tokenizer_vocab_small 0 "--vocab-size 100: .*\[257, " -- tokenizer train --vocab-size 100 --out "$W/t.json" a.txt

# ---------------------------------------------------------------- data files
expect_err data_missing 0 "nothere\.bin" -- train "${TINY[@]}" --steps 2 --data "$W/in/nothere.bin" --out "$W/o10"
expect_err data_bad_magic 0 "badmagic\.bin" -- train "${TINY[@]}" --steps 2 --data "$W/in/badmagic.bin" --out "$W/o11"
expect_err data_truncated 0 "trunc\.bin" -- train "${TINY[@]}" --steps 2 --data "$W/in/trunc.bin" --out "$W/o12"
expect_err data_token_ge_vocab 0 "bigtok\.bin" -- train "${TINY[@]}" --steps 2 --data "$W/in/bigtok.bin" --out "$W/o13"
expect_err val_data_bad_magic 0 "badmagic\.bin" -- \
  train "${TINY[@]}" --steps 2 --data "$W/in/good.bin" --val-data "$W/in/badmagic.bin" --out "$W/o13b"

# ---------------------------------------------------------------- models, checkpoints, config files
INIT=(--seq 16 --batch 4 --steps 2 --threads 1 --quiet)
expect_err init_truncated 0 "trunc/model\.safetensors" -- train "${INIT[@]}" --init "$W/in/trunc/model.safetensors" --out "$W/o14"
expect_err init_no_config 0 "nocfg/config\.json" -- train "${INIT[@]}" --init "$W/in/nocfg/model.safetensors" --out "$W/o15"
expect_err init_bad_config 0 "badcfg/config\.json" -- train "${INIT[@]}" --init "$W/in/badcfg/model.safetensors" --out "$W/o16"
expect_err init_missing_tensor 0 "missing/model\.safetensors.*h\.1\.mlp\.c_proj\.bias" -- \
  train "${INIT[@]}" --init "$W/in/missing/model.safetensors" --out "$W/o17"
expect_err init_truncated_2ranks 2 "trunc/model\.safetensors" -- \
  train "${INIT[@]}" --grid 1,1,2,1 --init "$W/in/trunc/model.safetensors" --out "$W/o17b"
RES=(--seq 16 --batch 8 --steps 2 --threads 1 --quiet)
expect_err resume_no_ckpt 0 "emptyrun" -- train "${RES[@]}" --resume "$W/in/emptyrun" --out "$W/o18"
expect_err resume_nonexistent 0 "nosuchrun" -- train "${RES[@]}" --resume "$W/in/nosuchrun" --out "$W/o18b"
expect_err resume_with_size_flag 0 "--n-layer|--init/--resume|--resume" -- \
  train "${RES[@]}" --n-layer 3 --resume "$W/in/emptyrun" --out "$W/o18c"
expect_err config_unknown_key 0 "no_such_option" -- train "${TINY[@]}" --config "$W/in/unknown.json" --out "$W/o19"
expect_err config_invalid_json 0 "invalid\.json" -- train "${TINY[@]}" --config "$W/in/invalid.json" --out "$W/o20"
expect_err config_missing_file 0 "absent\.json" -- train "${TINY[@]}" --config "$W/in/absent.json" --out "$W/o20b"

# damaged checkpoints: each file is checked against manifest.json before use
"$BIN" train "${TINY[@]}" --synthetic --steps 2 --out "$W/in/run" >"$W/cap/run.out" 2>&1 || bad "could not make a checkpoint: $(tail -n 2 "$W/cap/run.out")"
ck() { rm -rf "$W/in/$1"; cp -r "$W/in/run/ckpt-000002" "$W/in/$1"; }
ck ck_flip;   python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[5000]^=1; open(p,"wb").write(b)' "$W/in/ck_flip/optim.safetensors"
ck ck_short;  python3 -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b[:-4])' "$W/in/ck_short/model.safetensors"
ck ck_nomark; rm "$W/in/ck_nomark/manifest.json"
ck ck_badmark; printf '{"format": "axonn checkpoint 1", "files": {' >"$W/in/ck_badmark/manifest.json"
ck ck_noentry; python3 -c 'import json,sys; p=sys.argv[1]; j=json.load(open(p)); del j["files"]["state.json"]; json.dump(j,open(p,"w"))' "$W/in/ck_noentry/manifest.json"
ck ck_state; sed -i 's/"step": 2/"step": 1/' "$W/in/ck_state/state.json"
# the manifest's checksum ranges (written in parallel: docs/reliability.md) edited: overlapping, leaving
# a gap, or a manifest longer than the header's layout (the file lengthened to match it)
cat >"$W/ranges.py" <<'EOF'
import json, sys
d, f, how = sys.argv[1], sys.argv[2], sys.argv[3]
p = d + '/manifest.json'; j = json.load(open(p)); e = j['files'][f]; n = e['bytes']; h = '0123456789abcdef'
if how == 'overlap': e['ranges'] = [[0, n - 100, h], [n - 200, 200, h]]
if how == 'gap': e['ranges'] = [[0, n // 2, h], [n // 2 + 1000, n - n // 2 - 1000, h]]
if how == 'longer':
    e['bytes'] = n + 8; e['ranges'] = [[0, n + 8, h]]; open(d + '/' + f, 'ab').write(bytes(8))
json.dump(j, open(p, 'w'))
EOF
ck ck_overlap; python3 "$W/ranges.py" "$W/in/ck_overlap" model.safetensors overlap
ck ck_gap;     python3 "$W/ranges.py" "$W/in/ck_gap" optim.safetensors gap
ck ck_header;  python3 "$W/ranges.py" "$W/in/ck_header" model.safetensors longer
expect_err ckpt_bit_flip 0 "ck_flip/optim\.safetensors: checksum" -- train "${RES[@]}" --resume "$W/in/ck_flip" --out "$W/o30"
expect_err ckpt_truncated 0 "ck_short/model\.safetensors: [0-9]+ bytes, the checkpoint manifest says [0-9]+ \(corrupt checkpoint: cut short in tensor 'ln_f\.bias'\)" -- train "${RES[@]}" --resume "$W/in/ck_short" --out "$W/o31"
expect_err ckpt_ranges_overlap 0 "ck_overlap/model\.safetensors: checksum ranges overlap at bytes \[[0-9]+, [0-9]+\) \(tensor '[^']+'\)" -- train "${RES[@]}" --resume "$W/in/ck_overlap" --out "$W/o31b"
expect_err ckpt_ranges_gap 0 "ck_gap/optim\.safetensors: bytes \[[0-9]+, [0-9]+\) \(tensor 'opt\.[mv]\.[^']+'\) are in no checksum range" -- train "${RES[@]}" --resume "$W/in/ck_gap" --out "$W/o31c"
expect_err ckpt_header_vs_manifest 0 "ck_header/model\.safetensors: the header ends the data at byte [0-9]+ \(tensor 'ln_f\.bias'\), the checkpoint manifest says [0-9]+ bytes" -- train "${RES[@]}" --resume "$W/in/ck_header" --out "$W/o31d"
expect_err ckpt_overlap_2ranks 2 "ck_overlap/model\.safetensors: checksum ranges overlap" -- train "${RES[@]}" --grid 1,1,2,1 --resume "$W/in/ck_overlap" --out "$W/o31e"
expect_err ckpt_no_manifest 0 "ck_nomark: not a complete checkpoint" -- train "${RES[@]}" --resume "$W/in/ck_nomark" --out "$W/o32"
expect_err ckpt_bad_manifest 0 "ck_badmark/manifest\.json: invalid" -- train "${RES[@]}" --resume "$W/in/ck_badmark" --out "$W/o33"
expect_err ckpt_manifest_no_entry 0 "manifest\.json: expected an entry .* for state\.json" -- train "${RES[@]}" --resume "$W/in/ck_noentry" --out "$W/o34"
expect_err ckpt_state_edited 0 "ck_state/state\.json: checksum" -- train "${RES[@]}" --resume "$W/in/ck_state" --out "$W/o35"
expect_err ckpt_only_partial 0 "--resume .*emptyrun2.*complete ckpt" -- train "${RES[@]}" --resume "$W/in/emptyrun2" --out "$W/o36"

# an output file only rank 0 opens: the failure must reach every rank (no hang)
mkdir -p "$W/o21" "$W/o21b"
expect_err metrics_unwritable 0 "nodir/m\.jsonl" -- train "${TINY[@]}" --steps 2 --metrics "$W/nodir/m.jsonl" --out "$W/o21"
TMO=20 expect_err metrics_unwritable_2ranks 2 "nodir/m\.jsonl" -- \
  train "${TINY[@]}" --steps 2 --grid 1,1,2,1 --metrics "$W/nodir/m.jsonl" --out "$W/o21b"

mkdir -p "$W/o21c" "$W/o21d"
expect_err tensorboard_unwritable 0 "--tensorboard: .*good\.bin/tb: cannot create directory" -- \
  train "${TINY[@]}" --steps 2 --tensorboard "$W/in/good.bin/tb" --out "$W/o21c"
TMO=20 expect_err tensorboard_unwritable_2ranks 2 "--tensorboard: .*good\.bin/tb: cannot create directory" -- \
  train "${TINY[@]}" --steps 2 --grid 1,1,2,1 --tensorboard "$W/in/good.bin/tb" --out "$W/o21d"

# ---------------------------------------------------------------- plot
expect_err plot_no_metrics 0 "plot: expected one or more METRICS\.jsonl" -- plot --out "$W/p.svg"
expect_err plot_no_out 0 "--out: expected the SVG file" -- plot "$W/in/notokens.jsonl"
expect_err plot_missing_file 0 "in/none\.jsonl: cannot open" -- plot "$W/in/none.jsonl" --out "$W/p.svg"
expect_err plot_no_loss_lines 0 "noloss\.jsonl: no training loss lines" -- plot "$W/in/noloss.jsonl" --out "$W/p.svg"
expect_err plot_not_json 0 "invalid\.json:1: not a JSON object" -- plot "$W/in/invalid.json" --out "$W/p.svg"
expect_err plot_x_unknown 0 "--x 'time': expected step or tokens" -- plot "$W/in/notokens.jsonl" --x time --out "$W/p.svg"
expect_err plot_x_tokens_missing 0 "notokens\.jsonl:1: no \"tokens\"" -- \
  plot "$W/in/notokens.jsonl" --x tokens --out "$W/p.svg"
expect_err plot_smooth_zero 0 "--smooth 0" -- plot "$W/in/notokens.jsonl" --smooth 0 --out "$W/p.svg"
expect_err plot_out_unwritable 0 "nodir/p\.svg: cannot create" -- plot "$W/in/notokens.jsonl" --out "$W/nodir/p.svg"

# ---------------------------------------------------------------- a file only one rank cannot read
# Four ranks given the same relative paths, rank 3 started in another working
# directory (as a node with its own local scratch would be): there the shard,
# the model or the config is broken. Every rank must stop with the same line
# (rank 3's, printed once) and exit 2 promptly, none left in a collective.
mkdir -p "$W/r012/m" "$W/r3/m"
cp "$W/in/good.bin" "$W/r012/shard.bin"; cp "$W/in/trunc.bin" "$W/r3/shard.bin"
cp "$W/in/good/"* "$W/r012/m/"; cp "$W/in/trunc/"* "$W/r3/m/"
TMO=30 expect_err rank3_data_truncated split4 "shard\.bin: truncated" -- \
  train "${TINY[@]}" --steps 2 --grid 1,2,2,1 --data shard.bin --out o
TMO=30 expect_err rank3_init_truncated split4 "m/model\.safetensors" -- \
  train "${INIT[@]}" --grid 2,1,2,1 --init m/model.safetensors --out o
TMO=30 expect_err rank3_eval_model_truncated split4 "m/model\.safetensors" -- \
  eval --model m/model.safetensors --data shard.bin --grid 4,1,1,1 --threads 1
cp -r "$W/in/run/ckpt-000002" "$W/r012/ck"; cp -r "$W/in/ck_flip" "$W/r3/ck"
TMO=30 expect_err rank3_ckpt_corrupt split4 "ck/optim\.safetensors: checksum" -- \
  train "${RES[@]}" --grid 1,1,2,2 --resume ck --out o
cp "$W/in/good.bin" "$W/r3/shard.bin"; rm "$W/r3/m/config.json"
TMO=30 expect_err rank3_eval_no_config split4 "m/config\.json" -- \
  eval --model m/model.safetensors --data shard.bin --grid 1,2,2,1 --threads 1
if [ "$TAG" = 1 ]; then
  timeout 30 "${MPI[@]}" --tag-output -np 3 -wdir "$W/r012" "$BIN" eval --model m/model.safetensors --data shard.bin --threads 1 \
    : -np 1 -wdir "$W/r3" "$BIN" eval --model m/model.safetensors --data shard.bin --threads 1 >"$W/cap/tag.out" 2>"$W/cap/tag.err"
  tagged=$(grep -c 'axonn: error:' "$W/cap/tag.err"); r0=$(grep -c '^\[[0-9]*,0\]<stderr>:axonn: error: .*m/config\.json' "$W/cap/tag.err")
  if [ "$tagged" = 1 ] && [ "$r0" = 1 ]; then ok "rank3_eval_no_config: rank 3's error printed once, by rank 0"
  else bad "rank3_eval_no_config: $tagged error lines, $r0 from rank 0 naming config.json (expected 1 and 1)"; sed 's/^/       stderr: /' "$W/cap/tag.err" | head; fi
fi

# ---------------------------------------------------------------- eval and sample
expect_err eval_no_data 0 "--data" -- eval --model "$W/in/good/model.safetensors" --threads 1
expect_err eval_bad_data 0 "bigtok\.bin" -- eval --model "$W/in/good/model.safetensors" --data "$W/in/bigtok.bin" --threads 1
expect_err eval_missing_model 0 "nomodel\.safetensors" -- eval --model "$W/in/good/nomodel.safetensors" --data "$W/in/good.bin" --threads 1
expect_err eval_seq_gt_block 0 "--seq" -- eval --model "$W/in/good/model.safetensors" --data "$W/in/good.bin" --seq 17 --threads 1
expect_err memorize_no_tokenizer 0 "tokenizer" -- memorize --model "$W/in/good/model.safetensors" --docs "$W/in/docs.jsonl" --threads 1
expect_err memorize_missing_docs 0 "nodocs\.jsonl" -- memorize --model "$W/in/good/model.safetensors" --docs "$W/in/nodocs.jsonl" --tokenizer "$FIX/tokenizer/texts.jsonl" --threads 1
expect_err memorize_suffix 0 "--suffix" -- memorize --model "$W/in/good/model.safetensors" --docs "$W/in/docs.jsonl" --suffix 0 --threads 1
expect_err sample_token_ge_vocab 0 "--prompt-tokens" -- sample --model "$W/in/good/model.safetensors" --prompt-tokens 1,2,67 --threads 1
expect_err sample_token_ge_vocab_2ranks 2 "--prompt-tokens" -- \
  sample --model "$W/in/good/model.safetensors" --prompt-tokens 1,2,67 --grid 1,1,2,1 --threads 1
expect_err sample_no_prompt 0 "--prompt-tokens" -- sample --model "$W/in/good/model.safetensors" --threads 1

# ---------------------------------------------------------------- valid input must not be rejected
# --seq was not given: its default must fit the model that --init loads (n_positions 16)
"$BIN" train --init "$W/in/good/model.safetensors" --synthetic --batch 4 --steps 1 --threads 1 --quiet --out "$W/o22" \
  >"$W/cap/init.out" 2>"$W/cap/init.err"; rc=$?
if [ "$rc" = 0 ] && [ -f "$W/o22/model.safetensors" ]; then ok "train --init without --seq: runs (seq defaults to the model's n_positions)"
else bad "train --init without --seq: exit $rc: $(head -n 1 "$W/cap/init.err")"; fi
rm -rf "$W/o22"

# ---------------------------------------------------------------- --help
for c in "" train eval sample plot; do
  "$BIN" $c --help >"$W/cap/help.out" 2>"$W/cap/help.err"; rc=$?
  if [ "$rc" = 0 ] && grep -q '^usage:' "$W/cap/help.out" && [ ! -s "$W/cap/help.err" ]; then
    ok "axonn ${c:-(no command)} --help: exit 0, usage on stdout"
  else
    bad "axonn ${c:-(no command)} --help: exit $rc, usage line $(grep -c '^usage:' "$W/cap/help.out"), stderr $(wc -c <"$W/cap/help.err") bytes"
  fi
done
# NCCL is opened at run time: --version names the one it would load, and with
# the library hidden the binary still starts and says why in one line
if "$BIN" --version | grep -q 'backends:.*cuda'; then
  if "$BIN" --version | grep -q '^  cuda collectives: NCCL 2\.'; then ok "--version: the NCCL it loads"
  else bad "--version: no NCCL line"; "$BIN" --version; fi
  AXONN_NCCL_LIB=/nonexistent/libnccl.so.2 "$BIN" --version >"$W/cap/v.out" 2>&1; rc=$?
  if [ "$rc" = 0 ] && [ "$(grep -c 'NCCL: cannot load' "$W/cap/v.out")" = 1 ] \
     && grep -q 'AXONN_NCCL_LIB=/nonexistent/libnccl.so.2.*LD_LIBRARY_PATH.*--device-comm mpi' "$W/cap/v.out"; then
    ok "--version with NCCL hidden: starts, one line with the way out"
  else bad "--version with NCCL hidden: exit $rc"; cat "$W/cap/v.out"; fi
fi
"$BIN" >"$W/cap/none.out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q 'usage:' "$W/cap/none.out"; then ok "axonn (no command): exit 2 with usage"
else bad "axonn (no command): exit $rc (expected 2 with usage)"; fi

finish cli_errors
