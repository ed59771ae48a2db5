#!/bin/bash
# bench/ab_bits.sh: two builds against each other, bit for bit. Ten short runs
# (fp32, bf16, recomputation, Llama, --cp 2, a Y split) with each binary; per run,
# IDENTICAL when the final model.safetensors and every logged loss agree.
#   OLD=path/to/axonn NEW=path/to/axonn [OUT=/tmp/bw] bash bench/ab_bits.sh
# (bench/results/2026-12-07-bf16-attention: 7874d5d against that record's commit)
OLD=${OLD:?axonn of the build before}; NEW=${NEW:?axonn of the build after}
MPI=(mpiexec --oversubscribe --allow-run-as-root --bind-to none)
export OMP_NUM_THREADS=1
SIZE=(--n-layer 2 --n-head 4 --n-embd 64 --vocab-size 97 --block-size 128)
RUN=(--seq 128 --batch 4 --threads 1 --quiet --lr 3e-3 --warmup 2 --steps 6 --synthetic)
i=0
while read -r np name extra; do
  for v in OLD NEW; do
    b=${!v}; d=${OUT:-/tmp/bw}/$name-$v; rm -rf $d
    if [ $np = 1 ]; then $b train "${SIZE[@]}" "${RUN[@]}" $extra --out $d > $d.log 2>&1
    else "${MPI[@]}" -np $np $b train "${SIZE[@]}" "${RUN[@]}" $extra --out $d > $d.log 2>&1 < /dev/null; fi
    echo "$name $v rc=$?"
  done
  a=$(find ${OUT:-/tmp/bw}/$name-OLD -name model.safetensors | sort | tail -1); b=$(find ${OUT:-/tmp/bw}/$name-NEW -name model.safetensors | sort | tail -1)
  if cmp -s "$a" "$b" && cmp -s <(grep -o '"loss":[^,]*' ${OUT:-/tmp/bw}/$name-OLD/metrics.jsonl) <(grep -o '"loss":[^,]*' ${OUT:-/tmp/bw}/$name-NEW/metrics.jsonl); then echo "$name: IDENTICAL ($a)"; else echo "$name: DIFFER"; fi
done <<'LIST'
1 f32
1 b16 --dtype bf16
1 b16ra --dtype bf16 --recompute attn
1 b16rb --dtype bf16 --recompute block
1 llb16 --dtype bf16 --arch llama --n-kv-head 2
2 b16cp --dtype bf16 --cp 2
2 b16cpra --dtype bf16 --cp 2 --recompute attn
2 llb16cp --dtype bf16 --cp 2 --arch llama --n-kv-head 2
2 f32cp --cp 2
2 b16y --dtype bf16 --grid 1,1,2,1
LIST
