#!/usr/bin/env bash
# Installs TSL's build and test dependencies from Debian 12 packages.
# Idempotent: when everything is present it only checks (no apt-get call).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config ccache python3 tmux
  antlr4 libantlr4-runtime-dev default-jre-headless
  libz3-dev libgtest-dev libbenchmark-dev libedit-dev
  llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev
  python3-venv python3-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
