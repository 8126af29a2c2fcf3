"""usage: plant_and_exec.py CACHE_DIR KEY_DIR VICTIM -- COMMAND...
Plants symlinks to VICTIM at the names of the temporary files the compile
cache writes an entry through (<key><ext>.tmp<pid>, the key taken from the
one entry in KEY_DIR), then execs COMMAND in this process, so its pid is the
one the names hold."""
import glob
import os
import sys

cache_dir, key_dir, victim = sys.argv[1:4]
command = sys.argv[sys.argv.index('--') + 1:]
(obj,) = glob.glob(os.path.join(key_dir, '*.o'))
key = os.path.basename(obj)[:-2]
for ext in ('.o', '.manifest', '.sum', '.key'):
    os.symlink(victim, os.path.join(cache_dir, '%s%s.tmp%d' % (key, ext, os.getpid())))
os.execv(command[0], command)
