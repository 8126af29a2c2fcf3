#pragma once
/// \file Typed errors: the kind of a failure travels with its message, so a
/// caller decides what to do (the C API: which status code) from the kind,
/// never by searching the text. Also a per-thread slot for internal errors
/// noticed where no error can be returned (an accessor that must return a
/// value); the pipeline stage that called it turns the slot into an error.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tsl {

/// What went wrong, coarsely enough for a caller to act on it.
enum class ErrorKind : uint8_t {
  /// The source text does not parse (tokens, grammar, nesting limits).
  Syntax,
  /// A well-formed program is wrong: unknown names, element types, the
  /// arguments of a call or builtin (the default of a diagnostic).
  Type,
  /// A size rule fails at compile time (broadcasting, matmul's inner
  /// dimensions, a reshape's element count, a violated requirement).
  Shape,
  /// A file cannot be read or written.
  Io,
  /// No function (or file) of that name.
  NotFound,
  /// A call's arguments are invalid (arity, null data, sizes, alignment).
  InvalidArgument,
  /// No variant serves a call and none can be compiled (no compiler).
  NoVariant,
  /// A function's variant cache is full and no variant serves the call.
  CacheLimit,
  /// A check failed while running compiled code: an assertion, integer
  /// division by zero, an index out of bounds, item() out of range.
  RuntimeCheck,
  /// Out of memory, or a device failure, while running.
  Resource,
  /// Valid, but this build, backend or device cannot do it.
  Unsupported,
  /// A bug in TSL itself (for example an attribute read by a name its op
  /// does not have, or a compiled variant that rejects its own call).
  Internal,
};

/// Every ErrorKind, in declaration order (for tables and tests).
inline constexpr ErrorKind kAllErrorKinds[] = {
    ErrorKind::Syntax,    ErrorKind::Type,        ErrorKind::Shape,
    ErrorKind::Io,        ErrorKind::NotFound,    ErrorKind::InvalidArgument,
    ErrorKind::NoVariant, ErrorKind::CacheLimit,  ErrorKind::RuntimeCheck,
    ErrorKind::Resource,  ErrorKind::Unsupported, ErrorKind::Internal};

/// The kind's name in lower case ("runtime check", "cache limit").
const char *errorKindName(ErrorKind kind);

/// A failure: its kind, the message and where it arose.
struct Error {
  ErrorKind kind = ErrorKind::Internal;
  /// The complete text shown to the user: lower case, no final period; it
  /// names the location itself where it has one (rendered diagnostics span
  /// several lines).
  std::string message;
  /// `file:line:col` of the source construct that failed, for programs that
  /// act on it; empty when unknown.
  std::string location;
};

/// A value or the Error that prevented it, as llvm::Expected but without
/// LLVM (every library may use it) and without the must-check abort: a
/// result that is never looked at is a compiler warning ([[nodiscard]]),
/// not a crash. Test it with `if (!r)`, then use `*r` / `r->` or
/// `r.error()`. Expected<void> carries only success or the error.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}
  explicit operator bool() const { return v_.index() == 0; }
  T &operator*() { return std::get<0>(v_); }
  const T &operator*() const { return std::get<0>(v_); }
  T *operator->() { return &std::get<0>(v_); }
  const T *operator->() const { return &std::get<0>(v_); }
  /// The error; only on failure.
  const Error &error() const { return std::get<1>(v_); }
  Error &error() { return std::get<1>(v_); }

private:
  std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Expected<void> {
public:
  /// Success.
  Expected() = default;
  Expected(Error error) : error_(std::move(error)) {}
  explicit operator bool() const { return !error_; }
  const Error &error() const { return *error_; }
  Error &error() { return *error_; }

private:
  std::optional<Error> error_;
};

/// An error of \p kind with \p message and no location.
inline Error makeError(ErrorKind kind, std::string message) {
  return Error{kind, std::move(message), {}};
}

/// Records an internal error for the calling thread where it cannot be
/// returned (an accessor that must produce a value). Only the first one is
/// kept until takeInternalError() clears it, so the root cause survives
/// the follow-on misuses it causes.
void noteInternalError(std::string message);

/// The first internal error noted on this thread since the last call (kind
/// Internal, message prefixed "internal error: "), or nullopt; clears it.
/// Pipeline stages (shape rules, the verifier, the interpreter, the JIT)
/// call it after running code that may have noted one.
std::optional<Error> takeInternalError();

} // namespace tsl
