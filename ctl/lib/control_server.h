// control_server.h - the daemon's UNIX control socket.
//
// Non-blocking and driven by the daemon's own poll loop, so no client can
// stall the control period: a client is only ever read from or written to
// when the kernel says it will not block. Bounded everywhere: at most
// max_clients connections (the next one gets an error line and is closed), a
// request line of at most kMaxLineBytes (longer ones get an error reply and the
// rest of the line is skipped), and at most kMaxPendingReply bytes of replies
// waiting for a client that does not read (then it is disconnected).
// Peers are checked with SO_PEERCRED: root, or the configured group.
// A client may pass file descriptors (SCM_RIGHTS); at most kMaxPassedFds wait
// per client, the rest are closed on arrival, and a request with
// "from_fd": true takes the oldest.
#pragma once

#include "fd.h"
#include "protocol.h"
#include "result.h"

#include <functional>
#include <memory>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sluice {

inline constexpr size_t kMaxPendingReply = 1 << 20;
inline constexpr size_t kMaxPassedFds = 4;

class ControlServer {
public:
	using Handler = std::function<json(const Request &)>;

	// Bind and listen at path (mode 0600, or 0660 with group). Refuses a path
	// where a live daemon already answers; replaces a stale socket file.
	static Result<ControlServer> listen(const std::string &path, std::optional<gid_t> group, size_t max_clients);

	ControlServer(ControlServer &&) = default;
	ControlServer &operator=(ControlServer &&) = default;
	~ControlServer();

	// The fds to poll this round, and what to poll them for.
	void poll_fds(std::vector<pollfd> &fds) const;
	// Serve whatever `fds` (as returned by poll) says is ready.
	void serve(const std::vector<pollfd> &fds, const Handler &handler);

	size_t clients() const { return clients_.size(); }
	const std::string &path() const { return path_; }

private:
	struct Client {
		UniqueFd fd;
		std::string in;
		std::string out;
		bool skipping = false; // inside an over-long line: drop until newline
		bool closing = false;  // flush `out`, then close
		std::vector<std::shared_ptr<UniqueFd>> fds; // passed with SCM_RIGHTS, oldest first
	};
	ControlServer() = default;
	void accept_clients();
	void read_client(Client &c, const Handler &handler);
	static ssize_t receive(Client &c, char *buf, size_t len);
	void write_client(Client &c);

	UniqueFd listen_fd_;
	std::string path_;
	std::optional<gid_t> group_;
	size_t max_clients_ = 64;
	std::vector<std::unique_ptr<Client>> clients_;
};

} // namespace sluice
