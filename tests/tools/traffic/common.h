// common.h - what the three sluice-traffic subcommands share: a small option
// parser, addresses (restricted to the testbed ranges), clocks, checksums and
// the JSON result line.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::traffic {

// A bad command line: main prints it with the subcommand's usage, exit 2.
struct UsageError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// A failure while running (socket, interface...): exit 1.
struct RunError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// --name VALUE and --flag options; every option must be known to the
// subcommand, each may be given once.
class Args {
public:
	struct Spec {
		const char *name; // without the dashes
		bool takes_value;
	};
	Args(int argc, char **argv, std::initializer_list<Spec> specs);

	bool has(const std::string &name) const { return values_.count(name) != 0; }
	std::optional<std::string> get(const std::string &name) const;
	std::string required(const std::string &name) const;

	uint64_t u64(const std::string &name, uint64_t def, uint64_t min, uint64_t max) const;
	double real(const std::string &name, double def, double min, double max) const;

private:
	std::map<std::string, std::string> values_;
};

uint64_t parse_u64(const std::string &opt, const std::string &text, uint64_t min, uint64_t max);
double parse_real(const std::string &opt, const std::string &text, double min, double max);

// An IPv4 or IPv6 address, bytes in network order (IPv4 in the first four).
struct Addr {
	bool v6 = false;
	std::array<uint8_t, 16> b{};

	std::string str() const;
	bool operator==(const Addr &) const = default;
};

// Parse, refusing anything outside 198.18.0.0/15 and 2001:2::/48: the tools
// only ever address the testbed's own namespaces.
Addr parse_testbed_addr(const std::string &opt, const std::string &text);
bool in_testbed_ranges(const Addr &a);

std::array<uint8_t, 6> parse_mac(const std::string &opt, const std::string &text);

// CLOCK_MONOTONIC in nanoseconds, and sleeping until such a time.
uint64_t now_ns();
void sleep_until_ns(uint64_t t);

// Seconds given by --duration as nanoseconds (0: not given).
uint64_t duration_ns(const Args &a, bool required);

// One's-complement sum helpers (RFC 1071).
uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len);
uint16_t csum_fold(uint32_t sum);

// SIGINT/SIGTERM set this; loops check it and end early (still printing
// their result).
extern volatile int g_stop;
void install_stop_handlers();

void print_json(const nlohmann::ordered_json &j);

// Refuse to run in the network namespace of pid 1 (the machine's own, with
// its real interfaces and default route): the tools only ever run inside
// namespaces a test made (scripts/testbed.sh). Throws RunError.
void require_test_netns();

int run_flood(int argc, char **argv);
int run_sink(int argc, char **argv);
int run_probe(int argc, char **argv);

extern const char *const kFloodUsage;
extern const char *const kSinkUsage;
extern const char *const kProbeUsage;

} // namespace sluice::traffic
