#!/usr/bin/env bash
# Installs TSL into a temporary prefix, builds examples/embed against it with
# find_package(tsl), and runs the JIT example (the stdlib comes from the
# install). usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$source/examples/embed" -B "$work/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
TSL_CACHE_DIR=off TSL_STDLIB_PATH="$work/prefix/share/tsl/stdlib" "$work/build/embed_example" "$source/examples/embed/model.tsl"
