// Must not compile: backend/common (the lowering both targets share) sees
// neither target's headers; the targets derive from it, not the reverse.
#include "backend/cpu/CpuTarget.h"
