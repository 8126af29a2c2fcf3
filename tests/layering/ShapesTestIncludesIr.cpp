// Must not compile: a test linking tsl_shapes (as tsl_unit_shapes does) sees
// nothing of the IR.
#include "ir/Function.h"
