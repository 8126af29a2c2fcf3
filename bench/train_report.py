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

SIDES = ("tsl", "eager", "compile")
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
    for path in sorted(glob.glob(os.path.join(directory, f"{model}.{threads}.{side}.*"))):
        run = parse(path)
        if "error" in run:
            return run
        if best is None:
            best = run
            continue
        for key in ("step_ms", "first_step_s", "mem_first_mb", "mem_steps_mb"):
            best[key] = str(min(float(best[key]), float(run[key])))
        best["loss"] = run["loss"]
    return best or {"error": ["not run"]}


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def figure(run, key):
    return float(run[key]) if run and "error" not in run else None


def ratio(peer, mine):
    return None if peer is None or mine is None or mine <= 0 else peer / mine


def report_model(directory, model, counts):
    print(f"=== {tc.DESCRIPTION[model]}; Adam lr {tc.LR[model]}")
    if model == "gpt":
        print("note: TSL's S (sequence) dim is static here, B dynamic: with 'dim S: dynamic' the "
              "GPT's grad is refused (internal error: the gradient added a size check its forward "
              "did not have: S >= 1; a max reduction over a dynamic axis inside a 'for' body)")
    runs = {(t, s): collect(directory, model, t, s) for t in counts for s in SIDES}
    for (t, s), run in runs.items():
        if "error" in run:
            what = {"tsl": "TSL", "eager": "torch eager", "compile": "torch.compile"}[s]
            print(f"not supported: {what}, {t} thread(s): {run['error'][0]}")
            for line in run["error"][1:4]:
                print(f"    {line}")
    head = f"{'':<34}" + "".join(f"{f'{t} thr':>9}{'':>27}" for t in counts)
    sub = f"{'':<34}" + "".join(f"{'TSL':>9}{'eager':>9}{'compile':>9}{'':>9}" for _ in counts)
    print(head)
    print(sub)

    def row(label, key, spec):
        cells = ""
        for t in counts:
            cells += "".join(f"{fmt(figure(runs[t, s], key), spec):>9}" for s in SIDES) + " " * 9
        print(f"{label:<34}{cells}")

    row("step, median of 7 (ms)", "step_ms", ".2f")
    row("first step: compile + run (s)", "first_step_s", ".2f")
    row("peak memory, first step (MB)", "mem_first_mb", ".1f")
    row("peak memory, steps 2-21 (MB)", "mem_steps_mb", ".1f")
    for t in counts:
        tsl_ms, tsl_first = figure(runs[t, "tsl"], "step_ms"), figure(runs[t, "tsl"], "first_step_s")
        eager = ratio(figure(runs[t, "eager"], "step_ms"), tsl_ms)
        comp = ratio(figure(runs[t, "compile"], "step_ms"), tsl_ms)
        first = ratio(figure(runs[t, "compile"], "first_step_s"), tsl_first)
        print(f"{t} thread(s): step time ratio vs torch.compile {fmt(comp, '.2f')}x, vs eager "
              f"{fmt(eager, '.2f')}x; first step vs torch.compile's {fmt(first, '.1f')}x")
    for t in counts:
        mine = figure(runs[t, "tsl"], "loss")
        parts = [f"TSL {fmt(mine, '.6f')}"]
        for s in ("eager", "compile"):
            theirs = figure(runs[t, s], "loss")
            if mine is None or theirs is None:
                parts.append(f"{s} {fmt(theirs, '.6f')}")
                continue
            rel = abs(mine - theirs) / max(abs(theirs), 1e-30)
            verdict = "ok" if rel <= LOSS_RTOL else "MISMATCH"
            parts.append(f"{s} {theirs:.6f} (rel. diff {rel:.1e} {verdict})")
        print(f"loss after {tc.STEPS} steps, {t} thread(s): " + ", ".join(parts))
    for t in counts:
        for s, key in (("compile", "info_compile"), ("tsl", "info_tsl")):
            run = runs[t, s]
            if "error" not in run and key in run:
                print(f"{'torch.compile' if s == 'compile' else 'TSL'}, {t} thread(s): {run[key]}")
    n = counts[-1]
    tsl, eager, comp = runs[n, "tsl"], runs[n, "eager"], runs[n, "compile"]
    step_r = ratio(figure(comp, "step_ms"), figure(tsl, "step_ms"))
    first_r = ratio(figure(comp, "first_step_s"), figure(tsl, "first_step_s"))
    mem_t, mem_e = figure(tsl, "mem_steps_mb"), figure(eager, "mem_steps_mb")

    def verdict(ok):
        return "-" if ok is None else ("met" if ok else "MISSED")

    print(f"targets on {n} thread(s): step >= 1.2x torch.compile's: "
          f"{verdict(None if step_r is None else step_r >= 1.2)}; first step >= 20x faster than "
          f"torch.compile's: {verdict(None if first_r is None else first_r >= 20)}; peak memory "
          f"(steps) <= eager's: {verdict(None if mem_t is None or mem_e is None else mem_t <= mem_e)}")
    print()


def main():
    directory, models, counts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    print("--- ratios are torch's time / TSL's time: > 1 means TSL is faster")
    print(f"--- step: median of the steps 2..{tc.TIMED + 1} (7 steps after the first), best of "
          "the rounds; first step: the first call, compile (cold: TSL_CACHE_DIR=off, a fresh "
          "inductor cache dir) and run")
    print("--- memory: each side in its own fresh process; peak RSS (VmHWM, reset through "
          "/proc/self/clear_refs) minus the RSS before the first step: during the first step, "
          f"and during the steps 2..{tc.STEPS + 1} (the peak reset after the first step)")
    print()
    for model in models:
        report_model(directory, model, counts)


if __name__ == "__main__":
    main()
