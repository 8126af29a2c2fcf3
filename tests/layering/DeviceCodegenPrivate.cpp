// Must not compile: the GPU's lowering (DeviceCodegen, DeviceContext) is
// private to tsl_backend_nvptx, even for a target that links it.
#include "backend/nvptx/DeviceCodegen.h"
