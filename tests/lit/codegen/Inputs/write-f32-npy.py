#!/usr/bin/env python3
"""Writes the float32 values given on the command line (nan, inf and -inf
allowed) as a 1-d .npy file, without NumPy: write-f32-npy.py OUT V..."""
import struct
import sys

out, values = sys.argv[1], [float(v) for v in sys.argv[2:]]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
header += ' ' * (63 - (10 + len(header)) % 64) + '\n'
with open(out, 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode('latin1'))
    f.write(struct.pack('<%df' % len(values), *values))
