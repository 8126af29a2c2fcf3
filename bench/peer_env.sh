# Sourced by the CPU benchmarks (bench/cpu.sh, bench/train.sh) after
# bench/venv.sh: the thread counts to measure and the environment the peers
# run in, with what keeps them honest printed.
# Sets $all (the CPUs of the affinity mask: the TSL pool's default size),
# $counts (1, and $all when larger) and $peer_env (a command prefix: env with
# the core-type and thread overrides unset, so OpenBLAS and MKL run their
# native kernels for this CPU, and OMP_WAIT_POLICY=$TSL_BENCH_OMP_WAIT,
# default passive: TSL's pool waits on a condition variable, and OpenMP's
# default spinning starves the other side's threads on a shared machine).
all=$(nproc)
counts=(1)
((all > 1)) && counts+=("$all")
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')
[ -n "$model" ] || model=$(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1)
isa=$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || (grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo "no AVX2"))
echo "CPU: $model ($isa); $all CPUs in the affinity mask, $(nproc --all) online; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "threads: ${counts[*]} (TSL_NUM_THREADS for TSL; torch.set_num_threads and OPENBLAS/OMP/MKL_NUM_THREADS for the peers)"
overrides=(OPENBLAS_CORETYPE OPENBLAS_VERBOSE OPENBLAS_NUM_THREADS GOTO_NUM_THREADS
  OMP_NUM_THREADS MKL_NUM_THREADS MKL_DEBUG_CPU_TYPE MKL_ENABLE_INSTRUCTIONS MKL_CBWR
  ATEN_CPU_CAPABILITY OMP_WAIT_POLICY GOMP_SPINCOUNT)
peer_env=(env)
for v in "${overrides[@]}"; do
  [ -n "${!v+x}" ] && echo "unset for the peers: $v=${!v}"
  peer_env+=(-u "$v")
done
omp_wait=${TSL_BENCH_OMP_WAIT:-passive}
peer_env+=("OMP_WAIT_POLICY=$omp_wait")
echo "peers: OMP_WAIT_POLICY=$omp_wait (TSL's pool waits on a condition variable)"
