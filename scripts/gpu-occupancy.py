#!/usr/bin/env python3
"""Registers, spills and the occupancy they allow, per GPU kernel of a function.

usage: gpu-occupancy.py [--tslc PATH] [--ptxas PATH] [--arch sm_80,sm_90]
                        FILE --fn NAME --arg NAME=VALUE...

Runs the function once on the GPU emulator under TSL_LOGS=gpu-counters to
learn each kernel's launch shape (threads per block, dynamic shared memory),
emits the kernels' PTX per architecture (tslc emit --emit=ptx), assembles it
with `ptxas -v`, and prints one line per kernel and architecture:

  sm_80 tsl_k3: 168 registers, 0 spill stores, 0 spill loads, 0 stack bytes;
      256 threads, 20480 shared bytes: 1 block/SM (registers), 8 of 64 warps

Blocks per SM are the least of what threads (2,048), blocks (32), registers
(65,536 per SM, allocated per warp in units of 256) and shared memory
(sm_80: 164 KiB, sm_90: 228 KiB per SM, 1 KiB reserved per block) allow.
Kernels the run did not launch print their registers with "not launched".
Exit status 2 when ptxas or tslc is missing or fails.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHARED_PER_SM = {"sm_80": 164 * 1024, "sm_90": 228 * 1024}
REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
RESERVED_SHARED_PER_BLOCK = 1024


def blocks_per_sm(arch, registers, threads, shared):
    """(blocks, limiter) for a kernel of `registers` per thread launched with
    `threads` per block and `shared` bytes of shared memory."""
    warps = (threads + 31) // 32
    limits = [(THREADS_PER_SM // threads, "threads"), (BLOCKS_PER_SM, "blocks")]
    per_warp = ((max(registers, 1) * 32 + 255) // 256) * 256
    limits.append(((REGISTERS_PER_SM // per_warp) // warps, "registers"))
    limits.append((SHARED_PER_SM[arch] // (shared + RESERVED_SHARED_PER_BLOCK),
                   "shared memory"))
    return min(limits, key=lambda l: l[0])


def launch_shapes(tslc, file, fn, args):
    """{kernel number: (threads, shared bytes)} from an emulator run."""
    env = dict(os.environ, TSL_LOGS="gpu-counters")
    cmd = [tslc, "run", file, "--fn", fn, "--backend", "gpu-emulator"]
    for a in args:
        cmd += ["--arg", a]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("gpu-occupancy: the emulator run failed:\n" + run.stderr)
    shapes = {}
    pattern = re.compile(r"kernel (\d+): \d+ launch(?:es)? of (\d+) threads, "
                         r"(\d+) shared bytes")
    for line in run.stderr.splitlines():
        m = pattern.search(line)
        if m:
            shapes[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return shapes


def ptxas_report(tslc, ptxas, file, fn, args, arch, scratch):
    """{function: {registers, spill stores, spill loads, stack, smem}}."""
    ptx = os.path.join(scratch, fn + "." + arch + ".ptx")
    cmd = [tslc, "emit", file, "--emit=ptx", "--arch", arch, "--fn", fn,
           "-o", ptx]
    for a in args:
        cmd += ["--arg", a]
    emit = subprocess.run(cmd, capture_output=True, text=True)
    if emit.returncode != 0:
        sys.exit("gpu-occupancy: tslc emit failed:\n" + emit.stderr)
    run = subprocess.run([ptxas, "-v", "-arch=" + arch, ptx, "-o",
                          os.path.join(scratch, "out.cubin")],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        sys.exit(2)
    out, name = {}, None
    for line in run.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name = m.group(1)
            out[name] = {"registers": 0, "spill stores": 0, "spill loads": 0,
                         "stack": 0, "smem": 0}
            continue
        if name is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                      r"(\d+) bytes spill loads", line)
        if m:
            out[name]["stack"] = int(m.group(1))
            out[name]["spill stores"] = int(m.group(2))
            out[name]["spill loads"] = int(m.group(3))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[name]["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            out[name]["smem"] = int(s.group(1)) if s else 0
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--fn", required=True)
    p.add_argument("--arg", action="append", default=[])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--tslc", default=os.path.join(here, "..", "build", "bin",
                                                  "tslc"))
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    p.add_argument("--ptxas", default=shutil.which("ptxas") or
                   os.path.join(cuda, "bin", "ptxas"))
    p.add_argument("--arch", default="sm_80,sm_90")
    o = p.parse_args()
    if not os.path.exists(o.ptxas):
        print("gpu-occupancy: no ptxas (set --ptxas or CUDA_HOME)",
              file=sys.stderr)
        return 2
    shapes = launch_shapes(o.tslc, o.file, o.fn, o.arg)
    with tempfile.TemporaryDirectory() as scratch:
        for arch in o.arch.split(","):
            report = ptxas_report(o.tslc, o.ptxas, o.file, o.fn, o.arg, arch,
                                  scratch)
            for name in sorted(report, key=lambda n: (len(n), n)):
                r = report[name]
                line = ("%s %s: %d registers, %d spill stores, %d spill loads, "
                        "%d stack bytes" % (arch, name, r["registers"],
                                            r["spill stores"],
                                            r["spill loads"], r["stack"]))
                m = re.fullmatch(r"tsl_k(\d+)", name)
                shape = shapes.get(int(m.group(1))) if m else None
                if shape is None:
                    print(line + "; not launched")
                    continue
                threads, dynamic = shape
                shared = dynamic + r["smem"]
                blocks, limiter = blocks_per_sm(arch, r["registers"], threads,
                                                shared)
                print("%s; %d threads, %d shared bytes: %d block%s/SM (%s), "
                      "%d of 64 warps" % (line, threads, shared, blocks,
                                          "" if blocks == 1 else "s", limiter,
                                          blocks * ((threads + 31) // 32)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
