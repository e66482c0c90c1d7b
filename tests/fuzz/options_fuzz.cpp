// options_fuzz.cpp - libFuzzer harness for sluiced's option and config file
// validation (ctl/sluiced/options.h parse_daemon_options), built with ASan and
// UBSan.
//
// Input: argv tokens, one a line, then optionally a line "%%" and an INI
// config file. The token "@config" stands for the config file's path, so
//     -i
//     eth0
//     --config
//     @config
//     %%
//     rate = 100
// is `sluiced -i eth0 --config FILE` with FILE holding "rate = 100". (The
// file is a memfd, read through /proc/self/fd: no disk I/O per run.)
//
// Checks, beyond "no crash, no sanitizer report, no exception escaping":
//   - a refusal is an input error (kind invalid: sluiced exits 2) with a
//     message;
//   - anything accepted is inside every documented bound: interfaces 1..15
//     characters without '/', whitespace or ':', rate and burst in
//     [1, SLUICE_RATE_MAX] and [1, SLUICE_BURST_MAX], the table a power of two
//     in [SLUICE_SLOTS_MIN, SLUICE_SLOTS_MAX], prefixes 0..32 and 0..128, the
//     period 0.01..60 s, the policy as validate_policy() wants it, the socket
//     path under 108 bytes, an absolute pin directory, 1..1024 clients.
//
//   --write-corpus=DIR   write the seed corpus and exit
#include "sluiced/options.h"
#include "fuzz_support.h"

#include "bpf/sluice_abi.h"

#include <net/if.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace sluice;

int g_memfd = -1;
std::string g_config_path;

[[noreturn]] void die(const std::string &why, std::string_view input)
{
	std::fprintf(stderr, "options_fuzz: %s\ninput (%zu bytes): %.*s\n", why.c_str(), input.size(),
		     int(std::min<std::size_t>(input.size(), 400)), input.data());
	std::abort();
}

void check_accepted(const DaemonOptions &o, std::string_view input)
{
	auto bad = [&](const std::string &what) { die("accepted " + what, input); };
	if (o.interfaces.empty())
		bad("no interface");
	for (const auto &i : o.interfaces) {
		if (i.empty() || i.size() >= IFNAMSIZ)
			bad("interface name of " + std::to_string(i.size()) + " characters");
		for (unsigned char c : i)
			if (c <= ' ' || c == '/' || c == ':' || c >= 0x7f)
				bad("interface name with character " + std::to_string(c));
	}
	if (o.rate_pps < SLUICE_RATE_MIN || o.rate_pps > SLUICE_RATE_MAX)
		bad("rate " + std::to_string(o.rate_pps));
	if (o.burst < SLUICE_BURST_MIN || o.burst > SLUICE_BURST_MAX)
		bad("burst " + std::to_string(o.burst));
	uint32_t s = o.load.slots;
	if (s < SLUICE_SLOTS_MIN || s > SLUICE_SLOTS_MAX || (s & (s - 1)) != 0)
		bad("table size " + std::to_string(s));
	if (o.load.v4_prefix > 32 || o.load.v6_prefix > 128)
		bad("prefixes " + std::to_string(o.load.v4_prefix) + "/" + std::to_string(o.load.v6_prefix));
	if (!(o.period_s >= 0.01 && o.period_s <= 60))
		bad("period " + std::to_string(o.period_s));
	if (auto ok = validate_policy(o.policy); !ok)
		bad("a policy validate_policy refuses: " + ok.error().message);
	if (o.socket_path.empty() || o.socket_path.size() >= 108)
		bad("socket path of " + std::to_string(o.socket_path.size()) + " bytes");
	if (o.pin_dir.empty() || o.pin_dir[0] != '/')
		bad("pin dir '" + o.pin_dir + "'");
	if (o.max_clients < 1 || o.max_clients > 1024)
		bad("max clients " + std::to_string(o.max_clients));
	if (o.audit_per_period < 1 || o.audit_per_period > (1u << 24))
		bad("audit slots " + std::to_string(o.audit_per_period));
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	const std::vector<std::pair<const char *, const char *>> seeds = {
		{"minimal", "-i\neth0"},
		{"every-option",
		 "-i\neth0\n-i\nveth-host\n--mode\nauto\n--rate\n2000\n--burst\n4000\n--table-size\n1024\n"
		 "--ipv4-prefix\n24\n--ipv6-prefix\n48\n--dry-run\n--hash-key-file\n/nonexistent/key\n"
		 "--socket\n/run/x.sock\n--socket-group\nadm\n--pin-dir\n/sys/fs/bpf/x\n--period\n0.5\n"
		 "--trip-pps\n5000\n--clear-pps\n4000\n--trip-periods\n2\n--hold\n3\n--recovery\n5\n"
		 "--recovery-start\n10\n--audit-slots\n128\n--max-clients\n8\n--log-level\ndebug\n--detach-on-exit"},
		{"equals-form", "--interface=eth0\n--rate=-1"},
		{"help", "--help"},
		{"config", "--config\n@config\n%%\ninterface = eth0\nrate = 100\nburst = 3\ntable-size = 4096\n"},
		{"config-and-flags", "-i\neth1\n--rate\n7\n--config\n@config\n%%\nrate = 100\nipv6-prefix = 129\n"},
		{"config-garbage", "--config\n@config\n%%\n[section]\nrate\n= = =\n\xff\xfe\n"},
		{"config-unknown-key", "--config\n@config\n%%\ninterface = eth0\nfoo = 1\n"},
		{"config-missing", "-i\neth0\n--config\n/nonexistent/sluice.conf"},
		{"table-not-power-of-two", "-i\neth0\n--table-size\n1000"},
		{"huge-rate", "-i\neth0\n--rate\n99999999999999999999999"},
		{"long-iface", "-i\nabcdefghijklmnopq"},
		{"utf8-iface", "-i\n\xc3\xa9th0"},
		{"nan-period", "-i\neth0\n--period\nnan"},
		{"empty", ""},
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
	g_memfd = memfd_create("sluice-fuzz-config", MFD_CLOEXEC);
	if (g_memfd < 0) {
		std::fprintf(stderr, "memfd_create: %s\n", std::strerror(errno));
		std::abort();
	}
	g_config_path = "/proc/self/fd/" + std::to_string(g_memfd);
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view input(reinterpret_cast<const char *>(data), size);
	std::string_view args = input, file;
	if (auto sep = input.find("\n%%\n"); sep != std::string_view::npos) {
		args = input.substr(0, sep);
		file = input.substr(sep + 4);
	} else if (input.starts_with("%%\n")) {
		args = {};
		file = input.substr(3);
	}
	if (ftruncate(g_memfd, 0) != 0 ||
	    (!file.empty() && pwrite(g_memfd, file.data(), file.size(), 0) != ssize_t(file.size())))
		die(std::string("writing the config memfd: ") + std::strerror(errno), input);

	std::vector<std::string> tokens{"sluiced"};
	for (size_t start = 0; !args.empty();) {
		size_t eol = args.find('\n', start);
		std::string tok(args.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start));
		tokens.push_back(tok == "@config" ? g_config_path : tok);
		if (eol == std::string_view::npos)
			break;
		start = eol + 1;
	}
	std::vector<const char *> argv;
	for (const auto &t : tokens)
		argv.push_back(t.c_str());
	argv.push_back(nullptr);

	auto r = parse_daemon_options(int(tokens.size()), argv.data());
	if (!r) {
		if (r.error().kind != ErrorKind::invalid || r.error().message.empty())
			die("a refusal that is not an input error with a message: " + r.error().describe(), input);
		return 0;
	}
	if (r->help) {
		if (r->usage.find("--rate") == std::string::npos)
			die("help without the options", input);
		return 0;
	}
	check_accepted(r->options, input);
	return 0;
}
