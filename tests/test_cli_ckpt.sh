#!/usr/bin/env bash
# cli_ckpt: checkpoints written by every rank in parallel (docs/reliability.md).
#  (a) the files are the bytes of the root writer (--ckpt-writer root: rank 0
#      gathers every tensor and writes alone) for the same state, on grids of
#      1 to 8 ranks: every axis split and replicated, data replicas (2, 3 and
#      7 of them: replicated tensors spread over ranks), Z chunks; GPT-2
#      (Conv1D weights stored transposed) and Llama with grouped-query
#      attention (k/v heads replicated over Y: replicated parts), synchronous
#      and in the background; small checksum chunks (--ckpt-chunk 4096: the
#      ranges of the manifest tile each file, every rank hashes some).
#  (b) resume from such a checkpoint is bitwise on the same grid, and on
#      another grid it completes (its losses: cli_resume).
#  (c) a write failing in the background (a file-size limit, EFBIG) is
#      reported on every rank at a step boundary with one line naming the
#      file, exit 2, and the checkpoint is not committed (no ckpt-N, no .tmp).
# Under the sanitizers (AXONN_TEST_SANITIZED, .ci/run's second pass) (a)
# takes the grids marked "san" (1, 2, 3, 4 and 8 ranks: replicas spread, Z
# chunks, Llama's replicated parts, both save modes): the writer's memory
# use, not the same code on more grid shapes, which the main pass covers.
. "$(dirname "$0")/cli_lib.sh"

GPT=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
LLAMA=(--arch llama --n-layer 2 --n-head 4 --n-kv-head 1 --n-embd 32 --vocab-size 97 --block-size 16 --untied)
RUN=(train --synthetic --seq 16 --threads 1 --quiet --lr 3e-3 --warmup 2 --steps 4 --save-every 2)

# same [san] NAME NP GRID BATCH MODEL ARGS...: parallel vs root writer, both checkpoints' files
same() {
  local san=0; [ "$1" = san ] && { san=1; shift; }
  [ -n "${AXONN_TEST_SANITIZED:-}" ] && [ $san = 0 ] && return
  local name=$1 np=$2 grid=$3 batch=$4 model=$5; shift 5
  local -n m=$model
  run "$name.par" "$np" "${RUN[@]}" "${m[@]}" --batch "$batch" --grid "$grid" --out "$W/$name.par" "$@" || return
  run "$name.root" "$np" "${RUN[@]}" "${m[@]}" --batch "$batch" --grid "$grid" --out "$W/$name.root" \
    --ckpt-writer root || return
  local f s diff=""
  for s in 000002 000004; do
    for f in model.safetensors optim.safetensors config.json state.json; do
      cmp -s "$W/$name.par/ckpt-$s/$f" "$W/$name.root/ckpt-$s/$f" || diff="$diff ckpt-$s/$f"
    done
  done
  local nr; nr=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(len(v.get("ranges",[])) for v in j["files"].values()))' "$W/$name.par/ckpt-000004/manifest.json")
  if [ -z "$diff" ]; then ok "$name: grid $grid ($model $*): files identical to the root writer's ($nr checksum ranges)"
  else bad "$name: grid $grid ($model $*): differ:$diff"; fi
}

same     g1       1 1,1,1,1 8 GPT
same san g1llama  1 1,1,1,1 8 LLAMA --ckpt-chunk 4096
same     d2       2 2,1,1,1 8 GPT
same     y2       2 1,1,2,1 8 GPT --async-save=false
same san z2       2 1,1,1,2 8 GPT --ckpt-chunk 4096
same san y2llama  2 1,1,2,1 8 LLAMA --ckpt-chunk 4096
same san d3       3 3,1,1,1 6 GPT --ckpt-chunk 4096
same     xy4      4 1,2,2,1 8 GPT --ckpt-chunk 4096
same     dz4      4 2,1,1,2 8 GPT
same san yz4llama 4 1,1,2,2 8 LLAMA --ckpt-chunk 4096 --async-save=false
same     dy6      6 3,1,2,1 6 GPT --ckpt-chunk 4096
same     d7       7 7,1,1,1 14 GPT
same san xyz8     8 1,2,2,2 8 GPT --ckpt-chunk 4096
same     dxy8llama 8 2,2,2,1 8 LLAMA --ckpt-chunk 4096
same     dyz8     8 2,1,2,2 8 GPT --async-save=false

# (b) resume: same grid bitwise (small chunks, in the background), other grid completes
R=(train --synthetic "${GPT[@]}" --seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2 --steps 8 --save-every 2)
if run full 4 "${R[@]}" --grid 1,2,1,2 --out "$W/full" && \
   run part 4 "${R[@]}" --grid 1,2,1,2 --ckpt-chunk 4096 --exit-after 5 --out "$W/part" && \
   cp -r "$W/part/ckpt-000004" "$W/from4" && \
   run rest 4 "${R[@]}" --grid 1,2,1,2 --ckpt-chunk 4096 --resume auto --out "$W/part"; then
  if cmp -s "$W/full/model.safetensors" "$W/part/model.safetensors"; then
    ok "resume on grid 1,2,1,2 from a parallel checkpoint (step 5, 4096-byte ranges): final model bitwise identical"
  else bad "resume on grid 1,2,1,2: final model differs from the uninterrupted run"; fi
fi
if run other 2 train --synthetic --seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2 --steps 8 \
     --grid 2,1,1,1 --resume "$W/from4" --out "$W/other"; then
  grep -q "resumed from .*from4 at step 4" "$W/other.log" && ok "a checkpoint of grid 1,2,1,2 resumes on grid 2,1,1,1" \
    || bad "resume on grid 2,1,1,1: no 'resumed from' line"
fi

# (c) a background write that fails: optim.safetensors (237,576 bytes) passes a
# 150 KiB file-size limit (EFBIG, SIGXFSZ ignored); model.safetensors does not
# (the limit on the ranks only, and MPI over TCP: Open MPI's shared-memory files would pass it)
OMPI_MCA_btl=self,tcp timeout 120 "${MPI[@]}" -np 2 bash -c 'trap "" XFSZ; ulimit -f 150; exec "$0" "$@"' "$BIN" train --synthetic \
  "${GPT[@]}" --seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2 --steps 4 --save-every 2 --grid 1,1,2,1 \
  --out "$W/efbig" >"$W/efbig.out" 2>"$W/efbig.err"
rc=$?
nerr=$(grep -c '^axonn: error:' "$W/efbig.err")
left=$(cd "$W/efbig" && ls -d ckpt-* 2>/dev/null | tr '\n' ' ')
if [ "$rc" = 2 ] && [ "$nerr" = 1 ] && grep -q 'optim\.safetensors: cannot write .*File too large' "$W/efbig.err" && [ -z "$left" ]; then
  ok "background write failure: exit 2, one line ($(head -c 160 "$W/efbig.err")), nothing committed"
else bad "background write failure: exit $rc, $nerr error lines, left [$left]: $(head -n 3 "$W/efbig.err")"; fi

finish cli_ckpt
