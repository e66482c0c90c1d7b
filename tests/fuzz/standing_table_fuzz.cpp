// standing_table_fuzz.cpp - libFuzzer harness for the daemon's writes to the
// standing maps of a real, loaded program (ctl/lib/bpf/standing_table.h):
// grants (sock_diag's kind), the operator's and the governor's revocations,
// the prefix quota's evictions and its prefix_count recount, in any order, on
// any address of a small table. Built with ASan and UBSan; needs root (BPF).
//
// Input: a sequence of 4-byte operations [op, a, b, c]:
//   op % 6  0 grant address(a, b) for reason 1 + c % 6
//           1 revoke address(a, b) (the operator's)
//           2 revoke_way(way a, the fingerprint that way holds, or c's)
//           3 evict_way(way a, the fingerprint that way holds, or c's)
//           4 set_prefix_counts: every count c-patterned, written whole (as
//             the daemon's recount), and a span one short, refused
//           5 lookup address(a, b) and has_standing agree
//   address(a, b): a % 4 picks 198.18.(a/4 % 4).b, 2001:2:0:(a/4 % 4)::b,
//   127.0.0.b (never granted) or 0.0.0.b (never granted).
// Checked after every operation, from a scan of the whole table:
//   - every live way's recorded source hashes (the daemon's source_hash,
//     settings' key and prefixes) to that way's set and fingerprint, so
//     revoke and the listings name the entry they act on;
//   - no fingerprint is live twice in one set; no way is bound to a UDP port
//     (the daemon's grants are handshakes', every frame);
//   - every reason is a known one;
// and per operation: a granted address has standing unless its penalty runs
// or its set is full of stronger proofs, and its record's reason is no weaker
// than the grant's; a revoked address has none and a penalty that runs; a
// grant during that penalty grants nothing; an evicted or revoked way holds
// its fingerprint no more, and evict_way says true only when it held it;
// prefix_count reads back exactly the counts set, and a span of another size
// changes none of them; a loopback or unspecified
// address never gets standing.
//
//   --write-corpus=DIR   write the seed corpus and exit
#include "fuzz_support.h"
#include "base/address.h"
#include "base/clock.h"
#include "bpf/dataplane.h"
#include "bpf/standing.h"
#include "bpf/standing_table.h"
#include "logic/source.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace sluice;

constexpr uint32_t kSets = 16;
constexpr uint32_t kWays = kSets * SLUICE_STANDING_WAYS;
constexpr double kPenaltyS = 3600; // outlasts any run: a revoked address stays out

std::optional<Dataplane> g_dp;

[[noreturn]] void die(const std::string &why)
{
	std::fprintf(stderr, "standing_table_fuzz: %s\n", why.c_str());
	std::abort();
}

Address address_of(uint8_t a, uint8_t b)
{
	Address out;
	const uint8_t net = (a / 4) % 4;
	switch (a % 4) {
	case 0:
		out.bytes = {198, 18, net, b};
		break;
	case 1: // 2001:2:0:net::b
		out.family = Family::v6;
		out.bytes = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, net, 0, 0, 0, 0, 0, 0, 0, b};
		break;
	case 2:
		out.bytes = {127, 0, 0, b};
		break;
	default:
		out.bytes = {0, 0, 0, b};
		break;
	}
	return out;
}

bool never_granted(uint8_t a)
{
	return a % 4 >= 2;
}

// Every live way of the table.
std::vector<StandingWay> live_ways(const StandingTable &t)
{
	std::vector<StandingWay> out;
	if (auto ok = t.for_each_live([&](const StandingWay &w) { out.push_back(w); }); !ok)
		die("scanning the table: " + ok.error().describe());
	return out;
}

void check_table(const StandingTable &t, const sluice_settings &s)
{
	std::vector<StandingWay> ways = live_ways(t);
	for (size_t i = 0; i < ways.size(); i++) {
		const StandingWay &w = ways[i];
		const uint64_t hash = source_hash(s, w.source);
		const uint32_t set = w.index / SLUICE_STANDING_WAYS;
		if (sluice_standing_set_of(hash, s.standing_set_mask) != set ||
		    sluice_standing_fingerprint(hash) != w.fp)
			die("way " + std::to_string(w.index) + " records " + w.source.str() + ", whose hash is not its own");
		if (w.port != 0)
			die("way " + std::to_string(w.index) + " is bound to UDP port " + std::to_string(w.port) +
			    " by a daemon grant");
		if (w.reason == 0 || w.reason >= SLUICE_STANDING_REASONS)
			die("way " + std::to_string(w.index) + " has reason " + std::to_string(w.reason));
		for (size_t j = i + 1; j < ways.size(); j++)
			if (ways[j].index / SLUICE_STANDING_WAYS == set && ways[j].fp == w.fp)
				die("fingerprint " + std::to_string(w.fp) + " live twice in set " + std::to_string(set));
	}
}

std::optional<StandingWay> way_at(const StandingTable &t, uint32_t index)
{
	for (const StandingWay &w : live_ways(t))
		if (w.index == index)
			return w;
	return std::nullopt;
}

bool live_fp_at(const StandingTable &t, uint32_t index, uint32_t fp)
{
	auto w = way_at(t, index);
	return w && w->fp == fp;
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	struct Seed {
		const char *name;
		std::vector<uint8_t> ops;
	};
	const std::vector<Seed> seeds = {
		{"grant-lookup", {0, 0, 7, 0, 5, 0, 7, 0, 0, 1, 9, 2, 5, 1, 9, 0}},
		{"grant-revoke-grant", {0, 0, 7, 0, 1, 0, 7, 0, 0, 0, 7, 3, 5, 0, 7, 0}},
		{"stronger-then-weaker", {0, 4, 3, 2, 0, 4, 3, 4, 5, 4, 3, 0}},
		{"fill-a-set", {0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0,
				0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 10, 0, 0, 1, 11, 2, 0, 1, 12, 4}},
		{"evict-and-revoke-ways", {0, 0, 1, 0, 0, 1, 1, 0, 3, 0, 0, 0, 3, 1, 0, 0, 2, 2, 0, 0, 2, 3, 0, 0}},
		{"prefix-words", {4, 0, 0, 0x55, 4, 0, 0, 0xff, 4, 0, 0, 0}},
		{"never-granted", {0, 2, 1, 0, 0, 3, 1, 0, 5, 2, 1, 0}},
	};
	for (const auto &s : seeds) {
		std::ofstream f(std::filesystem::path(dir) / s.name, std::ios::binary);
		f.write(reinterpret_cast<const char *>(s.ops.data()), std::streamsize(s.ops.size()));
		if (!f)
			die(std::string("cannot write seed ") + s.name);
	}
	std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sluice::fuzz::write_corpus_if_asked(*argc, *argv, write_corpus);
	if (geteuid() != 0) {
		const char *ci = std::getenv("CI");
		if (ci && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0))
			die("cannot run in CI: needs root (BPF)");
		std::fprintf(stderr, "standing_table_fuzz: skipped: needs root (BPF)\n");
		std::exit(125);
	}
	LoadOptions o;
	o.standing_sets = kSets;
	sluice_config c{};
	c.cost_ns = 100000; // 10,000 pps
	c.burst = 100;
	c.rate_pps = 10000;
	c.standing_cost_ns = 1000;
	c.standing_burst = 1000;
	c.standing_rate_pps = 1000000;
	c.breaker_state = SLUICE_SERVING;
	c.admission_ppm = SLUICE_PPM_FULL;
	auto dp = Dataplane::load(o, c);
	if (!dp)
		die("loading the program: " + dp.error().describe());
	g_dp.emplace(std::move(*dp));
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const StandingTable t = g_dp->standing();
	const sluice_settings &s = g_dp->settings();
	const auto penalty = [](uint32_t) { return kPenaltyS; };
	for (size_t at = 0; at + 4 <= size; at += 4) {
		const uint8_t op = data[at] % 6, a = data[at + 1], b = data[at + 2], c = data[at + 3];
		const Address addr = address_of(a, b);
		switch (op) {
		case 0: {
			const auto reason = sluice_standing_reason(1 + c % (SLUICE_STANDING_REASONS - 1));
			auto pen = t.penalty(addr);
			if (!pen)
				die("penalty of " + addr.str() + ": " + pen.error().describe());
			if (auto ok = t.grant(std::span<const Address>(&addr, 1), reason); !ok)
				die("grant of " + addr.str() + ": " + ok.error().describe());
			auto r = t.lookup(addr, g_dp->config().read().value_or(sluice_config{}));
			if (!r)
				die("lookup of " + addr.str() + ": " + r.error().describe());
			if (never_granted(a) && r->live)
				die(addr.str() + " got standing");
			if (never_granted(a))
				break;
			if (pen->has_value() && r->live)
				die(addr.str() + " got standing during its penalty");
			if (!pen->has_value() && r->live &&
			    sluice_standing_proof(r->reason) < sluice_standing_proof(reason))
				die(addr.str() + " was granted " + std::to_string(reason) + " but records the weaker " +
				    std::to_string(r->reason));
			if (!pen->has_value() && !r->live) {
				// only a set full of stronger proofs refuses it
				const uint32_t set =
					sluice_standing_set_of(source_hash(s, addr), s.standing_set_mask);
				uint32_t stronger = 0;
				for (const StandingWay &w : live_ways(t))
					stronger += w.index / SLUICE_STANDING_WAYS == set &&
						    w.proof > sluice_standing_proof(reason);
				if (stronger < SLUICE_STANDING_WAYS)
					die(addr.str() + " was refused standing with room in its set");
			}
			break;
		}
		case 1: {
			auto r = t.revoke(addr, penalty);
			if (!r)
				die("revoke of " + addr.str() + ": " + r.error().describe());
			auto has = t.has_standing(addr);
			auto pen = t.penalty(addr);
			if (!has || !pen)
				die("reading back the revoke of " + addr.str());
			if (*has)
				die(addr.str() + " kept its standing through a revoke");
			if (!pen->has_value() || (*pen)->revocations < 1 || (*pen)->until_realtime_ns <= realtime_ns())
				die(addr.str() + " was revoked without a penalty that runs");
			break;
		}
		case 2:
		case 3: {
			const uint32_t index = a % kWays;
			auto held = way_at(t, index);
			const uint32_t fp = held && !(c & 1) ? held->fp : (uint32_t(c) << 24 | uint32_t(b) << 8 | 1);
			const bool had = held && held->fp == fp;
			if (op == 2) {
				auto r = t.revoke_way(index, fp, penalty);
				if (!r)
					die("revoke_way " + std::to_string(index) + ": " + r.error().describe());
				if (r->had_standing != had)
					die("revoke_way " + std::to_string(index) + " said " + std::to_string(r->had_standing) +
					    ", the way " + (had ? "held" : "did not hold") + " the fingerprint");
			} else {
				auto r = t.evict_way(index, fp);
				if (!r)
					die("evict_way " + std::to_string(index) + ": " + r.error().describe());
				if (*r != had)
					die("evict_way " + std::to_string(index) + " said " + std::to_string(*r) + ", the way " +
					    (had ? "held" : "did not hold") + " the fingerprint");
			}
			if (live_fp_at(t, index, fp))
				die("way " + std::to_string(index) + " still holds the fingerprint it gave up");
			break;
		}
		case 4: {
			const size_t n = size_t(t.sets()) * SLUICE_STANDING_WAYS;
			std::vector<uint32_t> now(n), same(n), back(n), counts(n);
			if (auto ok = t.prefix_counts(now); !ok)
				die("reading prefix_count: " + ok.error().describe());
			if (t.prefix_counts(std::span<uint32_t>(same).first(n - 1)))
				die("prefix_counts read into a span one short of the map");
			for (size_t i = 0; i < counts.size(); i++)
				counts[i] = (uint32_t(c) * 0x01010101u) ^ (uint32_t(b) << (i % 24)) ^ uint32_t(i);
			if (t.set_prefix_counts(std::span<const uint32_t>(counts).first(counts.size() - 1)))
				die("set_prefix_counts took a span one short of the map");
			if (auto ok = t.prefix_counts(same); !ok || same != now)
				die("a refused set_prefix_counts changed the map");
			if (auto ok = t.set_prefix_counts(counts); !ok)
				die("set_prefix_counts: " + ok.error().describe());
			if (auto ok = t.prefix_counts(back); !ok)
				die("reading prefix_count back: " + ok.error().describe());
			for (size_t i = 0; i < counts.size(); i++)
				if (back[i] != counts[i])
					die("prefix_count " + std::to_string(i) + " of " + std::to_string(counts.size()) +
					    " reads back " + std::to_string(back[i]) + ", " + std::to_string(counts[i]) +
					    " was set");
			break;
		}
		default: {
			auto r = t.lookup(addr, g_dp->config().read().value_or(sluice_config{}));
			auto has = t.has_standing(addr);
			if (!r || !has)
				die("lookup of " + addr.str());
			if (r->live != *has)
				die("lookup and has_standing disagree on " + addr.str());
			break;
		}
		}
		check_table(t, s);
	}
	return 0;
}
