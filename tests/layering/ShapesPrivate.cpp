// Must not compile: the solver's header is private to tsl_shapes.
#include "shapes/Z3Solver.h"
