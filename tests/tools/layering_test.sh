#!/usr/bin/env bash
# The build enforces the layering (cmake/TslLibrary.cmake): every probe in
# tests/layering/ that includes a header its target must not see fails to
# compile with "No such file or directory" for exactly that header, and the
# control probe compiles. usage: layering_test.sh BUILD_DIR
set -uo pipefail
build=$1
status=0
out=$(cmake --build "$build" --target layering_probe_ok 2>&1) || {
  echo "FAIL: the control probe does not compile:"; echo "$out"; exit 1; }
echo "ok: layering_probe_ok compiles"
check() { # TARGET HEADER
  out=$(cmake --build "$build" --target "$1" 2>&1)
  if [ $? -ne 0 ] && grep -q "$2: No such file or directory" <<<"$out"; then
    echo "ok: $1 cannot include $2"
  else
    echo "FAIL: $1 should not see $2:"; echo "$out"; status=1
  fi
}
check layering_probe_ir_frontend frontend/Ast.h
check layering_probe_runtime_ir ir/Function.h
check layering_probe_shapes_test_ir ir/Function.h
check layering_probe_frontend_private frontend/ElaboratorImpl.h
check layering_probe_shapes_private shapes/Z3Solver.h
check layering_probe_backend_common_cpu backend/cpu/CpuTarget.h
check layering_probe_cpu_codegen_private backend/cpu/CpuCodegen.h
check layering_probe_device_codegen_private backend/nvptx/DeviceCodegen.h
exit $status
