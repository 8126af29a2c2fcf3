// Must not compile: the IR layer sees nothing of the frontend.
#include "frontend/Ast.h"
