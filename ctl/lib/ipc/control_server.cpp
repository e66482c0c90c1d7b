#include "ipc/control_server.h"

#include "base/clock.h"
#include "base/limits.h"
#include "base/log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace sluice {

namespace {

sockaddr_un address_of(const std::string &path)
{
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
	return a;
}

// Is the peer in `group`, as its primary group or a supplementary one (the
// usual `usermod -aG`)? SO_PEERGROUPS gives the latter (Linux >= 4.13).
bool peer_in_group(int fd, const ucred &cred, gid_t group)
{
	if (cred.gid == group)
		return true;
	std::vector<gid_t> groups(64);
	socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) {
		if (errno != ERANGE)
			return false;
		groups.resize(len / sizeof(gid_t));
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0)
			return false;
	}
	groups.resize(len / sizeof(gid_t));
	return std::find(groups.begin(), groups.end(), group) != groups.end();
}

std::string too_long_reply()
{
	return error_reply(Error{ErrorKind::invalid, 0, "request line over " + std::to_string(kMaxLineBytes) + " bytes"})
		       .dump() +
	       "\n";
}

// Is a daemon answering at path?
bool live_socket(const std::string &path)
{
	UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_un a = address_of(path);
	return fd && connect(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
}

} // namespace

Result<ControlServer> ControlServer::listen(const std::string &path, std::optional<gid_t> group, size_t max_clients)
{
	if (!check_socket_path(path))
		return invalid("socket path " + path + " is too long");
	std::error_code ec;
	std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
	if (live_socket(path))
		return fail(ErrorKind::system, "another sluiced answers on " + path + "; stop it or use --socket", EADDRINUSE);
	// A stale socket from a killed daemon is replaced; anything else at the
	// path (a mistyped --socket) is not ours to delete.
	struct stat st {};
	if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
		return invalid(path + " exists and is not a socket; remove it or use another --socket");
	::unlink(path.c_str());

	ControlServer s;
	s.wake_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!s.wake_fd_)
		return fail_errno("creating the control loop's eventfd");
	s.path_ = path;
	s.group_ = group;
	s.max_clients_ = max_clients;
	s.listen_fd_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (!s.listen_fd_)
		return fail_errno("creating the control socket");
	sockaddr_un a = address_of(path);
	// Created 0600 (umask), then widened to 0660 only if a group is named.
	mode_t old = umask(0177);
	int rc = bind(s.listen_fd_.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a));
	umask(old);
	if (rc != 0)
		return fail_errno("binding the control socket at " + path);
	if (group) {
		// Owner unchanged (-1): only the group is ours to set, and a daemon
		// without CAP_CHOWN may still give the socket to its own group.
		if (chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0 || chmod(path.c_str(), 0660) != 0)
			return fail_errno("giving group " + std::to_string(*group) + " access to " + path);
	}
	// The kernel's largest backlog (net.core.somaxconn): a storm of
	// connections then waits for accept() without blocking an operator's
	// connect() behind it; past max_clients each gets a busy reply at once.
	if (::listen(s.listen_fd_.get(), SOMAXCONN) != 0)
		return fail_errno("listening on " + path);
	return s;
}

ControlServer::~ControlServer()
{
	if (listen_fd_)
		::unlink(path_.c_str());
}

void ControlServer::poll_fds(std::vector<pollfd> &fds) const
{
	fds.push_back({listen_fd_.get(), POLLIN, 0});
	fds.push_back({wake_fd_.get(), POLLIN, 0});
	for (const auto &c : clients_) {
		// Not read from while it has requests waiting: what it sends meanwhile
		// stays in the kernel's buffer, and its sender blocks.
		short ev = c->closing || has_backlog(*c) ? 0 : POLLIN;
		if (!c->out.empty())
			ev |= POLLOUT;
		fds.push_back({c->fd.get(), ev, 0});
	}
}

void ControlServer::accept_clients()
{
	for (;;) {
		UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
		if (!fd)
			return; // EAGAIN, or a transient error: try again next round
		ucred cred{};
		socklen_t len = sizeof(cred);
		if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
			log_warn("control: cannot read peer credentials; connection refused");
			continue;
		}
		if (cred.uid != 0 && !(group_ && peer_in_group(fd.get(), cred, *group_))) {
			log_warn("control: refused connection from uid " + std::to_string(cred.uid) + " gid " +
				 std::to_string(cred.gid) + " pid " + std::to_string(cred.pid) +
				 " (root or the --socket-group only)");
			std::string line = error_reply(Error{ErrorKind::refused, EACCES, "permission denied: sluiced accepts root or its --socket-group only"}).dump() + "\n";
			(void)!::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL); // peer may be gone: no SIGPIPE
			continue;
		}
		if (clients_.size() >= max_clients_) {
			log_warn("control: " + std::to_string(clients_.size()) + " clients connected; refusing pid " +
				 std::to_string(cred.pid));
			std::string line = busy_reply(max_clients_).dump() + "\n";
			(void)!::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL); // peer may be gone: no SIGPIPE
			continue;
		}
		auto c = std::make_unique<Client>();
		c->fd = std::move(fd);
		c->peer = {cred.pid, cred.uid, cred.gid};
		clients_.push_back(std::move(c));
	}
}

// One read, keeping any file descriptors the client passed along (bounded).
ssize_t ControlServer::receive(Client &c, char *buf, size_t len)
{
	iovec iov{buf, len};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	ssize_t n = ::recvmsg(c.fd.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return n;
	for (cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			auto owned = std::make_shared<UniqueFd>(fd); // closes the extras below
			if (c.fds.size() < kMaxPassedFds)
				c.fds.push_back(std::move(owned));
		}
	}
	return n;
}

void ControlServer::read_client(Client &c)
{
	char buf[kReadPerRound];
	ssize_t n = receive(c, buf, sizeof(buf));
	if (n == 0) {
		c.closing = true; // peer closed: answer what came, flush, then go
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			c.fd.reset();
		return;
	}
	if (c.in.append(std::string_view(buf, static_cast<size_t>(n))))
		c.out += too_long_reply();
}

bool ControlServer::has_backlog(const Client &c)
{
	return c.in.has_line();
}

bool ControlServer::next_line(Client &c, std::string &line)
{
	for (;;) {
		switch (c.in.next(line)) {
		case LineFramer::Next::none:
			return false;
		case LineFramer::Next::line:
			return true;
		case LineFramer::Next::too_long:
			c.out += too_long_reply();
			break;
		}
	}
}

// A handler's reply; an exception it throws (a bug, or memory gone) is an
// error reply and a log line, never the end of sluiced: the loop, the
// breaker and every other client go on.
static json handled(const ControlServer::Handler &handler, const Request &req)
{
	std::string what;
	try {
		return handler(req);
	} catch (const std::exception &e) {
		what = e.what();
	} catch (...) {
		what = "an exception of unknown type";
	}
	log_error("control: handling \"" + req.cmd + "\" threw (" + what + "); answered with an error, sluiced goes on");
	return error_reply(Error{ErrorKind::system, 0,
				 "sluiced could not complete \"" + req.cmd + "\": " + what +
					 " (logged; what it did before that stays done)"});
}

void ControlServer::answer(Client &c, const std::string &line, const Handler &handler)
{
	auto req = parse_request(line);
	json reply;
	// Not args.value("from_fd", false): that throws for a value that is not
	// a boolean, and the exception took the daemon down (found by
	// tests/fuzz/control_server_fuzz.cpp).
	const json *from_fd = req && req->args.contains("from_fd") ? &req->args["from_fd"] : nullptr;
	if (req)
		req->peer = c.peer;
	if (!req) {
		reply = error_reply(req.error());
	} else if (from_fd && !from_fd->is_boolean()) {
		reply = error_reply(Error{ErrorKind::invalid, 0, "\"from_fd\" must be true or false"});
	} else if (from_fd && from_fd->get<bool>()) {
		if (c.fds.empty()) {
			reply = error_reply(Error{ErrorKind::invalid, 0,
						  "\"from_fd\" is set but no file descriptor came with the request"});
		} else {
			req->passed_fd = c.fds.front();
			c.fds.erase(c.fds.begin());
			reply = handled(handler, *req);
		}
	} else {
		reply = handled(handler, *req);
	}
	c.out += reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
	if (c.out.size() > kMaxPendingReply) {
		log_warn("control: a client stopped reading its replies; disconnected");
		c.fd.reset();
	}
}

void ControlServer::write_client(Client &c)
{
	while (!c.out.empty()) {
		ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				c.fd.reset();
			return;
		}
		c.out.erase(0, static_cast<size_t>(n));
	}
}

void ControlServer::serve(const std::vector<pollfd> &fds, const Handler &handler)
{
	// fds[0] is the listener, fds[1] the wake-up eventfd, then one per client
	// in clients_ order (poll_fds).
	if (fds.size() > 1 && (fds[1].revents & POLLIN)) {
		uint64_t v;
		(void)!::read(wake_fd_.get(), &v, sizeof(v));
	}
	for (size_t i = 2; i < fds.size() && i - 2 < clients_.size(); i++) {
		Client &c = *clients_[i - 2];
		if (fds[i].fd != c.fd.get())
			continue;
		if (fds[i].revents & (POLLERR | POLLNVAL)) {
			c.fd.reset();
			continue;
		}
		if ((fds[i].revents & (POLLIN | POLLHUP)) && !c.closing && !has_backlog(c))
			read_client(c);
	}
	// Answer, one request per client in turn, within the round's budget. The
	// turn carries over between rounds: when the budget runs out, the next
	// round starts with the client after the last one answered, so a client
	// waits at most one pass over the others however many requests they
	// queue (starting just one further each round left a client far from
	// the start waiting a round per client ahead of it).
	size_t n = clients_.size(), budget = kRequestsPerRound;
	uint64_t deadline = monotonic_ns() + kServeBudgetNs;
	std::string line;
	size_t turn = n ? next_first_ % n : 0;
	bool answered_any = false;
	for (bool progress = true; progress && budget > 0 && n > 0;) {
		progress = false;
		for (size_t k = 0; k < n && budget > 0; k++, turn = (turn + 1) % n) {
			Client &c = *clients_[turn];
			if (!c.fd || !next_line(c, line))
				continue;
			answer(c, line, handler);
			progress = answered_any = true;
			if (--budget > 0 && monotonic_ns() >= deadline)
				budget = 0;
		}
	}
	// Everyone answered in full: the next round starts one further, as a
	// tie-break; otherwise where this one stopped.
	next_first_ = n == 0 ? 0 : budget == 0 ? turn : (next_first_ + (answered_any ? 1 : 0)) % n;
	bool backlog = false;
	for (auto &c : clients_) {
		if (c->fd && !c->out.empty())
			write_client(*c);
		if (c->fd && has_backlog(*c))
			backlog = true;
	}
	// Forget the clients that are done, keeping next_first_ on the same
	// client it named.
	size_t kept = 0, first = next_first_;
	for (size_t i = 0; i < clients_.size(); i++) {
		const Client &c = *clients_[i];
		if (!c.fd || (c.closing && c.out.empty() && !has_backlog(c))) {
			if (i < next_first_)
				first--;
			continue;
		}
		clients_[kept++] = std::move(clients_[i]);
	}
	clients_.resize(kept);
	next_first_ = kept ? first % kept : 0;
	if (!fds.empty() && (fds[0].revents & POLLIN))
		accept_clients();
	if (backlog) { // requests wait: the next poll must not sleep
		uint64_t one = 1;
		(void)!::write(wake_fd_.get(), &one, sizeof(one));
	}
}

} // namespace sluice
