# Sourced by the benchmark scripts: builds the project and makes (once) the
# venv .venv-bench with the newest NumPy, PyTorch and threadpoolctl (which
# reports the BLAS kernels) from PyPI. Sets $root and $venv.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
venv="$root/.venv-bench"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, numpy, threadpoolctl" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip torch numpy threadpoolctl
fi
