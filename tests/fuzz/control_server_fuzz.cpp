// control_server_fuzz.cpp - libFuzzer harness for the daemon's control
// socket: the input is the byte stream one client sends (any number of lines,
// any bytes, over-long lines), written to a real ControlServer
// (ctl/lib/ipc/control_server.h) on a UNIX socket and served by the same
// poll/serve calls as sluiced's loop, with a handler that reads every argument
// through the typed getters (as the daemon's handlers do) and echoes the
// request. Built with ASan and UBSan.
//
// Checks, beyond "no crash, no sanitizer report, no exception":
//   - one reply line per request line, in order: a non-blank line gets one
//     reply, an over-long one exactly one error; nothing for a blank line or
//     for the unfinished line the client closes on;
//   - every reply is one line of valid JSON with "ok";
//   - the server closes the connection once the client has closed its side
//     and the replies are written, and forgets the client.
//
//   --write-corpus=DIR   write the seed corpus and exit
#include "ipc/control_server.h"
#include "fuzz_support.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace sluice;

std::optional<ControlServer> g_server;
std::string g_path;

[[noreturn]] void die(const std::string &why)
{
	std::fprintf(stderr, "control_server_fuzz: %s\n", why.c_str());
	std::abort();
}

json handler(const Request &r)
{
	for (const char *name : {"iface", "to", "rate", "burst", "addr", "set", "n", "list", "cidrs", "mode"}) {
		(void)r.str(name);
		(void)r.opt_str(name);
		(void)r.integer(name);
		(void)r.opt_integer(name);
		(void)r.str_list(name);
	}
	if (r.passed_fd)
		die("a file descriptor was passed although the client sent none");
	// A handler that throws (as a daemon handler once did on a value of the
	// wrong type): the server must answer with an error and go on.
	if (r.args.contains("throw")) {
		if (r.args["throw"] == "int")
			throw 7;
		throw std::runtime_error("thrown by the harness's handler for " + r.cmd);
	}
	return ok_reply({{"cmd", r.cmd}, {"args", r.args}});
}

// The replies the server owes for this byte stream (see read_client).
size_t expected_replies(const uint8_t *data, size_t size)
{
	size_t replies = 0, len = 0;
	bool skipping = false, blank = true;
	for (size_t i = 0; i < size; i++) {
		char ch = char(data[i]);
		if (ch != '\n') {
			if (skipping)
				continue;
			if (len >= kMaxLineBytes) {
				skipping = true;
				len = 0;
				blank = true;
				replies++; // the one "over the limit" error
				continue;
			}
			len++;
			if (ch != ' ' && ch != '\t' && ch != '\r')
				blank = false;
			continue;
		}
		if (!skipping && !blank)
			replies++;
		skipping = false;
		len = 0;
		blank = true;
	}
	return replies;
}

void serve_once(int timeout_ms)
{
	std::vector<pollfd> fds;
	g_server->poll_fds(fds);
	if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR)
		die(std::string("poll: ") + std::strerror(errno));
	g_server->serve(fds, handler);
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	const std::vector<std::pair<std::string, std::string>> seeds = {
		{"one", "{\"cmd\": \"status\"}\n"},
		{"pipelined", "{\"cmd\": \"status\"}\n{\"cmd\": \"stats\", \"iface\": \"eth0\"}\n\n  \r\n{\"cmd\": \"audit\"}\n"},
		{"garbage-then-good", "\xff\xfe{{{\n{\"cmd\": \"status\"}\n"},
		{"unfinished", "{\"cmd\": \"status\"}\n{\"cmd\": \"sta"},
		{"nul", std::string("{\"cmd\": \"status\"}\0\n", 19)},
		{"from-fd", "{\"cmd\": \"list_add\", \"iface\": \"eth0\", \"list\": \"deny\", \"from_fd\": true}\n"},
		{"from-fd-false", "{\"cmd\": \"status\", \"from_fd\": false}\n"},
		{"crlf", "{\"cmd\": \"status\"}\r\n"},
		{"handler-throws", "{\"cmd\": \"status\", \"throw\": 1}\n{\"cmd\": \"status\"}\n"
				   "{\"cmd\": \"audit\", \"throw\": \"int\"}\n{\"cmd\": \"status\"}\n"},
		{"over-long", std::string(kMaxLineBytes + 1, 'x') + "\n{\"cmd\": \"status\"}\n"},
		{"exactly-the-limit", "{\"cmd\": \"status\", \"pad\": \"" + std::string(kMaxLineBytes - 28, 'p') + "\"}\n"},
	};
	for (const auto &[name, text] : seeds) {
		std::ofstream f(std::filesystem::path(dir) / name, std::ios::binary);
		f << text;
	}
	std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sluice::fuzz::write_corpus_if_asked(*argc, *argv, write_corpus);
	char tmpl[] = "/tmp/sluice-fuzz-ctl.XXXXXX";
	if (!mkdtemp(tmpl))
		die(std::string("mkdtemp: ") + std::strerror(errno));
	g_path = std::string(tmpl) + "/ctl.sock";
	auto s = ControlServer::listen(g_path, std::nullopt, 4);
	if (!s)
		die("listen: " + s.error().describe());
	g_server.emplace(std::move(*s));
	// Removed at exit (the server unlinks the socket; the directory here).
	static std::string dir = tmpl;
	std::atexit([] {
		g_server.reset();
		::rmdir(dir.c_str());
	});
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(std::string("socket: ") + std::strerror(errno));
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::strncpy(a.sun_path, g_path.c_str(), sizeof(a.sun_path) - 1);
	if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0)
		die(std::string("connect: ") + std::strerror(errno));

	size_t off = 0;
	bool shut = false, eof = false;
	std::string got;
	char buf[65536];
	for (int round = 0; round < 100000 && !eof; round++) {
		while (off < size) {
			ssize_t n = ::send(fd, data + off, size - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n <= 0)
				break;
			off += size_t(n);
		}
		if (off == size && !shut) {
			::shutdown(fd, SHUT_WR);
			shut = true;
		}
		serve_once(shut ? 10 : 0);
		for (;;) {
			ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0) {
				eof = true;
				break;
			}
			if (n < 0) {
				if (errno == ECONNRESET) // disconnected (would be: a client owing over 1 MiB)
					eof = true;
				break;
			}
			got.append(buf, size_t(n));
		}
	}
	::close(fd);
	if (!eof)
		die("the server did not close the connection after the client closed its side");
	for (int round = 0; round < 100 && g_server->clients() > 0; round++)
		serve_once(1);
	if (g_server->clients() != 0)
		die("the server did not forget a closed client");

	size_t want = expected_replies(data, size), lines = 0, start = 0;
	while (start < got.size()) {
		size_t eol = got.find('\n', start);
		if (eol == std::string::npos)
			die("an unterminated reply: " + got.substr(start, 200));
		json j = json::parse(got.substr(start, eol - start), nullptr, false);
		if (j.is_discarded() || !j.is_object() || !j.contains("ok"))
			die("a reply that is not a JSON object with \"ok\": " + got.substr(start, 200));
		lines++;
		start = eol + 1;
	}
	if (lines != want)
		die(std::to_string(lines) + " replies for " + std::to_string(want) + " request lines");
	return 0;
}
