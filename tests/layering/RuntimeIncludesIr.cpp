// Must not compile: the runtime has no compiler inside.
#include "ir/Function.h"
