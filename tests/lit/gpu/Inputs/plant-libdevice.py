#!/usr/bin/env python3
"""Links the CUDA toolkit's libdevice (beside PTXAS: <toolkit>/bin/ptxas,
<toolkit>/nvvm/libdevice/libdevice.10.bc) at DEST, making its directories.

usage: plant-libdevice.py PTXAS DEST
"""
import os
import sys

ptxas, dest = sys.argv[1], sys.argv[2]
toolkit = os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))
source = os.path.join(toolkit, 'nvvm', 'libdevice', 'libdevice.10.bc')
if not os.path.exists(source):
    sys.exit(f'no libdevice at {source}')
os.makedirs(os.path.dirname(dest), exist_ok=True)
os.symlink(source, dest)
