// SPDX-License-Identifier: BSD-3-Clause
// status and result<T>: control-path errors that carry a message with context.
//
// The data path never uses these (it counts and drops); the control path (config,
// registration, console, start-up) returns them and propagates with the macros below.
//
//   dpumesh::result<int> parse_port(std::string_view s);
//   dpumesh::status load(...) {
//     DPUMESH_ASSIGN_OR_RETURN(int port, parse_port(text));
//     DPUMESH_RETURN_IF_ERROR(apply(port));
//     return dpumesh::status::ok();
//   }
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace dpumesh {

/** An error message, or success (empty). Cheap to return when ok. */
class [[nodiscard]] status {
public:
	status() = default;
	static status ok() { return {}; }
	static status error(std::string message) { return status(std::move(message), true); }

	bool is_ok() const noexcept { return !_failed; }
	explicit operator bool() const noexcept { return !_failed; }
	const std::string &message() const noexcept { return _message; }

	/** Prepends context: "loading conf/x.json: <message>". */
	status with_context(std::string_view context) const
	{
		if (!_failed)
			return *this;
		return error(std::string(context) + ": " + _message);
	}

private:
	status(std::string message, bool failed) : _message(std::move(message)), _failed(failed) {}
	std::string _message;
	bool _failed = false;
};

/** printf-style error construction for the control path (format checked by the compiler). */
status errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** A value or the status explaining why there is none. */
template <typename T>
class [[nodiscard]] result {
public:
	result(T value) : _v(std::move(value)) {}
	result(status st) : _v(std::move(st)) {}

	bool is_ok() const noexcept { return std::holds_alternative<T>(_v); }
	explicit operator bool() const noexcept { return is_ok(); }
	const status &error() const { return std::get<status>(_v); }
	status take_status() const { return is_ok() ? status::ok() : std::get<status>(_v); }
	T &value() & { return std::get<T>(_v); }
	const T &value() const & { return std::get<T>(_v); }
	T &&value() && { return std::get<T>(std::move(_v)); }
	T &operator*() & { return value(); }
	T *operator->() { return &value(); }
	const T *operator->() const { return &value(); }

private:
	std::variant<T, status> _v;
};

} // namespace dpumesh

#define DPUMESH_CONCAT_INNER(a, b) a##b
#define DPUMESH_CONCAT(a, b) DPUMESH_CONCAT_INNER(a, b)

#define DPUMESH_RETURN_IF_ERROR(expr)                                                    \
	do {                                                                             \
		::dpumesh::status _dpumesh_st = (expr);                                  \
		if (!_dpumesh_st.is_ok())                                                \
			return _dpumesh_st;                                              \
	} while (0)

#define DPUMESH_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                                    \
	auto tmp = (expr);                                                               \
	if (!tmp.is_ok())                                                                \
		return tmp.error();                                                      \
	lhs = std::move(tmp).value()

#define DPUMESH_ASSIGN_OR_RETURN(lhs, expr)                                              \
	DPUMESH_ASSIGN_OR_RETURN_IMPL(DPUMESH_CONCAT(_dpumesh_r_, __LINE__), lhs, expr)
