// control_server.h - the daemon's UNIX control socket.
//
// Non-blocking and driven by the daemon's own poll loop, so no client can
// stall the control period: a client is only ever read from or written to
// when the kernel says it will not block, and one serve() call does a bounded
// amount of work however much the clients send: it reads at most
// kReadPerRound bytes from each client, and answers requests one per client in
// turn until kServeBudgetNs have been spent or kRequestsPerRound answered (the
// turn carries over to the next call, so a client waits at most one pass over
// the others).
// Requests left over wait in their client's buffer (which is not read from
// again until they are answered) and an eventfd among the poll fds makes the
// next poll return at once. Bounded everywhere: at most max_clients
// connections (the next one gets a busy reply -- nothing of it was read, so
// it may connect again -- and is closed), a request
// line of at most kMaxLineBytes (longer ones get an error reply and the rest
// of the line is skipped), and at most kMaxPendingReply bytes of replies
// waiting for a client that does not read (then it is disconnected).
// Peers are checked with SO_PEERCRED: root, or the configured group.
// A client may pass file descriptors (SCM_RIGHTS); at most kMaxPassedFds wait
// per client, the rest are closed on arrival, and a request with
// "from_fd": true takes the oldest.
#pragma once

#include "base/fd.h"
#include "ipc/line_framer.h"
#include "ipc/protocol.h"
#include "base/result.h"

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
inline constexpr size_t kReadPerRound = 16384;   // bytes read from one client per serve()
inline constexpr size_t kRequestsPerRound = 1024; // requests answered per serve(), all clients, at most
inline constexpr long kServeBudgetNs = 10'000'000; // and no more answering once 10 ms are spent

class ControlServer {
public:
	using Handler = std::function<json(const Request &)>;

	// Bind and listen at path (mode 0600, or 0660 with group). Refuses a path
	// where a live daemon already answers; replaces a stale socket file.
	static Result<ControlServer> listen(const std::string &path, std::optional<gid_t> group, size_t max_clients);

	ControlServer(ControlServer &&) = default;
	ControlServer &operator=(ControlServer &&) = default;
	~ControlServer();

	// The fds to poll this round, and what to poll them for: the listener,
	// the wake-up eventfd, then one per client.
	void poll_fds(std::vector<pollfd> &fds) const;
	// Serve whatever `fds` (as returned by poll) says is ready.
	void serve(const std::vector<pollfd> &fds, const Handler &handler);

	size_t clients() const { return clients_.size(); }
	const std::string &path() const { return path_; }

private:
	struct Client {
		UniqueFd fd;
		LineFramer in{kMaxLineBytes}; // read, not yet answered
		std::string out;
		bool closing = false;  // flush `out`, then close
		std::vector<std::shared_ptr<UniqueFd>> fds; // passed with SCM_RIGHTS, oldest first
		Request::Peer peer;
	};
	ControlServer() = default;
	void accept_clients();
	void read_client(Client &c);
	// The next request line of c to answer (the error for an over-long one
	// is queued here); false when none is complete.
	bool next_line(Client &c, std::string &line);
	static bool has_backlog(const Client &c);
	void answer(Client &c, const std::string &line, const Handler &handler);
	static ssize_t receive(Client &c, char *buf, size_t len);
	void write_client(Client &c);

	UniqueFd listen_fd_;
	UniqueFd wake_fd_; // readable while a client has requests waiting
	size_t next_first_ = 0; // round robin: whose turn it is at the next round
	std::string path_;
	std::optional<gid_t> group_;
	size_t max_clients_ = 64;
	std::vector<std::unique_ptr<Client>> clients_;
};

} // namespace sluice
