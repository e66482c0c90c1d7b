// Standing on the real program: while shedding, a source with a live entry in
// the standing table goes through its buckets (counted as standing), any other
// is shed; a lapsed entry, or another fingerprint in the same set, is no
// standing; a live entry is stamped again once it is older than an eighth of
// the lapse time. Entries are written from the host with the same headers
// (source_key.h, standing.h) and key as the program.
#include "fixture.h"
#include "require.h"
#include "standing_support.h"

using namespace sluice::test;
using namespace sluice::frames;

namespace {

Options shedding(std::uint64_t rate, std::uint64_t burst)
{
	// (the standing bucket alike: while shedding it alone admits a
	// source with standing)
	Options o;
	o.config = make_config(rate, burst, rate, burst);
	o.config.breaker_state = SLUICE_SHEDDING;
	return o;
}

} // namespace

TEST(Standing, SheddingDropsASourceWithoutStanding)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	Bytes v4 = udp4({}, {.src = ip4("10.40.0.1")});
	Bytes v6 = udp6({}, {.src = ip6("2001:db8:40::1")});
	EXPECT_VERDICT(s, v4, XDP_DROP);
	EXPECT_VERDICT(s, v6, XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 0u) << c.str();
	for (std::uint64_t v : s.all_slots())
		ASSERT_EQ(v, 0u); // a shed frame never touches a bucket
}

TEST(Standing, SheddingPassesASourceWithStandingThroughItsBucket)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1, 5)); // burst 5: five frames, then the bucket is empty
	Standing st{s};
	Ip4 a = ip4("10.40.0.2");
	Ip6 b = ip6("2001:db8:40::2");
	st.grant(hash_of(s, a), stamp_now());
	st.grant(hash_of(s, b), stamp_now(), 1);

	Bytes fa = udp4({}, {.src = a});
	Bytes fb = udp6({}, {.src = b});
	Bytes other = udp4({}, {.src = ip4("10.40.0.3")});
	RunResult r = s.run(fa, 5);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_VERDICT(s, fb, XDP_PASS);
	EXPECT_VERDICT(s, other, XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 6u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_STANDING), 5 * fa.size() + fb.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 0u) << c.str();

	// Its bucket is empty now: standing is no exemption from the rate.
	EXPECT_VERDICT(s, fa, XDP_DROP);
	c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 1u) << c.str();
	EXPECT_EQ(c.total_packets(), 8u) << c.str();

	// Serving, the same source is counted as passed, not standing.
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_SERVING;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, fb, XDP_PASS);
	c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 6u) << c.str();
}

// A UDP grant's entry (the peer a local client chose, its port recorded)
// holds for UDP from that port alone, v4 and v6, behind VLAN tags too: the
// same address's other ports and its TCP are sources without standing.
TEST(Standing, APortBoundEntryHoldsForUdpFromItsPortAlone)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	Standing st{s};
	Ip4 a = ip4("10.40.0.8");
	Ip6 b = ip6("2001:db8:40::8");
	for (auto h : {hash_of(s, a), hash_of(s, b)}) {
		st.grant(h, stamp_now(), 3);
		sluice_standing_set set = st.read(st.set_of(h));
		set.port[3] = 53;
		st.write(st.set_of(h), set);
	}
	EXPECT_VERDICT(s, udp4({}, {.src = a}, {.sport = 53}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({.tags = {vlan(7)}}, {.src = a}, {.sport = 53}), XDP_PASS);
	EXPECT_VERDICT(s, udp6({}, {.src = b}, {.sport = 53}), XDP_PASS);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 3u) << c.str();
	EXPECT_VERDICT(s, udp4({}, {.src = a}, {.sport = 54}), XDP_DROP);
	EXPECT_VERDICT(s, udp6({}, {.src = b}, {.sport = 5353}), XDP_DROP);
	Ipv4 tcp_ip;
	tcp_ip.src = a;
	EXPECT_VERDICT(s, tcp4({}, tcp_ip, Tcp{.sport = 53, .dport = 80, .flags = kTcpAck}), XDP_DROP);
	c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 3u) << c.str();
}

TEST(Standing, TheAllowlistStillPassesWhileShedding)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1, 1));
	Ip4 a = ip4("10.40.0.4");
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, a, 32), 0);
	sluice_config cfg = s.config();
	cfg.policy_flags = SLUICE_LIST_ALLOW_V4;
	ASSERT_EQ(s.set_config(cfg), 0);
	Standing{s}.grant(hash_of(s, a), stamp_now());
	Bytes f = udp4({}, {.src = a});
	RunResult r = s.run(f, 10);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 10u) << c.str(); // the allowlist decides first, unlimited
	EXPECT_EQ(c.packets(SLUICE_STANDING), 0u) << c.str();
}

TEST(Standing, ALapsedEntrySheds)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	Standing st{s};
	Ip4 a = ip4("10.40.0.5"), b = ip4("10.40.0.6");
	st.grant(hash_of(s, a), stamp_now() - kLapse - 2);     // lapsed
	st.grant(hash_of(s, b), stamp_now() - kLapse + 2, 1);  // still live
	st.grant(hash_of(s, ip4("10.40.0.7")), stamp_now() + 5, 2); // stamped ahead: a doubtful clock
	EXPECT_VERDICT(s, udp4({}, {.src = a}), XDP_DROP);
	EXPECT_VERDICT(s, udp4({}, {.src = b}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = ip4("10.40.0.7")}), XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 1u) << c.str();
}

TEST(Standing, AnotherFingerprintInTheSameSetIsNoStanding)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	Standing st{s};
	Ip4 a = ip4("10.40.0.8");
	Ip6 b = ip6("2001:db8:40::8");
	std::uint64_t ha = hash_of(s, a), hb = hash_of(s, b);
	std::uint32_t fa = sluice_standing_fingerprint(ha), fb = sluice_standing_fingerprint(hb);
	// Every way of each source's set full of live entries that differ from
	// its own fingerprint in one bit each (and never by 0: 0 is empty).
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		std::uint32_t xa = fa ^ (1u << (w * 4)), xb = fb ^ (1u << (w * 4 + 1));
		st.put(ha, xa ? xa : 2, stamp_now(), w);
		if (st.set_of(hb) != st.set_of(ha))
			st.put(hb, xb ? xb : 2, stamp_now(), w);
	}
	EXPECT_VERDICT(s, udp4({}, {.src = a}), XDP_DROP);
	if (st.set_of(hb) != st.set_of(ha))
		EXPECT_VERDICT(s, udp6({}, {.src = b}), XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 0u) << c.str();
	EXPECT_GE(c.packets(SLUICE_DROP_SHED), 1u) << c.str();

	// With its own fingerprint in the last way it passes.
	st.grant(ha, stamp_now(), SLUICE_STANDING_WAYS - 1);
	EXPECT_VERDICT(s, udp4({}, {.src = a}), XDP_PASS);
}

TEST(Standing, ALiveEntryIsStampedAgainWhenItIsOld)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	Standing st{s};
	Ip4 old_one = ip4("10.40.0.9"), fresh = ip4("10.40.0.10");
	std::uint64_t ho = hash_of(s, old_one), hf = hash_of(s, fresh);
	std::uint32_t t0 = stamp_now();
	st.grant(ho, t0 - kLapse / 2); // older than lapse/8: refreshed by its next frame
	int wf = st.set_of(hf) == st.set_of(ho) ? 1 : 0;
	st.grant(hf, t0 - 2, wf); // younger than lapse/8: left as it is

	EXPECT_VERDICT(s, udp4({}, {.src = old_one}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = fresh}), XDP_PASS);
	std::uint32_t t1 = stamp_now();

	std::uint64_t eo = st.read(st.set_of(ho)).way[0];
	EXPECT_EQ(sluice_standing_entry_fp(eo), sluice_standing_fingerprint(ho));
	EXPECT_GE(std::uint32_t(eo), t0) << "refreshed to the program's now";
	EXPECT_LE(std::uint32_t(eo), t1);
	std::uint64_t ef = st.read(st.set_of(hf)).way[wf];
	EXPECT_EQ(ef, sluice_standing_entry(sluice_standing_fingerprint(hf), t0 - 2)) << "a young entry is not written";
}

TEST(Standing, TheFeedersLoadBesideTheXdpProgram)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, shedding(1000, 1000));
	// The verifier accepted them; they share the XDP program's settings and
	// standing map (one object), so a grant lands where XDP looks.
	for (bpf_program *p : {s.skel()->progs.sluice_sockops, s.skel()->progs.sluice_connect4,
			       s.skel()->progs.sluice_connect6, s.skel()->progs.sluice_sendmsg4,
			       s.skel()->progs.sluice_sendmsg6})
		EXPECT_GE(bpf_program__fd(p), 0) << bpf_program__name(p);
}
