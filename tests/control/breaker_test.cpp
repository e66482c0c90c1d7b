// The breaker's state machine: every ordered pair of states, the exact refusal
// text, and the names.
#include "logic/breaker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sluice {
namespace {

constexpr BreakerState kAll[] = {BreakerState::serving, BreakerState::shedding, BreakerState::recovering};

struct Pair {
	BreakerState from, to;
	bool allowed;
	const char *refusal; // exact message when refused
};

// All 9 ordered pairs, spelled out rather than derived from valid_targets, so
// that a changed table fails here.
const std::vector<Pair> &pairs()
{
	static const std::vector<Pair> p = {
		{BreakerState::serving, BreakerState::serving, false,
		 "invalid transition: serving -> serving; current state 'serving'; valid targets: [shedding]"},
		{BreakerState::serving, BreakerState::shedding, true, nullptr},
		{BreakerState::serving, BreakerState::recovering, false,
		 "invalid transition: serving -> recovering; current state 'serving'; valid targets: [shedding]"},
		{BreakerState::shedding, BreakerState::serving, false,
		 "invalid transition: shedding -> serving; current state 'shedding'; valid targets: [recovering]"},
		{BreakerState::shedding, BreakerState::shedding, false,
		 "invalid transition: shedding -> shedding; current state 'shedding'; valid targets: [recovering]"},
		{BreakerState::shedding, BreakerState::recovering, true, nullptr},
		{BreakerState::recovering, BreakerState::serving, true, nullptr},
		{BreakerState::recovering, BreakerState::shedding, true, nullptr},
		{BreakerState::recovering, BreakerState::recovering, false,
		 "invalid transition: recovering -> recovering; current state 'recovering'; valid targets: [serving, "
		 "shedding]"},
	};
	return p;
}

TEST(Breaker, TableCoversAllNinePairsWithFourEdges)
{
	EXPECT_EQ(pairs().size(), 9u);
	int allowed = 0;
	for (const auto &p : pairs())
		allowed += p.allowed;
	EXPECT_EQ(allowed, 4);
}

TEST(Breaker, AllowedEdgesSucceedAndChangeState)
{
	for (const auto &p : pairs()) {
		if (!p.allowed)
			continue;
		SCOPED_TRACE(std::string(to_string(p.from)) + " -> " + std::string(to_string(p.to)));
		Breaker b(p.from);
		ASSERT_EQ(b.state(), p.from);
		auto r = b.transition(p.to);
		ASSERT_TRUE(r.has_value()) << r.error().message;
		EXPECT_EQ(b.state(), p.to);
		EXPECT_NE(b.state(), p.from);
	}
}

TEST(Breaker, RefusedPairsLeaveStateAndSayWhy)
{
	int refused_count = 0;
	for (const auto &p : pairs()) {
		if (p.allowed)
			continue;
		SCOPED_TRACE(std::string(to_string(p.from)) + " -> " + std::string(to_string(p.to)));
		Breaker b(p.from);
		auto r = b.transition(p.to);
		ASSERT_FALSE(r.has_value());
		EXPECT_EQ(r.error().kind, ErrorKind::refused);
		EXPECT_EQ(r.error().code, 0);
		EXPECT_EQ(r.error().message, p.refusal);
		EXPECT_EQ(r.error().describe(), p.refusal);
		EXPECT_EQ(r.error().exit_code(), 1);
		EXPECT_EQ(b.state(), p.from);
		refused_count++;
	}
	EXPECT_EQ(refused_count, 5);
}

TEST(Breaker, ValidTargetsMatchTheTable)
{
	for (auto from : kAll) {
		auto targets = Breaker::valid_targets(from);
		for (auto to : kAll) {
			bool listed = std::find(targets.begin(), targets.end(), to) != targets.end();
			bool allowed = false;
			for (const auto &p : pairs())
				if (p.from == from && p.to == to)
					allowed = p.allowed;
			EXPECT_EQ(listed, allowed) << to_string(from) << " -> " << to_string(to);
		}
	}
}

TEST(Breaker, NoShortcutFromSheddingToServing)
{
	// The full cycle: serving -> shedding -> recovering -> serving, and the
	// flood-back edge recovering -> shedding.
	Breaker b;
	EXPECT_EQ(b.state(), BreakerState::serving);
	ASSERT_TRUE(b.transition(BreakerState::shedding));
	ASSERT_FALSE(b.transition(BreakerState::serving));
	ASSERT_TRUE(b.transition(BreakerState::recovering));
	ASSERT_TRUE(b.transition(BreakerState::shedding));
	ASSERT_TRUE(b.transition(BreakerState::recovering));
	ASSERT_TRUE(b.transition(BreakerState::serving));
	EXPECT_EQ(b.state(), BreakerState::serving);
}

TEST(Breaker, NamesRoundTrip)
{
	EXPECT_EQ(to_string(BreakerState::serving), "serving");
	EXPECT_EQ(to_string(BreakerState::shedding), "shedding");
	EXPECT_EQ(to_string(BreakerState::recovering), "recovering");
	for (auto s : kAll) {
		auto back = breaker_state_from(to_string(s));
		ASSERT_TRUE(back.has_value()) << to_string(s);
		EXPECT_EQ(*back, s);
	}
	for (const char *bad : {"", "Serving", "SHEDDING", "recover", "serving ", "open", "closed"})
		EXPECT_FALSE(breaker_state_from(std::string_view(bad)).has_value()) << "'" << bad << "'";
}

TEST(Breaker, RawValuesRoundTrip)
{
	EXPECT_EQ(breaker_state_from(uint32_t{SLUICE_SERVING}), BreakerState::serving);
	EXPECT_EQ(breaker_state_from(uint32_t{SLUICE_SHEDDING}), BreakerState::shedding);
	EXPECT_EQ(breaker_state_from(uint32_t{SLUICE_RECOVERING}), BreakerState::recovering);
	for (auto s : kAll)
		EXPECT_EQ(breaker_state_from(static_cast<uint32_t>(s)), s);
	EXPECT_FALSE(breaker_state_from(uint32_t{SLUICE_BREAKER_STATES}).has_value());
	EXPECT_FALSE(breaker_state_from(uint32_t{0xffffffffu}).has_value());
}

} // namespace
} // namespace sluice
