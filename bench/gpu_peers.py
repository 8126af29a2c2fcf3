#!/usr/bin/env python3
"""PyTorch peers for bench/gpu.sh, on the same GPU: device-to-device copy
bandwidth, eager relu(x*1.5+0.5)*2.0, torch.matmul 4096^3 in f32 and bf16,
and nn.TransformerEncoderLayer (D=1024) across the 20 sequence lengths of
tsl_bench_gpu, eager and torch.compile(dynamic=True): steady latency,
compile time and number of compiles. Prints 'key: value' lines.

--small shrinks every size (a smoke test, also on the CPU)."""
import sys
import time

import torch

small = '--small' in sys.argv
dev = 'cuda' if torch.cuda.is_available() else 'cpu'
if dev == 'cpu' and not small:
    sys.exit('gpu_peers.py: no CUDA device (use --small for a CPU smoke test)')


def sync():
    if dev == 'cuda':
        torch.cuda.synchronize()


def median(fn, reps):
    fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


print(f'device: {torch.cuda.get_device_name() if dev == "cuda" else "cpu"}')
print(f'torch: {torch.__version__}')
n = 1 << 16 if small else 1 << 28
x = torch.randn(n, device=dev)
y = torch.empty_like(x)
t = median(lambda: y.copy_(x), 20)
print(f'copy_gbs: {8.0 * n / t / 1e9:.1f}')
t = median(lambda: torch.relu(x * 1.5 + 0.5) * 2.0, 20)
print(f'torch_ew_ms: {t * 1e3:.4f}')
del x, y

m = 64 if small else 4096
for dtype, name in [(torch.float32, 'f32'), (torch.bfloat16, 'bf16')]:
    a = torch.randn(m, m, device=dev, dtype=dtype)
    b = torch.randn(m, m, device=dev, dtype=dtype)
    t = median(lambda: torch.matmul(a, b), 5 if not small else 2)
    print(f'torch_mm_{name}_ms: {t * 1e3:.4f}')

d = 64 if small else 1024
lengths = [4 + 3 * i if small else 64 + 48 * i for i in range(20)]
layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=d // 64, dim_feedforward=4 * d,
                                         dropout=0.0, activation='gelu',
                                         batch_first=True).to(dev).eval()
with torch.no_grad():
    eager = []
    for s in lengths:
        xs = torch.randn(1, s, d, device=dev)
        eager.append(median(lambda: layer(xs), 5 if not small else 2))
    print(f'torch_encoder_eager_ms: {sum(eager) / len(eager) * 1e3:.4f}')

    import torch._dynamo
    torch._dynamo.reset()
    compiled = torch.compile(layer, dynamic=True)
    compile_s, steady = 0.0, []
    for s in lengths:
        xs = torch.randn(1, s, d, device=dev)
        start = time.perf_counter()
        compiled(xs)
        sync()
        first = time.perf_counter() - start
        st = median(lambda: compiled(xs), 5 if not small else 2)
        steady.append(st)
        compile_s += max(0.0, first - st)
    from torch._dynamo.utils import counters
    print(f'torch_compile_encoder_ms: {sum(steady) / len(steady) * 1e3:.4f}')
    print(f'torch_compile_time_ms: {compile_s * 1e3:.1f}')
    print(f'torch_compile_graphs: {counters["stats"]["unique_graphs"]}')
