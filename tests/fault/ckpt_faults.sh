#!/usr/bin/env bash
# fault_ckpt: a save that fails part-way never costs the checkpoint before it
# (docs/reliability.md). Each trial makes one file-system call of a save fail
# (tests/fault/io_fault.c, preloaded): the job either stops with one error
# line and exit 2 or completes, and then `--resume auto`, with no fault, ends
# with the uninterrupted run's final model, byte for byte.
#   fsync  EIO    on rank 1 of 2, in ckpt-000004.tmp      -> exit 2, resumes from ckpt-000002
#   pwrite ENOSPC on rank 1 of 2, in ckpt-000004.tmp      -> exit 2, resumes from ckpt-000002
#   rename EIO    ckpt-000004.tmp into place (the commit) -> exit 2; the manifest was written, so the
#                 relaunch adopts ckpt-000004.tmp (the fault also kept it from being removed) and resumes from it
#   a save of a step that has a checkpoint (a relaunch from an older one):
#   rename EIO    the old ckpt-000006 aside               -> exit 2, the old one whole, resumes from it
#   rename EIO    the new ckpt-000006.tmp into place      -> exit 2, the old one moved back whole
#   unlink EIO    in the old one, once the new is in place -> completes; the leftover is ckpt-000006.old.del
# The checksums are made from each rank's own buffers while it writes: no
# phase reads the files back, so the write and fsync faults stand for it.
#   tests/fault/ckpt_faults.sh LIB   (LIB: libio_fault.so, as CTest passes it)
. "$(dirname "$0")/../cli_lib.sh"
LIB=${1:?usage: ckpt_faults.sh path/to/libio_fault.so}

SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2 --synthetic --steps 8 --save-every 2 --keep 3)
G2=(--grid 2,1,1,1)

# faulty NAME NP FAULT RANK ARGS...: the run with FAULT armed (on RANK only, "" for all); exit code in $rc
faulty() {
  local name=$1 np=$2 fault=$3 rank=$4; shift 4
  if [ "$np" = 1 ]; then
    AXONN_FAULT=$fault LD_PRELOAD=$LIB "$BIN" "$@" >"$W/$name.log" 2>&1
  else
    AXONN_FAULT=$fault AXONN_FAULT_RANK=$rank timeout 300 "${MPI[@]}" -np "$np" -x AXONN_FAULT -x AXONN_FAULT_RANK \
      env LD_PRELOAD="$LIB" "$BIN" "$@" >"$W/$name.log" 2>&1
  fi
  rc=$?
}
# stops NAME WHAT: the faulty run reached its fault and stopped with exit 2 and one error line naming WHAT
stops() {
  local n
  n=$(grep -c "^axonn: error:" "$W/$1.log")
  if ! grep -q "^io_fault:" "$W/$1.log"; then bad "$1: the fault was never reached"
  elif [ "$rc" = 2 ] && [ "$n" = 1 ] && grep -q "^axonn: error: .*$2" "$W/$1.log"; then
    ok "$1: one line, exit 2: $(grep -m1 '^axonn: error:' "$W/$1.log" | cut -c1-160)"
  else bad "$1: exit $rc, $n error lines: $(grep -m2 -E 'error|io_fault' "$W/$1.log" | tr '\n' ' ' | cut -c1-300)"; fi
}
# resumes NAME NP OUT FROM REF ARGS...: --resume auto with no fault takes FROM and ends with REF's bytes
resumes() {
  local name=$1 np=$2 out=$3 from=$4 ref=$5; shift 5
  run "$name" "$np" train "${SIZE[@]}" "${RUN[@]}" "$@" --resume auto --out "$out" || return
  if grep -q "resumed from $out/$from at step" "$W/$name.log"; then ok "$name: resumed from $from"
  else bad "$name: $(grep -m1 resum "$W/$name.log")"; fi
  if cmp -s "$ref" "$out/model.safetensors"; then ok "$name: final model byte-identical to the uninterrupted run's"
  else bad "$name: final model differs from the uninterrupted run's"; fi
}

run ref1 1 train "${SIZE[@]}" "${RUN[@]}" --out "$W/ref1" || finish fault_ckpt
run ref2 2 train "${SIZE[@]}" "${RUN[@]}" "${G2[@]}" --out "$W/ref2" || finish fault_ckpt

faulty fsync 2 "fsync:ckpt-000004.tmp/" 1 train "${SIZE[@]}" "${RUN[@]}" "${G2[@]}" --out "$W/fsync"
stops fsync "ckpt-000004.tmp/.*fsync failed: Input/output error"
if [ -z "$(cd "$W/fsync" && ls -d ckpt-*.tmp* 2>/dev/null)" ]; then ok "fsync: the failed save left no .tmp"
else bad "fsync: left $(cd "$W/fsync" && ls -d ckpt-* | tr '\n' ' ')"; fi
resumes fsync_resume 2 "$W/fsync" ckpt-000002 "$W/ref2/model.safetensors" "${G2[@]}"

faulty pwrite 2 "pwrite:ckpt-000004.tmp/:ENOSPC" 1 train "${SIZE[@]}" "${RUN[@]}" "${G2[@]}" --out "$W/pwrite"
stops pwrite "ckpt-000004.tmp/.*cannot write this rank.s share: No space left on device"
resumes pwrite_resume 2 "$W/pwrite" ckpt-000002 "$W/ref2/model.safetensors" "${G2[@]}"

faulty commit 1 "rename:/ckpt-000004.tmp$" "" train "${SIZE[@]}" "${RUN[@]}" --out "$W/commit"
stops commit "ckpt-000004: cannot rename checkpoint into place"
resumes commit_resume 1 "$W/commit" ckpt-000004 "$W/ref1/model.safetensors"
if grep -q "resume: adopted ckpt-000004.tmp" "$W/commit_resume.log"; then ok "commit: the complete .tmp adopted"
else bad "commit: no adoption line"; fi

# a relaunch from ckpt-000004 saves step 6 again, over the checkpoint there
for t in aside replace delete; do
  run "${t}_first" 1 train "${SIZE[@]}" "${RUN[@]}" --exit-after 6 --out "$W/$t" || continue
done
faulty aside 1 "rename:/ckpt-000006\$" "" train "${RUN[@]}" --resume "$W/aside/ckpt-000004" --out "$W/aside"
stops aside "ckpt-000006: cannot move the checkpoint of the same step aside"
if [ -f "$W/aside/ckpt-000006/manifest.json" ]; then ok "aside: the old ckpt-000006 still whole"
else bad "aside: ckpt-000006 lost: $(cd "$W/aside" && ls -d ckpt-* | tr '\n' ' ')"; fi
resumes aside_resume 1 "$W/aside" ckpt-000006 "$W/ref1/model.safetensors"

faulty replace 1 "rename:/ckpt-000006.tmp\$" "" train "${RUN[@]}" --resume "$W/replace/ckpt-000004" --out "$W/replace"
stops replace "ckpt-000006: cannot rename checkpoint into place"
if [ -f "$W/replace/ckpt-000006/manifest.json" ]; then ok "replace: a ckpt-000006 still whole"
else bad "replace: no complete ckpt-000006: $(cd "$W/replace" && ls -d ckpt-* | tr '\n' ' ')"; fi
resumes replace_resume 1 "$W/replace" ckpt-000006 "$W/ref1/model.safetensors"

faulty delete 1 "unlink:ckpt-000006.old.del/" "" train "${RUN[@]}" --resume "$W/delete/ckpt-000004" --out "$W/delete"
if ! grep -q "^io_fault:" "$W/delete.log"; then bad "delete: the fault was never reached"
elif [ "$rc" = 0 ] && cmp -s "$W/ref1/model.safetensors" "$W/delete/model.safetensors"; then
  ok "delete: completes, final model byte-identical"
else bad "delete: exit $rc: $(grep -m1 error "$W/delete.log")"; fi
left=$(cd "$W/delete" && ls -d ckpt-* | tr '\n' ' ')
if [ "$left" = "ckpt-000004 ckpt-000006 ckpt-000006.old.del ckpt-000008 " ] && [ -f "$W/delete/ckpt-000006/manifest.json" ]; then
  ok "delete: the new ckpt-000006 in place, the old one's leftover named .del: $left"
else bad "delete: --out holds $left"; fi
resumes delete_resume 1 "$W/delete" ckpt-000008 "$W/ref1/model.safetensors"
left=$(cd "$W/delete" && ls -d ckpt-* | tr '\n' ' ')
if [ "$left" = "ckpt-000004 ckpt-000006 ckpt-000008 " ]; then ok "delete: the next run's recovery removed the leftover"
else bad "delete: after the next run --out holds $left"; fi

finish fault_ckpt
