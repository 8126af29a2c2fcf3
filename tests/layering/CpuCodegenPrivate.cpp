// Must not compile: the CPU's lowering (CpuCodegen) is private to
// tsl_backend_cpu, even for a target that links it.
#include "backend/cpu/CpuCodegen.h"
