// defaults.h - every default sluice runs with when nobody asks otherwise, in
// one table: sluiced's options (sluiced/options.h), the CLI's (sluicectl
// --socket, --pin-dir) and the load and policy structs take them from here.
// README.md ("Defaults, and why") says why each is what it is;
// packaging/sluice.conf lists them commented out. The data plane's own
// defaults (table size, drop sampling) are sluice_abi.h's.
#pragma once

#include "bpf/sluice_abi.h"

#include <cstdint>

namespace sluice::defaults {

// Where sluiced listens and where it pins (one directory per interface).
inline constexpr const char *kSocketPath = "/run/sluice/sluiced.sock";
inline constexpr const char *kPinDir = "/sys/fs/bpf/sluice";
// The policy file sluiced reads when it exists (docs/policy.md).
inline constexpr const char *kPolicyPath = "/etc/sluice/policy.yaml";

// Per-source buckets.
inline constexpr uint64_t kRatePps = 10000; // tokens per second per source
inline constexpr uint64_t kBurst = 20000;   // two seconds of the rate
inline constexpr uint32_t kTableSlots = SLUICE_SLOTS_DEFAULT;
inline constexpr uint32_t kV4Prefix = 32;
inline constexpr uint32_t kV6Prefix = 64;   // an IPv6 host owns a /64
inline constexpr uint32_t kSampleEvery = SLUICE_SAMPLE_EVERY_DEFAULT;

// Standing (docs/architecture.md, "Standing").
inline constexpr uint32_t kStandingSets = SLUICE_STANDING_SETS_DEFAULT;      // 524,288 entries, 20 MiB
inline constexpr uint32_t kStandingLapseS = SLUICE_STANDING_LAPSE_DEFAULT_S; // an hour
// A source with standing draws on a second bucket of its own when its first
// is empty: a verified peer may move bulk data (a 10 Gbit/s link carries
// 812,744 full-size frames a second), a flood of them is the valve's business.
inline constexpr uint64_t kStandingRatePps = 1000000;
inline constexpr uint64_t kStandingBurst = 100000; // 0.1 s of the standing rate
// What the standing sources together may take (pps) before the daemon lowers
// their share (water-filling); 0: --trip-pps, what the host takes before it
// sheds at all.
inline constexpr uint64_t kStandingCapacityPps = 0;
// The UDP feeders' grants per local user: a UDP connect()/sendto() is the
// host's word alone, which any user can give, so each user grants at most
// kGrantBurst entries at once and kGrantRatePerS a second after that (a
// resolver or an NTP client talks to a handful of servers; a user who asks
// for 100,000 gets these).
inline constexpr uint64_t kGrantRatePerS = 10;
inline constexpr uint64_t kGrantBurst = 100;
// And so many in all: kGrantMax UDP grants per user a lapse time (the
// rate alone allows 36,100 an hour). 1,000: far more peers than a host's
// own clients (resolvers, NTP, a service's upstreams) talk to in an hour; a
// recursive resolver on the host talks to more, and its operator raises it.
inline constexpr uint64_t kGrantMax = 1000;
// While shedding, the sources without standing share this budget: a tenth of
// trip-pps (--newcomer-pps 0 sheds them all, as before standing).
inline constexpr uint64_t kNewcomerShareDivisor = 10;
// Its burst: this many milliseconds of the budget (at least one token per
// CPU). In milliseconds, not 0.1 s: the burst is ceil(pps x this / 1000),
// exact in integers, where ceil(30 x 0.1) is 4.
inline constexpr uint64_t kNewcomerBurstMs = 100;
// SYN cookies (docs/architecture.md, "SYN cookies"): a SYN without standing
// to a listener is answered from XDP while shedding (--cookies).
inline constexpr sluice_cookie_mode kCookieMode = SLUICE_COOKIES_SHEDDING;
// The SYN-ACKs the program may send a second, all CPUs together: a ceiling on
// what a spoofed SYN flood can reflect (one SYN-ACK a SYN, at most 8 bytes
// longer: at most 0.75 Gbit/s of SYN-ACKs at this rate, 94 bytes each at the
// longest, an IPv6 one with every option), set above what the
// host's own stack answers with its cookies on a few cores, so that a visitor
// gets a cookie whatever the flood's share; an operator lowers it to the
// uplink's headroom. Its burst: kNewcomerBurstMs of it, per CPU, as the
// newcomer budget's.
inline constexpr uint64_t kCookiePps = 1000000;
// The SYN-ACKs toward one network (the SYN's source /24 or /48), all CPUs
// together: a spoofed flood that names one victim gets at most this much of
// the cookie budget sent there, where without it all of kCookiePps could go
// to one network. 1,000 a second is 0.6 Mbit/s of SYN-ACKs (74 bytes each
// for IPv4 with the usual options, 94 at most): the host is no reflector
// worth the name toward any network, 1/1000 of the budget. Who needs more
// from one network: only visitors without standing take this path (a client
// that connected before has it), and 1,000 new ones a second from one /24,
// even a carrier-grade NAT's (a few hundred subscribers an address), to one
// host is far past what a site sees from one network; a SYN past it is
// retransmitted 1 s later by its client, so a burst over it is delayed, not
// refused. Its burst: kNewcomerBurstMs of it, as the cookie budget's (100).
// 0: no such bound (a host whose visitors come from one network, a
// company's own NAT, say, where the global budget is bound enough).
inline constexpr uint64_t kCookieDestPps = 1000;
// A new hash key this often (sluiced --rekey-every; sluicectl rekey now):
// the key is what keeps an attacker from choosing sources that share a
// bucket or a standing set, and what it could learn of it (by timing, or
// from a leak) is worth nothing after the next one. A day: a rekey makes
// every source's bucket anew, full, as a source never seen gets one, so it
// gives each source of a steady flood one burst more a day, which is what
// a flood of new sources gets every second anyway; a scheduled one waits
// while the breaker is not serving. The standing table and its penalties
// are carried, not lost (Dataplane::rekey).
inline constexpr uint64_t kRekeyEveryS = 86400;
// The cookie sysctls stay armed this long after shedding ends: an ACK of a
// cookie sent just before is still decoded as it was made.
inline constexpr double kCookieGraceS = 10;
// An ACK is checked whole for this long after the cookie path comes into
// force (or a new hash key), before its source's SYN stamp is asked for: the
// ACK of a SYN answered just before (by the stack, while the path was not
// taking SYNs) left no stamp. A few round trips and a retransmission.
inline constexpr double kCookieStampGraceS = 5;
// Standing buys a fair share (logic/standing_share): a standing source that
// offers more than kRevokeOverFactor x its share for kRevokeOverPeriods
// periods in a row loses its standing for kRevokePenaltyS, doubled at each
// repeat up to kRevokePenaltyMaxS.
// 4: far above what a TCP flow overshoots a share by (it halves on loss, so
// it peaks within about 2x its share, briefly); a flood that does not back
// off on loss sits at its own rate, as far over as it likes.
inline constexpr double kRevokeOverFactor = 4.0;
// 3: one burst (a TCP slow start, a queue emptied at once) is one period
// over, not three; a flood is over in every one.
inline constexpr uint32_t kRevokeOverPeriods = 3;
// The per-prefix quota: standing entries one /24 (IPv4) or /48 (IPv6) may
// hold (logic/prefix_quota). 64: a /24 of 256 addresses holds a quarter of
// them, far more than the clients one office or one hosting customer shows
// at once; the default table (524,288 entries) takes 8,192 prefixes at
// their quota before it is full, so one botnet in a few rented /24s cannot
// fill it.
inline constexpr uint32_t kStandingPrefixQuota = 64;
// A minute: long enough that a flood's source gains nothing from earning
// standing again at once (a handshake a minute), short enough that a
// legitimate source caught out (a bulk transfer behind a NAT) is back soon.
inline constexpr double kRevokePenaltyS = 60;
// An hour at most (the standing lapse's default): a source that keeps earning
// standing and losing it is shut out for longer each time, never for good.
inline constexpr double kRevokePenaltyMaxS = 3600;
// Tenure (logic/standing_share, TenureLine): while the standing sources
// contend, those with standing from over this many seconds before the
// contention began are water-filled first. Five minutes: bots that earn their
// standing with one request each just before their flood (the usual way to
// buy it) share what the regulars leave; to be tenured they must hold it,
// live, for five minutes before the flood, and a flood that pauses keeps its
// line until it has been quiet that long (docs/security.md, the trust model).
inline constexpr double kStandingTenureS = 300;
// Observed standing: off unless asked (docs/security.md says why).
inline constexpr uint32_t kObservePeriods = 0;

// The control period and what is done in it.
inline constexpr double kPeriodS = 1.0;
inline constexpr uint32_t kAuditSlotsPerPeriod = 65536;
inline constexpr uint32_t kMaxClients = 64;
// --rt-priority: off. A real-time loop outranks every ordinary process on
// the host, which is the operator's call to make, not a binary's; the
// packaged unit makes it (packaging/systemd/sluiced.service.in: 1, with
// LimitRTPRIO=1 and Nice=-10).
inline constexpr uint32_t kRtPriority = 0;

// The breaker's policy.
inline constexpr uint64_t kTripPps = 1000000; // admitted pps that trips; clear_pps defaults to it
inline constexpr uint32_t kTripPeriods = 3;
inline constexpr double kHoldS = 10;
inline constexpr double kRecoveryS = 60;
inline constexpr uint32_t kRecoveryStartPpm = 100000; // 10%

// `sluicectl top`.
inline constexpr uint32_t kTopCapacity = 1024; // sources the summary tracks
inline constexpr double kTopWindowS = 2.0;     // seconds one summary covers
inline constexpr uint32_t kTopCount = 10;      // sources one reply lists

// Upstream mitigation over BGP (docs/upstream.md): nothing is announced
// unless --upstream is given.
inline constexpr const char *kUpstreamSpeaker = "127.0.0.1:50051"; // gobgpd's API (its default)
inline constexpr const char *kUpstreamCli = "gobgp";                // gobgpd's CLI, on PATH
inline constexpr uint32_t kUpstreamMax = 16;        // announcements at most, all interfaces
inline constexpr uint32_t kUpstreamMinPrefix4 = 24; // no source prefix shorter than this
inline constexpr uint32_t kUpstreamMinPrefix6 = 48;
inline constexpr double kUpstreamHoldS = 300;       // least seconds announced before an automatic withdrawal
// How often the speaker's paths are read and reconciled (a restarted gobgpd
// gets sluice's paths again within this), and one CLI call's timeout.
inline constexpr double kUpstreamReconcileS = 5;
inline constexpr double kUpstreamRetryMaxS = 60; // a speaker that does not answer: retried at 5, 10, 20, 40, 60 s
inline constexpr double kUpstreamCallTimeoutS = 3;
// The large community on every path sluice adds: how a restarted sluiced
// tells its own paths from the operator's. 4200000000 is a private ASN
// (RFC 6996), 7583 "SL" in a phone keypad's letters, 21 the issue.
inline constexpr const char *kUpstreamMarker = "4200000000:7583:21";
// Every FlowSpec rule carries NO_EXPORT: the upstream applies it, never
// passes it on to its own peers.
inline constexpr const char *kUpstreamCommunity = "no-export";
// Blackhole routes: RFC 7999's BLACKHOLE and NO_EXPORT, for a host route and
// a subnet alike unless the operator says otherwise.
inline constexpr const char *kUpstreamBlackholeCommunities = "65535:666,no-export";
// Automatic announcements: over a threshold this long while shedding, at
// most this many sources per interface.
inline constexpr double kUpstreamAfterS = 10;
inline constexpr uint32_t kUpstreamTop = 4;

} // namespace sluice::defaults
