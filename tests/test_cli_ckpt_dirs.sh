#!/usr/bin/env bash
# cli_ckpt_dirs: checkpoints never lose what the user keeps in --out, and a
# bad newest checkpoint never blocks a relaunch (docs/reliability.md).
#  (a) the user's names survive pruning: directories ckpt-best/,
#      ckpt-000100.bak/, ckpt-12/ (not as the trainer prints a step),
#      ckpt-000002.corrupt/ and a file ckpt-notes.txt, beside a run that saves
#      every 2 steps with --keep 2; of the trainer's own, only the 2 newest stay.
#  (b) a byte flipped in the newest checkpoint's data, on 1 rank and on 2
#      (D = 2, checksum ranges of 4 KiB: the replicas split the verification,
#      so only one of them reads the bad range, and both must pass it over):
#      --resume auto names the checkpoint, the file and the byte range, sets it
#      aside as ckpt-N.corrupt, resumes from the next older one, and the final
#      model is byte-identical to an uninterrupted run's; the set-aside one is
#      left as it is and not counted by --keep.
#  (c) an explicit --resume of that corrupt checkpoint is refused: one line
#      naming it, exit 2, nothing written.
#  (d) every checkpoint corrupt: --resume auto says so and starts fresh (the
#      uninterrupted run again).
#  (e) a crash between the manifest and the rename: a complete ckpt-N.tmp is
#      adopted as ckpt-N; a crash in a same-step replacement (ckpt-N moved to
#      ckpt-N.old, the new one not yet in place) puts the old one back; both
#      resume to the uninterrupted run's bytes.
. "$(dirname "$0")/cli_lib.sh"

SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2 --synthetic)
same() { if cmp -s "$2" "$3"; then ok "$1: final model byte-identical"; else bad "$1: $2 and $3 differ"; fi; }
# flip DIR FILE: one byte in the middle of a checkpoint file's data
flip() {
  python3 - "$1/$2" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); i = len(b) * 2 // 3; b[i] ^= 0x10
open(p, 'wb').write(b)
EOF
}
ls_out() { (cd "$1" && ls -d ckpt-* 2>/dev/null | tr '\n' ' '); }

run ref 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --out "$W/ref" || finish cli_ckpt_dirs
run ref2 2 train "${SIZE[@]}" "${RUN[@]}" --grid 2,1,1,1 --steps 8 --out "$W/ref2" || finish cli_ckpt_dirs

# ---------------------------------------------------------------- (a) the user's names
mkdir -p "$W/a/ckpt-best" "$W/a/ckpt-000100.bak" "$W/a/ckpt-12" "$W/a/ckpt-000002.corrupt"
for d in ckpt-best ckpt-000100.bak ckpt-12 ckpt-000002.corrupt; do echo mine >"$W/a/$d/notes.txt"; done
echo mine >"$W/a/ckpt-notes.txt"
if run a 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 2 --keep 2 --out "$W/a"; then
  got=$(ls_out "$W/a")
  want="ckpt-000002.corrupt ckpt-000006 ckpt-000008 ckpt-000100.bak ckpt-12 ckpt-best ckpt-notes.txt "
  if [ "$got" = "$want" ]; then ok "a: the user's ckpt-* names survive, the trainer kept its 2 newest: $got"
  else bad "a: --out holds '$got', expected '$want'"; fi
  n=$(cat "$W/a"/ckpt-best/notes.txt "$W/a"/ckpt-000100.bak/notes.txt "$W/a"/ckpt-12/notes.txt \
        "$W/a"/ckpt-000002.corrupt/notes.txt "$W/a/ckpt-notes.txt" 2>/dev/null | grep -c mine)
  if [ "$n" = 5 ]; then ok "a: the user's files are untouched"; else bad "a: $n of the user's 5 files left"; fi
fi

# ---------------------------------------------------------------- (b) a corrupt newest checkpoint
for np in 1 2; do
  o="$W/b$np"
  grid=(); ref="$W/ref"; [ "$np" = 2 ] && grid=(--grid 2,1,1,1 --ckpt-chunk 4096) ref="$W/ref2"
  run "b${np}_first" "$np" train "${SIZE[@]}" "${RUN[@]}" "${grid[@]}" --steps 8 --save-every 2 --keep 3 \
    --exit-after 6 --out "$o" || continue
  flip "$o/ckpt-000006" optim.safetensors
  if run "b${np}_auto" "$np" train "${SIZE[@]}" "${RUN[@]}" "${grid[@]}" --steps 8 --save-every 2 --keep 3 --resume auto \
       --out "$o"; then
    log="$W/b${np}_auto.log"
    if grep -q "resume: passing over $o/ckpt-000006, set aside as $o/ckpt-000006.corrupt: .*optim.safetensors: checksum (CRC-64) [0-9a-f]* of bytes \[[0-9]*, [0-9]*) (.*tensor 'opt\." "$log"; then
      ok "b $np rank(s): the bad checkpoint named, with its file and byte range"
    else bad "b $np rank(s): no line naming the bad checkpoint: $(grep -m1 'resume' "$log")"; fi
    if grep -q "resumed from $o/ckpt-000004 at step 4" "$log"; then ok "b $np rank(s): resumed from ckpt-000004"
    else bad "b $np rank(s): $(grep -m1 resumed "$log")"; fi
    same "b $np rank(s)" "$ref/model.safetensors" "$o/model.safetensors"
    got=$(ls_out "$o")
    if [ "$got" = "ckpt-000004 ckpt-000006 ckpt-000006.corrupt ckpt-000008 " ]; then
      ok "b $np rank(s): the bad one kept aside, out of --keep 3's count: $got"
    else bad "b $np rank(s): --out holds '$got'"; fi
  fi
done

# ---------------------------------------------------------------- (c) named explicitly: refused
if [ -d "$W/b1/ckpt-000006.corrupt" ]; then
  before=$(ls_out "$W/b1")
  "$BIN" train "${RUN[@]}" --steps 8 --resume "$W/b1/ckpt-000006.corrupt" --out "$W/b1" >"$W/c.log" 2>&1
  rc=$?
  if [ "$rc" = 2 ] && [ "$(grep -c 'error' "$W/c.log")" = 1 ] &&
     grep -q "axonn: error: $W/b1/ckpt-000006.corrupt/optim.safetensors: checksum (CRC-64)" "$W/c.log"; then
    ok "c: --resume of the corrupt checkpoint itself: one line, exit 2"
  else bad "c: exit $rc: $(head -c 400 "$W/c.log")"; fi
  if [ "$(ls_out "$W/b1")" = "$before" ]; then ok "c: nothing written or moved"; else bad "c: --out changed: $(ls_out "$W/b1")"; fi
fi

# ---------------------------------------------------------------- (d) none verifies
if run d_first 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 4 --exit-after 4 --out "$W/d"; then
  flip "$W/d/ckpt-000004" model.safetensors
  if run d_auto 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --resume auto --out "$W/d"; then
    if grep -q "resume: no checkpoint left that verifies; starting fresh" "$W/d_auto.log"; then ok "d: says it starts fresh"
    else bad "d: no 'starting fresh' line"; fi
    same "d: all corrupt, a fresh start" "$W/ref/model.safetensors" "$W/d/model.safetensors"
  fi
fi

# ---------------------------------------------------------------- (e) crashes in the rename
if run e_first 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 2 --exit-after 6 --out "$W/e"; then
  mv "$W/e/ckpt-000006" "$W/e/ckpt-000006.tmp" # written whole, not renamed
  if run e_adopt 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 2 --resume auto --out "$W/e"; then
    if grep -q "resume: adopted ckpt-000006.tmp (its write had finished) as $W/e/ckpt-000006" "$W/e_adopt.log" &&
       grep -q "resumed from $W/e/ckpt-000006 at step 6" "$W/e_adopt.log"; then ok "e: a complete ckpt-000006.tmp adopted"
    else bad "e: $(grep -m2 resum "$W/e_adopt.log" | tr '\n' ' ')"; fi
    same "e: adopted" "$W/ref/model.safetensors" "$W/e/model.safetensors"
  fi
fi
if run e2_first 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 2 --exit-after 6 --out "$W/e2"; then
  mv "$W/e2/ckpt-000006" "$W/e2/ckpt-000006.old"           # moved aside by a replacement of step 6 ...
  mkdir "$W/e2/ckpt-000006.tmp"                            # ... whose new copy never finished
  if run e2_back 1 train "${SIZE[@]}" "${RUN[@]}" --steps 8 --save-every 2 --resume auto --out "$W/e2"; then
    if grep -q "resume: put ckpt-000006.old back as $W/e2/ckpt-000006" "$W/e2_back.log" &&
       grep -q "resumed from $W/e2/ckpt-000006 at step 6" "$W/e2_back.log"; then ok "e: ckpt-000006.old put back"
    else bad "e: $(grep -m2 resum "$W/e2_back.log" | tr '\n' ' ')"; fi
    same "e: put back" "$W/ref/model.safetensors" "$W/e2/model.safetensors"
    if [ -z "$(cd "$W/e2" && ls -d ckpt-*.tmp ckpt-*.old 2>/dev/null)" ]; then ok "e: no .tmp or .old left"
    else bad "e: left $(ls_out "$W/e2")"; fi
  fi
fi

finish cli_ckpt_dirs
