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
# The same example linked by hand with pkg-config's flags (docs/embedding.md),
# and the AOT example's C program against the runtime alone.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
g++ -std=c++20 -O1 "$source/examples/embed/main.cpp" -o "$work/pc_embed" $(pkg-config --cflags --libs tsl)
TSL_CACHE_DIR=off TSL_STDLIB_PATH="$work/prefix/share/tsl/stdlib" "$work/pc_embed" "$source/examples/embed/model.tsl"
# shellcheck disable=SC2046
cc -O1 "$source/examples/embed/aot_main.c" -o "$work/pc_aot" $(pkg-config --cflags --libs tsl-runtime)

