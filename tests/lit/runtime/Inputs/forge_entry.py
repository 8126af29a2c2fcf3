"""Forges a compile-cache entry as someone who can write the cache directory
would: the object and manifest of function g's entry (cache dir 2) put under
the key of function f's entry (cache dir 1), the manifest renamed to f and
the entry's checksum recomputed (old format: FNV-1a `.sum`; new format: the
SHA-256 in the `.key` file)."""
import glob
import hashlib
import os
import sys

fdir, gdir = sys.argv[1], sys.argv[2]


def one(d, ext):
    (path,) = glob.glob(os.path.join(d, '*' + ext))
    return path


base = one(fdir, '.o')[:-2]
key = os.path.basename(base)
obj = open(one(gdir, '.o'), 'rb').read()
manifest = open(one(gdir, '.manifest'), 'rb').read().replace(
    b'variant\tg\t', b'variant\tf\t')
open(base + '.o', 'wb').write(obj)
open(base + '.manifest', 'wb').write(manifest)
if os.path.exists(base + '.sum'):
    h = 1469598103934665603
    for c in key.encode() + manifest + obj:
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    open(base + '.sum', 'w').write('%016x' % h)
if os.path.exists(base + '.key'):
    text = open(base + '.key', 'rb').read()
    request = text[:text.rindex(b'digest ')]
    h = hashlib.sha256()
    for part in (request, manifest, obj):
        h.update(b'%d\n' % len(part))
        h.update(part)
    open(base + '.key', 'wb').write(request + b'digest ' +
                                    h.hexdigest().encode() + b'\n')
