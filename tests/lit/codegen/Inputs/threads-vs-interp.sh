#!/usr/bin/env bash
# Runs function FN of FILE on the interpreter, then on the CPU with 1, 2, 3
# and 7 pool threads (TSL_NUM_THREADS), for each call's arguments; every CPU
# run must match the interpreter (npycmp) and give the same bytes as the
# one-thread run:
#   threads-vs-interp.sh TSLC NPYCMP FILE TMPDIR FN ARGSPEC...
# ARGSPEC: one call's --arg list separated by ';' ("x=f32[3,5];w=f32[5]").
set -euo pipefail
tslc=$1 npycmp=$2 file=$3 tmp=$4 fn=$5
shift 5
mkdir -p "$tmp"
n=0
for spec in "$@"; do
  n=$((n + 1))
  args=()
  IFS=';' read -ra parts <<<"$spec"
  for a in "${parts[@]}"; do args+=(--arg "$a"); done
  "$tslc" run "$file" --backend interp --fn "$fn" "${args[@]}" -o "$tmp/$fn-$n.interp.npy"
  for threads in 1 2 3 7; do
    out="$tmp/$fn-$n.t$threads.npy"
    TSL_NUM_THREADS=$threads "$tslc" run "$file" --fn "$fn" "${args[@]}" -o "$out"
    $npycmp "$out" "$tmp/$fn-$n.interp.npy" >/dev/null ||
      { echo "mismatch with the interpreter: $fn $spec, $threads threads" >&2; exit 1; }
    cmp -s "$out" "$tmp/$fn-$n.t1.npy" ||
      { echo "$threads threads differ from 1: $fn $spec" >&2; exit 1; }
  done
done
