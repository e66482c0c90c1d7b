// result.h - expected-style errors: what failed, with which errno, and what
// kind of failure it is (which decides the CLI's exit code).
#pragma once

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>

namespace sluice {

enum class ErrorKind {
	system,  // the OS or the kernel said no (errno set): exit 1
	refused, // refused by policy: invalid transition, invariant, ...: exit 1
	invalid, // usage or input error: bad flag, address, CIDR, JSON: exit 2
};

struct Error {
	ErrorKind kind = ErrorKind::system;
	int code = 0;        // errno (positive), 0 when not an OS error
	std::string message; // what was attempted, on what, and the fix if any

	// "message: strerror (errno N)" for OS errors, the message otherwise.
	std::string describe() const
	{
		if (code == 0)
			return message;
		return message + ": " + std::strerror(code) + " (errno " + std::to_string(code) + ")";
	}
	int exit_code() const { return kind == ErrorKind::invalid ? 2 : 1; }
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(ErrorKind kind, std::string message, int code = 0)
{
	return std::unexpected(Error{kind, code, std::move(message)});
}
inline std::unexpected<Error> invalid(std::string message)
{
	return fail(ErrorKind::invalid, std::move(message));
}
inline std::unexpected<Error> refused(std::string message)
{
	return fail(ErrorKind::refused, std::move(message));
}
// From errno, right after a failed call.
inline std::unexpected<Error> fail_errno(std::string message)
{
	return fail(ErrorKind::system, std::move(message), errno);
}
// From a libbpf return value (-errno), never collapsed into a bare -1.
inline std::unexpected<Error> fail_bpf(int ret, std::string message)
{
	return fail(ErrorKind::system, std::move(message), ret < 0 ? -ret : ret);
}

} // namespace sluice
