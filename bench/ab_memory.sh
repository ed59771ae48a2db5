#!/bin/bash
# bench/ab_memory.sh: two builds' activation memory: the MiB the trainer's
# start-up line reports (GPT-2 and Llama small, one rank, X = 2, --cp 2; fp32 and
# bf16) and axonn plan's activation_bytes at B 8, T 1024.
#   OLD=path/to/axonn NEW=path/to/axonn [OUT=/tmp/bm] bash bench/ab_memory.sh
# (bench/results/2026-12-07-bf16-attention: 7874d5d against that record's commit)
OLD=${OLD:?axonn of the build before}; NEW=${NEW:?axonn of the build after}
MPI=(mpiexec --oversubscribe --allow-run-as-root --bind-to none)
export OMP_NUM_THREADS=1
act() { grep -o 'activations [0-9.]*' | awk '{print $2}'; }
for cfg in "1 gpt2 " "1 llama " "2 gpt2 --grid 1,2,1,1" "2 gpt2 --cp 2"; do
  set -- $cfg; np=$1; arch=$2; shift 2
  for dt in fp32 bf16; do
    for v in OLD NEW; do
      b=${!v}
      m=$("${MPI[@]}" -np $np $b train --synthetic --preset small --arch $arch --batch 4 --seq 256 --steps 1 --dtype $dt --threads 1 "$@" --out ${OUT:-/tmp/bm}/o 2>&1 < /dev/null | act | head -1)
      echo "$arch np=$np $* $dt $v $m"
    done
  done
done
for v in OLD NEW; do for dt in fp32 bf16; do
  echo "plan $dt $v $(${!v} plan --ranks 1 --preset small --block-size 1024 --batch 8 --seq 1024 --machine h200x8 --dtype $dt --json 2>/dev/null | grep -o '"activation_bytes": *[0-9.e+]*' | head -1)"
done; done
