"""Shared fixtures of the tsl package tests (scripts/test-python.sh runs
them; docs/python.md lists what each file covers)."""

import os

# Tests count compiles: keep them off the user's on-disk compile cache.
os.environ["TSL_CACHE_DIR"] = "off"

import pytest  # noqa: E402

import tsl  # noqa: E402

MODEL = """\
dim N: dynamic;
dim M: dynamic;

fn add(x: f32[N], y: f32[N]) -> f32[N] {
  return x + y;
}

fn scale(x: f32[N], k: int) -> f32[N] {
  check(k > 0, "k must be positive");
  return x * 2.0;
}

fn two(x: f32[N]) -> (f32[N], f32[N]) {
  return (x + 1.0, x * 2.0);
}

fn bcast(x: f32[N], y: f32[M]) -> f32[N] {
  return x + y;
}

fn even(x: f32[N]) -> f32[N] {
  check(N % 2 == 0, "N must be even");
  return x * 2.0;
}

fn grow(x: f32[A]) -> f32[A] {
  return x + 1.0;
}

fn total(x: f32[N]) -> f32 {
  return sum(x);
}

fn mm(a: f32[P, Q], b: f32[Q, R]) -> f32[P, R] {
  return a @ b;
}

fn halve(x: f64[N]) -> f64[N] { return x * 0.5; }
fn inc32(x: i32[N]) -> i32[N] { return x + 1; }
fn inc64(x: i64[N]) -> i64[N] { return x + 1; }
fn flip(x: bool[N]) -> bool[N] { return !x; }
fn twice16(x: f16[N]) -> f16[N] { return x + x; }
fn to_bf16(x: f32[N]) -> bf16[N] { return cast(x, bf16); }
"""


@pytest.fixture(scope="session")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tsl") / "model.tsl"
    path.write_text(MODEL)
    return path


@pytest.fixture
def m(model_path):
    """A fresh CPU module per test (its functions' statistics start at 0)."""
    return tsl.load(model_path)
