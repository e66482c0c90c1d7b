// A real ControlServer on a UNIX socket in a temporary directory, driven by a
// poll loop in its own thread (as the daemon drives it), with a handler that
// echoes the request. Clients are plain sockets in the test thread(s).
#include "temp_dir.h"
#include "ipc/control_server.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <memory>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The echo handler: {"ok": true, "cmd": <cmd>, "args": <the request>}.
json echo(const Request &r)
{
	return ok_reply(json{{"cmd", r.cmd}, {"args", r.args}});
}

// A ControlServer served by a poll loop in a thread until destroyed.
class Loop {
public:
	explicit Loop(ControlServer server, ControlServer::Handler handler = echo)
		: server_(std::move(server)), handler_(std::move(handler))
	{
		thread_ = std::thread([this] { run(); });
	}
	~Loop()
	{
		stop_ = true;
		thread_.join();
	}
	size_t clients() const { return clients_; }
	// The longest single serve() call so far.
	std::chrono::nanoseconds longest_serve() const { return std::chrono::nanoseconds(longest_ns_.load()); }
	uint64_t rounds() const { return rounds_; }

private:
	void run()
	{
		std::vector<pollfd> fds;
		while (!stop_) {
			fds.clear();
			server_.poll_fds(fds);
			::poll(fds.data(), fds.size(), 10);
			auto t0 = Clock::now();
			server_.serve(fds, handler_);
			auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
			if (ns > longest_ns_)
				longest_ns_ = ns;
			clients_ = server_.clients();
			rounds_++;
		}
	}

	ControlServer server_;
	ControlServer::Handler handler_;
	std::atomic<bool> stop_{false};
	std::atomic<size_t> clients_{0};
	std::atomic<int64_t> longest_ns_{0};
	std::atomic<uint64_t> rounds_{0};
	std::thread thread_;
};

// A blocking client with timeouts on every wait, so a broken server fails the
// test instead of hanging it.
class Client {
public:
	explicit Client(const std::string &path)
	{
		fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		sockaddr_un a{};
		a.sun_family = AF_UNIX;
		std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
		connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
		connect_errno_ = connected_ ? 0 : errno;
	}
	bool connected() const { return connected_; }
	int connect_errno() const { return connect_errno_; }
	int fd() const { return fd_.get(); }
	void close() { fd_.reset(); }

	// All of `data`, or false (peer gone).
	bool send(const std::string &data)
	{
		size_t off = 0;
		while (off < data.size()) {
			ssize_t n = ::send(fd_.get(), data.data() + off, data.size() - off, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return false;
			}
			off += static_cast<size_t>(n);
		}
		return true;
	}

	// The next line (without its newline); nullopt on EOF, error or timeout.
	std::optional<std::string> line(std::chrono::milliseconds timeout = 5000ms)
	{
		auto deadline = Clock::now() + timeout;
		for (;;) {
			if (auto nl = buf_.find('\n'); nl != std::string::npos) {
				std::string l = buf_.substr(0, nl);
				buf_.erase(0, nl + 1);
				return l;
			}
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
			if (left.count() <= 0)
				return std::nullopt;
			pollfd p{fd_.get(), POLLIN, 0};
			if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
				continue;
			char tmp[65536];
			ssize_t n = ::read(fd_.get(), tmp, sizeof(tmp));
			if (n <= 0)
				return std::nullopt;
			buf_.append(tmp, static_cast<size_t>(n));
		}
	}

	std::optional<json> reply(std::chrono::milliseconds timeout = 5000ms)
	{
		auto l = line(timeout);
		if (!l)
			return std::nullopt;
		json j = json::parse(*l, nullptr, false);
		EXPECT_FALSE(j.is_discarded()) << "reply is not JSON: " << *l;
		return j;
	}

	// A request line in, its reply out.
	std::optional<json> call(const std::string &request_line)
	{
		if (!send(request_line + "\n"))
			return std::nullopt;
		return reply();
	}

	// Has the server closed this connection (EOF or reset) within timeout?
	bool closed_by_peer(std::chrono::milliseconds timeout = 5000ms)
	{
		auto deadline = Clock::now() + timeout;
		while (Clock::now() < deadline) {
			pollfd p{fd_.get(), POLLIN, 0};
			if (::poll(&p, 1, 50) <= 0)
				continue;
			char tmp[4096];
			ssize_t n = ::read(fd_.get(), tmp, sizeof(tmp));
			if (n == 0 || (n < 0 && errno == ECONNRESET))
				return true;
			if (n > 0)
				buf_.append(tmp, static_cast<size_t>(n));
		}
		return false;
	}
	const std::string &buffered() const { return buf_; }

private:
	UniqueFd fd_;
	bool connected_ = false;
	int connect_errno_ = 0;
	std::string buf_;
};

class ControlServerTest : public ::testing::Test {
protected:
	std::string sock() const { return dir_.path() + "/run/sluiced.sock"; }

	// Listen at sock() and serve it from a loop thread.
	void start(size_t max_clients = 8, ControlServer::Handler handler = echo)
	{
		auto s = ControlServer::listen(sock(), std::optional<gid_t>{getgid()}, max_clients);
		ASSERT_TRUE(s.has_value()) << s.error().describe();
		EXPECT_EQ(s->path(), sock());
		EXPECT_EQ(s->clients(), 0u);
		loop_.emplace(std::move(*s), std::move(handler));
	}

	// A connected client whose round trip has worked (so the server holds it).
	std::unique_ptr<Client> served_client()
	{
		auto c = std::make_unique<Client>(sock());
		EXPECT_TRUE(c->connected()) << std::strerror(c->connect_errno());
		auto r = c->call(R"({"cmd": "status"})");
		EXPECT_TRUE(r.has_value());
		if (r)
			EXPECT_EQ((*r)["ok"], true) << r->dump();
		return c;
	}

	bool wait_for_clients(size_t n, std::chrono::milliseconds timeout = 3000ms)
	{
		auto deadline = Clock::now() + timeout;
		while (Clock::now() < deadline) {
			if (loop_->clients() == n)
				return true;
			std::this_thread::sleep_for(5ms);
		}
		return loop_->clients() == n;
	}

	TempDir dir_{"sluice-ctl-test"};
	std::optional<Loop> loop_;
};

TEST_F(ControlServerTest, GoodRequestGetsItsReply)
{
	start();
	Client c(sock());
	ASSERT_TRUE(c.connected()) << std::strerror(c.connect_errno());
	auto r = c.call(R"({"cmd": "breaker", "iface": "veth0", "to": "shedding"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true);
	EXPECT_EQ((*r)["cmd"], "breaker");
	EXPECT_EQ((*r)["args"]["iface"], "veth0");
	EXPECT_EQ((*r)["args"]["to"], "shedding");
	// The same connection keeps answering.
	r = c.call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["cmd"], "status");
}

TEST_F(ControlServerTest, PipelinedRequestsAreAnsweredInOrder)
{
	start();
	Client c(sock());
	ASSERT_TRUE(c.connected());
	// Three requests, a blank line and a CRLF one, in a single write.
	ASSERT_TRUE(c.send("{\"cmd\":\"status\"}\n\n   \n{\"cmd\":\"stats\"}\n{\"cmd\":\"audit\"}\r\n"));
	for (const char *want : {"status", "stats", "audit"}) {
		auto r = c.reply();
		ASSERT_TRUE(r.has_value()) << want;
		EXPECT_EQ((*r)["cmd"], want);
	}
	// Nothing else: blank lines get no reply.
	EXPECT_FALSE(c.line(200ms).has_value());
	// A request split over several writes is one request.
	ASSERT_TRUE(c.send("{\"cmd\":"));
	std::this_thread::sleep_for(30ms);
	ASSERT_TRUE(c.send("\"detach\"}\n"));
	auto r = c.reply();
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["cmd"], "detach");
}

TEST_F(ControlServerTest, MalformedJsonGetsAnErrorAndTheConnectionCarriesOn)
{
	start();
	Client c(sock());
	ASSERT_TRUE(c.connected());
	auto r = c.call("{\"cmd\": \"status\"");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ(*r, json({{"ok", false}, {"error", "request is not valid JSON"}, {"kind", "invalid"}}));
	r = c.call(R"({"cmd": "shutdown"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ(*r, json({{"ok", false}, {"error", "unknown command 'shutdown'"}, {"kind", "invalid"}}));
	r = c.call("[1, 2]");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["error"], "request must be a JSON object");
	r = c.call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true);
	EXPECT_EQ((*r)["cmd"], "status");
}

// A handler that throws is an error reply naming the command, and the server
// (the daemon's loop) goes on serving this client and others.
TEST_F(ControlServerTest, AHandlerThatThrowsIsAnErrorReplyAndServingGoesOn)
{
	start(8, [](const Request &r) -> json {
		if (r.args.contains("boom"))
			throw std::out_of_range("a test's bug");
		if (r.args.contains("int"))
			throw 42;
		return echo(r);
	});
	Client c(sock());
	ASSERT_TRUE(c.connected());
	auto r = c.call(R"({"cmd": "stats", "boom": 1})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], false);
	EXPECT_EQ((*r)["kind"], "system");
	const std::string e = (*r)["error"];
	EXPECT_NE(e.find("\"stats\""), std::string::npos) << e;
	EXPECT_NE(e.find("a test's bug"), std::string::npos) << e;
	r = c.call(R"({"cmd": "audit", "int": 1})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], false);
	EXPECT_NE(std::string((*r)["error"]).find("unknown type"), std::string::npos) << *r;
	r = c.call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true);
	Client other(sock());
	ASSERT_TRUE(other.connected());
	r = other.call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["cmd"], "status");
}

TEST_F(ControlServerTest, OverLongLineGetsOneErrorAndTheConnectionStillWorks)
{
	start();
	Client c(sock());
	ASSERT_TRUE(c.connected());
	// 100 KiB without a newline: the error comes as soon as the limit is crossed.
	ASSERT_TRUE(c.send(std::string(100 * 1024, 'x')));
	auto r = c.reply();
	ASSERT_TRUE(r.has_value()) << "no error for an over-long line";
	EXPECT_EQ(*r, json({{"ok", false}, {"error", "request line over 65536 bytes"}, {"kind", "invalid"}}));
	// More of the same line: still no second error.
	ASSERT_TRUE(c.send(std::string(100 * 1024, 'y')));
	EXPECT_FALSE(c.line(200ms).has_value()) << "a second error for the same line";
	// The newline ends the bad line; the next request is answered, and it is
	// the very next line the client reads (exactly one error in all).
	ASSERT_TRUE(c.send("\n"));
	r = c.call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true) << r->dump();
	EXPECT_EQ((*r)["cmd"], "status");
	EXPECT_TRUE(c.buffered().empty()) << c.buffered();
	// A second over-long line gets its own (one) error.
	ASSERT_TRUE(c.send(std::string(70000, 'z') + "\n" + R"({"cmd": "stats"})" + "\n"));
	r = c.reply();
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["error"], "request line over 65536 bytes");
	r = c.reply();
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["cmd"], "stats");
}

TEST_F(ControlServerTest, LineOfExactlyTheLimitIsServed)
{
	start();
	Client c(sock());
	ASSERT_TRUE(c.connected());
	std::string head = R"({"cmd": "status", "pad": ")", tail = "\"}";
	std::string line = head + std::string(kMaxLineBytes - head.size() - tail.size(), 'p') + tail;
	ASSERT_EQ(line.size(), kMaxLineBytes);
	auto r = c.call(line);
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true) << (*r)["error"];
	EXPECT_EQ((*r)["args"]["pad"].get<std::string>().size(), kMaxLineBytes - head.size() - tail.size());
}

TEST_F(ControlServerTest, ExtraClientOverMaxGetsAnErrorLine)
{
	start(/*max_clients=*/2);
	auto a = served_client();
	auto b = served_client();
	ASSERT_TRUE(wait_for_clients(2));
	Client extra(sock());
	ASSERT_TRUE(extra.connected());
	auto r = extra.reply();
	ASSERT_TRUE(r.has_value()) << "no error line for the client over max_clients";
	EXPECT_EQ((*r)["ok"], false);
	EXPECT_EQ((*r)["kind"], "system");
	EXPECT_NE((*r)["error"].get<std::string>().find("too many control clients"), std::string::npos) << r->dump();
	EXPECT_EQ((*r)["busy"], true) << "the refusal says nothing was read, so the client may try again";
	EXPECT_TRUE(extra.closed_by_peer()) << "the extra connection was kept open";
	EXPECT_EQ(loop_->clients(), 2u);
	// The two admitted clients are unaffected.
	auto ra = a->call(R"({"cmd": "stats"})");
	ASSERT_TRUE(ra.has_value());
	EXPECT_EQ((*ra)["cmd"], "stats");
	// When one leaves, a newcomer is served.
	b->close();
	ASSERT_TRUE(wait_for_clients(1));
	auto c = served_client();
	EXPECT_TRUE(wait_for_clients(2));
}

// Requests that take a millisecond each, so the 10 ms budget of a round
// answers about ten: 40 clients keep hundreds queued, and a 41st, connected
// last, asks one at a time. Its turn must come within one pass over the
// others (each answered about once meanwhile), round after round: the turn
// carries over when the budget runs out. Counted in answers, not time, so a
// slow machine changes nothing.
TEST_F(ControlServerTest, ABudgetSpentOnPipelinersStillComesRoundToEveryClient)
{
	constexpr int kPipeliners = 40;
	// Shared with the handler: the loop serves on after this body returns,
	// until the fixture is torn down.
	auto counted = std::make_shared<std::atomic<uint64_t>>(0);
	std::atomic<uint64_t> &answers = *counted;
	start(/*max_clients=*/64, [counted](const Request &r) {
		std::this_thread::sleep_for(1ms);
		(*counted)++;
		return echo(r);
	});
	std::vector<std::unique_ptr<Client>> pipeliners;
	std::string many;
	for (int i = 0; i < 400; i++)
		many += "{\"cmd\": \"stats\"}\n";
	for (int i = 0; i < kPipeliners; i++) {
		pipeliners.push_back(served_client());
		ASSERT_TRUE(pipeliners.back()->send(many));
	}
	ASSERT_TRUE(wait_for_clients(kPipeliners));
	auto late = served_client();
	uint64_t worst = 0;
	for (int call = 0; call < 5; call++) {
		uint64_t before = answers;
		auto r = late->call(R"({"cmd": "status"})");
		ASSERT_TRUE(r.has_value()) << "call " << call;
		EXPECT_EQ((*r)["cmd"], "status");
		worst = std::max(worst, answers - before);
	}
	// The others' answers between a request and its reply: one pass (40)
	// plus what the round that read it and the round that answered it spent
	// before reaching it.
	EXPECT_LE(worst, 2u * kPipeliners + 2) << "answers to others while one request waited";
	EXPECT_GT(answers.load(), 5u * kPipeliners) << "the pipeliners were answered meanwhile";
}

TEST_F(ControlServerTest, ExtraClientThatAlreadyLeftDoesNotHurtTheServer)
{
	// The refusal line goes to a peer that may have closed already: that
	// must not raise SIGPIPE (which would end this process, or the daemon).
	start(/*max_clients=*/1);
	auto a = served_client();
	ASSERT_TRUE(wait_for_clients(1));
	for (int i = 0; i < 30; i++) {
		Client gone(sock());
		ASSERT_TRUE(gone.connected());
		gone.close();
	}
	std::this_thread::sleep_for(50ms);
	auto r = a->call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true);
	EXPECT_EQ(loop_->clients(), 1u);
}

TEST_F(ControlServerTest, ClientThatNeverReadsIsDisconnectedWithoutBlockingTheLoop)
{
	start();
	auto fast = served_client();
	ASSERT_TRUE(wait_for_clients(1));

	// The hog writes requests with 8 KiB replies and never reads one.
	std::atomic<bool> hog_done{false};
	std::atomic<bool> hog_disconnected{false};
	std::atomic<size_t> hog_bytes{0};
	std::thread hog([&] {
		Client h(sock());
		if (!h.connected()) {
			hog_done = true;
			return;
		}
		std::string req = R"({"cmd": "status", "pad": ")" + std::string(8192, 'h') + "\"}\n";
		auto deadline = Clock::now() + 4s;
		size_t off = 0;
		while (Clock::now() < deadline) {
			ssize_t n = ::send(h.fd(), req.data() + off, req.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					pollfd p{h.fd(), POLLOUT, 0};
					::poll(&p, 1, 5);
					continue;
				}
				if (errno == EPIPE || errno == ECONNRESET)
					hog_disconnected = true;
				break;
			}
			hog_bytes += static_cast<size_t>(n);
			off = (off + static_cast<size_t>(n)) % req.size();
		}
		hog_done = true;
	});

	// Meanwhile the other client's round trips stay fast.
	auto worst = 0ms;
	int trips = 0;
	while (!hog_done) {
		auto t0 = Clock::now();
		auto r = fast->call(R"({"cmd": "stats"})");
		auto rtt = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
		ASSERT_TRUE(r.has_value()) << "the other client got no reply while the hog was connected";
		EXPECT_EQ((*r)["cmd"], "stats");
		worst = std::max(worst, rtt);
		trips++;
		std::this_thread::sleep_for(2ms);
	}
	hog.join();

	EXPECT_TRUE(hog_disconnected) << "a client that never reads was not disconnected (it sent " << hog_bytes
				      << " bytes)";
	// It had to owe more than kMaxPendingReply before being cut off.
	EXPECT_GT(hog_bytes.load(), kMaxPendingReply);
	EXPECT_GE(trips, 1);
	EXPECT_LT(worst, 250ms) << "round trip of the other client, worst of " << trips;
	EXPECT_LT(loop_->longest_serve(), 500ms);
	EXPECT_TRUE(wait_for_clients(1));
	auto r = fast->call(R"({"cmd": "status"})");
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ((*r)["ok"], true);
}

TEST_F(ControlServerTest, ClientStreamingAnEndlessLineDoesNotStallTheLoop)
{
	start();
	auto fast = served_client();

	// One never-ending over-long line, written as fast as the socket takes it:
	// the server never owes it more than one error line, so only a bounded
	// read per round keeps the loop turning.
	std::atomic<bool> stop{false};
	std::atomic<size_t> streamed{0};
	std::thread streamer([&] {
		Client s(sock());
		if (!s.connected())
			return;
		std::string chunk(256 * 1024, 's');
		while (!stop) {
			ssize_t n = ::send(s.fd(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
			if (n <= 0)
				break;
			streamed += static_cast<size_t>(n);
		}
	});
	std::this_thread::sleep_for(50ms);
	auto worst = 0ms;
	auto until = Clock::now() + 1500ms;
	int trips = 0;
	while (Clock::now() < until) {
		auto t0 = Clock::now();
		auto r = fast->call(R"({"cmd": "stats"})");
		auto rtt = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
		if (!r.has_value()) {
			ADD_FAILURE() << "no reply while another client streams";
			break;
		}
		worst = std::max(worst, rtt);
		trips++;
		std::this_thread::sleep_for(5ms);
	}
	stop = true;
	streamer.join();
	EXPECT_GT(streamed.load(), 4 * kMaxLineBytes);
	EXPECT_GE(trips, 10);
	EXPECT_LT(worst, 250ms) << "worst round trip of " << trips << " while " << streamed << " bytes streamed";
}

TEST_F(ControlServerTest, PeerThatClosesGetsItsRepliesAndIsForgotten)
{
	start();
	{
		Client c(sock());
		ASSERT_TRUE(c.connected());
		ASSERT_TRUE(c.send("{\"cmd\":\"status\"}\n{\"cmd\":\"stats\"}\n"));
		::shutdown(c.fd(), SHUT_WR);
		auto r1 = c.reply();
		auto r2 = c.reply();
		ASSERT_TRUE(r1 && r2);
		EXPECT_EQ((*r1)["cmd"], "status");
		EXPECT_EQ((*r2)["cmd"], "stats");
		EXPECT_TRUE(c.closed_by_peer());
	}
	EXPECT_TRUE(wait_for_clients(0));
	// Many connect-and-go clients leave nothing behind.
	for (int i = 0; i < 50; i++) {
		Client c(sock());
		ASSERT_TRUE(c.connected());
	}
	EXPECT_TRUE(wait_for_clients(0));
}

TEST_F(ControlServerTest, SocketModeAndGroup)
{
	start();
	struct stat st {};
	ASSERT_EQ(::stat(sock().c_str(), &st), 0) << std::strerror(errno);
	EXPECT_TRUE(S_ISSOCK(st.st_mode));
	EXPECT_EQ(st.st_mode & 07777, 0660u);
	EXPECT_EQ(st.st_gid, getgid());
	// The parent directory was created.
	EXPECT_TRUE(std::filesystem::is_directory(dir_.path() + "/run"));
}

TEST_F(ControlServerTest, NoGroupMeansOwnerOnly)
{
	std::string path = dir_.path() + "/private.sock";
	auto s = ControlServer::listen(path, std::nullopt, 4);
	ASSERT_TRUE(s.has_value()) << s.error().describe();
	struct stat st {};
	ASSERT_EQ(::stat(path.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(ControlServerTest, ListenRefusesAPathWhereALiveServerAnswers)
{
	start();
	auto second = ControlServer::listen(sock(), std::optional<gid_t>{getgid()}, 8);
	ASSERT_FALSE(second.has_value()) << "two servers on one socket";
	EXPECT_EQ(second.error().kind, ErrorKind::system);
	EXPECT_EQ(second.error().code, EADDRINUSE);
	EXPECT_NE(second.error().message.find("another sluiced answers on " + sock()), std::string::npos)
		<< second.error().message;
	// The live server's socket was left alone: new clients still reach it.
	EXPECT_TRUE(std::filesystem::exists(sock()));
	auto c = served_client();
}

TEST_F(ControlServerTest, ListenReplacesAStaleSocketFile)
{
	std::filesystem::create_directories(dir_.path() + "/run");
	{
		// A socket file nobody listens on any more (a killed daemon's).
		UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
		sockaddr_un a{};
		a.sun_family = AF_UNIX;
		std::strncpy(a.sun_path, sock().c_str(), sizeof(a.sun_path) - 1);
		ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0) << std::strerror(errno);
	}
	struct stat st {};
	ASSERT_EQ(::stat(sock().c_str(), &st), 0);
	ASSERT_TRUE(S_ISSOCK(st.st_mode));
	ASSERT_FALSE(Client(sock()).connected()); // stale: nobody answers
	start();
	auto c = served_client();
}

TEST_F(ControlServerTest, ListenDoesNotDeleteAFileThatIsNotASocket)
{
	std::filesystem::create_directories(dir_.path() + "/run");
	std::ofstream(sock()) << "precious\n";
	auto s = ControlServer::listen(sock(), std::optional<gid_t>{getgid()}, 8);
	EXPECT_FALSE(s.has_value()) << "listened over a regular file";
	if (!s)
		EXPECT_NE(s.error().message.find(sock()), std::string::npos) << s.error().message;
	std::ifstream in(sock());
	std::string content;
	std::getline(in, content);
	EXPECT_EQ(content, "precious");
}

TEST_F(ControlServerTest, ListenRefusesAPathTooLong)
{
	std::string path = dir_.path() + "/" + std::string(sizeof(sockaddr_un::sun_path), 'l');
	auto s = ControlServer::listen(path, std::nullopt, 8);
	ASSERT_FALSE(s.has_value());
	EXPECT_EQ(s.error().kind, ErrorKind::invalid);
	EXPECT_NE(s.error().message.find("too long"), std::string::npos);
}

TEST_F(ControlServerTest, DestructionRemovesTheSocketFile)
{
	start();
	ASSERT_TRUE(std::filesystem::exists(sock()));
	loop_.reset();
	EXPECT_FALSE(std::filesystem::exists(sock()));
	// And a new server can take the path at once.
	start();
	auto c = served_client();
}

TEST_F(ControlServerTest, RefusesPeersOutsideTheGroup)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to connect as another user";
	start();
	// Let anyone reach the socket file, so the peer check is what decides.
	ASSERT_EQ(::chmod(sock().c_str(), 0666), 0);
	ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
	// Everything the child needs is prepared before fork (no allocation after).
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::strncpy(a.sun_path, sock().c_str(), sizeof(a.sun_path) - 1);
	int pipefd[2];
	ASSERT_EQ(::pipe(pipefd), 0);
	pid_t pid = ::fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		::close(pipefd[0]);
		if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)
			::_exit(3);
		int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
		if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0)
			::_exit(4);
		char buf[4096];
		ssize_t total = 0, n;
		while ((n = ::read(fd, buf + total, sizeof(buf) - 1 - static_cast<size_t>(total))) > 0)
			total += n;
		(void)!::write(pipefd[1], buf, static_cast<size_t>(total));
		::_exit(0);
	}
	::close(pipefd[1]);
	std::string got;
	char buf[4096];
	ssize_t n;
	while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0)
		got.append(buf, static_cast<size_t>(n));
	::close(pipefd[0]);
	int status = 0;
	ASSERT_EQ(::waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0) << "child could not connect";
	ASSERT_FALSE(got.empty()) << "no refusal line";
	json j = json::parse(got.substr(0, got.find('\n')), nullptr, false);
	ASSERT_FALSE(j.is_discarded()) << got;
	EXPECT_EQ(j["ok"], false);
	EXPECT_EQ(j["kind"], "refused");
	EXPECT_NE(j["error"].get<std::string>().find("permission denied"), std::string::npos) << got;
	EXPECT_EQ(loop_->clients(), 0u);
}

} // namespace
} // namespace sluice
