#!/usr/bin/env python3
"""Compares two .npy files (shape, dtype and values) without NumPy.

usage: npycmp.py ACTUAL EXPECTED [--rtol R] [--atol A]
Exit 0 when they match; 1 with a message naming the first mismatch.
Default tolerances depend on the element type (see docs/testing.md).
"""
import math
import struct
import sys

FORMATS = {'|b1': ('?', 1), '<b1': ('?', 1), '|i1': ('b', 1), '<i1': ('b', 1),
           '<i4': ('i', 4), '<i8': ('q', 8), '<f2': ('e', 2), '<u2': ('H', 2),
           '<f4': ('f', 4), '<f8': ('d', 8)}
TOLERANCE = {'<f2': (1e-3, 1e-3), '<u2': (0, 0), '<f4': (1e-5, 1e-6), '<f8': (1e-12, 1e-12)}


def read(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:6] != b'\x93NUMPY':
        sys.exit(f'{path}: not a .npy file')
    if data[6] == 1:
        hlen = struct.unpack('<H', data[8:10])[0]
        start = 10
    else:
        hlen = struct.unpack('<I', data[8:12])[0]
        start = 12
    header = eval(data[start:start + hlen].decode('latin1'))  # a Python dict literal
    descr = header['descr']
    shape = tuple(header['shape'])
    code, size = FORMATS[descr]
    n = 1
    for d in shape:
        n *= d
    body = data[start + hlen:start + hlen + n * size]
    values = list(struct.unpack('<%d%s' % (n, code), body)) if n else []
    return descr, shape, values


def bf16(bits):
    return struct.unpack('<f', struct.pack('<I', bits << 16))[0]


def main():
    args = sys.argv[1:]
    rtol = atol = None
    if '--rtol' in args:
        i = args.index('--rtol'); rtol = float(args[i + 1]); del args[i:i + 2]
    if '--atol' in args:
        i = args.index('--atol'); atol = float(args[i + 1]); del args[i:i + 2]
    actual, expected = read(args[0]), read(args[1])
    if actual[0] != expected[0]:
        sys.exit(f'dtype differs: {actual[0]} vs expected {expected[0]}')
    if actual[1] != expected[1]:
        sys.exit(f'shape differs: {actual[1]} vs expected {expected[1]}')
    descr = actual[0]
    r, a = TOLERANCE.get(descr, (0, 0))
    if descr == '<u2':  # bf16 bits
        r, a = 8e-3, 1e-2
    rtol = r if rtol is None else rtol
    atol = a if atol is None else atol
    for i, (x, y) in enumerate(zip(actual[2], expected[2])):
        if descr == '<u2':
            x, y = bf16(x), bf16(y)
        if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):
            if math.isnan(x) and math.isnan(y):
                continue
            sys.exit(f'element {i}: {x} vs expected {y}')
        if abs(x - y) > atol + rtol * abs(y):
            sys.exit(f'element {i}: {x} vs expected {y} (rtol {rtol}, atol {atol})')
    print(f'match: {descr} {actual[1]}')


if __name__ == '__main__':
    main()
