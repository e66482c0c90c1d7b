// client.h - one connection to sluiced's control socket: a JSON line out,
// a JSON line back (the protocol is in protocol.h).
#pragma once

#include "base/fd.h"
#include "ipc/protocol.h"
#include "base/result.h"

#include <string>

namespace sluicectl {

class Client {
public:
	explicit Client(std::string socket_path) : path_(std::move(socket_path)) {}

	// Connect now; call() connects on first use anyway. The error says what
	// to do: start the daemon, use --socket, run as root, ...
	sluice::Status connect();
	// connect() failed because nothing listens at the path (the daemon is
	// not running), as opposed to, say, a permission problem.
	bool daemon_not_running() const;

	// Send one request; the body of an ok reply (without "ok"), or the
	// daemon's error with the kind it gave (which picks the exit code).
	// With pass_fd >= 0 the descriptor travels with the request (SCM_RIGHTS).
	// A busy reply (the daemon's client places are all taken) is asked
	// again for a few seconds before it is returned.
	sluice::Result<sluice::json> call(const sluice::json &request, int pass_fd = -1);

	const std::string &path() const { return path_; }

private:
	sluice::Result<sluice::json> call_once(const sluice::json &request, int pass_fd);
	sluice::Result<std::string> read_line();

	std::string path_;
	sluice::UniqueFd fd_;
	int connect_errno_ = 0;
	bool busy_ = false; // the last call_once got a busy reply
	std::string pending_; // bytes read past the last reply line
};

} // namespace sluicectl
