#!/usr/bin/env bash
# Compile time, TSL vs torch.compile(dynamic=True) (issue 11): a post-norm
# transformer encoder (D=768, 12 heads, FFN 3072) of L layers written out
# layer by layer with distinct weights per layer (bench/compile_time_gen.py),
# B and S dynamic, for L = 1 2 4 8 12 24, plus a stack whose layers
# alternate between two kinds (FFN 3072/2048, "alt-12"), so that layers and
# distinct kernels differ. Prints one line per measurement, then a table.
#
# TSL: `tslc run --calls` (the runtime's variant table and JIT, the path an
# embedding program compiles through) with TSL_LOGS=perf; the figure is the
# perf line "compiled encoder variant 0 in X ms": parsing, elaboration for
# the call's types and code generation, without making arguments or running
# (the call itself runs once at B=2, S=8 with zero weights). `tslc build -o
# x.so` also compiles without running, but adds a link step and bypasses the
# compile cache, so it could not give the warm figure the same way.
# Cold: TSL_CACHE_DIR=off, best of 3 rounds (1 when a compile takes more than
# 40 s). Warm: a fresh cache directory filled by one run, then the second
# run's load time. Distinct kernels: from tslc's TSL_LOGS=perf line.

# Peer (bench/compile_time_peer.py, PyTorch from .venv-bench): the same ops
# as an nn.Module (weights static, B and S dynamic), a fresh process per
# case with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 and an empty inductor cache;
# the figure is the first compiled call minus an eager call, one round, with
# the graphs and kernels inductor made. Before timing, TSL's result is
# checked against PyTorch's (2 layers, both kinds, B=2 S=5).
# Both sides also print CPU seconds (steadier than wall time on shared
# cores): TSL's for the whole tslc process, torch's for the first compiled
# call (its process and waited children, the C++ compiler included; with
# threads > 1 the compile workers' CPU is not counted).
#
# Settings (environment):
#   TSL_BENCH_THREADS   compile threads on both sides: torch's set_num_threads
#                       and inductor compile_threads, TSL's TSL_COMPILE_THREADS
#                       (default 1; run again with the core count for "all
#                       threads").
#   TSL_BENCH_BUDGET    seconds after the numerics check (default 810, for
#                       about 15 minutes in all): one cold TSL compile per
#                       case up to 12 layers, torch.compile at 12 layers, the
#                       larger TSL cases, TSL warm, the other torch cases and
#                       TSL's rounds 2-3 run in that order while their
#                       estimated cost fits; what does not fit is printed as
#                       skipped (compile_time_run.py says how it estimates).
#   TSL_BENCH_LAYERS ("1 2 4 8 12 24"), TSL_BENCH_ALT_LAYERS ("12"),
#   TSL_BENCH_TORCH_LAYERS (default: every case), TSL_BENCH_ROUNDS (3).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
args=(--tslc "$root/build/bin/tslc" --python "$venv/bin/python"
  --threads "${TSL_BENCH_THREADS:-1}" --budget "${TSL_BENCH_BUDGET:-810}"
  --layers "${TSL_BENCH_LAYERS-1 2 4 8 12 24}" --alt-layers "${TSL_BENCH_ALT_LAYERS-12}"
  --rounds "${TSL_BENCH_ROUNDS:-3}")
[ -n "${TSL_BENCH_TORCH_LAYERS+x}" ] && args+=(--torch-layers "$TSL_BENCH_TORCH_LAYERS")
exec python3 "$root/bench/compile_time_run.py" "${args[@]}"
