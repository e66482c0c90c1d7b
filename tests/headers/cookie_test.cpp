// cookie.h on the host: the client SYN's options as sluice_syn_options reads
// them (real-world option blocks and malformed ones, against a reference
// walk written the way the kernel's tcp_parse_options walks), our timestamp
// with the kernel's cookie bits (sluice_cookie_tsval, cookie_init_timestamp's
// encoding), and every byte of the SYN-ACK sluice_synack builds for IPv4 and
// IPv6 and each option layout. Checksums are checked by this file's own
// RFC 1071 sum over the header, and over the pseudo-header + segment (the
// sum over what was written, checksum included, folds to 0xffff), never by
// cookie.h's own functions.
#include "bpf/sluice_abi.h"
#include "bpf/cookie.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;
// The struct's name is also the function's: the struct by its tag.
using Offer = struct sluice_syn_options;

constexpr __u32 kAll = SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE;

// ---- TCP options, as a client writes them -------------------------------

Bytes mss(std::uint16_t v) { return {2, 4, std::uint8_t(v >> 8), std::uint8_t(v)}; }
Bytes sack_perm() { return {4, 2}; }
Bytes ts(std::uint32_t val, std::uint32_t ecr = 0)
{
	return {8, 10, std::uint8_t(val >> 24), std::uint8_t(val >> 16), std::uint8_t(val >> 8), std::uint8_t(val),
		std::uint8_t(ecr >> 24), std::uint8_t(ecr >> 16), std::uint8_t(ecr >> 8), std::uint8_t(ecr)};
}
Bytes nop() { return {1}; }
Bytes eol() { return {0}; }
Bytes ws(std::uint8_t shift) { return {3, 3, shift}; }

Bytes cat(std::initializer_list<Bytes> parts)
{
	Bytes out;
	for (const Bytes &p : parts)
		out.insert(out.end(), p.begin(), p.end());
	return out;
}

void put16(Bytes &b, std::size_t at, std::uint32_t v)
{
	b[at] = std::uint8_t(v >> 8);
	b[at + 1] = std::uint8_t(v);
}

void put32(Bytes &b, std::size_t at, std::uint32_t v)
{
	put16(b, at, v >> 16);
	put16(b, at + 2, v);
}

std::uint32_t get16(const Bytes &b, std::size_t at) { return std::uint32_t(b[at]) << 8 | b[at + 1]; }
std::uint32_t get32(const Bytes &b, std::size_t at) { return get16(b, at) << 16 | get16(b, at + 2); }

// ---- RFC 1071, this file's own --------------------------------------------

// The 16-bit one's complement sum of b (an odd byte padded with zero), folded.
std::uint16_t ones_sum(const Bytes &b)
{
	std::uint64_t s = 0;
	for (std::size_t i = 0; i < b.size(); i++)
		s += (i % 2 == 0) ? std::uint64_t(b[i]) << 8 : b[i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return std::uint16_t(s);
}

// The checksum to write in a zeroed checksum field.
std::uint16_t checksum_of(const Bytes &b) { return std::uint16_t(~ones_sum(b)); }

// The TCP pseudo-header (RFC 793 for IPv4, RFC 8200 8.1 for IPv6) + segment,
// from the IP header ip (20 or 40 bytes) and the segment.
Bytes pseudo_and_segment(const Bytes &ip, const Bytes &seg)
{
	Bytes p;
	if (ip.size() == 20) {
		p.insert(p.end(), ip.begin() + 12, ip.begin() + 20);
		p.push_back(0);
		p.push_back(6);
		p.push_back(std::uint8_t(seg.size() >> 8));
		p.push_back(std::uint8_t(seg.size()));
	} else {
		p.insert(p.end(), ip.begin() + 8, ip.begin() + 40);
		for (int sh : {24, 16, 8, 0})
			p.push_back(std::uint8_t(seg.size() >> sh));
		p.insert(p.end(), {0, 0, 0, 6});
	}
	p.insert(p.end(), seg.begin(), seg.end());
	return p;
}

// ---- the client's SYN ------------------------------------------------------

struct Syn {
	bool v6 = false;
	std::array<std::uint8_t, 4> src4{198, 51, 100, 7};
	std::array<std::uint8_t, 4> dst4{203, 0, 113, 9};
	std::array<std::uint8_t, 16> src6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07};
	std::array<std::uint8_t, 16> dst6{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0x09};
	std::uint16_t sport = 40000;
	std::uint16_t dport = 443;
	std::uint32_t seq = 0x11223344;
	Bytes options; // padded to a multiple of 4 with EOL by tcp()

	Bytes ip() const
	{
		std::size_t tcp_len = tcp().size();
		if (!v6) {
			// tos, id, TTL and the flags all unlike the reply's
			Bytes b{0x45, 0x10, 0, 0, 0x12, 0x34, 0x00, 0x00, 55, 6, 0, 0};
			put16(b, 2, 20 + tcp_len);
			b.insert(b.end(), src4.begin(), src4.end());
			b.insert(b.end(), dst4.begin(), dst4.end());
			put16(b, 10, checksum_of(b));
			return b;
		}
		// traffic class 0xb8, flow label 0x12345, hop limit 51
		Bytes b{0x6b, 0x81, 0x23, 0x45, 0, 0, 6, 51};
		put16(b, 4, tcp_len);
		b.insert(b.end(), src6.begin(), src6.end());
		b.insert(b.end(), dst6.begin(), dst6.end());
		return b;
	}

	Bytes tcp() const
	{
		Bytes opts = options;
		while (opts.size() % 4)
			opts.push_back(0);
		Bytes b(20 + opts.size(), 0);
		for (std::size_t i = 0; i < opts.size(); i++)
			b[20 + i] = opts[i];
		put16(b, 0, sport);
		put16(b, 2, dport);
		put32(b, 4, seq);
		put32(b, 8, 0xdeadbeef); // an ACK number a SYN does not mean
		b[12] = std::uint8_t((20 + opts.size()) / 4 << 4);
		b[13] = SLUICE_TCP_FLAG_SYN;
		put16(b, 14, 29200);
		put16(b, 16, 0xbeef);
		return b;
	}
};

Offer parse(const Bytes &tcp)
{
	// Exactly tcp.size() bytes on the heap: a read past them is ASan's.
	std::vector<__u8> exact(tcp.begin(), tcp.end());
	Offer o;
	std::memset(&o, 0xa5, sizeof o);
	sluice_syn_options(exact.data(), __u32(exact.size()), &o);
	return o;
}

// The reply sluice_synack builds, trimmed to the length it returned (the
// buffer is checked untouched past it).
struct Reply {
	Bytes ip, tcp;
	__u32 len = 0;
};

Reply build(const Syn &syn, __u32 cookie, __u32 tsval, const Offer &o, const sluice_cookie_params &p)
{
	Bytes ip = syn.ip(), th = syn.tcp();
	std::vector<__u8> out(SLUICE_SYNACK_MAX + 16, 0xee);
	Reply r;
	r.len = sluice_synack(ip.data(), th.data(), syn.v6, cookie, tsval, &o, &p, out.data());
	std::size_t ip_len = syn.v6 ? 40 : 20;
	if (r.len < ip_len || r.len > SLUICE_SYNACK_MAX) {
		ADD_FAILURE() << "length " << r.len;
		return r;
	}
	for (std::size_t i = r.len; i < out.size(); i++)
		EXPECT_EQ(out[i], 0xee) << "byte " << i << " written past the returned length " << r.len;
	r.ip.assign(out.begin(), out.begin() + ip_len);
	r.tcp.assign(out.begin() + ip_len, out.begin() + r.len);
	return r;
}

// The reply as it must be, from the SYN alone and the options block of ours
// spelled out by the test: every field literal here, the checksums by this
// file's own sum.
Reply expected(const Syn &syn, __u32 cookie, std::uint16_t window, const Bytes &options)
{
	Reply r;
	Bytes th(20, 0);
	put16(th, 0, syn.dport);
	put16(th, 2, syn.sport);
	put32(th, 4, cookie);
	put32(th, 8, syn.seq + 1u);
	th[12] = std::uint8_t((20 + options.size()) / 4 << 4);
	th[13] = 0x12; // SYN|ACK
	put16(th, 14, window);
	th.insert(th.end(), options.begin(), options.end());

	if (!syn.v6) {
		Bytes ip{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0};
		put16(ip, 2, 20 + th.size());
		ip.insert(ip.end(), syn.dst4.begin(), syn.dst4.end());
		ip.insert(ip.end(), syn.src4.begin(), syn.src4.end());
		put16(ip, 10, checksum_of(ip));
		r.ip = ip;
	} else {
		Bytes ip{0x60, 0, 0, 0, 0, 0, 6, 64};
		put16(ip, 4, th.size());
		ip.insert(ip.end(), syn.dst6.begin(), syn.dst6.end());
		ip.insert(ip.end(), syn.src6.begin(), syn.src6.end());
		r.ip = ip;
	}
	put16(th, 16, checksum_of(pseudo_and_segment(r.ip, th)));
	r.tcp = th;
	r.len = __u32(r.ip.size() + r.tcp.size());
	return r;
}

std::string hex(const Bytes &b)
{
	std::string s;
	char buf[4];
	for (std::size_t i = 0; i < b.size(); i++) {
		std::snprintf(buf, sizeof buf, "%02x", b[i]);
		s += buf;
		s += (i % 4 == 3) ? " | " : " ";
	}
	return s;
}

void expect_checksums_verify(const Reply &r)
{
	if (r.ip.size() == 20)
		EXPECT_EQ(ones_sum(r.ip), 0xffff) << "IPv4 header checksum: " << hex(r.ip);
	EXPECT_EQ(ones_sum(pseudo_and_segment(r.ip, r.tcp)), 0xffff) << "TCP checksum: " << hex(r.tcp);
}

void expect_reply(const Reply &got, const Reply &want)
{
	EXPECT_EQ(got.len, want.len);
	EXPECT_EQ(got.ip, want.ip) << "\n  got  " << hex(got.ip) << "\n  want " << hex(want.ip);
	EXPECT_EQ(got.tcp, want.tcp) << "\n  got  " << hex(got.tcp) << "\n  want " << hex(want.tcp);
	expect_checksums_verify(got);
}

sluice_cookie_params params(__u32 mss_, __u32 wscale_, __u32 flags = kAll)
{
	sluice_cookie_params p{};
	p.mss = mss_;
	p.wscale = wscale_;
	p.flags = flags;
	return p;
}

// ---- sluice_syn_options ----------------------------------------------------

TEST(CookieSynOptions, NoOptionsInADoff5Header)
{
	Syn syn;
	Bytes th = syn.tcp();
	ASSERT_EQ(th.size(), 20u);
	Offer o = parse(th);
	EXPECT_EQ(o.mss, 0);
	EXPECT_EQ(o.wscale_ok, 0);
	EXPECT_EQ(o.wscale, 0);
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);
	EXPECT_EQ(o.tsval, 0u);
}

TEST(CookieSynOptions, LinuxBlock)
{
	// Linux's SYN: MSS, SACK_PERM, TS, NOP, WS (20 bytes, doff 10).
	Syn syn;
	syn.options = cat({mss(1460), sack_perm(), ts(0xa1b2c3d4), nop(), ws(7)});
	ASSERT_EQ(syn.options.size(), 20u);
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1460);
	EXPECT_EQ(o.sack_ok, 1);
	EXPECT_EQ(o.ts_ok, 1);
	EXPECT_EQ(o.tsval, 0xa1b2c3d4u);
	EXPECT_EQ(o.wscale_ok, 1);
	EXPECT_EQ(o.wscale, 7);
}

TEST(CookieSynOptions, WindowsBlock)
{
	// Windows: MSS, NOP, WS, NOP, NOP, SACK_PERM (12 bytes), no timestamp.
	Syn syn;
	syn.options = cat({mss(1440), nop(), ws(8), nop(), nop(), sack_perm()});
	ASSERT_EQ(syn.options.size(), 12u);
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1440);
	EXPECT_EQ(o.wscale_ok, 1);
	EXPECT_EQ(o.wscale, 8);
	EXPECT_EQ(o.sack_ok, 1);
	EXPECT_EQ(o.ts_ok, 0);
}

TEST(CookieSynOptions, MacosBlockWithEolPadding)
{
	// macOS: MSS, NOP, WS, NOP, NOP, TS, SACK_PERM, EOL, EOL (24 bytes).
	Syn syn;
	syn.options = cat({mss(1460), nop(), ws(6), nop(), nop(), ts(0x01020304), sack_perm(), eol(), eol()});
	ASSERT_EQ(syn.options.size(), 24u);
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1460);
	EXPECT_EQ(o.wscale_ok, 1);
	EXPECT_EQ(o.wscale, 6);
	EXPECT_EQ(o.ts_ok, 1);
	EXPECT_EQ(o.tsval, 0x01020304u);
	EXPECT_EQ(o.sack_ok, 1);
}

TEST(CookieSynOptions, WindowScaleAbove14IsClamped)
{
	for (unsigned shift : {0u, 1u, 13u, 14u, 15u, 16u, 100u, 255u}) {
		Syn syn;
		syn.options = ws(std::uint8_t(shift));
		Offer o = parse(syn.tcp());
		EXPECT_EQ(o.wscale_ok, 1) << shift;
		EXPECT_EQ(o.wscale, std::min(shift, 14u)) << shift;
	}
}

TEST(CookieSynOptions, OptionsOfTheWrongLengthAreIgnoredAndTheWalkGoesOn)
{
	// Each known kind with a wrong length, then a good option of another kind
	// that must still be read.
	Syn syn;
	syn.options = cat({{2, 5, 0x05, 0xb4, 0x00},         // MSS, length 5
			   {3, 4, 7, 0},                     // WS, length 4
			   {4, 3, 0},                        // SACK_PERM, length 3
			   {8, 12, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0}, // TS, length 12
			   {2, 3, 9},                        // MSS, length 3
			   mss(1234)});
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1234) << "the good MSS after the bad ones";
	EXPECT_EQ(o.wscale_ok, 0);
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);

	// And the wrong-length ones alone leave nothing behind.
	syn.options = cat({{4, 4, 0, 0}, {3, 2}, {8, 8, 1, 2, 3, 4, 5, 6}, ws(3)});
	o = parse(syn.tcp());
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);
	EXPECT_EQ(o.wscale_ok, 1);
	EXPECT_EQ(o.wscale, 3);
}

TEST(CookieSynOptions, UnknownKindsAreSkippedByTheirLength)
{
	Syn syn;
	// TFO cookie request (34, length 2), MPTCP-like (30, length 12), then TS.
	syn.options = cat({mss(1400), {34, 2}, {30, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ts(77), sack_perm()});
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1400);
	EXPECT_EQ(o.ts_ok, 1);
	EXPECT_EQ(o.tsval, 77u);
	EXPECT_EQ(o.sack_ok, 1);
}

TEST(CookieSynOptions, ALengthOf0Or1StopsTheWalkKeepingWhatCameBefore)
{
	for (std::uint8_t bad : {0, 1}) {
		for (std::uint8_t kind : {2, 3, 4, 8, 99}) {
			Syn syn;
			syn.options = cat({mss(1460), ws(5), {kind, bad}, sack_perm(), ts(5)});
			Offer o = parse(syn.tcp());
			EXPECT_EQ(o.mss, 1460) << int(kind) << "/" << int(bad);
			EXPECT_EQ(o.wscale_ok, 1);
			EXPECT_EQ(o.wscale, 5);
			EXPECT_EQ(o.sack_ok, 0) << "read past a length of " << int(bad);
			EXPECT_EQ(o.ts_ok, 0) << "read past a length of " << int(bad);
		}
	}
}

TEST(CookieSynOptions, AnOptionRunningPastTheHeaderStopsTheWalk)
{
	// TS claiming 10 bytes with 8 left in the header (doff 8: 12 option bytes).
	Syn syn;
	syn.options = cat({mss(1300), {8, 10, 0, 0, 0, 1, 0, 0}});
	ASSERT_EQ(syn.options.size(), 12u);
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1300);
	EXPECT_EQ(o.ts_ok, 0);

	// SACK_PERM's kind in the last byte, its length outside: not read.
	syn.options = cat({mss(1300), nop(), nop(), nop(), {4}});
	ASSERT_EQ(syn.options.size(), 8u);
	o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1300);
	EXPECT_EQ(o.sack_ok, 0);

	// WS whose length (3) is one byte more than is left; an MSS whose kind
	// and length are inside the header and its value outside.
	syn.options = cat({sack_perm(), {3, 3}});
	o = parse(syn.tcp());
	EXPECT_EQ(o.sack_ok, 1);
	EXPECT_EQ(o.wscale_ok, 0);
	syn.options = cat({sack_perm(), nop(), nop(), nop(), nop(), {2, 4}}); // 8 bytes, MSS needs 4 from byte 6
	o = parse(syn.tcp());
	EXPECT_EQ(o.sack_ok, 1);
	EXPECT_EQ(o.mss, 0);
}

TEST(CookieSynOptions, EolStopsTheWalk)
{
	Syn syn;
	syn.options = cat({mss(1460), eol(), {0, 0, 0}, sack_perm(), ts(9), nop(), ws(2)});
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1460);
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);
	EXPECT_EQ(o.wscale_ok, 0);

	syn.options = cat({eol(), mss(1460)});
	o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 0);
}

TEST(CookieSynOptions, Doff15FullOfNops)
{
	Syn syn;
	syn.options = Bytes(40, 1);
	Bytes th = syn.tcp();
	ASSERT_EQ(th.size(), 60u);
	ASSERT_EQ(th[12] >> 4, 15);
	Offer o = parse(th);
	EXPECT_EQ(o.mss, 0);
	EXPECT_EQ(o.wscale_ok, 0);
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);

	// 37 NOPs then WS in the last 3 bytes: 38 options, all walked.
	syn.options = cat({Bytes(37, 1), ws(9)});
	o = parse(syn.tcp());
	EXPECT_EQ(o.wscale_ok, 1);
	EXPECT_EQ(o.wscale, 9);

	// 38 NOPs then SACK_PERM: 39 options.
	syn.options = cat({Bytes(38, 1), sack_perm()});
	o = parse(syn.tcp());
	EXPECT_EQ(o.sack_ok, 1);
}

TEST(CookieSynOptions, TheLastOfTwoOptionsOfAKindCounts)
{
	// As the kernel's tcp_parse_options: each one overwrites.
	Syn syn;
	syn.options = cat({mss(1000), ws(3), ts(1), mss(1200), ws(4), ts(2)});
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 1200);
	EXPECT_EQ(o.wscale, 4);
	EXPECT_EQ(o.tsval, 2u);
}

TEST(CookieSynOptions, StartsFromNothingWhateverTheStructHeld)
{
	// parse() fills the struct with 0xa5 before the call.
	Syn syn;
	syn.options = nop();
	Offer o = parse(syn.tcp());
	EXPECT_EQ(o.mss, 0);
	EXPECT_EQ(o.wscale, 0);
	EXPECT_EQ(o.wscale_ok, 0);
	EXPECT_EQ(o.sack_ok, 0);
	EXPECT_EQ(o.ts_ok, 0);
	EXPECT_EQ(o.tsval, 0u);
}

TEST(CookieSynOptionAt, OneOptionACallAndItsOffset)
{
	Syn syn;
	syn.options = cat({mss(1460), sack_perm(), ts(0x0a0b0c0d), nop(), ws(7)});
	Bytes th = syn.tcp();
	Offer o;
	sluice_syn_options_clear(&o);
	__u32 off = 20;
	const __u32 offsets[] = {24, 26, 36, 37, 40};
	for (__u32 want : offsets) {
		ASSERT_EQ(sluice_syn_option_at(th.data(), __u32(th.size()), &off, &o), 0);
		EXPECT_EQ(off, want);
	}
	EXPECT_EQ(sluice_syn_option_at(th.data(), __u32(th.size()), &off, &o), 1) << "past the header: the end";
	EXPECT_EQ(off, 40u);
	EXPECT_EQ(o.mss, 1460);
	EXPECT_EQ(o.tsval, 0x0a0b0c0du);
	EXPECT_EQ(o.wscale, 7);

	// EOL ends without moving; so does a length of 1.
	syn.options = cat({eol(), {0, 0, 0}});
	th = syn.tcp();
	off = 20;
	EXPECT_EQ(sluice_syn_option_at(th.data(), __u32(th.size()), &off, &o), 1);
	EXPECT_EQ(off, 20u);
	syn.options = {2, 1, 0, 0};
	th = syn.tcp();
	EXPECT_EQ(sluice_syn_option_at(th.data(), __u32(th.size()), &off, &o), 1);
	EXPECT_EQ(off, 20u);
}

// ---- sluice_cookie_tsval ---------------------------------------------------

Offer offered(int wscale, bool sack)
{
	Offer o;
	sluice_syn_options_clear(&o);
	if (wscale >= 0) {
		o.wscale_ok = 1;
		o.wscale = __u8(wscale);
	}
	o.sack_ok = sack;
	o.ts_ok = 1;
	o.tsval = 1;
	return o;
}

TEST(CookieTsval, LowBitsAreWindowScaleAndSack)
{
	const __u32 now = 0x7654323f; // low 6 bits 0x3f: nothing to take back
	sluice_cookie_params p = params(1460, 7);
	struct {
		int wscale;
		bool sack;
		__u32 flags;
		__u32 low;
	} cases[] = {
		{7, true, kAll, 0x17},
		{7, false, kAll, 0x07},
		{0, true, kAll, 0x10},
		{0, false, kAll, 0x00},
		{14, true, kAll, 0x1e},
		{-1, false, kAll, 0x0f},
		{-1, true, kAll, 0x1f},
		{7, true, SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK, 0x1f},   // WSCALE off: none
		{7, true, SLUICE_COOKIE_TS | SLUICE_COOKIE_WSCALE, 0x07}, // SACK off
		{7, true, SLUICE_COOKIE_TS, 0x0f},
		{3, true, 0, 0x0f},
	};
	for (const auto &c : cases) {
		p.flags = c.flags;
		Offer o = offered(c.wscale, c.sack);
		__u32 t = sluice_cookie_tsval(now, &o, &p);
		EXPECT_EQ(t, 0x76543200u | c.low) << "wscale " << c.wscale << " sack " << c.sack << " flags " << c.flags;
	}
}

TEST(CookieTsval, NeverAheadOfTheClock)
{
	sluice_cookie_params p = params(1460, 7);
	Offer o = offered(-1, true); // 0x1f
	EXPECT_EQ(sluice_cookie_tsval(0x1000, &o, &p), 0x0fdfu) << "low bits 0 < 0x1f: the 64 ms before";
	EXPECT_EQ(sluice_cookie_tsval(0x101f, &o, &p), 0x101fu) << "equal: now itself";
	EXPECT_EQ(sluice_cookie_tsval(0x101e, &o, &p), 0x0fdfu);
	EXPECT_EQ(sluice_cookie_tsval(0x1020, &o, &p), 0x101fu);
	EXPECT_EQ(sluice_cookie_tsval(0xffffffff, &o, &p), 0xffffffdfu);
	o = offered(0, false); // 0x00: never taken back
	EXPECT_EQ(sluice_cookie_tsval(0x1000, &o, &p), 0x1000u);
	EXPECT_EQ(sluice_cookie_tsval(0x103f, &o, &p), 0x1000u);
	o = offered(14, true); // 0x1e
	EXPECT_EQ(sluice_cookie_tsval(0xabcd0005, &o, &p), 0xabccffdeu);
}

TEST(CookieTsval, NearZeroItIs64MsBehindModulo2To32)
{
	// As the kernel's cookie_init_timestamp: the clock's first 64 ms wrap
	// back (TCP compares timestamps modulo 2^32, so it is still behind).
	sluice_cookie_params p = params(1460, 7);
	Offer o = offered(-1, true); // 0x1f
	EXPECT_EQ(sluice_cookie_tsval(0x10, &o, &p), 0xffffffdfu);
	EXPECT_EQ(sluice_cookie_tsval(0x1f, &o, &p), 0x1fu);
	EXPECT_EQ(sluice_cookie_tsval(0, &o, &p), 0xffffffdfu);
}

TEST(CookieTsval, RandomClocksAndOptions)
{
	std::mt19937 rng(20240611);
	sluice_cookie_params p = params(1460, 7, kAll);
	for (int i = 0; i < 200000; i++) {
		__u32 now = rng();
		int wscale = int(rng() % 16) - 1; // -1: none
		bool sack = rng() & 1;
		p.flags = rng() & 7;
		Offer o = offered(wscale, sack);
		__u32 low = (wscale >= 0 && (p.flags & SLUICE_COOKIE_WSCALE)) ? __u32(wscale) : 0xf;
		if (sack && (p.flags & SLUICE_COOKIE_SACK))
			low |= 0x10;
		__u32 t = sluice_cookie_tsval(now, &o, &p);
		ASSERT_EQ(t & 0x3f, low) << std::hex << now;
		ASSERT_LT(__u32(now - t), 64u) << std::hex << now << " -> " << t;
		if (now >= 64)
			ASSERT_LE(t, now) << std::hex << now;
	}
}

// ---- sluice_synack: every byte ---------------------------------------------

constexpr __u32 kCookie = 0xc0ffee42;
constexpr __u32 kNow = 0x12345678; // low 6 bits 0x38
constexpr __u32 kClientTs = 0xa1b2c3d4;

// Our window for MSS 1460: 44 x 1460.
constexpr std::uint16_t kWin1460 = 64240;

Bytes our_mss(std::uint16_t v) { return mss(v); }

class CookieSynack : public ::testing::TestWithParam<bool> {
protected:
	Syn syn_with(Bytes options) const
	{
		Syn s;
		s.v6 = GetParam();
		s.options = std::move(options);
		return s;
	}

	// The reply to syn, built as the XDP program builds it: options parsed,
	// our timestamp at kNow.
	Reply answer(const Syn &syn, const sluice_cookie_params &p, __u32 *tsval_out = nullptr) const
	{
		Offer o = parse(syn.tcp());
		__u32 tsval = sluice_cookie_tsval(kNow, &o, &p);
		if (tsval_out)
			*tsval_out = tsval;
		return build(syn, kCookie, tsval, o, p);
	}
};

TEST_P(CookieSynack, NoOptionsMssOnly)
{
	Syn syn = syn_with({});
	Reply r = answer(syn, params(1460, 7));
	EXPECT_EQ(r.len, (GetParam() ? 40u : 20u) + 24u);
	expect_reply(r, expected(syn, kCookie, kWin1460, our_mss(1460)));
}

TEST_P(CookieSynack, LinuxOptionsSackTimestampAndWindowScale)
{
	Syn syn = syn_with(cat({mss(1460), sack_perm(), ts(kClientTs), nop(), ws(7)}));
	__u32 tsval = 0;
	Reply r = answer(syn, params(1460, 9), &tsval);
	EXPECT_EQ(tsval, 0x12345657u) << "0x12345640 | SACK 0x10 | wscale 7";
	EXPECT_EQ(r.len, (GetParam() ? 40u : 20u) + 40u);
	expect_reply(r, expected(syn, kCookie, kWin1460,
				 cat({our_mss(1460), sack_perm(), ts(0x12345657, kClientTs), nop(), ws(9)})));
}

TEST_P(CookieSynack, TimestampWithoutSackHasTwoNops)
{
	Syn syn = syn_with(cat({mss(1460), ts(kClientTs), nop(), ws(2)}));
	__u32 tsval = 0;
	Reply r = answer(syn, params(1460, 7), &tsval);
	EXPECT_EQ(tsval, 0x12345642u) << "no SACK, wscale 2: 0x12345640 | 0x02";
	expect_reply(r, expected(syn, kCookie, kWin1460,
				 cat({our_mss(1460), nop(), nop(), ts(0x12345642, kClientTs), nop(), ws(7)})));
}

TEST_P(CookieSynack, TimestampWithoutWindowScaleIs36Bytes)
{
	Syn syn = syn_with(cat({mss(1460), sack_perm(), ts(kClientTs), nop(), nop()}));
	__u32 tsval = 0;
	Reply r = answer(syn, params(1460, 7), &tsval);
	EXPECT_EQ(tsval, 0x1234565fu) << "SACK, no window scale (0xf): 0x12345640 | 0x1f";
	EXPECT_EQ(r.len, (GetParam() ? 40u : 20u) + 36u);
	expect_reply(r, expected(syn, kCookie, kWin1460, cat({our_mss(1460), sack_perm(), ts(0x1234565f, kClientTs)})));
}

TEST_P(CookieSynack, TimestampAloneIs36BytesWithNops)
{
	Syn syn = syn_with(cat({nop(), nop(), ts(kClientTs)}));
	Reply r = answer(syn, params(1460, 7));
	expect_reply(r, expected(syn, kCookie, kWin1460, cat({our_mss(1460), nop(), nop(), ts(0x1234564f, kClientTs)})));
}

TEST_P(CookieSynack, SackAndWindowScaleWithoutTimestampMssOnly)
{
	// Windows' SYN: nowhere to keep them.
	Syn syn = syn_with(cat({mss(1440), nop(), ws(8), nop(), nop(), sack_perm()}));
	Reply r = answer(syn, params(1460, 7));
	EXPECT_EQ(r.len, (GetParam() ? 40u : 20u) + 24u);
	expect_reply(r, expected(syn, kCookie, kWin1460, our_mss(1460)));
}

TEST_P(CookieSynack, EachFlagSwitchesItsOptionOff)
{
	Syn syn = syn_with(cat({mss(1460), sack_perm(), ts(kClientTs), nop(), ws(7)}));
	struct {
		__u32 flags;
		__u32 tsval;
		Bytes options;
	} cases[] = {
		{kAll, 0x12345657, cat({our_mss(1460), sack_perm(), ts(0x12345657, kClientTs), nop(), ws(9)})},
		{SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE, 0x12345657, our_mss(1460)}, // TS off: nothing else
		{SLUICE_COOKIE_TS | SLUICE_COOKIE_WSCALE, 0x12345647,
		 cat({our_mss(1460), nop(), nop(), ts(0x12345647, kClientTs), nop(), ws(9)})},
		{SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK, 0x1234565f,
		 cat({our_mss(1460), sack_perm(), ts(0x1234565f, kClientTs)})},
		{SLUICE_COOKIE_TS, 0x1234564f, cat({our_mss(1460), nop(), nop(), ts(0x1234564f, kClientTs)})},
		{0, 0x1234564f, our_mss(1460)},
	};
	for (const auto &c : cases) {
		SCOPED_TRACE("flags " + std::to_string(c.flags));
		__u32 tsval = 0;
		Reply r = answer(syn, params(1460, 9, c.flags), &tsval);
		EXPECT_EQ(tsval, c.tsval);
		expect_reply(r, expected(syn, kCookie, kWin1460, c.options));
	}
}

TEST_P(CookieSynack, OurWindowScaleAbove14IsClamped)
{
	Syn syn = syn_with(cat({mss(1460), sack_perm(), ts(kClientTs), nop(), ws(7)}));
	for (__u32 ours : {0u, 14u, 15u, 255u, 0x10000u}) {
		Reply r = answer(syn, params(1460, ours));
		ASSERT_EQ(r.tcp.size(), 40u);
		EXPECT_EQ(r.tcp[36], 1);
		EXPECT_EQ(r.tcp[37], 3);
		EXPECT_EQ(r.tcp[38], 3);
		EXPECT_EQ(r.tcp[39], std::min(ours, 14u)) << ours;
		expect_checksums_verify(r);
	}
}

TEST_P(CookieSynack, WindowIsAWholeNumberOfOurMss)
{
	Syn syn = syn_with({});
	struct {
		__u32 mss;
		__u32 mss_field;
		__u32 window;
	} cases[] = {
		{1460, 1460, 64240}, {1440, 1440, 64800}, {1220, 1220, 64660}, {536, 536, 65392},
		{0, 536, 65392}, // none configured: the default 536
		{1000, 1000, 65000}, {65535, 65535, 65535}, {1, 1, 65535}, {9000, 9000, 63000},
		{70000, 65535, 65535}, // clamped to what 16 bits hold
	};
	for (const auto &c : cases) {
		Reply r = answer(syn, params(c.mss, 7));
		ASSERT_EQ(r.tcp.size(), 24u);
		EXPECT_EQ(get16(r.tcp, 14), c.window) << "mss " << c.mss;
		EXPECT_EQ(get16(r.tcp, 22), c.mss_field) << "mss " << c.mss;
		expect_reply(r, expected(syn, kCookie, std::uint16_t(c.window), our_mss(std::uint16_t(c.mss_field))));
	}
}

TEST_P(CookieSynack, AckIsTheSynsSeqPlusOneWrapping)
{
	for (__u32 seq : {0u, 1u, 0x7fffffffu, 0xfffffffeu, 0xffffffffu}) {
		Syn syn = syn_with(cat({mss(1460), ts(kClientTs)}));
		syn.seq = seq;
		Reply r = answer(syn, params(1460, 7));
		EXPECT_EQ(get32(r.tcp, 8), seq + 1u) << seq;
		expect_reply(r, expected(syn, kCookie, kWin1460, cat({our_mss(1460), nop(), nop(), ts(0x1234564f, kClientTs)})));
	}
	Syn syn = syn_with({});
	syn.seq = 0xffffffffu;
	Reply r = answer(syn, params(1460, 7));
	EXPECT_EQ(get32(r.tcp, 8), 0u);
}

TEST_P(CookieSynack, NamedFields)
{
	// The same bytes expected() spells out, field by field, so that a
	// failure names the field.
	Syn syn = syn_with(cat({mss(1460), sack_perm(), ts(kClientTs), nop(), ws(7)}));
	Reply r = answer(syn, params(1460, 7));
	const Bytes &t = r.tcp;
	ASSERT_EQ(t.size(), 40u);
	EXPECT_EQ(get16(t, 0), 443u) << "source port: the SYN's destination";
	EXPECT_EQ(get16(t, 2), 40000u) << "destination port: the SYN's source";
	EXPECT_EQ(get32(t, 4), kCookie) << "seq: the cookie";
	EXPECT_EQ(get32(t, 8), 0x11223345u) << "ack";
	EXPECT_EQ(t[12], 0xa0) << "data offset 10, reserved 0";
	EXPECT_EQ(t[13], 0x12) << "SYN|ACK only";
	EXPECT_EQ(get16(t, 14), 64240u) << "window";
	EXPECT_EQ(get16(t, 18), 0u) << "urgent pointer";
	const Bytes &ip = r.ip;
	if (!GetParam()) {
		ASSERT_EQ(ip.size(), 20u);
		EXPECT_EQ(ip[0], 0x45);
		EXPECT_EQ(ip[1], 0) << "tos";
		EXPECT_EQ(get16(ip, 2), 60u) << "total length";
		EXPECT_EQ(get16(ip, 4), 0u) << "id";
		EXPECT_EQ(get16(ip, 6), 0x4000u) << "DF, offset 0";
		EXPECT_EQ(ip[8], 64) << "TTL";
		EXPECT_EQ(ip[9], 6) << "TCP";
		EXPECT_EQ(Bytes(ip.begin() + 12, ip.begin() + 16), Bytes({203, 0, 113, 9})) << "source: the SYN's destination";
		EXPECT_EQ(Bytes(ip.begin() + 16, ip.begin() + 20), Bytes({198, 51, 100, 7}));
	} else {
		ASSERT_EQ(ip.size(), 40u);
		EXPECT_EQ(get32(ip, 0), 0x60000000u) << "version 6, traffic class 0, flow label 0";
		EXPECT_EQ(get16(ip, 4), 40u) << "payload length";
		EXPECT_EQ(ip[6], 6) << "next header TCP";
		EXPECT_EQ(ip[7], 64) << "hop limit";
		EXPECT_EQ(Bytes(ip.begin() + 8, ip.begin() + 24), Bytes(syn.dst6.begin(), syn.dst6.end()));
		EXPECT_EQ(Bytes(ip.begin() + 24, ip.begin() + 40), Bytes(syn.src6.begin(), syn.src6.end()));
	}
	expect_checksums_verify(r);
}

TEST_P(CookieSynack, ChecksumsOfRandomReplies)
{
	std::mt19937 rng(GetParam() ? 61u : 41u);
	for (int i = 0; i < 20000; i++) {
		Syn syn;
		syn.v6 = GetParam();
		for (auto &b : syn.src4)
			b = std::uint8_t(rng());
		for (auto &b : syn.dst4)
			b = std::uint8_t(rng());
		for (auto &b : syn.src6)
			b = std::uint8_t(rng());
		for (auto &b : syn.dst6)
			b = std::uint8_t(rng());
		syn.sport = std::uint16_t(rng());
		syn.dport = std::uint16_t(rng());
		syn.seq = rng();
		__u32 client_ts = rng();
		int layout = int(rng() % 5);
		switch (layout) {
		case 0: syn.options = {}; break;
		case 1: syn.options = cat({mss(std::uint16_t(rng())), sack_perm(), ts(client_ts), nop(), ws(std::uint8_t(rng() % 16))}); break;
		case 2: syn.options = cat({mss(std::uint16_t(rng())), nop(), nop(), ts(client_ts)}); break;
		case 3: syn.options = cat({sack_perm(), ts(client_ts), nop(), ws(std::uint8_t(rng()))}); break;
		default: syn.options = cat({mss(std::uint16_t(rng())), nop(), ws(8), nop(), nop(), sack_perm()}); break;
		}
		sluice_cookie_params p = params(rng() % 9001, rng() % 16, rng() & 7);
		Offer o = parse(syn.tcp());
		__u32 cookie = rng(), tsval = rng();
		Reply r = build(syn, cookie, tsval, o, p);
		ASSERT_FALSE(::testing::Test::HasFailure());
		expect_checksums_verify(r);
		// and the whole reply, rebuilt here from what the options call for
		Bytes opts = our_mss(std::uint16_t(p.mss ? p.mss : 536));
		bool t = o.ts_ok && (p.flags & SLUICE_COOKIE_TS);
		if (t) {
			opts = cat({opts, (o.sack_ok && (p.flags & SLUICE_COOKIE_SACK)) ? sack_perm() : cat({nop(), nop()}),
				    ts(tsval, client_ts)});
			if (o.wscale_ok && (p.flags & SLUICE_COOKIE_WSCALE))
				opts = cat({opts, nop(), ws(std::uint8_t(std::min(p.wscale, 14u)))});
		}
		__u32 m = p.mss ? p.mss : 536;
		expect_reply(r, expected(syn, cookie, std::uint16_t(65535 - 65535 % m), opts));
		if (::testing::Test::HasFailure())
			FAIL() << "iteration " << i << " layout " << layout;
	}
}

INSTANTIATE_TEST_SUITE_P(Ip, CookieSynack, ::testing::Values(false, true),
			 [](const ::testing::TestParamInfo<bool> &i) { return i.param ? std::string("v6") : std::string("v4"); });

// ---- fuzz-ish: random headers ----------------------------------------------

// tcp_parse_options' walk (net/ipv4/tcp_input.c), for a SYN, retyped: what
// sluice_syn_options must agree with.
struct Ref {
	unsigned mss = 0, wscale = 0, tsval = 0;
	bool wscale_ok = false, sack_ok = false, ts_ok = false;
};

Ref reference_parse(const std::vector<__u8> &th)
{
	Ref r;
	long length = long(th.size()) - 20;
	std::size_t i = 20;
	while (length > 0) {
		int opcode = th[i++];
		if (opcode == 0)
			return r;
		if (opcode == 1) {
			length--;
			continue;
		}
		if (length < 2)
			return r;
		int opsize = th[i++];
		if (opsize < 2 || opsize > length)
			return r;
		if (opcode == 2 && opsize == 4)
			r.mss = unsigned(th[i]) << 8 | th[i + 1];
		else if (opcode == 3 && opsize == 3) {
			r.wscale_ok = true;
			r.wscale = std::min(unsigned(th[i]), 14u);
		} else if (opcode == 4 && opsize == 2)
			r.sack_ok = true;
		else if (opcode == 8 && opsize == 10) {
			r.ts_ok = true;
			r.tsval = unsigned(th[i]) << 24 | unsigned(th[i + 1]) << 16 | unsigned(th[i + 2]) << 8 | th[i + 3];
		}
		i += std::size_t(opsize) - 2;
		length -= opsize;
	}
	return r;
}

// Random option bytes, mostly well-formed-looking so that the walk goes deep.
void random_options(std::mt19937 &rng, std::vector<__u8> &th)
{
	std::size_t i = 20;
	while (i < th.size()) {
		switch (rng() % 10) {
		case 0: th[i++] = 1; break;
		case 1: th[i++] = std::uint8_t(rng()); break; // anything
		default: {
			static const std::uint8_t kinds[] = {2, 3, 4, 8, 30, 34, 0};
			static const std::uint8_t sizes[] = {4, 3, 2, 10, 6, 2, 1};
			int k = int(rng() % 7);
			std::uint8_t size = (rng() % 8 == 0) ? std::uint8_t(rng() % 14) : sizes[k];
			th[i++] = kinds[k];
			if (i < th.size())
				th[i++] = size;
			for (int j = 2; j < size && i < th.size(); j++)
				th[i++] = std::uint8_t(rng());
		}
		}
	}
}

TEST(CookieFuzz, RandomHeadersParseInBoundsAndAnswerInShape)
{
	std::mt19937 rng(0x5eed);
	std::uniform_int_distribution<int> doff(5, 15);
	int with_ts = 0, with_ws = 0, with_sack = 0;
	for (int n = 0; n < 100000; n++) {
		__u32 tcp_len = 4 * __u32(doff(rng));
		std::vector<__u8> th(tcp_len); // exactly: a read past it is ASan's
		for (auto &b : th)
			b = std::uint8_t(rng());
		th[12] = std::uint8_t(tcp_len / 4 << 4);
		if (n % 2)
			random_options(rng, th);

		Offer o;
		sluice_syn_options(th.data(), tcp_len, &o);
		Ref want = reference_parse(th);
		ASSERT_EQ(o.mss, want.mss) << n;
		ASSERT_EQ(o.wscale_ok, want.wscale_ok) << n;
		if (want.wscale_ok)
			ASSERT_EQ(o.wscale, want.wscale) << n;
		ASSERT_EQ(o.sack_ok, want.sack_ok) << n;
		ASSERT_EQ(o.ts_ok, want.ts_ok) << n;
		if (want.ts_ok)
			ASSERT_EQ(o.tsval, want.tsval) << n;
		with_ts += o.ts_ok;
		with_ws += o.wscale_ok;
		with_sack += o.sack_ok;

		// Bytes past tcp_len that would change the answer if read: a
		// 64-byte copy whose tail is a whole timestamp + SACK_PERM.
		std::vector<__u8> padded(th);
		padded.resize(64 + 16, 0);
		const __u8 tail[] = {4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 3, 3, 9};
		std::copy(std::begin(tail), std::end(tail), padded.begin() + tcp_len);
		Offer o2;
		sluice_syn_options(padded.data(), tcp_len, &o2);
		ASSERT_EQ(0, std::memcmp(&o, &o2, sizeof o)) << "read past tcp_len " << tcp_len << " at " << n;

		// The reply: ip_len + 24, 36 or 40, as the options call for.
		bool v6 = rng() & 1;
		std::vector<__u8> ip(v6 ? 40 : 20);
		for (auto &b : ip)
			b = std::uint8_t(rng());
		sluice_cookie_params p = params(rng() % 9001, rng() % 16, rng() & 7);
		__u32 tsval = sluice_cookie_tsval(rng(), &o, &p);
		std::vector<__u8> out(SLUICE_SYNACK_MAX);
		__u32 len = sluice_synack(ip.data(), th.data(), v6, rng(), tsval, &o, &p, out.data());
		bool t = o.ts_ok && (p.flags & SLUICE_COOKIE_TS);
		__u32 want_tcp = !t ? 24 : (o.wscale_ok && (p.flags & SLUICE_COOKIE_WSCALE)) ? 40 : 36;
		ASSERT_EQ(len, ip.size() + want_tcp) << n;
		ASSERT_LE(want_tcp, tcp_len + 8) << "the header's promise: at most 8 bytes more than the SYN's";
		Reply r;
		r.ip.assign(out.begin(), out.begin() + std::ptrdiff_t(ip.size()));
		r.tcp.assign(out.begin() + std::ptrdiff_t(ip.size()), out.begin() + len);
		expect_checksums_verify(r);
		ASSERT_EQ(r.tcp[12] >> 4, int(want_tcp / 4));
		ASSERT_FALSE(::testing::Test::HasFailure()) << n;
	}
	// The structured half reached every option.
	EXPECT_GT(with_ts, 1000);
	EXPECT_GT(with_ws, 1000);
	EXPECT_GT(with_sack, 1000);
}

} // namespace

// ----------------------------------------------------------- the SYN stamps

namespace {
constexpr std::uint64_t kTickNs = 1ull << SLUICE_COOKIE_SYN_TICK_SHIFT;
constexpr std::uint64_t kBias = 1ull << 62; // bucket.h's SLUICE_TIME_BIAS, as the program's clock carries it
} // namespace

TEST(CookieSynStamp, TheSlotIsInTheMapAndTakesTheHashsMiddleBits)
{
	EXPECT_EQ(sluice_syn_stamp_slot(0), 0u);
	EXPECT_EQ(sluice_syn_stamp_slot(0xffffffffffffffffull), SLUICE_COOKIE_SYN_SLOTS - 1);
	EXPECT_EQ(sluice_syn_stamp_slot(0x3ffull), 0u); // the lowest bits do not choose it
	EXPECT_EQ(sluice_syn_stamp_slot(0x12345678ull << 32), 0u); // nor the fingerprint's
	EXPECT_EQ(sluice_syn_stamp_slot(0xabcd0400ull), 0xabcd04u >> 2);
	EXPECT_EQ(SLUICE_COOKIE_SYN_WORDS * SLUICE_COOKIE_SYN_PER_WORD, SLUICE_COOKIE_SYN_SLOTS);
}

TEST(CookieSynStamp, AStampIsTheTickModulo128WithTheTopBitAndTheBiasDropsOut)
{
	EXPECT_EQ(sluice_syn_stamp_of(0), 0x80u);
	EXPECT_EQ(sluice_syn_stamp_of(kTickNs - 1), 0x80u);
	EXPECT_EQ(sluice_syn_stamp_of(kTickNs), 0x81u);
	EXPECT_EQ(sluice_syn_stamp_of(127 * kTickNs), 0xffu);
	EXPECT_EQ(sluice_syn_stamp_of(128 * kTickNs), 0x80u);
	for (std::uint64_t t : {std::uint64_t(0), 5 * kTickNs + 3, 1000000 * kTickNs})
		EXPECT_EQ(sluice_syn_stamp_of(kBias + t), sluice_syn_stamp_of(t));
}

TEST(CookieSynStamp, RecentForTheCookiesLifetimeAcrossTheWrapAndNeverForAnEmptySlot)
{
	// The window covers the kernel's 2 minutes, and stays well inside the
	// 128 ticks a stamp wraps at.
	EXPECT_GE(SLUICE_COOKIE_SYN_TICKS * kTickNs, 120ull * 1000000000ull);
	EXPECT_LT(SLUICE_COOKIE_SYN_TICKS + 1, 128u);
	for (std::uint64_t base : {std::uint64_t(7), std::uint64_t(120)}) { // 120: the window wraps past 127
		SCOPED_TRACE(base);
		const std::uint64_t syn_at = kBias + base * kTickNs + 12345;
		const std::uint8_t stamp = sluice_syn_stamp_of(syn_at);
		EXPECT_FALSE(sluice_syn_stamp_recent(0, syn_at));
		EXPECT_TRUE(sluice_syn_stamp_recent(stamp, syn_at));
		EXPECT_TRUE(sluice_syn_stamp_recent(stamp, syn_at + 120ull * 1000000000ull));
		EXPECT_TRUE(sluice_syn_stamp_recent(stamp, syn_at + SLUICE_COOKIE_SYN_TICKS * kTickNs));
		EXPECT_FALSE(sluice_syn_stamp_recent(stamp, syn_at + (SLUICE_COOKIE_SYN_TICKS + 1) * kTickNs));
		EXPECT_FALSE(sluice_syn_stamp_recent(stamp, syn_at + 100 * kTickNs));
		// 128 ticks on, the stamp reads as new again: the check then runs,
		// which is what every ACK had before the stamps.
		EXPECT_TRUE(sluice_syn_stamp_recent(stamp, syn_at + 128 * kTickNs));
		// Another CPU's stamp one tick ahead of this CPU's clock still
		// counts; two ahead (which no clock does) does not.
		EXPECT_TRUE(sluice_syn_stamp_recent(sluice_syn_stamp_of(syn_at + kTickNs), syn_at));
		EXPECT_FALSE(sluice_syn_stamp_recent(sluice_syn_stamp_of(syn_at + 2 * kTickNs), syn_at));
	}
}
