// Must not compile: the elaborator's internals are private to tsl_frontend,
// even for the driver, which links it.
#include "frontend/ElaboratorImpl.h"
