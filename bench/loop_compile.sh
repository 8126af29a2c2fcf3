#!/usr/bin/env bash
# Loops compiled once (issue 17): a GPT-2 language model (pre-norm blocks,
# D=768, 12 heads, MLP 3072, causal attention; bench/gpt2_gen.py) written
# with a `for` loop over its L layers against the same model written one
# hand-written line per layer ("unrolled"), both over the same stacked
# weights.
#
# Compile time, cold (TSL_CACHE_DIR=off), through `tslc run --calls` (the
# runtime's variant table and JIT) with TSL_LOGS=perf: the figure is the
# perf line "compiled gpt2 variant 0 in X ms" (parsing, elaboration, code
# generation; not making arguments or running), best of TSL_BENCH_ROUNDS
# (default 3). The loop form's L is a dynamic dim: one compile serves every
# depth; it is compiled with calls at L = 1, 12 and 48 to show the time does
# not depend on L. The unrolled form is compiled for L = 1, 12 and 48.
#
# Run time: `tslc bench` (min of its calls) of both forms at L=12, B=1, S=64,
# random weights, TSL_NUM_THREADS=1 and all threads; ratio unrolled / loop
# (>= 0.95 is the target: the loop form at most 5% slower).
#
# Numerics: before timing, the loop form at L=2 (B=1, S=5, random weights)
# is compared with the unrolled form and with the interpreter (npycmp).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tslc=${TSLC:-$root/build/bin/tslc}
rounds=${TSL_BENCH_ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')
echo "cpu: ${model:-unknown}, $(nproc) cpus"
gen() { python3 "$root/bench/gpt2_gen.py" "$@"; }

# --- numerics ---------------------------------------------------------------
gen "$work/loop.tsl" --form loop
gen "$work/unrolled2.tsl" --form unrolled --layers 2 --calls "$work/l2.calls" --batch 1 --seq 5
args=(--arg 'x=f32[1,5,768]')
for spec in $(sed 's/:zeros//g; s/:ones//g' "$work/l2.calls" | tr ' ' '\n' | tail -n +2); do
  args+=(--arg "$spec")
done
"$tslc" run "$work/loop.tsl" --fn gpt2 "${args[@]}" -o "$work/loop.npy"
"$tslc" run "$work/unrolled2.tsl" --fn gpt2 "${args[@]}" -o "$work/unrolled.npy"
"$tslc" run "$work/loop.tsl" --fn gpt2 --backend interp "${args[@]}" -o "$work/interp.npy"
python3 "$root/tests/tools/npycmp.py" "$work/loop.npy" "$work/unrolled.npy" --rtol 1e-4 --atol 1e-4
python3 "$root/tests/tools/npycmp.py" "$work/loop.npy" "$work/interp.npy" --rtol 1e-4 --atol 1e-4

# --- compile time -------------------------------------------------------------
compile_ms() { # FILE CALLS: best of $rounds cold compiles, in ms
  local best=
  for _ in $(seq "$rounds"); do
    ms=$(TSL_CACHE_DIR=off TSL_LOGS=perf "$tslc" run "$1" --fn gpt2 --calls "$2" 2>&1 >/dev/null |
      sed -n 's/.*perf: compiled gpt2 variant 0 in \([0-9.]*\) ms.*/\1/p')
    best=$(python3 -c "print(min(x for x in [$ms, ${best:-1e18}]))")
  done
  echo "$best"
}
printf '%-10s %6s %14s\n' form layers "compile (ms)"
for L in 1 12 48; do
  gen "$work/calls.tsl" --form loop --layers "$L" --calls "$work/c$L.calls" --batch 1 --seq 8
  printf '%-10s %6s %14s\n' loop "$L" "$(compile_ms "$work/loop.tsl" "$work/c$L.calls")"
done
for L in 1 12 48; do
  gen "$work/unrolled$L.tsl" --form unrolled --layers "$L"
  printf '%-10s %6s %14s\n' unrolled "$L" "$(compile_ms "$work/unrolled$L.tsl" "$work/c$L.calls")"
done

# --- run time -------------------------------------------------------------------
gen "$work/unrolled12.tsl" --form unrolled --layers 12 --calls "$work/r.calls" --batch 1 --seq 64
rargs=()
for spec in $(sed 's/:zeros//g; s/:ones//g' "$work/r.calls" | tr ' ' '\n'); do
  rargs+=(--arg "$spec")
done
bench_min() { # FILE THREADS: min latency line of tslc bench
  TSL_NUM_THREADS=$2 "$tslc" bench "$1" --fn gpt2 "${rargs[@]}" 2>&1 | sed -n 's/.*min = \([0-9.]*\) \([mu]*s\).*/\1 \2/p' | head -1
}
for threads in 1 "$(nproc)"; do
  loop=$(bench_min "$work/loop.tsl" "$threads")
  unrolled=$(bench_min "$work/unrolled12.tsl" "$threads")
  python3 - "$threads" "$loop" "$unrolled" <<'PY'
import sys
def ms(t):
    v, u = t.split()
    return float(v) * {'s': 1e3, 'ms': 1, 'us': 1e-3}[u]
th, loop, unrolled = sys.argv[1], ms(sys.argv[2]), ms(sys.argv[3])
print(f'run L=12 B=1 S=64, {th} thread(s): loop {loop:.2f} ms, unrolled {unrolled:.2f} ms, '
      f'ratio unrolled/loop {unrolled / loop:.3f}')
PY
done
