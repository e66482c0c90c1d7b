// policy_file_fuzz.cpp - libFuzzer harness for the policy file reader
// (ctl/lib/policyfile parse_policy), built with ASan and UBSan.
//
// Input: the policy file's text. Relative netset paths resolve in a
// directory made once at start, holding what a hostile file may name:
//   good.netset   two prefixes (192.0.2.0/24, 2001:db8::/32)
//   bad.netset    a prefix with host bits set on line 2
//   dir/          a directory
//   fifo          a FIFO nobody writes (must be refused, never waited on)
//   loop          a symbolic link to itself
//   big.netset    a sparse file one byte over kPolicyFileBytesMax
//
// Checks, beyond "no crash, no sanitizer report, no exception escaping, no
// hang" (libFuzzer's -timeout):
//   - a refusal has a known name and a reason; one in the policy text points
//     at a line the text has (or 0, the file as a whole);
//   - an accepted policy passes check_policy (every bound), reads the same
//     twice, and explain() gives every frame a class that exists, a rule that
//     exists, and a bucket no longer than its family.
//
//   --write-corpus=DIR   write the seed corpus and exit
#include "policyfile/policy_file.h"
#include "fuzz_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

std::string g_dir;

[[noreturn]] void die(const std::string &why, std::string_view input)
{
	std::fprintf(stderr, "policy_file_fuzz: %s\ninput (%zu bytes): %.*s\n", why.c_str(), input.size(),
		     int(std::min<std::size_t>(input.size(), 400)), input.data());
	std::abort();
}

void make_dir()
{
	char tmpl[] = "/tmp/sluice-policy-fuzz.XXXXXX";
	if (!mkdtemp(tmpl)) {
		std::fprintf(stderr, "mkdtemp: %s\n", std::strerror(errno));
		std::abort();
	}
	g_dir = tmpl;
	std::ofstream(g_dir + "/good.netset") << "# two\n192.0.2.0/24\n2001:db8::/32\n";
	std::ofstream(g_dir + "/bad.netset") << "10.0.0.0/8\n10.0.0.1/8\n";
	std::filesystem::create_directory(g_dir + "/dir");
	if (mkfifo((g_dir + "/fifo").c_str(), 0600) != 0 || symlink("loop", (g_dir + "/loop").c_str()) != 0) {
		std::fprintf(stderr, "mkfifo/symlink in %s: %s\n", g_dir.c_str(), std::strerror(errno));
		std::abort();
	}
	std::ofstream(g_dir + "/big.netset").close();
	if (truncate((g_dir + "/big.netset").c_str(), off_t(kPolicyFileBytesMax) + 1) != 0)
		std::abort();
	std::atexit([] {
		std::error_code ec;
		std::filesystem::remove_all(g_dir, ec);
	});
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	const std::vector<std::pair<const char *, const char *>> seeds = {
		{"minimal", "version: 1\n"},
		{"example",
		 "version: 1\nclasses:\n  default:\n    rate: 10000\n    burst: 20000\n  nat:\n    rate: 500000\n"
		 "    burst: 1_000_000\n    byte-rate: 125_000_000\n    byte-burst: 12_500_000\n"
		 "    standing-rate: 2000000\n    standing-burst: 200000\n  dns:\n    rate: 200\n    burst: 400\n"
		 "    ipv4-prefix: 24\n    ipv6-prefix: 48\n  syn: {rate: 100, burst: 200}\n  icmp: {rate: 20, burst: 50}\n"
		 "  health:\n    action: exempt\nrules:\n  - sources:\n      - 198.51.100.0/26\n      - 2001:db8:100::/48\n"
		 "    class: nat\n  - sources: [192.0.2.10, 192.0.2.11, \"2001:db8:beef::10\"]\n    class: health\n"
		 "  - protocol: udp\n    ports: 53\n    class: dns\n  - protocol: tcp-syn\n    class: syn\n"
		 "  - protocol: icmp\n    class: icmp\n  - protocol: icmpv6\n    class: icmp\n"
		 "allow:\n  - 203.0.113.0/24\ndeny:\n  - file: good.netset\n"},
		{"port-range", "version: 1\nclasses:\n  x: {rate: 1, burst: 1}\nrules:\n  - {protocol: tcp, ports: 1024-2047, class: x}\n"},
		{"netset-bad", "version: 1\ndeny:\n  - file: bad.netset\n"},
		{"netset-dir", "version: 1\ndeny:\n  - file: dir\n"},
		{"netset-fifo", "version: 1\nallow:\n  - file: fifo\n"},
		{"netset-loop", "version: 1\ndeny:\n  - file: loop\n"},
		{"netset-big", "version: 1\ndeny:\n  - file: big.netset\n"},
		{"overlap", "version: 1\ndeny: [192.0.2.0/24, 192.0.0.0/16]\n"},
		{"duplicate-key", "version: 1\nclasses:\n  a: {rate: 1, burst: 1}\n  a: {rate: 2, burst: 2}\n"},
		{"unknown-key", "version: 1\nclasses:\n  a: {rte: 1}\n"},
		{"alias", "version: 1\nallow: &a [192.0.2.0/24]\ndeny: *a\n"},
		{"deep", "version: 1\nrules: [[[[[[[[[[[[1]]]]]]]]]]]]\n"},
		{"bad-utf8", "version: 1\n# \xc3\x28\n"},
		{"two-docs", "version: 1\n---\nversion: 1\n"},
		{"ports-out-of-range", "version: 1\nclasses:\n  x: {rate: 1, burst: 1}\nrules:\n  - {protocol: udp, ports: 65536, class: x}\n"},
		{"empty", ""},
	};
	for (const auto &[name, text] : seeds) {
		std::ofstream f(std::filesystem::path(dir) / name, std::ios::binary);
		f << text;
	}
	std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

void check_accepted(const Policy &p, std::string_view input)
{
	if (auto ok = check_policy(p); !ok)
		die("accepted a policy check_policy refuses: " + ok.error().message, input);
	std::vector<Frame> frames;
	for (const char *src : {"192.0.2.10", "198.51.100.9", "10.1.2.3", "0.0.0.0", "2001:db8::1", "::"})
		for (Protocol proto : {Protocol::any, Protocol::tcp, Protocol::tcp_syn, Protocol::udp, Protocol::icmp,
				       Protocol::icmpv6})
			for (uint16_t port : {0, 53, 443, 65535})
				frames.push_back(Frame{*parse_address(src), proto, port});
	for (const auto &c : p.allow)
		frames.push_back(Frame{c.addr, Protocol::udp, 53});
	for (const auto &r : p.rules)
		for (const auto &c : r.sources)
			frames.push_back(Frame{c.addr, r.protocol, r.ports ? r.ports->hi : uint16_t(0)});
	for (const auto &f : frames) {
		Explanation e = explain(p, f);
		if (e.class_index >= p.classes.size())
			die("explain gave class " + std::to_string(e.class_index), input);
		if (e.rule && *e.rule >= p.rules.size())
			die("explain gave rule " + std::to_string(*e.rule), input);
		if ((e.decided == Decided::rule) != bool(e.rule))
			die("explain's decision and rule disagree", input);
		if (e.bucket.prefix > (f.source.family == Family::v4 ? 32u : 128u))
			die("a bucket of /" + std::to_string(e.bucket.prefix), input);
		if (describe(e).empty())
			die("an empty description", input);
	}
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sluice::fuzz::write_corpus_if_asked(*argc, *argv, write_corpus);
	make_dir();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view input(reinterpret_cast<const char *>(data), size);
	const std::string name = "fuzz.yaml";
	auto r = parse_policy(input, name, g_dir);
	if (!r) {
		const PolicyFileError &e = r.error();
		if (std::string(policy_error_name(e.error)) == "?" || e.reason.empty())
			die("a refusal without a name or a reason: " + e.str(), input);
		if (e.file == name) {
			size_t lines = 1;
			for (char c : input)
				lines += c == '\n';
			if (e.line > lines)
				die("a refusal at line " + std::to_string(e.line) + " of " + std::to_string(lines), input);
		}
		return 0;
	}
	check_accepted(*r, input);
	auto again = parse_policy(input, name, g_dir);
	if (!again || *again != *r)
		die("the same text read twice differs", input);
	return 0;
}
