#pragma once
// Result<T>: a value, or an Error saying what went wrong. The one way deskd reports
// failures that the outside world can cause (bad paths, missing kernel features, refused
// permissions). Exceptions are kept for libraries that throw, and caught at a layer's edge.

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace deskd {

/// Broad kind of a failure, so callers can branch without parsing sentences.
enum class ErrorCode {
  invalid_argument,  ///< The caller's input is malformed (empty path, NUL byte, ...).
  refused,           ///< A policy said no (hidden path, outside the writable places).
  not_found,         ///< Something that must exist does not.
  system,            ///< A system call failed; `error_number` says which errno.
  unsupported,       ///< The host lacks a kernel feature.
  internal,          ///< A state that should be impossible.
};

/// What went wrong: a kind, the errno when a system call failed (0 otherwise), and a
/// complete sentence a person can read.
struct Error {
  ErrorCode code = ErrorCode::internal;
  int error_number = 0;
  std::string what;

  /// An error that no system call caused.
  static Error make(ErrorCode code, std::string what) { return Error{code, 0, std::move(what)}; }
  /// A policy's no (ErrorCode::refused), told in `what`.
  static Error refusal(std::string what) { return make(ErrorCode::refused, std::move(what)); }
  /// An error caused by a failed system call; `what` should name the call and the path.
  static Error from_errno(int error_number, std::string what);
};

/// A value of type T, or an Error. `[[nodiscard]]` so that a failure is never dropped.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : storage_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return ok(); }

  /// The value; precondition: ok().
  T& value() & { assert(ok()); return std::get<T>(storage_); }
  const T& value() const& { assert(ok()); return std::get<T>(storage_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  /// The error; precondition: !ok().
  const Error& error() const& { assert(!ok()); return std::get<Error>(storage_); }
  Error&& error() && { assert(!ok()); return std::get<Error>(std::move(storage_)); }

 private:
  std::variant<T, Error> storage_;
};

/// Success with no value, or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { assert(failed_); return error_; }
  Error&& error() && { assert(failed_); return std::move(error_); }

 private:
  Error error_;
  bool failed_ = false;
};

/// Shorthand for a successful Result<void>.
inline Result<void> success() { return {}; }

}  // namespace deskd

#define DESKD_CONCAT_INNER(a, b) a##b
#define DESKD_CONCAT(a, b) DESKD_CONCAT_INNER(a, b)

/// Returns the error of `expression` (a Result) from the enclosing function, if any.
#define DESKD_RETURN_IF_ERROR(expression)                 \
  do {                                                    \
    auto&& deskd_result_ = (expression);                  \
    if (!deskd_result_.ok()) return std::move(deskd_result_).error(); \
  } while (false)

/// Declares `declaration` from the value of `expression`, or returns its error.
#define DESKD_ASSIGN_OR_RETURN(declaration, expression) \
  DESKD_ASSIGN_OR_RETURN_IMPL(DESKD_CONCAT(deskd_result_, __LINE__), declaration, expression)
#define DESKD_ASSIGN_OR_RETURN_IMPL(temporary, declaration, expression) \
  auto temporary = (expression);                                         \
  if (!temporary.ok()) return std::move(temporary).error();              \
  declaration = std::move(temporary).value()
