// cookie_netns.h - a network namespace of the calling process's own, ready
// for the SYN-cookie path under BPF_PROG_TEST_RUN (which runs an XDP program
// in the caller's namespace, on its loopback): lo up, net.ipv4.tcp_syncookies
// and tcp_timestamps at 2 there (the machine's own namespace is never
// touched), and TCP listeners on 0.0.0.0:port and [::]:port (IPv6 only),
// kept open for the process's life. Call it while the process has one
// thread (unshare changes the calling thread's namespace). The bpf cookie
// tests and `sluice-bench cookie-cost` share it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace sluice::test {

inline bool write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, text, std::strlen(text)) == ssize_t(std::strlen(text));
	close(fd);
	return ok;
}

// "" when done, else what failed with errno's text.
inline std::string enter_cookie_netns(uint16_t port)
{
	if (unshare(CLONE_NEWNET))
		return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifreq ifr{};
	std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	bool up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 &&
		  (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
	int e = errno;
	if (s >= 0)
		close(s);
	if (!up)
		return std::string("lo up: ") + std::strerror(e);
	if (!write_proc("/proc/sys/net/ipv4/tcp_syncookies", "2") ||
	    !write_proc("/proc/sys/net/ipv4/tcp_timestamps", "2"))
		return std::string("the cookie sysctls in the private namespace: ") + std::strerror(errno);
	int fd4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	sockaddr_in a4{};
	a4.sin_family = AF_INET;
	a4.sin_port = htons(port);
	a4.sin_addr.s_addr = htonl(INADDR_ANY);
	sockaddr_in6 a6{};
	a6.sin6_family = AF_INET6;
	a6.sin6_port = htons(port);
	a6.sin6_addr = in6addr_any;
	if (fd4 < 0 || fd6 < 0 || setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
	    bind(fd4, reinterpret_cast<sockaddr *>(&a4), sizeof(a4)) ||
	    bind(fd6, reinterpret_cast<sockaddr *>(&a6), sizeof(a6)) || listen(fd4, 128) || listen(fd6, 128))
		return std::string("listeners on port ") + std::to_string(port) + ": " + std::strerror(errno);
	return ""; // the listeners stay open until the process ends
}

} // namespace sluice::test
