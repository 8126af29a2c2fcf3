#!/usr/bin/env bash
# Runs function FN of FILE on the interpreter and on BACKEND for each shape
# and compares the results (npycmp's default tolerances):
#   vs-interp.sh TSLC NPYCMP FILE TMPDIR BACKEND FN ARGSPEC...
# Each ARGSPEC is one call's --arg list separated by ';', for example
# "x=f32[3,5];w=f32[5]". Stops at the first mismatch, naming the call.
set -euo pipefail
tslc=$1 npycmp=$2 file=$3 tmp=$4 backend=$5 fn=$6
shift 6
mkdir -p "$tmp"
n=0
for spec in "$@"; do
  n=$((n + 1))
  args=()
  IFS=';' read -ra parts <<<"$spec"
  for a in "${parts[@]}"; do args+=(--arg "$a"); done
  "$tslc" run "$file" --backend interp --fn "$fn" "${args[@]}" -o "$tmp/$fn-$n.interp.npy"
  "$tslc" run "$file" --backend "$backend" --fn "$fn" "${args[@]}" -o "$tmp/$fn-$n.$backend.npy"
  for out in "$tmp/$fn-$n.$backend".*npy; do
    ref=${out/.$backend/.interp}
    $npycmp "$out" "$ref" || { echo "mismatch: $fn $spec ($out)" >&2; exit 1; }
  done
done
