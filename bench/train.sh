#!/usr/bin/env bash
# Training benchmark (issue 34): a train step (forward, backward, Adam) of
# three models in TSL against PyTorch eager and torch.compile(dynamic=True),
# on one thread and on every CPU of the affinity mask.
#   bash bench/train.sh              mlp gpt cnn
#   bash bench/train.sh mlp cnn      only those models
# TSL_BENCH_ROUNDS (default 1): interleaved rounds (each run a fresh process),
#   best of each side. TSL_BENCH_OMP_WAIT (default passive): the peers'
#   OMP_WAIT_POLICY. TSL_BENCH_TIMEOUT (default 900): seconds per run.
#   TSL_BENCH_OUT=DIR keeps each run's output (and stderr) in DIR.
#
# Models (bench/train_models.tsl; bench/train_peers.py the same in PyTorch):
#   mlp  784-512-10, ReLU, B = 256, cross-entropy
#   gpt  4 pre-LN layers, D = 256, 4 heads, vocab 8192, tied embedding,
#        B = 8, S = 128, next-token cross-entropy
#   cnn  conv3x3 64 - BN (batch statistics) - ReLU - maxpool 2 - conv3x3 64 -
#        BN - ReLU - global mean - linear 10, B = 32, 3x32x32
# Both sides start from the same NumPy weights and see the same 4 fixed
# random batches, cycled (bench/train_common.py); Adam with torch's defaults
# except lr on both (optim.adam in TSL). Each side runs in its own process per
# model and thread count: 21 steps, the median of the steps 2..8, the first
# step (compile + run) cold on both sides, the peak RSS, and the loss after 20
# updates (the sides must agree within 1e-3 relative; MISMATCH otherwise).
# TSL runs twice: cold (an empty compile cache) and warm (a second process
# loading the variant from that cache: its first step without compiling, and
# its memory without the compiler's).
#
# Where a step's time goes (forward, backward, Adam; TSL against eager):
# bench/train_breakdown.py THREADS, run by hand.
#
# What keeps the peers honest (as bench/cpu.sh): their core-type overrides are
# unset in their command only (env -u); their OpenMP threads wait passively,
# as TSL's pool does; glibc's malloc gets the TSL runtime's setting in both.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
"$root/scripts/test-python.sh" --no-tests >/dev/null
models=("$@")
((${#models[@]})) || models=(mlp gpt cnn)
for m in "${models[@]}"; do
  case $m in
  mlp | gpt | cnn) ;;
  *)
    echo "unknown model '$m' (mlp gpt cnn)" >&2
    exit 2
    ;;
  esac
done
rounds=${TSL_BENCH_ROUNDS:-1}
limit=${TSL_BENCH_TIMEOUT:-900}
source "$(dirname "$0")/peer_env.sh"
echo "models: ${models[*]}; rounds: $rounds"
if [ -n "${TSL_BENCH_OUT:-}" ]; then
  out=$TSL_BENCH_OUT # kept: each run's figures and stderr
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
export PYTHONPATH="$root/build/python-build/python${PYTHONPATH:+:$PYTHONPATH}"

# One run: its figures into $out/MODEL.THREADS.SIDE.ROUND, or 'error: ' lines
# (the last lines of its stderr) when it fails.
run_side() {
  local file=$1
  shift
  local start=$SECONDS
  local rc=0
  timeout "$limit" "$@" >"$file" 2>"$file.err" || rc=$?
  if ((rc != 0)); then
    {
      grep -E 'error|Error' "$file.err" | tail -4 | sed 's/^/error: /'
      ((rc == 124)) && echo "error: timed out after ${limit} s"
      echo "error: the run exited with status $rc"
    } >>"$file"
  fi
  echo "    $(basename "$file") $((SECONDS - start)) s"
}

for ((r = 1; r <= rounds; ++r)); do
  for m in "${models[@]}"; do
    for t in "${counts[@]}"; do
      echo "--- round $r of $rounds: $m, $t thread(s)"
      # Cold (an empty compile cache), then warm (the objects it stored).
      cache="$out/cache.$m.$t.$r"
      rm -rf "$cache"
      mkdir -p "$cache"
      for side in tsl tslwarm; do
        run_side "$out/$m.$t.$side.$r" env TSL_NUM_THREADS="$t" TSL_CACHE_DIR="$cache" \
          "$venv/bin/python" "$root/bench/train_tsl.py" "$m" "$t"
      done
      for side in eager compile; do
        run_side "$out/$m.$t.$side.$r" "${peer_env[@]}" "$venv/bin/python" \
          "$root/bench/train_peers.py" "$m" "$t" "$side"
      done
    done
  done
done
first=$(ls "$out"/*.eager.1 | head -1)
sed -n 's/^info_torch: \(.*\), [0-9]* threads, /peers: \1, /p; s/^info_malloc: /peers: malloc tuning (mallopt, 1 GiB) /p' "$first" | head -2
counts_csv=$(
  IFS=,
  echo "${counts[*]}"
)
models_csv=$(
  IFS=,
  echo "${models[*]}"
)
"$venv/bin/python" "$root/bench/train_report.py" "$out" "$models_csv" "$counts_csv"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
