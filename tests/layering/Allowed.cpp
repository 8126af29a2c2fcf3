// Compiles: tsl_frontend's public headers and those of the libraries it
// links PUBLIC (ir, shapes, support).
#include "frontend/Elaborator.h"
#include "ir/Function.h"
#include "shapes/ShapeEnv.h"
#include "support/Diagnostics.h"
