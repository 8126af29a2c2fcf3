#!/usr/bin/env python3
"""The tables of bench/train.sh from its runs' outputs.

    train_report.py DIR MODEL,... COUNT,...

DIR holds one file per run, MODEL.THREADS.SIDE.ROUND (SIDE: tsl, eager,
compile), each the 'key: value' lines of bench/train_common.run or, for a run
that failed, 'error: ...' lines. Times are the best (smallest) of the rounds;
memory the smallest; the loss is the last round's (every round computes the
same)."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402

SIDES = ("tsl", "tslwarm", "eager", "compile")
LOSS_RTOL = 1e-3


def parse(path):
    values, errors = {}, []
    with open(path) as f:
        for line in f:
            key, sep, value = line.rstrip("\n").partition(": ")
            if key == "error":
                errors.append(value)
            elif sep:
                values[key] = value
    if errors or "step_ms" not in values:
        return {"error": errors or ["no result (see the run's output above)"]}
    return values


def collect(directory, model, threads, side):
    """The best figures of a side's rounds, or {'error': [...]}."""
    best = None
    for path in sorted(glob.glob(os.path.join(directory, f"{model}.{threads}.{side}.*[0-9]"))):
        run = parse(path)
        if "error" in run:
            return run
        if best is None:
            best = run
            continue
        for key in ("step_ms", "first_step_s", "mem_first_mb", "mem_steps_mb",
                    "mem_step_mb"):
            if key in best and key in run:
                best[key] = str(min(float(best[key]), float(run[key])))
        best["loss"] = run["loss"]
    return best or {"error": ["not run"]}


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def times(value, spec):
    """A ratio as '1.23x', '-' without one."""
    return "-" if value is None else format(value, spec) + "x"


def figure(run, key):
    return float(run[key]) if run and "error" not in run else None


def ratio(peer, mine):
    return None if peer is None or mine is None or mine <= 0 else peer / mine


LABEL = {"tsl": "TSL (cold)", "tslwarm": "TSL (warm cache)", "eager": "torch eager",
         "compile": "torch.compile"}


def report_model(directory, model, counts):
    print(f"=== {tc.DESCRIPTION[model]}; Adam lr {tc.LR[model]}")
    if model == "gpt":
        print("note: TSL's dims: B and S dynamic, S declared 'in 1..1024', D declared = 256 "
              "(bench/train_models.tsl's header)")
    runs = {(t, s): collect(directory, model, t, s) for t in counts for s in SIDES}
    for (t, s), run in runs.items():
        if "error" in run:
            print(f"not supported: {LABEL[s]}, {t} thread(s): {run['error'][0]}")
            for line in run["error"][1:4]:
                print(f"    {line}")
    print(f"{'thr':>3}  {'side':<17}{'step ms':>9}{'ratio':>8}{'first s':>9}{'ratio':>8}"
          f"{'MB 1st':>8}{'MB steps':>9}{'MB/step':>8}  loss after {tc.STEPS} steps")
    for t in counts:
        tsl_ms = figure(runs[t, "tsl"], "step_ms")
        tsl_first = figure(runs[t, "tsl"], "first_step_s")
        tsl_loss = figure(runs[t, "tsl"], "loss")
        for s in SIDES:
            run = runs[t, s]
            if "error" in run:
                print(f"{t:>3}  {LABEL[s]:<17}not supported (above)")
                continue
            step, first, loss = figure(run, "step_ms"), figure(run, "first_step_s"), figure(run, "loss")
            peer = s in ("eager", "compile")
            step_r = times(ratio(step, tsl_ms), ".2f") if peer else ""
            first_r = times(ratio(first, tsl_first), ".1f") if s == "compile" else ""
            if peer and tsl_loss is not None:
                rel = abs(tsl_loss - loss) / max(abs(loss), 1e-30)
                check = f" (TSL's differs by {rel:.1e} rel.: {'ok' if rel <= LOSS_RTOL else 'MISMATCH'})"
            else:
                check = ""
            print(f"{t:>3}  {LABEL[s]:<17}{step:>9.2f}{step_r:>8}{first:>9.2f}{first_r:>8}"
                  f"{figure(run, 'mem_first_mb'):>8.1f}{figure(run, 'mem_steps_mb'):>9.1f}"
                  f"{fmt(figure(run, 'mem_step_mb'), '.1f'):>8}  "
                  f"{loss:.6f}{check}")
    for t in counts:
        for s, key in (("compile", "info_compile"), ("tsl", "info_tsl"), ("tslwarm", "info_tsl")):
            run = runs[t, s]
            if "error" not in run and key in run:
                print(f"{LABEL[s]}, {t} thread(s): {run[key]}")
    n = counts[-1]
    tsl, eager, comp = runs[n, "tsl"], runs[n, "eager"], runs[n, "compile"]
    step_r = ratio(figure(comp, "step_ms"), figure(tsl, "step_ms"))
    first_r = ratio(figure(comp, "first_step_s"), figure(tsl, "first_step_s"))
    mem_t, mem_w = figure(tsl, "mem_steps_mb"), figure(runs[n, "tslwarm"], "mem_steps_mb")
    mem_e = figure(eager, "mem_steps_mb")
    step_t, step_e = figure(tsl, "mem_step_mb"), figure(eager, "mem_step_mb")

    def verdict(ok):
        return "-" if ok is None else ("met" if ok else "MISSED")

    def at_most(a, b):
        return None if a is None or b is None else a <= b

    print(f"targets on {n} thread(s): step >= 1.2x torch.compile's: "
          f"{verdict(None if step_r is None else step_r >= 1.2)}; first step >= 20x faster than "
          f"torch.compile's: {verdict(None if first_r is None else first_r >= 20)}; peak memory "
          f"(steps) <= eager's: {verdict(at_most(mem_t, mem_e))} cold, "
          f"{verdict(at_most(mem_w, mem_e))} warm; a step's own peak (MB/step) <= eager's: "
          f"{verdict(at_most(step_t, step_e))}")
    print()


def main():
    directory, models, counts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    print("--- ratio: torch's time / TSL's (cold) time: > 1 means TSL is faster")
    print(f"--- step: median of the steps 2..{tc.TIMED + 1} (7 steps after the first), best of "
          "the rounds; first step: the first call, compile (cold: TSL_CACHE_DIR=off, a fresh "
          "inductor cache dir) and run")
    print("--- memory: each side in its own fresh process; peak RSS (VmHWM, reset through "
          "/proc/self/clear_refs) minus the RSS before the first step: during the first step, "
          f"and during the steps 2..{tc.STEPS + 1} (the peak reset after the first step); "
          "MB 1st and MB steps below; MB/step: the peak during the steps 2.. minus the RSS "
          "after the first step (what a step takes beyond what the process holds between "
          "steps)")
    print("--- TSL (warm cache): a second process whose first call loads the variant the cold "
          "run stored (TSL_CACHE_DIR), so neither its first step nor its memory has the "
          "compiler's part")
    print()
    for model in models:
        report_model(directory, model, counts)


if __name__ == "__main__":
    main()
