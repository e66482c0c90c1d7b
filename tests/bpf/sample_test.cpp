// Drop sampling (sluice_abi.h, struct sluice_drop_sample): the program sends 1
// in settings.sample_every of its drop verdicts to the drop_samples ring
// buffer, with the source and the reason, and nothing for a frame it passes;
// each sample carries the frame's signature (destination, protocol,
// destination port, TCP flags, length) for the upstream signature rule.
#include "fixture.h"
#include "require.h"

#include <bpf/libbpf.h>

#include <cstring>
#include <vector>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

std::vector<sluice_drop_sample> drain(const Sluice &s)
{
	std::vector<sluice_drop_sample> out;
	auto cb = [](void *ctx, void *data, size_t size) -> int {
		sluice_drop_sample d{};
		std::memcpy(&d, data, std::min(size, sizeof(d)));
		static_cast<std::vector<sluice_drop_sample> *>(ctx)->push_back(d);
		return 0;
	};
	ring_buffer *rb = ring_buffer__new(s.map_fd(s.skel()->maps.drop_samples), cb, &out, nullptr);
	if (!rb)
		return out;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return out;
}

Options limits(std::uint64_t rate, std::uint64_t burst, std::uint32_t state = SLUICE_SERVING)
{
	Options o;
	o.config = make_config(rate, burst);
	o.config.breaker_state = state;
	return o;
}

} // namespace

TEST(DropSampling, OneInSampleEveryDropsWithTheSourceAndNoPasses)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 10));
	ASSERT_EQ(s.skel()->rodata->settings.sample_every, SLUICE_SAMPLE_EVERY_DEFAULT);
	Bytes v4 = udp4({}, {.src = ip4("10.30.0.7")});

	// the burst passes: no sample, no draw
	RunResult r = s.run(v4, 10);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_TRUE(drain(s).empty());

	// 200k rate drops: about 200k / 1024 samples (the ring holds 8192)
	constexpr int kDrops = 200'000;
	r = s.run(v4, kDrops);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	auto samples = drain(s);
	double expected = double(kDrops) / SLUICE_SAMPLE_EVERY_DEFAULT; // 195; sd ~14
	EXPECT_GT(samples.size(), expected * 0.6) << samples.size();
	EXPECT_LT(samples.size(), expected * 1.4) << samples.size();
	for (const auto &d : samples) {
		ASSERT_EQ(d.family, 4);
		ASSERT_EQ(d.outcome, SLUICE_DROP_RATE);
		std::uint8_t addr[4];
		std::memcpy(addr, d.w, 4);
		ASSERT_EQ(addr[0], 10);
		ASSERT_EQ(addr[1], 30);
		ASSERT_EQ(addr[2], 0);
		ASSERT_EQ(addr[3], 7);
		ASSERT_EQ(d.w[0] >> 32, 0u);
		ASSERT_EQ(d.w[1], 0u);
	}
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_RATE), std::uint64_t(kDrops));
}

TEST(DropSampling, ShedAndDenyDropsAreSampledWithTheirReason)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1000, 1000, SLUICE_SHEDDING));
	Bytes v6 = udp6({}, {.src = ip6("2001:db8:30::9")});
	RunResult r = s.run(v6, 100'000);
	ASSERT_EQ(r.err, 0);
	auto samples = drain(s);
	EXPECT_GT(samples.size(), 40u);
	EXPECT_LT(samples.size(), 160u);
	for (const auto &d : samples) {
		ASSERT_EQ(d.family, 6);
		ASSERT_EQ(d.outcome, SLUICE_DROP_SHED);
		std::uint8_t addr[16];
		std::memcpy(addr, d.w, 16);
		ASSERT_EQ(addr[0], 0x20);
		ASSERT_EQ(addr[1], 0x01);
		ASSERT_EQ(addr[5], 0x30);
		ASSERT_EQ(addr[15], 0x09);
	}

	// Serving, the source's /48 in the denylist: deny drops, sampled as such
	sluice_lpm_v6 key{SLUICE_LPM_SET_BITS + 48, 0, {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x30}, {}};
	std::uint8_t one = 1;
	ASSERT_EQ(bpf_map_update_elem(s.map_fd(s.skel()->maps.deny_v6), &key, &one, BPF_ANY), 0);
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_SERVING;
	cfg.policy_flags = SLUICE_LIST_DENY_V6;
	ASSERT_EQ(s.set_config(cfg), 0);
	r = s.run(v6, 100'000);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	samples = drain(s);
	EXPECT_GT(samples.size(), 40u);
	EXPECT_LT(samples.size(), 160u);
	for (const auto &d : samples) {
		ASSERT_EQ(d.family, 6);
		ASSERT_EQ(d.outcome, SLUICE_DROP_DENY);
	}
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_DENY), 100'000u);
}

TEST(DropSampling, AFullRingLosesSamplesNotFrames)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1000, 1000, SLUICE_SHEDDING));
	Bytes v4 = udp4({}, {.src = ip4("10.30.0.8")});
	// 16M drops ~ 15.6k samples: more than the ring's 9362 records
	RunResult r = s.run(v4, 16'000'000);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_SHED), 16'000'000u);
	auto samples = drain(s);
	// 56-byte records (header and sample); the kernel keeps one byte free
	constexpr std::size_t kRecord = 8 + (sizeof(sluice_drop_sample) + 7) / 8 * 8;
	static_assert(kRecord == 56);
	EXPECT_GE(samples.size(), SLUICE_SAMPLE_RING_BYTES / kRecord - 1);
	EXPECT_LE(samples.size(), SLUICE_SAMPLE_RING_BYTES / kRecord);
}

namespace {

// Every sample of `frame` dropped while shedding (sample_every 1: each drop
// is sampled).
std::vector<sluice_drop_sample> samples_of(const Bytes &frame)
{
	Options o = limits(1000, 1000, SLUICE_SHEDDING);
	o.sample_every = 1;
	Sluice s{o};
	if (!s.ok())
		return {};
	RunResult r = s.run(frame, 4);
	if (r.err != 0)
		return {};
	return drain(s);
}

} // namespace

// The signature fields, frame by frame: v4 and v6, UDP and TCP, behind a
// VLAN tag; the length is the frame's as XDP saw it.
TEST(DropSampling, EachSampleCarriesTheFramesSignature)
{
	SLUICE_REQUIRE_ROOT();
	struct Case {
		const char *name;
		Bytes frame;
		std::uint8_t family, proto, flags;
		std::uint16_t dport;
		Bytes dst;
		std::size_t l2 = 14;
	};
	Ip4 d4 = ip4("198.18.1.2");
	Ip6 d6 = ip6("2001:2::2");
	std::vector<Case> cases{
		{"udp4", udp4({}, {.src = ip4("10.30.0.7"), .dst = d4}, {.dport = 53, .payload_len = 100}), 4, 17, 0,
		 53, Bytes(d4.begin(), d4.end())},
		{"tcp4 syn", tcp4({}, {.src = ip4("10.30.0.7"), .dst = d4}, {.dport = 443, .flags = kTcpSyn}), 4, 6,
		 kTcpSyn, 443, Bytes(d4.begin(), d4.end())},
		{"udp4 vlan", udp4({.tags = {vlan(10)}}, {.src = ip4("10.30.0.7"), .dst = d4}, {.dport = 123}), 4, 17, 0,
		 123, Bytes(d4.begin(), d4.end()), 18},
		{"udp6", udp6({}, {.src = ip6("2001:db8:30::9"), .dst = d6}, {.dport = 5353, .payload_len = 7}), 6, 17, 0,
		 5353, Bytes(d6.begin(), d6.end())},
		{"tcp6 ack", tcp6({}, {.src = ip6("2001:db8:30::9"), .dst = d6},
				  {.dport = 80, .flags = std::uint8_t(kTcpAck | kTcpRst)}),
		 6, 6, std::uint8_t(kTcpAck | kTcpRst), 80, Bytes(d6.begin(), d6.end())},
		{"icmp4", [&] {
			 Ipv4 ip{.src = ip4("10.30.0.7"), .dst = d4};
			 ip.proto = 1;
			 return ip4_frame({}, ip, Bytes(8, 0));
		 }(),
		 4, 1, 0, 0, Bytes(d4.begin(), d4.end())},
	};
	for (const auto &c : cases) {
		auto samples = samples_of(c.frame);
		ASSERT_FALSE(samples.empty()) << c.name;
		for (const auto &d : samples) {
			EXPECT_EQ(d.family, c.family) << c.name;
			EXPECT_EQ(d.outcome, SLUICE_DROP_SHED) << c.name;
			EXPECT_EQ(d.proto, c.proto) << c.name;
			EXPECT_EQ(d.dport, c.dport) << c.name;
			EXPECT_EQ(d.tcp_flags, c.flags) << c.name;
			EXPECT_EQ(d.len, c.frame.size()) << c.name;
			// the IP packet: the frame less its Ethernet header and tags
			EXPECT_EQ(d.ip_len, c.frame.size() - c.l2) << c.name;
			Bytes dst(16, 0);
			std::memcpy(dst.data(), d.dst, 16);
			EXPECT_TRUE(std::equal(c.dst.begin(), c.dst.end(), dst.begin())) << c.name;
			if (c.family == 4)
				EXPECT_EQ(d.dst[1], 0u) << c.name;
		}
	}
}
