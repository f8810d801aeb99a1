// Error handling used across every layer: no exceptions cross module boundaries.
// A function that can fail on user input returns Expected<T> (or Status); the CLI turns an
// Error into one line on stderr and its exit code (2 = bad input, 1 = internal failure).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kvaudit {

enum class ErrorCode : int {
  kBadInput = 2,  // the user's file, flag or data is wrong: exit 2
  kInternal = 1,  // an I/O failure or an invariant we could not keep: exit 1
};

struct Error {
  ErrorCode code = ErrorCode::kBadInput;
  std::string message;  // one line: what, where, and a hint ("...; hint: ...")
  int exit_code() const { return static_cast<int>(code); }
};

inline Error BadInput(std::string message) { return Error{ErrorCode::kBadInput, std::move(message)}; }
inline Error Internal(std::string message) { return Error{ErrorCode::kInternal, std::move(message)}; }

// Always-on invariant check (not assert: release builds keep it). Internal bugs only;
// user mistakes must come back as Error instead.
[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "kvaudit: internal error: %s:%d: check failed: %s%s%s\n", file, line, expr, msg[0] ? ": " : "",
               msg);
  std::abort();
}

// Value-or-error, a small stand-in for C++23 std::expected. Reading the value of an error is an
// internal bug, reported as one with the error's own message (never std::bad_variant_access thrown
// through a program without exception handlers); code that may hold an error checks ok() first or
// uses KV_ASSIGN_OR_RETURN.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return *Checked(std::get_if<0>(&v_)); }
  const T& value() const& { return *Checked(std::get_if<0>(&v_)); }
  T&& value() && { return std::move(*Checked(std::get_if<0>(&v_))); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const {
    const Error* e = std::get_if<1>(&v_);
    if (!e) CheckFailed("!ok()", __FILE__, __LINE__, "error() of an Expected that holds a value");
    return *e;
  }

 private:
  template <class P>
  P* Checked(P* value) const {
    if (!value) CheckFailed("ok()", __FILE__, __LINE__, std::get<1>(v_).message.c_str());
    return value;
  }
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace kvaudit

#define KV_CHECK(cond)                                                  \
  do {                                                                  \
    if (!(cond)) ::kvaudit::CheckFailed(#cond, __FILE__, __LINE__, ""); \
  } while (0)
#define KV_CHECK_MSG(cond, msg)                                            \
  do {                                                                     \
    if (!(cond)) ::kvaudit::CheckFailed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)

// Propagate an error from an Expected/Status expression.
#define KV_RETURN_IF_ERROR(expr)                \
  do {                                          \
    auto kv_status_ = (expr);                   \
    if (!kv_status_) return kv_status_.error(); \
  } while (0)

#define KV_CONCAT_INNER(a, b) a##b
#define KV_CONCAT(a, b) KV_CONCAT_INNER(a, b)
// KV_ASSIGN_OR_RETURN(auto x, MakeX()); declares x from the value or returns the error.
#define KV_ASSIGN_OR_RETURN(decl, expr) KV_ASSIGN_OR_RETURN_IMPL(KV_CONCAT(kv_expected_, __LINE__), decl, expr)
#define KV_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                              \
  if (!tmp) return tmp.error();                   \
  decl = std::move(tmp).value()
