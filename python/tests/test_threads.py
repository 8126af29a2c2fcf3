"""Calls from several Python threads: the GIL is released while a call
compiles or runs, and results stay right."""

import threading
import time

import numpy as np

import tsl

SLOW = """\
dim N: dynamic;
fn work(a: f32[N, N], b: f32[N, N]) -> f32[N, N] { return a @ b; }
"""


def run_threads(target, count):
    errors = []

    def guarded(i):
        try:
            target(i)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_many_threads_one_function(m):
    def worker(i):
        for n in range(1, 40):
            x = np.full(n + i, i, np.float32)
            y = np.arange(n + i, dtype=np.float32)
            np.testing.assert_array_equal(np.asarray(m.add(x, y)), x + y)

    run_threads(worker, 8)
    st = m.add.stats
    assert st.calls == 8 * 39 and st.compiles == 1  # N is dynamic


def test_first_calls_race_to_compile(m):
    # Every thread's first call misses; one variant per auto value of A
    # would be compiled at most once each.
    def worker(i):
        x = np.full(5, i, np.float32)
        np.testing.assert_array_equal(np.asarray(m.grow(x)), x + 1)

    run_threads(worker, 6)
    assert m.grow.stats.compiles == 1 and m.grow.stats.calls == 6


def test_gil_released_during_calls():
    mod = tsl.compile(SLOW)
    a = np.ones((1500, 1500), np.float32)  # a call of tens of milliseconds
    mod.work(a, a)  # compile first
    ticks = []
    stop = threading.Event()
    started = threading.Event()

    def ticker():
        started.set()
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    started.wait()
    try:
        spans = []
        for _ in range(3):
            begin = time.perf_counter()
            mod.work(a, a)
            spans.append((begin, time.perf_counter()))
    finally:
        stop.set()
        t.join()
    # With the GIL held through a call the ticker could run only around it
    # (a switch may fall between reading the clock and the call); released,
    # it ticks in the middle of the calls too, whatever the machine's speed.
    middle = [(b + (e - b) / 4, e - (e - b) / 4) for (b, e) in spans]
    inside = [x for x in ticks for (b, e) in middle if b < x < e]
    assert inside, f"no tick amid {len(spans)} calls ({len(ticks)} ticks)"
