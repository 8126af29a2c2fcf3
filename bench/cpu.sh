#!/usr/bin/env bash
# CPU benchmarks in one run, with ratios against peers measured in the same
# run (NumPy/OpenBLAS, PyTorch eager, torch.compile(dynamic=True)), each side
# on one thread and on every CPU of the affinity mask.
# Makes a venv with the newest NumPy, PyTorch and threadpoolctl from PyPI on
# first use.
#   bash bench/cpu.sh              every row
#   bash bench/cpu.sh conv mm      only those groups (dispatch ew mm encoder rows conv attention half;
#                                  half times f16 and bf16 against TSL's own f32, no peer)
# TSL_BENCH_ROUNDS (default 3): interleaved rounds, best of each side.
# TSL_BENCH_OMP_WAIT (default passive): the peers' OMP_WAIT_POLICY (see below).
#
# What keeps the peers honest:
# - their core-type overrides are unset in their command only (env -u), so
#   OpenBLAS and MKL run their native kernels for this CPU; the kernel
#   threadpoolctl reports is printed;
# - they run with the TSL runtime's malloc setting (cpu_peers.py applies
#   mallopt(M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, 1 GiB) before allocating),
#   so neither side page-faults fresh memory for each large output;
# - their OpenMP threads wait passively, as TSL's pool does (a condition
#   variable): OpenMP's default spinning starves the other side's threads on
#   a shared machine (PyTorch's encoder on 2 threads ran 10x slower than on
#   one here). TSL_BENCH_OMP_WAIT=active restores the default on a quiet
#   machine;
# - the encoder is also written as explicit ops, eager with PyTorch's GEMM
#   (MKL) and with NumPy's (OpenBLAS), and under torch.compile(dynamic=True),
#   whose graphs and recompiles are printed.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
# Rounds alternate TSL and the peers, and each figure is the best of its
# rounds on both sides: this machine's timings drift by 10-30% over a minute
# (shared cores), and alternating keeps both sides under the same drift.
rounds=${TSL_BENCH_ROUNDS:-3}
source "$(dirname "$0")/peer_env.sh"
err=$(mktemp)
trap 'rm -f "$err"' EXIT
declare -A tsl peers seen
for ((r = 1; r <= rounds; ++r)); do
  for t in "${counts[@]}"; do
    out=$(TSL_NUM_THREADS=$t "$root/build/bin/tsl_bench_cpu" "$root/bench/models.tsl" "$@")
    tsl[$t]+="$out"$'\n'
    info=()
    ((r == 1)) && info=(--info)
    if ! p=$("${peer_env[@]}" "$venv/bin/python" "$root/bench/cpu_peers.py" --threads "$t" \
      "${info[@]}" "$@" 2>"$err"); then
      echo "bench/cpu_peers.py failed (threads $t):" >&2
      tail -20 "$err" >&2
      exit 1
    fi
    peers[$t]+="$p"$'\n'
    # What the peers run on, once (the lines that change with the threads
    # again for each count).
    while IFS= read -r line; do
      [ -n "${seen[$line]+x}" ] || echo "peers: $line"
      seen[$line]=1
    done < <(sed -n 's/^info: //p' <<<"$p")
    echo "--- round $r of $rounds, TSL on $t thread(s)"
    echo "$out"
  done
done
report=()
for t in "${counts[@]}"; do
  report+=("$t" "${tsl[$t]}" "${peers[$t]}")
done
python3 - "${report[@]}" <<'PY'
import re, sys

data = sys.argv[1:]
counts = [int(c) for c in data[0::3]]
tsl_text = dict(zip(counts, data[1::3]))
peer_text = dict(zip(counts, data[2::3]))
NUM = r'([0-9.]+)'
# (pattern, names of its numeric groups; {0}, {1} are earlier groups).
PATTERNS = [
    (rf'dispatch \(10 guards\): {NUM} ns', ['dispatch']),
    (rf'16M f32: {NUM} ms \(copy {NUM} ms', ['ew', 'copy']),
    (rf'matmul (\d+)\^3 f32: {NUM} ms', ['mm_{0}']),
    (rf'static variant: {NUM} ms; dynamic: {NUM} ms', ['static', 'dynamic']),
    (rf'softmax B=(\d+) S=(\d+): {NUM} ms; encoder_layer: {NUM} ms',
     ['softmax_{0}_{1}', 'encoder_{0}_{1}']),
    (rf'encoder_layer D=(\d+) B=(\d+) S=(\d+): {NUM} ms', ['encoder_d{0}_{1}_{2}']),
    (rf'softmax \[64,512,768\]: {NUM} ms; layer_norm: {NUM} ms', ['softmax_big', 'layer_norm_big']),
    (rf'conv3x3 64ch N=4 56x56: {NUM} ms = [0-9.]+ GFLOP/s; resnet_block: {NUM} ms',
     ['conv3x3', 'resnet_block']),
    (rf'attention B=1 H=8 S=T=1024 D=64: {NUM} ms', ['attention']),
]


def parse_tsl(text):
    """Best (smallest) value of each named figure over the rounds."""
    best = {}
    for pattern, names in PATTERNS:
        for m in re.finditer(pattern, text):
            groups = m.groups()
            keys = [g for g in groups if '.' not in g]  # integer groups name the figure
            values = [float(g) for g in groups if '.' in g]
            for name, v in zip(names, values):
                key = name.format(*keys)
                best[key] = min(best.get(key, float('inf')), v)
    return best


def parse_peers(text):
    best = {}
    for line in text.splitlines():
        if ': ' not in line or line.startswith('info: '):
            continue
        k, v = line.split(': ', 1)
        if k.startswith('count_'):
            best[k] = v  # the same every round
        else:
            best[k] = min(best.get(k, float('inf')), float(v))
    return best


T = {c: parse_tsl(tsl_text[c]) for c in counts}
P = {c: parse_peers(peer_text[c]) for c in counts}
heads = ''.join(f'{f"{c} thread" + ("s" if c > 1 else ""):>12}' for c in counts)

print(f'--- peers (ms, best of each side\'s rounds){heads}')
for k in P[counts[0]]:
    print(f'{k:<40}' + ''.join(f'{str(P[c].get(k, "-")):>12}' for c in counts))

print(f'--- ratios: peer time / TSL time, best of each; > 1 means TSL is faster'
      f'\n{"":<56}{heads}  target (all cores)')


def row(label, values, target=''):
    if all(v is None for v in values):
        return
    cells = ''.join(f'{"-" if v is None else f"{v:.2f}x":>12}' for v in values)
    print(f'{label:<56}{cells}  {target}')


def ratio(peer, tsl, c):
    p, t = P[c].get(peer), T[c].get(tsl)
    return p / t if isinstance(p, float) and t else None


def ratios(label, peer, tsl, target=''):
    row(label, [ratio(peer, tsl, c) for c in counts], target)


if 'dispatch' in T[counts[0]]:
    for c in counts:
        d, o = T[c]['dispatch'], P[c].get('torch_compile_call_overhead', 0.0) * 1e6
        print(f'dispatch, {c} thread(s): {d:.1f} ns vs torch.compile call overhead {o:.0f} ns '
              f'(target: <= 50 ns)')
row('elementwise: TSL time / memcpy time (lower is better)',
    [T[c]['ew'] / T[c]['copy'] if 'ew' in T[c] else None for c in counts], '<= 1.5')
ratios('elementwise relu(x*1.5+0.5)*2 16M vs NumPy', 'numpy_ew', 'ew', '>= 1.0')
ratios('elementwise relu(x*1.5+0.5)*2 16M vs PyTorch eager', 'torch_ew', 'ew', '>= 1.0')
ratios('matmul 1024^3 vs NumPy/OpenBLAS', 'numpy_mm_1024', 'mm_1024', '>= 1.0')
ratios('matmul 1024^3 vs PyTorch (MKL)', 'torch_mm_1024', 'mm_1024', '>= 1.0')
ratios('matmul 4096^3 vs NumPy/OpenBLAS', 'numpy_mm_4096', 'mm_4096', '>= 0.95')
row('encoder B=4 S=128: static variant time / dynamic time',
    [T[c]['static'] / T[c]['dynamic'] if 'static' in T[c] else None for c in counts], '>= 0.9')
for tag in ['1_128', '4_128', '1_512', '8_64', 'd768_1_256']:
    d, shape = (768, tag[5:]) if tag.startswith('d768_') else (256, tag)
    shape = f'(B,S)=({shape.replace("_", ",")}) D={d}'
    if f'softmax_{tag}' in T[counts[0]]:
        ratios(f'softmax {shape} vs PyTorch', f'torch_softmax_{tag}', f'softmax_{tag}', '>= 1.0')
    name = f'encoder {shape}'
    ratios(f'{name} vs nn.TransformerEncoderLayer', f'torch_encoder_{tag}', f'encoder_{tag}', '>= 1.0')
    ratios(f'{name} vs explicit ops, eager', f'torch_encoder_ops_{tag}', f'encoder_{tag}', '>= 1.0')
    ratios(f'{name} vs ops with NumPy GEMMs', f'numpy_encoder_ops_{tag}', f'encoder_{tag}', '>= 1.0')
    ratios(f'{name} vs torch.compile(dynamic)', f'torch_compile_encoder_{tag}', f'encoder_{tag}', '>= 1.2')
for c in counts:
    if 'count_compile_graphs' in P[c]:
        print(f'torch.compile(dynamic=True) of the encoder ops, {c} thread(s): '
              f'{P[c]["count_compile_graphs"]} graphs, {P[c]["count_compile_recompiles"]} recompiles, '
              f'{P[c]["count_compile_graph_breaks"]} graph breaks (all five shapes)')
ratios('softmax [64,512,768] vs PyTorch', 'torch_softmax_big', 'softmax_big', '>= 1.0')
ratios('layer_norm [64,512,768] vs PyTorch', 'torch_layer_norm_big', 'layer_norm_big', '>= 1.0')
ratios('conv2d 3x3 64ch N=4 56x56 vs PyTorch', 'torch_conv3x3', 'conv3x3', '>= 1.0')
ratios('ResNet basic block N=4 56x56 64ch vs PyTorch', 'torch_resnet_block', 'resnet_block', '>= 1.0')
ratios('attention 8x64 S=T=1024 vs scaled_dot_product_attention', 'torch_attention', 'attention',
       '>= 1.0')

if len(counts) > 1:
    n = counts[-1]
    print(f'--- scaling: {n}-thread time / 1-thread time (lower is better; TSL target <= 0.6 for '
          f'matmul, encoder, softmax, attention)')
    print(f'{"":<40}{"TSL":>8}{"peer":>8}  (peer)')
    pairs = [('mm_1024', 'numpy_mm_1024'), ('mm_4096', 'numpy_mm_4096'),
             ('encoder_4_128', 'torch_compile_encoder_4_128'),
             ('encoder_1_512', 'torch_compile_encoder_1_512'),
             ('encoder_d768_1_256', 'torch_compile_encoder_d768_1_256'),
             ('softmax_4_128', 'torch_softmax_4_128'), ('softmax_big', 'torch_softmax_big'),
             ('layer_norm_big', 'torch_layer_norm_big'), ('attention', 'torch_attention'),
             ('conv3x3', 'torch_conv3x3'), ('ew', 'torch_ew')]
    for tsl, peer in pairs:
        if tsl not in T[1] or tsl not in T[n]:
            continue
        mine = T[n][tsl] / T[1][tsl]
        theirs = P[n][peer] / P[1][peer] if peer in P[1] and peer in P[n] else None
        print(f'{tsl:<40}{mine:>8.2f}{"-" if theirs is None else f"{theirs:.2f}":>8}  ({peer})')
    print('(where the peers do not scale either, other work held the cores: see the load average)')
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
