"""fn.guards, fn.variants, fn.stats, tsl.prove, tsl.simplify, logs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tsl
from conftest import MODEL


def f32(n):
    return np.arange(n, dtype=np.float32)


def line_of(text):
    return next(i for i, l in enumerate(MODEL.split("\n"), 1) if l.strip().startswith(text))


def test_guards_report(m, model_path):
    report = m.bcast.guards(x="f32[4]", y="f32[4]")
    assert isinstance(report, tsl.GuardReport) and report.function == "bcast"
    [g] = report.guards
    line = line_of("fn bcast(") + 1
    assert (g.expr, g.origin, g.reason) == ("N == M", f"{model_path}:{line}:10", "broadcast in 'add'")
    assert report.assertions == [] and report.results == ["f32[N]"]
    assert str(report) == ("function bcast\n"
                           "guards:\n"
                           f"  N == M    ({model_path}:{line}:10, broadcast in 'add')\n"
                           "assertions: none\n"
                           "results: f32[N]")


def test_guards_assertions(m, model_path):
    report = m.even.guards(x="f32[10]")
    assert report.guards == []
    [a] = report.assertions
    assert (a.expr, a.origin, a.reason) == ("N % 2 == 0", f"{model_path}:{line_of('check(N % 2')}:3",
                                            "N must be even")


def test_guards_from_arrays_and_ints(m):
    # An array gives its type; an int is the value the variant is compiled
    # for, so check(k > 0) is proven and needs no assertion.
    report = m.scale.guards(x=np.zeros(6, np.float32), k=3)
    assert report.results == ["f32[N]"] and report.guards == [] and report.assertions == []
    with pytest.raises(tsl.Error, match=r"this check always fails: k > 0 \(k must be positive\)"):
        m.scale.guards(x="f32[6]", k=-1)


def test_guards_compile_error(m):
    with pytest.raises(tsl.Error, match="must have rank 1, got 2"):
        m.add.guards(x="f32[2,3]", y="f32[2,3]")
    with pytest.raises(tsl.Error) as info:
        m.add.guards(x="q32[2]", y="f32[2]")
    assert info.value.kind == "invalid_argument"


def test_guards_of_string_module():
    mod = tsl.compile("dim N: dynamic;\ndim M: dynamic;\nfn f(x: f32[N], y: f32[M]) -> f32[N] { return x + y; }")
    [g] = mod.f.guards(x="f32[3]", y="f32[3]").guards
    assert g.origin.startswith("<string>:3:") and g.expr == "N == M"


def test_variants_and_stats(m):
    m.scale(f32(4), 3)
    m.scale(f32(5), 3)  # N is dynamic: the same variant
    m.scale(f32(4), 4)  # k was 3: a recompile, k dynamic from now on
    m.scale(f32(4), 5)
    st = m.scale.stats
    assert isinstance(st, tsl.Stats)
    assert (st.compiles, st.calls, st.cache_hits) == (2, 4, 0)
    assert st.recompiles == ["argument 'k' must be 3 with k = 4"]
    v0, v1 = m.scale.variants
    assert isinstance(v0, tsl.Variant)
    assert (v0.index, v0.calls, v0.specialized, v0.from_cache) == (0, 2, {"k": 3}, False)
    assert "argument 'k' must be 3" in v0.guards
    assert "argument 'x' dim 0 must be N" in v0.guards
    assert (v1.index, v1.calls, v1.specialized) == (1, 2, {})


def test_stats_peak_bytes():
    mod = tsl.compile("fn f(x: f32[N]) -> f32[N] { return exp(x) * 2.0 + x; }")
    assert mod.f.stats.peak_bytes == 0  # no call yet
    mod.f(np.ones(1000, np.float32))
    # The result (4000 bytes, rounded to 4032) at least; the argument not.
    assert 4032 <= mod.f.stats.peak_bytes < 3 * 4032


def test_recompile_on_a_new_size(m):
    # A is an auto dim: specialized to the first size, dynamic after a
    # second one (automatic dynamic).
    m.grow(f32(3))
    assert m.grow.stats.compiles == 1 and m.grow.stats.recompiles == []
    m.grow(f32(4))
    st = m.grow.stats
    assert st.compiles == 2
    assert st.recompiles == ["argument 'x' dim 0 ('A') must be 3 with A = 4"]
    np.testing.assert_array_equal(np.asarray(m.grow(f32(7))), f32(7) + 1)
    assert m.grow.stats.compiles == 2 and m.grow.stats.calls == 3
    assert [v.specialized for v in m.grow.variants] == [{"A": 3}, {}]
    assert [v.calls for v in m.grow.variants] == [1, 2]


def test_prove():
    dims = "dim I: unbacked in 1..1000; dim S: dynamic;"
    assert tsl.prove("I*S*S == 9*I", dims=dims) == (False, {"I": 4, "S": 4})
    assert tsl.prove("S >= 0", dims) == (True, None)
    assert tsl.prove("S == 3", dims + " check(I*S*S == 9*I);") == (True, None)
    assert tsl.prove("S*S*S != T*T*T + 4", "dim S: dynamic; dim T: dynamic;") == (None, None)


def test_prove_errors():
    with pytest.raises(tsl.Error, match="unknown name 'Q'") as info:
        tsl.prove("Q > 0")
    assert info.value.diagnostics[0].col == 8
    with pytest.raises(tsl.Error, match="expected"):
        tsl.prove("S > 0", "dim S dynamic;")


def test_simplify():
    e = tsl.simplify("(S*2 + S) / 3", dims="dim S: dynamic;")
    assert isinstance(e, tsl.Expr) and str(e) == "S" and e == "S" and e == tsl.Expr("S")
    assert repr(e) == "tsl.Expr('S')"
    assert str(tsl.simplify("X*2 + X")) == "3 * X"  # undeclared names are symbols
    with pytest.raises(tsl.Error, match=r"unexpected '\)'"):
        tsl.simplify("S +", "dim S: dynamic;")


def test_set_logs(m, capfd):
    try:
        tsl.set_logs("recompiles,guards")
        m.grow(f32(2))
        m.grow(f32(3))
        m.bcast(f32(2), f32(2))
    finally:
        tsl.set_logs("none")
    err = capfd.readouterr().err
    assert "[tsl] recompile grow: argument 'x' dim 0 ('A') must be 2 with A = 3 -> variant 1" in err
    assert "[tsl] guards bcast variant 0: N == M" in err
    m.grow(f32(9))  # logs off
    m.even(f32(2))
    assert capfd.readouterr().err == ""
    tsl.set_logs(["dynamic"])
    tsl.set_logs(None)  # back to $TSL_LOGS
    with pytest.raises(tsl.Error, match=r"unknown log 'bogus'") as info:
        tsl.set_logs("recompiles,bogus")
    assert info.value.kind == "invalid_argument"


def test_tsl_logs_environment(model_path):
    script = (f"import numpy as np, tsl\n"
              f"m = tsl.load({str(model_path)!r})\n"
              f"m.grow(np.zeros(2, np.float32)); m.grow(np.zeros(3, np.float32))\n")
    env = dict(os.environ, TSL_LOGS="recompiles", TSL_CACHE_DIR="off")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[tsl] recompile grow: argument 'x' dim 0 ('A') must be 2 with A = 3 -> variant 1" in r.stderr
