// Seed parity: every assertion of the seed's LimiterTests (16), run against
// the real XDP program (admissions are frames through BPF_PROG_TEST_RUN) and
// the real control-plane code (libsluice's Dataplane, SlotTable writes with
// their invariant, the Breaker and the config map), in the seed's order.
//
// The seed's "meta" service is one source address here; its token count is
// the fuller of its two slots (tokens_left), and writes go to both slots.
#include "require.h"

#include "logic/breaker.h"
#include "bpf/dataplane.h"
#include "frames.h"
#include "bpf/maps.h"
#include "logic/source.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <array>

namespace {

using namespace sluice;

struct Limiter {
	Dataplane dp;
	Breaker breaker;
	std::array<uint32_t, 2> slots{};
	frames::Bytes frame;

	// The seed's admit(): one real frame from the source.
	bool admit()
	{
		LIBBPF_OPTS(bpf_test_run_opts, o);
		o.data_in = frame.data();
		o.data_size_in = static_cast<uint32_t>(frame.size());
		o.repeat = 1;
		EXPECT_EQ(bpf_prog_test_run_opts(dp.prog_fd(), &o), 0);
		return o.retval == XDP_PASS;
	}
	sluice_config config() { return *dp.config().read(); }
	// The seed's tokens_left(): the fuller slot.
	uint64_t tokens_left()
	{
		auto c = config();
		return std::max(*dp.slots().tokens(slots[0], c), *dp.slots().tokens(slots[1], c));
	}
	std::array<uint64_t, 2> raw() { return {*dp.slots().empty_at(slots[0]), *dp.slots().empty_at(slots[1])}; }
	Status set(int64_t n) { return dp.slots().set_tokens(slots, n, config()); }
	Status refill(int64_t n) { return dp.slots().refill(slots, n, config()); }
	// As sluiced moves the breaker: the state machine first, then the config.
	Status transition(BreakerState to)
	{
		if (auto ok = breaker.transition(to); !ok)
			return ok;
		auto c = config();
		c.breaker_state = static_cast<uint32_t>(to);
		return dp.config().write(c);
	}
};

TEST(SeedLimiterParity, LimiterTestsLineForLine)
{
	SLUICE_REQUIRE_ROOT();
	sluice_config cfg{};
	cfg.cost_ns = *cost_for_rate(1); // one token a second: nothing refills during the test
	cfg.rate_pps = 1;
	cfg.burst = 10; // the seed's invariant: tokens >= 0 && tokens <= 10
	cfg.standing_cost_ns = cfg.cost_ns; // a standing bucket the config needs; no source here has standing
	cfg.standing_burst = 10;
	cfg.breaker_state = SLUICE_SERVING;
	cfg.admission_ppm = SLUICE_PPM_FULL;
	LoadOptions lo;
	lo.slots = 1024;
	lo.hash_key = std::array<uint64_t, 2>{1, 2};
	auto dp = Dataplane::load(lo, cfg);
	ASSERT_TRUE(dp) << dp.error().describe();
	auto meta_slots = source_slots(dp->settings(), *parse_address("198.18.0.10")).slots;
	Limiter l{std::move(*dp), Breaker{}, meta_slots, frames::udp4({}, {.src = frames::ip4("198.18.0.10")})};
	ASSERT_NE(l.slots[0], l.slots[1]);
	// The seed's memory starts with no entry: tokens.get(svc) ?? 0.
	ASSERT_TRUE(l.set(0));

	// a full bucket admits, then runs dry, and the dry bucket cannot be overdrawn
	EXPECT_TRUE(l.refill(3).has_value());       // assert refill("meta", 3).ok == true
	EXPECT_TRUE(l.admit());                     // assert admit("meta").ok == true
	EXPECT_TRUE(l.admit());                     // assert admit("meta").ok == true
	EXPECT_TRUE(l.admit());                     // assert admit("meta").ok == true
	EXPECT_FALSE(l.admit());                    // assert admit("meta").ok == false
	EXPECT_EQ(l.tokens_left(), 0u);             // assert tokens_left("meta") == 0
	auto before = l.raw();
	auto minus = l.set(-1);                     // assert_fails tokens.set("meta", -1)
	ASSERT_FALSE(minus);
	EXPECT_EQ(minus.error().kind, ErrorKind::refused);
	EXPECT_NE(minus.error().message.find("invariant 0 <= tokens <= burst violated: rejected write of -1"),
		  std::string::npos)
		<< minus.error().message;
	EXPECT_NE(minus.error().message.find("the slots are unchanged"), std::string::npos);
	EXPECT_EQ(l.raw(), before);

	// the infinite-refill bug: minting past the burst ceiling
	EXPECT_TRUE(l.refill(10).has_value());      // assert refill("meta", 10).ok == true
	EXPECT_EQ(l.tokens_left(), 10u);
	before = l.raw();
	auto over = l.refill(5);                    // assert refill("meta", 5).ok == false
	ASSERT_FALSE(over);
	EXPECT_NE(over.error().message.find("rejected write of 15"), std::string::npos) << over.error().message;
	EXPECT_EQ(l.raw(), before);
	auto big = l.set(999);                      // assert_fails tokens.set("meta", 999)
	ASSERT_FALSE(big);
	EXPECT_NE(big.error().message.find("rejected write of 999"), std::string::npos) << big.error().message;
	EXPECT_EQ(l.raw(), before);

	// THE DYNAMODB MOVE: storm hits, breaker trips, no edge snaps traffic back
	EXPECT_TRUE(l.transition(BreakerState::shedding).has_value()); // trip_breaker("meta").ok
	EXPECT_FALSE(l.admit());                    // assert admit("meta").ok == false
	auto snap = l.transition(BreakerState::serving); // assert_fails transition("meta", "serving")
	ASSERT_FALSE(snap);
	EXPECT_EQ(snap.error().message,
		  "invalid transition: shedding -> serving; current state 'shedding'; valid targets: [recovering]");
	EXPECT_EQ(l.config().breaker_state, static_cast<uint32_t>(SLUICE_SHEDDING)); // nothing changed
	EXPECT_TRUE(l.transition(BreakerState::recovering).has_value()); // start_recovery("meta").ok
	EXPECT_TRUE(l.transition(BreakerState::serving).has_value());    // breaker_close("meta").ok
	EXPECT_TRUE(l.admit());                     // assert admit("meta").ok == true
}

} // namespace
