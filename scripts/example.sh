#!/usr/bin/env bash
# README command 1: install, build, then compile and run an example model end to end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
set -x
"$root/build/bin/tslc" run "$root/examples/mlp.tsl" --fn classify --backend cpu \
  --arg "x=f32[4,784]:randn:1" --arg "w1=f32[784,128]:randn:2" --arg "w2=f32[128,10]:randn:3"
