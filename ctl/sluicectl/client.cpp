#include "sluicectl/client.h"

#include "base/limits.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <thread>

namespace sluicectl {

using sluice::ErrorKind;
using sluice::json;

namespace {

// Long enough for `audit` (a full sweep of the table) on the largest table.
constexpr int kReplyTimeoutSeconds = 60;
// How long a request is offered again while the daemon answers busy.
constexpr std::chrono::seconds kBusyRetryFor{5};
// A sanity bound: the longest real reply is a full allow or deny list.
constexpr size_t kMaxReplyBytes = 64u << 20;

// Who may use the socket besides root, for the permission-denied hint: the
// socket's group when its mode lets that group write, else nobody.
std::string socket_group(const std::string &path)
{
	struct stat st{};
	if (::stat(path.c_str(), &st) != 0 || !(st.st_mode & S_IWGRP))
		return "";
	group grp{}, *found = nullptr;
	char buf[4096];
	if (getgrgid_r(st.st_gid, &grp, buf, sizeof(buf), &found) != 0 || !found)
		return "";
	return found->gr_name;
}

std::string unreachable(const std::string &path, int err)
{
	std::string msg = "cannot reach sluiced at " + path + ": " + std::strerror(err);
	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		return msg + "; is sluiced running? (--socket to use another path)";
	case EACCES:
	case EPERM: {
		std::string group = socket_group(path);
		if (group.empty())
			return msg + "; run as root (sluiced --socket-group GROUP lets a group in)";
		return msg + "; run as root or as a member of group '" + group + "' (the socket's group)";
	}
	default:
		return msg + " (--socket to use another path)";
	}
}

} // namespace

sluice::Status Client::connect()
{
	if (fd_)
		return {};
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (auto ok = sluice::named("--socket", sluice::check_socket_path(path_)); !ok)
		return ok;
	std::memcpy(addr.sun_path, path_.data(), path_.size());

	sluice::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd)
		return sluice::fail_errno("creating a UNIX socket");
	timeval timeout{kReplyTimeoutSeconds, 0};
	::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
		connect_errno_ = errno;
		return sluice::fail(ErrorKind::system, unreachable(path_, connect_errno_));
	}
	connect_errno_ = 0;
	fd_ = std::move(fd);
	pending_.clear();
	return {};
}

bool Client::daemon_not_running() const
{
	return connect_errno_ == ENOENT || connect_errno_ == ECONNREFUSED;
}

namespace {

// The first bytes of a request, with a descriptor as ancillary data.
ssize_t send_with_fd(int sock, const std::string &line, int fd)
{
	iovec iov{const_cast<char *>(line.data()), line.size()};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return ::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

} // namespace

sluice::Result<json> Client::call(const json &request, int pass_fd)
{
	// A busy reply comes before the daemon reads anything (all its client
	// places are taken, by a storm of connections, say): nothing was done,
	// so asking again is safe whatever the command. Backing off from 10 ms.
	auto give_up = std::chrono::steady_clock::now() + kBusyRetryFor;
	auto pause = std::chrono::milliseconds(10);
	for (int tries = 1;; tries++) {
		auto reply = call_once(request, pass_fd);
		if (reply || !busy_ || std::chrono::steady_clock::now() + pause > give_up) {
			if (!reply && busy_ && tries > 1)
				return sluice::fail(reply.error().kind, reply.error().message + " (still busy after " +
									   std::to_string(tries) + " tries in " +
									   std::to_string(kBusyRetryFor.count()) + " s)");
			return reply;
		}
		std::this_thread::sleep_for(pause);
		pause = std::min(pause * 2, std::chrono::milliseconds(200));
	}
}

sluice::Result<json> Client::call_once(const json &request, int pass_fd)
{
	busy_ = false;
	// Replace rather than throw on bytes that are not UTF-8 (in an interface
	// name, say): the daemon then refuses the name with a message.
	std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace);
	if (line.size() > sluice::kMaxLineBytes)
		return sluice::invalid("the request is " + std::to_string(line.size()) +
				       " bytes, over the control socket's limit of " +
				       std::to_string(sluice::kMaxLineBytes) + "; send fewer prefixes at a time");
	line += '\n';
	if (auto ok = connect(); !ok)
		return std::unexpected(ok.error());
	bool closed = false;
	for (size_t sent = 0; sent < line.size();) {
		ssize_t n = sent == 0 && pass_fd >= 0
				    ? send_with_fd(fd_.get(), line, pass_fd)
				    : ::send(fd_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			// It may have said why before it closed (a peer it refuses,
			// too many clients): that line is read below.
			closed = true;
			break;
		}
		if (n < 0) {
			fd_.reset();
			return sluice::fail_errno("sending the request to sluiced at " + path_);
		}
		sent += static_cast<size_t>(n);
	}

	auto reply_line = read_line();
	if (closed)
		fd_.reset();
	if (!reply_line) {
		fd_.reset();
		if (closed)
			return sluice::fail(ErrorKind::system, "sluiced at " + path_ + " closed the connection");
		return std::unexpected(reply_line.error());
	}
	json reply = json::parse(*reply_line, nullptr, /*allow_exceptions=*/false);
	if (reply.is_discarded() || !reply.is_object() || !reply.contains("ok"))
		return sluice::fail(ErrorKind::system, "sluiced at " + path_ + " sent a reply that is not a protocol reply");
	if (reply["ok"] == true) {
		reply.erase("ok");
		return reply;
	}
	busy_ = sluice::is_busy_reply(reply);
	if (busy_)
		fd_.reset(); // it closed after saying so: the next try connects anew
	auto text = [&](const char *key) {
		auto it = reply.find(key);
		return it != reply.end() && it->is_string() ? it->get<std::string>() : std::string();
	};
	std::string message = text("error");
	if (message.empty())
		message = "sluiced refused the request without saying why";
	return sluice::fail(sluice::kind_from(text("kind")).value_or(ErrorKind::system), message);
}

sluice::Result<std::string> Client::read_line()
{
	for (;;) {
		if (auto nl = pending_.find('\n'); nl != std::string::npos) {
			std::string line = pending_.substr(0, nl);
			pending_.erase(0, nl + 1);
			return line;
		}
		if (pending_.size() > kMaxReplyBytes)
			return sluice::fail(ErrorKind::system, "sluiced's reply is over " +
								       std::to_string(kMaxReplyBytes) + " bytes");
		char buf[65536];
		ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return sluice::fail(ErrorKind::system, "sluiced at " + path_ + " did not reply within " +
								       std::to_string(kReplyTimeoutSeconds) + " s");
		if (n < 0)
			return sluice::fail_errno("reading the reply from sluiced at " + path_);
		if (n == 0)
			return sluice::fail(ErrorKind::system,
					    "sluiced at " + path_ + " closed the connection without replying");
		pending_.append(buf, static_cast<size_t>(n));
	}
}

} // namespace sluicectl
