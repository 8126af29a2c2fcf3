#!/usr/bin/env python3
"""Writes hostile .tsl inputs into a folder (used by tests/lit/robustness)."""
import os
import random
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def write(name, text, mode='w'):
    with open(os.path.join(out, name), mode) as f:
        f.write(text)


write('parens.tsl', 'fn f(x: f32[N]) -> f32[N] { return ' + '(' * 100000 + 'x' + ')' * 100000 + '; }\n')
write('negs.tsl', 'fn f(x: f32[N]) -> f32[N] { return ' + '-' * 100000 + 'x; }\n')
write('terms.tsl', 'fn f(x: f32[N]) -> f32[N] { return x' + ' + x' * 50000 + '; }\n')
write('functions.tsl', ''.join(f'fn f{i}(x: f32[N]) -> f32[N] {{ return relu(x) + {i}.0; }}\n' for i in range(20000)))
rnd = random.Random(42)
write('garbage.tsl', bytes(rnd.randrange(256) for _ in range(200000)), 'wb')
write('nul.tsl', b'fn f(x: f32[N]) -> f32[N] { return x; }\n\x00\x00\x00', 'wb')
fan = ''.join(f'fn g{i}(x: f32[N]) -> f32[N] {{ return g{i + 1}(x) + g{i + 1}(x); }}\n' for i in range(40))
fan += 'fn g40(x: f32[N]) -> f32[N] { return x; }\n'
write('fanout.tsl', fan)
write('bigdims.tsl', 'fn f(x: f32[N]) -> f32[N] { let n = size(x, 0)' + ' / 2 * N' * 200 + '; return x; }\n')
