#!/usr/bin/env python3
"""Compares the code two tslc binaries generate (the safety net of backend
refactorings that must not change the output, issue 33).

For every .tsl file of the corpus (tests/lit/**, examples/**, bench/*.tsl by
default) it asks both compilers for the host's LLVM IR and the GPU's PTX
(`tslc emit FILE --emit=llvm,ptx`) of every function, symbolically (no
--arg), and once more for each `%tslc emit ... --fn F --arg ...` RUN line of a
lit test (the concrete variant the test compiles). When a whole file does not
compile (one of its functions is not supported on the GPU, say) it falls back
to one function and one stage at a time. A unit that fails identically in
both (same exit status and message) is skipped; one that differs in any byte
of output, status or message is a difference.

Prints the number of units (function x stage) compared, skipped, and every
difference (with a unified diff of the first lines); exits 1 when there is a
difference.

  scripts/compare-codegen.py BEFORE/tslc AFTER/tslc [--jobs N]
      [--cache DIR [--prime]] [--only REGEX] [--stages llvm,ptx] [FILE...]

--cache DIR keeps BEFORE's outputs (keyed by the binary's digest and the
command), so that comparing several AFTER builds against one baseline runs
the baseline once; --prime only fills it (AFTER is not run).
"""

import argparse
import concurrent.futures
import difflib
import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("llvm", "ptx")
TIMEOUT = "timeout"
FN_RE = re.compile(r"^\s*(?:pub\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)\s*[(<\[]",
                   re.M)


def corpus(files):
    if files:
        return [os.path.abspath(f) for f in files]
    out = []
    for pattern in ("tests/lit/**/*.tsl", "examples/**/*.tsl", "bench/*.tsl"):
        out += glob.glob(os.path.join(ROOT, pattern), recursive=True)
    return sorted(set(out))


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return list(dict.fromkeys(FN_RE.findall(text)))


def run_lines(path):
    """The --fn/--arg sets of the file's `%tslc emit` RUN lines."""
    sets = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "RUN:" not in line or "%tslc emit" not in line:
                continue
            cmd = line.split("%tslc emit", 1)[1]
            cmd = re.split(r"\s(?:\||&&|%\}|>)\s", cmd)[0]
            cmd = (cmd.replace("%fixtures", os.path.join(ROOT, "tests", "fixtures"))
                   .replace("%stdlib", os.path.join(ROOT, "stdlib"))
                   .replace("%S", os.path.dirname(path)).replace("%s", path))
            try:
                toks = shlex.split(cmd)
            except ValueError:
                continue
            fn, args = None, []
            for i, t in enumerate(toks[:-1]):
                if t == "--fn":
                    fn = toks[i + 1]
                elif t == "--arg":
                    args += ["--arg", toks[i + 1]]
            if fn and args and (fn, args) not in sets:
                sets.append((fn, args))
    return sets


class Runner:
    def __init__(self, tslc, cache, timeout):
        self.tslc = tslc
        self.timeout = timeout
        self.cache = cache
        self.digest = None
        if cache:
            h = hashlib.sha256()
            with open(tslc, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self.digest = h.hexdigest()[:16]
            os.makedirs(cache, exist_ok=True)

    def __call__(self, path, extra):
        cmd = [self.tslc, "emit", path] + extra
        key = None
        if self.cache:
            key = os.path.join(self.cache, hashlib.sha256(
                (self.digest + "\0" + "\0".join(cmd[1:])).encode()).hexdigest())
            if os.path.exists(key):
                with open(key, encoding="utf-8") as f:
                    return tuple(json.load(f))
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               cwd=os.path.dirname(path), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return (TIMEOUT, "", "")  # not cached
        res = (p.returncode, p.stdout.decode("utf-8", "replace"),
               p.stderr.decode("utf-8", "replace"))
        if key:
            with open(key, "w", encoding="utf-8") as f:
                json.dump(res, f)
        return res


def compare_unit(before, after, path, extra):
    """(status, detail): status is 'same', 'skip' (both fail alike), 'diff'
    or 'timeout' (either compiler ran past --timeout).
    With no \p after (--prime) only BEFORE runs (filling the cache)."""
    b = before(path, extra)
    if b[0] == TIMEOUT:
        return "timeout", None
    a = after(path, extra) if after else b
    if a[0] == TIMEOUT:
        return "timeout", None
    if b == a:
        return ("same" if b[0] == 0 else "skip"), None
    lines = []
    if b[0] != a[0]:
        lines.append(f"exit status {b[0]} -> {a[0]}")
    for name, x, y in (("stdout", b[1], a[1]), ("stderr", b[2], a[2])):
        if x != y:
            d = list(difflib.unified_diff(x.splitlines(), y.splitlines(),
                                          "before", "after", lineterm="", n=1))
            lines.append(f"{name} differs ({len(d)} diff lines):")
            lines += d[:40]
    return "diff", "\n".join(lines)


def check_file(before, after, path, stages):
    """Compares one file; returns (compared, skipped, diffs, timeouts)."""
    compared, skipped, diffs, timeouts = 0, 0, [], []
    fns = functions(path)
    rel = os.path.relpath(path, ROOT)

    def unit(label, extra, weight):
        nonlocal compared, skipped
        status, detail = compare_unit(before, after, path, extra)
        if status == "same":
            compared += weight
        elif status == "skip":
            skipped += weight
        elif status == "timeout":
            timeouts.append(f"{rel} {label}")
        else:
            diffs.append(f"{rel} {label}: {detail}")
        return status

    # The whole file at once; per function and stage where it fails.
    status, _ = compare_unit(before, after, path,
                             ["--emit=" + ",".join(stages)])
    if status == "same":
        compared += len(stages) * len(fns)
    else:
        for fn in fns:
            for stage in stages:
                unit(f"--fn {fn} --emit={stage}",
                     ["--fn", fn, f"--emit={stage}"], 1)
    for fn, args in run_lines(path):
        for stage in stages:
            unit(f"--fn {fn} {' '.join(args)} --emit={stage}",
                 ["--fn", fn, f"--emit={stage}"] + args, 1)
    return compared, skipped, diffs, timeouts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", help="keep BEFORE's outputs here")
    ap.add_argument("--only", help="regex on the file path")
    ap.add_argument("--stages", default=",".join(STAGES),
                    help="emit stages to compare (default llvm,ptx)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds per compile (default 300); a unit that "
                    "runs past it is listed as not compared")
    ap.add_argument("--prime", action="store_true",
                    help="only run BEFORE, filling --cache (AFTER unused)")
    o = ap.parse_args()
    stages = [s for s in o.stages.split(",") if s]
    before = Runner(os.path.abspath(o.before), o.cache, o.timeout)
    after = None if o.prime else Runner(os.path.abspath(o.after), None,
                                        o.timeout)
    files = corpus(o.files)
    if o.only:
        files = [f for f in files if re.search(o.only, f)]
    compared = skipped = 0
    diffs, timeouts = [], []
    with concurrent.futures.ThreadPoolExecutor(o.jobs) as pool:
        for c, s, d, t in pool.map(
                lambda f: check_file(before, after, f, stages), files):
            compared += c
            skipped += s
            diffs += d
            timeouts += t
    for t in timeouts:
        print("TIMEOUT (not compared) " + t)
    for d in diffs:
        print("DIFF " + d)
    print(f"compare-codegen: {len(files)} files, {compared} functions x stages "
          f"compared, {skipped} skipped (fail alike in both), "
          f"{len(timeouts)} timed out, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
