// sluice-standing-matches: the false-match rate of random sources against the
// standing table, with the real bpf/standing.h and bpf/source_key.h on the host
// (the benchmarks' figure 8; tests/headers/standing_test.cpp asserts the bound
// on a smaller run). For each table fill N: a table of the default size (or
// --sets), N random sources granted standing, then --probes other random
// sources looked up; how many matched an entry they do not own.
//
//   sluice-standing-matches [--entries N[,N...]] [--probes P] [--sets S] [--seed X]
//
// Sources are random IPv4 and IPv6 addresses (alternately) hashed with a random
// key, as the program hashes them; the lowest bit of the first word tells the
// granted sources and the probes apart, so no probe is a granted source itself.
// Prints one JSON line per fill: entries, sets, held (live entries after the
// grants: a full set gives up its least recently seen), probes, matches,
// expected (held / (sets x 2^32): each live fingerprint of a probe's set matches
// it with probability 2^-32), bound (SLUICE_STANDING_WAYS x 2^-32, a full set's).
#include "bpf/sluice_abi.h"
#include "bpf/source_key.h"
#include "bpf/standing.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr __u32 kLapse = SLUICE_STANDING_TICKS_OF(SLUICE_STANDING_LAPSE_DEFAULT_S);
constexpr __u32 kNow = 1000; // a stamp: every grant and lookup is at the same instant

struct Options {
	std::vector<uint64_t> entries{1000, 10000, 100000, 1000000};
	uint64_t probes = 2000000;
	uint32_t sets = SLUICE_STANDING_SETS_DEFAULT;
	uint64_t seed = 20261201;
};

[[noreturn]] void usage(const std::string &why)
{
	std::cerr << "sluice-standing-matches: " << why << "\n"
		  << "usage: sluice-standing-matches [--entries N[,N...]] [--probes P] [--sets S] [--seed X]\n";
	std::exit(2);
}

uint64_t number(const char *s, const char *what)
{
	char *end = nullptr;
	errno = 0;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (errno || end == s || *end)
		usage(std::string("bad ") + what + " '" + s + "'");
	return v;
}

Options parse(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (i + 1 >= argc)
			usage(a + " needs a value");
		const char *v = argv[++i];
		if (a == "--entries") {
			o.entries.clear();
			std::stringstream ss(v);
			for (std::string part; std::getline(ss, part, ',');)
				o.entries.push_back(number(part.c_str(), "--entries"));
		} else if (a == "--probes") {
			o.probes = number(v, "--probes");
		} else if (a == "--sets") {
			uint64_t s = number(v, "--sets");
			if (s < SLUICE_STANDING_SETS_MIN || s > SLUICE_STANDING_SETS_MAX || (s & (s - 1)))
				usage("--sets: a power of two in [" + std::to_string(SLUICE_STANDING_SETS_MIN) + ", " +
				      std::to_string(SLUICE_STANDING_SETS_MAX) + "]");
			o.sets = uint32_t(s);
		} else if (a == "--seed") {
			o.seed = number(v, "--seed");
		} else {
			usage("unknown option " + a);
		}
	}
	return o;
}

nlohmann::json measure(uint64_t entries, const Options &o, std::mt19937_64 &rng)
{
	const __u64 key[2] = {rng(), rng()};
	const __u32 mask = o.sets - 1;
	std::vector<sluice_standing_set> table(o.sets);
	auto hash_of = [&](uint64_t i, bool probe) {
		bool v6 = i & 1;
		sluice_source s{};
		s.w[0] = (rng() & ~1ull) | (probe ? 1 : 0);
		s.w[1] = v6 ? rng() : 0;
		if (!v6)
			s.w[0] &= 0xffffffffull;
		return sluice_source_hash(key, &s, v6);
	};
	auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < entries; i++) {
		__u64 h = hash_of(i, false);
		sluice_standing_grant(&table[sluice_standing_set_of(h, mask)], sluice_standing_fingerprint(h), kNow, kLapse,
				      SLUICE_BY_ACCEPTED);
	}
	uint64_t held = 0;
	for (const auto &set : table)
		for (__u64 e : set.way)
			held += sluice_standing_live(e, kNow, kLapse);
	uint64_t matches = 0;
	for (uint64_t i = 0; i < o.probes; i++) {
		__u64 h = hash_of(i, true);
		matches += sluice_standing_find(&table[sluice_standing_set_of(h, mask)], sluice_standing_fingerprint(h), kNow,
						kLapse) >= 0;
	}
	double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	const double two32 = 4294967296.0;
	return {{"entries", entries},
		{"sets", o.sets},
		{"ways", SLUICE_STANDING_WAYS},
		{"held", held},
		{"probes", o.probes},
		{"matches", matches},
		{"rate", o.probes ? double(matches) / double(o.probes) : 0.0},
		{"expected", double(held) / (double(o.sets) * two32)},
		{"bound", SLUICE_STANDING_WAYS / two32},
		{"seconds", seconds}};
}

} // namespace

int main(int argc, char **argv)
{
	Options o = parse(argc, argv);
	std::mt19937_64 rng(o.seed);
	for (uint64_t n : o.entries)
		std::cout << measure(n, o, rng).dump() << std::endl;
	return 0;
}
