#include "support/Error.h"

namespace tsl {

const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Syntax:
    return "syntax";
  case ErrorKind::Type:
    return "type";
  case ErrorKind::Shape:
    return "shape";
  case ErrorKind::Io:
    return "io";
  case ErrorKind::NotFound:
    return "not found";
  case ErrorKind::InvalidArgument:
    return "invalid argument";
  case ErrorKind::NoVariant:
    return "no variant";
  case ErrorKind::CacheLimit:
    return "cache limit";
  case ErrorKind::RuntimeCheck:
    return "runtime check";
  case ErrorKind::Resource:
    return "resource";
  case ErrorKind::Unsupported:
    return "unsupported";
  case ErrorKind::Internal:
    return "internal";
  }
  return "unknown";
}

namespace {
thread_local std::optional<std::string> pendingInternal;
} // namespace

void noteInternalError(std::string message) {
  if (!pendingInternal)
    pendingInternal = std::move(message);
}

std::optional<Error> takeInternalError() {
  if (!pendingInternal)
    return std::nullopt;
  Error e{ErrorKind::Internal, "internal error: " + *pendingInternal, {}};
  pendingInternal.reset();
  return e;
}

} // namespace tsl
