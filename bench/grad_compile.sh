#!/usr/bin/env bash
# Compile time of a train step against its forward (issue 32): L encoder
# layers (bench/grad_compile_gen.py: nn.encoder_layer, D=64, F=128, 4 heads,
# B=2, S=16, each layer with its own weights), `forward` (the loss) and
# `train_step` (loss, grad with respect to every weight, SGD update).
# Prints, for each, the CPU time of `tslc emit --emit=asm` (user seconds, best
# of TSL_BENCH_ROUNDS, default 3), the op count of the top-level function and
# its call ops (--emit=ir), and the ratio train_step / forward.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tslc=${TSLC:-$root/build/bin/tslc}
rounds=${TSL_BENCH_ROUNDS:-3}
layers=${1:-12}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/grad_compile_gen.py" "$work/enc.tsl" --layers "$layers" --args "$work/args"
mapfile -t args < "$work/args"
cpu_s() { # FN: best user time of emit --emit=asm, in seconds
  local best=1e18
  for _ in $(seq "$rounds"); do
    /usr/bin/time -f %U -o "$work/t" "$tslc" emit "$work/enc.tsl" --emit=asm --fn "$1" "${args[@]}" -o "$work/out.s"
    best=$(python3 -c "print(min($best, $(cat "$work/t")))")
  done
  echo "$best"
}
printf '%-11s %7s %8s %7s\n' fn "cpu (s)" "top ops" calls
declare -A t
for fn in forward train_step; do
  "$tslc" emit "$work/enc.tsl" --emit=ir --fn "$fn" "${args[@]}" -o "$work/$fn.ir"
  ops=$(grep -c '^  %' "$work/$fn.ir" || true)
  calls=$(grep -c '^  %.* = call(' "$work/$fn.ir" || true)
  t[$fn]=$(cpu_s "$fn")
  printf '%-11s %7s %8s %7s\n' "$fn" "${t[$fn]}" "$ops" "$calls"
done
python3 -c "print(f'train_step / forward: {${t[train_step]} / ${t[forward]}:.2f}x ($layers layers)')"
