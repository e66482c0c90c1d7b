/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice_abi.h - every type and constant the XDP program and the C++ control
 * plane share. This is the only copy: the kernel side includes it from
 * sluice.bpf.c, the host side from ctl/lib. Change a layout here and bump
 * SLUICE_LAYOUT_VERSION, so that a daemon refuses pins made under the old one
 * instead of reusing them half-compatible.
 */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H

#include <linux/types.h>

/* Bumped on any change to a map's key/value layout or to the meaning of a field.
 * 2: the drop_samples ring buffer, settings.sample_every.
 * 3: the standing map and its cgroup feeders' links, settings.standing_*,
 *    the "standing" outcome.
 * 4: the standing bucket and record (struct sluice_standing_set), the
 *    newcomers and observed maps, config's standing/newcomer/valve fields,
 *    the "newcomer" and "drop_valve" outcomes, settings.observe_periods.
 * 5: policy classes: the classes, class_v4, class_v6, port_classes and
 *    class_counters maps; config.list_flags became policy_flags (the class
 *    flags and the policy set); the lists' keys carry the policy set; the
 *    "exempt", "drop_class" and "drop_bytes" outcomes.
 * 6: SYN cookies: config's cookie fields, the cookie_budget map, the
 *    "cookie_sent", "cookie_proved", "drop_cookie", "drop_cookie_budget" and
 *    "drop_cookie_unfit" outcomes, the standing reason "cookie".
 * 7: the listen_ports map (the TCP ports the cookie path looks up).
 * 8: capture (sluicectl capture): the capture, capture_events and
 *    capture_stats maps (struct sluice_capture, sluice_capture_record,
 *    sluice_capture_stats).
 * 9: the drop sample carries the frame's signature (destination, protocol,
 *    destination port, TCP flags, length); the ring is twice as large.
 * 10: earned, bounded trust: the standing set's seen counters and sources,
 *    the standing_penalty, grant_quota and own_addrs maps, settings.penalty_set_mask,
 *    config's standing share and grant budget, the "reply" outcome.
 * 11: a UDP grant's standing is bound to its peer's port (the standing
 *    set's port[]); the prefix_full map (the per-prefix quota).
 * 12: the per-prefix quota is counted as grants are made: the prefix_count
 *    map (a count per prefix bit) replaces prefix_full, config.prefix_quota;
 *    each local user's second grant bucket (grant_quota's upper half,
 *    config.grant_total_cost_ns and grant_max).
 * 13: tenure: config.standing_newer_share_cost_ns and standing_tenure_tick,
 *    the share of sources granted after the tenure line.
 * 14: the per-destination SYN-ACK bound: the cookie_dest map, config's
 *    cookie_dest_cost_ns and cookie_dest_burst (the former _pad3 and _pad4)
 *    and cookie_dest_pps (the former _pad1), the "drop_cookie_reflect"
 *    outcome.
 * 15: a penalty keeps the source it bars (struct sluice_penalty_set's
 *    source[]), so that a new hash key (sluicectl rekey) carries it.
 * 16: the cookie path's SYN stamps: the cookie_syns map,
 *    config.cookie_acks_stamped_from.
 * 17: the data plane's clock is jiffies (bpf/jiffies_clock.h),
 *    settings.clock_tick_ns: every stored time (slots, stamps) is in it.
 * 18: a deny list's whole addresses (/32, /128) live in hash maps of their
 *    own (deny_exact_v4, deny_exact_v6; struct sluice_exact_v4/_v6), the
 *    SLUICE_LIST_DENY_EXACT_* flags.
 * 19: so do the allow list's (allow_exact_v4, allow_exact_v6), the
 *    SLUICE_LIST_ALLOW_EXACT_* flags. */
#define SLUICE_LAYOUT_VERSION 19

/* Table size bounds. The slot table is a BPF_MAP_TYPE_ARRAY whose size is a
 * power of two fixed at load: the index is (hash & (slots - 1)). */
#define SLUICE_SLOTS_MIN (1u << 4)
#define SLUICE_SLOTS_MAX (1u << 26)
#define SLUICE_SLOTS_DEFAULT (1u << 18)

/* Bounded allow/deny lists and class prefixes (LPM tries, one per family
 * each; per policy set; a list's whole addresses in a hash map beside its
 * trie): entries per list, family and set. */
#define SLUICE_LIST_MAX_ENTRIES 65536

#define SLUICE_NSEC_PER_SEC 1000000000ull

/* Limits the control plane enforces on every config write. They keep every
 * product in the bucket math below 2^63 (see bucket.h for the arithmetic). */
#define SLUICE_RATE_MIN 1ull
#define SLUICE_RATE_MAX 100000000ull /* 1e8 tokens/s: cost_ns >= 10 */
#define SLUICE_BURST_MIN 1ull
#define SLUICE_BURST_MAX 1000000ull
#define SLUICE_PPM_FULL 1000000u
#define SLUICE_PPM_MIN 1000u /* recovering never admits less than 0.1% of the rate */

/* Breaker states. The data plane only reads this; ctl/lib/breaker owns the edges. */
enum sluice_breaker_state {
	SLUICE_SERVING = 0,
	SLUICE_SHEDDING = 1,
	SLUICE_RECOVERING = 2,
	SLUICE_BREAKER_STATES = 3,
};

/*
 * What happened to a frame. One per-CPU counter (packets and bytes) each,
 * keyed by the outcome's value. This table is the only list of the outcomes:
 * the enum below, outcome_name() (ctl/lib/bpf/maps.cpp: the JSON keys,
 * Prometheus labels and CLI tables), the bpf tests' fixture and the Python
 * readers (bpf/sluice_abi.py, for tests/netns and scripts/demo.sh) are all
 * made from it. Columns: the enumerator, its value, its name, and its
 * verdict on an IP source (admitted, dropped, or answered: sent back with a
 * SYN cookie, neither passed nor dropped; none for a frame that is no
 * source's verdict). One row per line: the Python reader parses them.
 */
#define SLUICE_OUTCOME_TABLE(X) \
	X(SLUICE_PASSED,      0, "passed",      admitted) /* IP, admitted by its buckets */ \
	X(SLUICE_DROP_RATE,   1, "drop_rate",   dropped)  /* IP, its buckets were empty */ \
	X(SLUICE_DROP_SHED,   2, "drop_shed",   dropped)  /* IP, breaker shedding and not allowlisted */ \
	X(SLUICE_DROP_DENY,   3, "drop_deny",   dropped)  /* IP, source in the denylist (every state) */ \
	X(SLUICE_ALLOWLISTED, 4, "allowlisted", admitted) /* IP, passed while shedding by the allowlist */ \
	X(SLUICE_NON_IP,      5, "non_ip",      none)     /* ARP, LLDP, ...: passed, not limited */ \
	X(SLUICE_MALFORMED,   6, "malformed",   none)     /* truncated, bad IHL/version, > 2 VLAN tags: dropped */ \
	X(SLUICE_WOULD_DROP,  7, "would_drop",  none)     /* dry run: a drop verdict, but the frame passed */ \
	X(SLUICE_STANDING,    8, "standing",    admitted) /* IP, passed because it has standing: while shedding, or by its standing bucket */ \
	X(SLUICE_NEWCOMER,    9, "newcomer",    admitted) /* IP, passed while shedding without standing: the newcomer budget */ \
	X(SLUICE_DROP_VALVE, 10, "drop_valve",  dropped)  /* IP, has standing, shed: the standing valve is closed */ \
	X(SLUICE_EXEMPT,     11, "exempt",      admitted) /* IP, its class is exempt: counted, never limited (every state) */ \
	X(SLUICE_DROP_CLASS, 12, "drop_class",  dropped)  /* IP, its class's action is deny (every state) */ \
	X(SLUICE_DROP_BYTES, 13, "drop_bytes",  dropped)  /* IP, its packet budget admitted it, its class's byte budget did not */ \
	X(SLUICE_COOKIE_SENT, 14, "cookie_sent", answered) /* IP, a TCP SYN without standing to a listener: answered with a SYN cookie (XDP_TX), not passed */ \
	X(SLUICE_COOKIE_PROVED, 15, "cookie_proved", admitted) /* IP, an ACK carrying a valid SYN cookie: its source earned standing (cookie), passed */ \
	X(SLUICE_DROP_COOKIE, 16, "drop_cookie", dropped) /* IP, an ACK to a listener from a source without standing, its cookie forged or stale */ \
	X(SLUICE_DROP_COOKIE_BUDGET, 17, "drop_cookie_budget", dropped) /* IP, a SYN a cookie would answer, the cookie budget spent */ \
	X(SLUICE_DROP_COOKIE_UNFIT, 18, "drop_cookie_unfit", dropped) /* IP, TCP without standing the cookie path cannot answer (IPv4 options, IPv6 extension headers, fragments, a cut header) */ \
	X(SLUICE_REPLY, 19, "reply", admitted) /* IP, shedding, no standing: a SYN-ACK to a local socket's own SYN (a connection the host is opening) */ \
	X(SLUICE_DROP_COOKIE_REFLECT, 20, "drop_cookie_reflect", dropped) /* IP, a SYN a cookie would answer, the SYN-ACK bound of its source's /24 or /48 spent */

#define SLUICE_OUTCOME_ENUMERATOR(sym, value, name, verdict) sym = value,
#define SLUICE_OUTCOME_ONE(sym, value, name, verdict) +1
enum sluice_outcome {
	SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_ENUMERATOR)
	SLUICE_OUTCOMES = 0 SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_ONE), /* values are 0..SLUICE_OUTCOMES-1 */
};
#undef SLUICE_OUTCOME_ENUMERATOR
#undef SLUICE_OUTCOME_ONE

struct sluice_counter {
	__u64 packets;
	__u64 bytes;
};

/*
 * One slot of the bucket table: a GCRA-style token bucket in one 64-bit word,
 * so that a single compare-and-swap updates it.
 *
 * The bucket's credit, in nanoseconds of refill, is (now - empty_at): the slot
 * was (or would have been) empty at time empty_at. tokens = credit / cost_ns,
 * capped at burst. This is nft_limit's "credit kept as nanoseconds" with the
 * "last" timestamp folded in, so the cap and the cost stay exact.
 * A zeroed slot has empty_at = 0, i.e. it has been refilling since boot: full.
 */
struct sluice_slot {
	__u64 empty_at;
};

/*
 * The runtime configuration: one element of the "config" array map. The
 * daemon writes it (validated: see ctl/lib/bpf/maps); the program reads the
 * first block on every frame. Fields after it are control-plane bookkeeping
 * that must survive a daemon restart with the pins; the program does not read
 * them.
 *
 * Budgets, each a token bucket in bucket.h's form (cost_ns per token, burst
 * tokens; cost_ns 0 means none):
 *   cost_ns/burst           every source's bucket pair in the slot table
 *   standing_cost_ns/burst  a source with standing: a second bucket of its
 *                           own, in its standing record, drawn on when its
 *                           slot pair is empty (every breaker state)
 *   newcomer_cost_ns/burst  while shedding, the sources without standing
 *                           share this budget; one bucket per CPU (the
 *                           newcomers map), so cost and burst are per CPU:
 *                           the daemon divides the asked rate and burst by
 *                           the number of possible CPUs
 */
struct sluice_config {
	__u64 cost_ns;          /* refill: one token per cost_ns (1e9 / rate, rounded) */
	__u64 burst;            /* bucket capacity in tokens */
	__u64 standing_cost_ns; /* the standing bucket: 1e9 / standing rate */
	__u64 standing_burst;
	__u64 newcomer_cost_ns; /* per CPU: 1e9 x CPUs / newcomer rate; 0: no newcomer budget */
	__u64 newcomer_burst;   /* per CPU, >= 1 */
	__u32 breaker_state;    /* enum sluice_breaker_state */
	__u32 admission_ppm;    /* recovering: refill rate x ppm / 1e6 (never a standing bucket's) */
	__u32 policy_flags;     /* SLUICE_LIST_*, SLUICE_CLASS_*, SLUICE_POLICY_SET: one word, read once a frame */
	__u32 valve_closed;     /* 1: shedding is allowlist-only (standing admitted over trip-pps) */
	/* SYN cookies (cookie.h, docs/architecture.md "SYN cookies"): a TCP SYN
	 * from a source without standing to a listener is answered with a cookie
	 * (while shedding, or always), its ACK proves the source. */
	__u64 cookie_cost_ns;   /* per CPU, like the newcomer budget: 1e9 x CPUs / cookie rate; 0: no SYN-ACK */
	__u64 cookie_burst;     /* per CPU, >= 1 */
	__u32 cookie_mode;      /* enum sluice_cookie_mode */
	__u32 cookie_flags;     /* SLUICE_COOKIE_TS | _SACK | _WSCALE: what the host's sysctls let a reply offer */
	__u16 cookie_mss4;      /* our MSS: the interface's MTU - 40 */
	__u16 cookie_mss6;      /* the interface's MTU - 60 */
	__u32 cookie_wscale;    /* our window scale: the one the stack will give the connection */
	/* control-plane bookkeeping, not read by the program */
	__u64 rate_pps;          /* the rate cost_ns was derived from, as asked */
	__u64 standing_rate_pps; /* likewise for standing_cost_ns */
	__u64 newcomer_pps;      /* the newcomer budget as asked, all CPUs together */
	__u64 newcomer_burst_total; /* likewise for newcomer_burst */
	__u64 breaker_since_ns;  /* CLOCK_REALTIME of the last transition */
	__u64 valve_since_ns;    /* CLOCK_REALTIME of the valve's last move */
	__u32 breaker_manual;    /* 1: tripped by an operator, recovery is manual */
	__u32 cookie_dest_pps;   /* the per-destination SYN-ACK bound as asked (0: none) */
	__u64 generation;        /* bumped on every write */
	__u64 cookie_pps;        /* the cookie budget as asked, all CPUs together */
	__u64 cookie_burst_total; /* likewise for cookie_burst */
	/* The sysctls sluiced changed to arm cookies (docs/architecture.md, "SYN
	 * cookies"), kept here so that a daemon restarted after SIGKILL puts
	 * back what was there before, not what it finds. */
	__u32 cookie_sysctls_armed;   /* 1: changed, not yet put back */
	__u32 cookie_syncookies_was;  /* net.ipv4.tcp_syncookies before */
	__u32 cookie_timestamps_was;  /* net.ipv4.tcp_timestamps before */
	/* 1 (sluiced, with the standing feeders attached): every connection's
	 * peer has standing, so an ACK that reaches the cookie path is checked
	 * as a cookie on its headers alone, no socket lookup (docs/
	 * architecture.md, "SYN cookies"); 0: the listener lookup first, and an
	 * ACK of a connection the host has goes on to the newcomer budget. */
	__u32 cookie_acks_unlooked;
	/* Read by the program (docs/architecture.md, "Standing buys a share"):
	 *   standing_share_cost_ns  the standing sources' fair share, the level
	 *                           the daemon water-fills each period: every
	 *                           standing bucket refills at no more than
	 *                           1e9 / this (0: no contention, each bucket at
	 *                           its own rate); its burst stays the time its
	 *                           own rate's burst lasts
	 *   grant_cost_ns/burst     what one prover (a local user) may grant
	 *                           through the UDP feeders: a bucket per user
	 *                           (grant_quota), shared by the CPUs */
	__u64 standing_share_cost_ns;
	__u64 grant_cost_ns;    /* 0: UDP grants off */
	__u64 grant_burst;
	/* bookkeeping, not read by the program */
	__u64 standing_share_pps;   /* the level as computed (0: none in force) */
	__u64 standing_capacity_pps;/* what the standing traffic together may take */
	__u64 grant_rate_per_s;     /* grant_cost_ns as asked */
	/* Read by the program: the entries one /24 or /48 may hold (prefix_count,
	 * --standing-prefix-quota); 0: no quota. */
	__u32 prefix_quota;
	/* Read by the program: the SYN-ACKs toward one network (the SYN's
	 * source /24 or /48), all CPUs together, a bucket per cookie_dest slot
	 * (docs/architecture.md, "SYN cookies"): one per this many ns (<= 1e9:
	 * at least one a second), cookie_dest_burst at most; 0: no such bound. */
	__u32 cookie_dest_cost_ns;
	/* Read by the program: "so many in all" per local user. A second bucket
	 * per user (grant_quota's upper half) holds grant_max UDP grants and
	 * refills them over the lapse time: 1e9 x lapse / grant_max ns a grant
	 * (0: no such bound). An entry a UDP grant made lapses after the lapse
	 * time unless its peer keeps it alive, so a user's grants live at once
	 * number at most about twice grant_max, plus those its peers keep. */
	__u64 grant_total_cost_ns;
	__u64 grant_max;
	/* bookkeeping, not read by the program */
	__u64 grant_window_s;       /* the lapse time grant_total_cost_ns spreads grant_max over */
	/* Read by the program (docs/architecture.md, "Tenure: standing from
	 * before the flood first"): while the standing sources contend, the
	 * daemon holds a tenure line, a tick some time before the contention
	 * began. A source whose first grant came after it (record[w]'s tick,
	 * sluice_standing_granted_after) refills at no more than 1e9 / this
	 * instead of standing_share_cost_ns: the tenured were water-filled
	 * first, the newer share what they left. 0: one share for all. */
	__u64 standing_newer_share_cost_ns;
	__u32 standing_tenure_tick; /* the line, modulo 2^28 as record[w]'s tick */
	__u32 cookie_dest_burst;    /* read by the program: cookie_dest_cost_ns's burst, >= 1 when it is set */
	/* bookkeeping, not read by the program */
	__u64 standing_newer_share_pps; /* the newer sources' level as computed (0: none) */
	/* Read by the program (docs/architecture.md, "SYN cookies"): from this
	 * time on (the program's clock, SLUICE_TIME_BIAS added) an ACK checked
	 * alone (cookie_acks_unlooked) from a source that sent no SYN the
	 * cookie path saw in the last SLUICE_COOKIE_SYN_TICKS ticks (the
	 * cookie_syns map) is drop_cookie without the kernel's check: it
	 * carries no cookie this host could have sent. sluiced sets it a grace
	 * (kCookieStampGraceS) after cookies come into force and after a new
	 * hash key, for the ACKs of SYNs answered before. 0: every ACK checked. */
	__u64 cookie_acks_stamped_from;
};

/* config.cookie_mode: when a SYN without standing is answered with a
 * cookie. The names are sluiced's --cookies values. One row per line
 * (bpf/sluice_abi.py parses them). */
#define SLUICE_COOKIE_MODE_TABLE(X) \
	X(SLUICE_COOKIES_OFF,      0, "off")      /* never: the newcomer budget alone, as before cookies */ \
	X(SLUICE_COOKIES_SHEDDING, 1, "shedding") /* while the breaker sheds (the default) */ \
	X(SLUICE_COOKIES_ALWAYS,   2, "always")   /* in every breaker state */

#define SLUICE_COOKIE_MODE_ENUMERATOR(sym, value, name) sym = value,
enum sluice_cookie_mode {
	SLUICE_COOKIE_MODE_TABLE(SLUICE_COOKIE_MODE_ENUMERATOR)
	SLUICE_COOKIE_MODES, /* values are 0..SLUICE_COOKIE_MODES-1 */
};
#undef SLUICE_COOKIE_MODE_ENUMERATOR

/* The listen_ports map: a bit for each TCP port that has had a listener in
 * the program's network namespace since it was loaded (set by the sockops
 * feeder on listen(), and by sluiced from sock_diag at start and then
 * every period without feeders, every minute with them; never cleared), SLUICE_LISTEN_PORT_BITS ports a word, word
 * port / 64. The cookie path looks a socket up only for a port whose bit is
 * set, so a SYN or ACK flood to ports nobody listens on is shed without the
 * socket lookup (a set bit without a listener costs only that lookup). */
#define SLUICE_LISTEN_PORT_BITS 64
#define SLUICE_LISTEN_PORT_WORDS (65536 / SLUICE_LISTEN_PORT_BITS)

/* The word of listen_ports that holds TCP port `port` (host order), and the
 * port's bit in it: the one home of this arithmetic, for the program's
 * lookup, its sockops feeder and sluiced's ListenPorts alike. */
static inline __u32 sluice_listen_port_word(__u32 port)
{
	return (port & 0xffff) / SLUICE_LISTEN_PORT_BITS;
}

static inline __u64 sluice_listen_port_bit(__u32 port)
{
	return 1ull << (port % SLUICE_LISTEN_PORT_BITS);
}

/*
 * The per-destination SYN-ACK bound (the cookie_dest map; docs/
 * architecture.md, "SYN cookies"): a SYN-ACK goes to its SYN's source, which
 * a spoofed flood chooses, so the global cookie budget alone would let a
 * flood naming one victim reflect all of it there. One token bucket
 * (struct sluice_slot) per slot, shared by the CPUs (compare-and-swap), the
 * slot the keyed SipHash of the SYN's source /24 (IPv4) or /48 (IPv6)
 * (source_key.h, sluice_dest_slot): an attacker cannot aim its networks at
 * another's slot. Networks that share a slot share one bound: a collision
 * only makes the bound stricter for them. 65,536 slots (512 KiB): a flood
 * from random sources that the global budget lets through (1,000,000 a
 * second by default) puts about 15 SYNs a second on each slot, far under the
 * bound, so only a flood that names few networks meets it.
 */
#define SLUICE_COOKIE_DEST_SLOTS 65536u

/*
 * The cookie path's SYN stamps (the cookie_syns map; docs/architecture.md,
 * "SYN cookies"): a one-byte stamp (bpf/cookie.h, sluice_syn_stamp_of: a
 * 7-bit tick of 2^32 ns, the top bit set) per slot, eight slots a 64-bit
 * word, the slot bits 10..31 of the SYN's source's plain keyed hash, written
 * by every SYN to a listened port that the cookie path answers or lets on to
 * the stack. The kernel accepts a cookie for at most 2 minutes, so an ACK
 * from a source whose slot holds no stamp from the last
 * SLUICE_COOKIE_SYN_TICKS ticks (137 s) cannot carry one
 * (config.cookie_acks_stamped_from). Sources that share a slot share a
 * stamp, and a stamp 128 ticks (550 s) older reads as new: either only lets
 * a forged ACK on to the kernel's check, as every ACK went before. 2^22
 * slots (4 MiB): 500 SYNs a second answered keep about 1.6% of them
 * stamped, 5,000 about 15%.
 */
#define SLUICE_COOKIE_SYN_SLOTS (1u << 22)
#define SLUICE_COOKIE_SYN_PER_WORD 8u
#define SLUICE_COOKIE_SYN_WORDS (SLUICE_COOKIE_SYN_SLOTS / SLUICE_COOKIE_SYN_PER_WORD)
#define SLUICE_COOKIE_SYN_TICK_SHIFT 32
#define SLUICE_COOKIE_SYN_TICKS 32u

/* config.cookie_flags: what the host's sysctls (in the program's network
 * namespace) let a SYN-ACK offer; sluiced reads them when it arms cookies. */
#define SLUICE_COOKIE_TS (1u << 0)     /* net.ipv4.tcp_timestamps = 2: timestamps without a per-connection offset */
#define SLUICE_COOKIE_SACK (1u << 1)   /* net.ipv4.tcp_sack */
#define SLUICE_COOKIE_WSCALE (1u << 2) /* net.ipv4.tcp_window_scaling */

/*
 * config.policy_flags: one word the program reads once a frame, so that it
 * sees one policy set and that set's flags together. The daemon writes a new
 * policy (lists, classes, rules) into the set the program does not read, then
 * flips SLUICE_POLICY_SET and the flags in this one word: no frame sees half
 * of the old policy and half of the new.
 */
#define SLUICE_LIST_ALLOW_V4 (1u << 0) /* the set's allow list has IPv4 entries */
#define SLUICE_LIST_ALLOW_V6 (1u << 1)
#define SLUICE_LIST_DENY_V4 (1u << 2)
#define SLUICE_LIST_DENY_V6 (1u << 3)
#define SLUICE_LIST_DENY_EXACT_V4 (1u << 8) /* the set's deny list has whole IPv4 addresses (deny_exact_v4) */
#define SLUICE_LIST_DENY_EXACT_V6 (1u << 9)
#define SLUICE_LIST_ALLOW_EXACT_V4 (1u << 10) /* the set's allow list has whole IPv4 addresses (allow_exact_v4) */
#define SLUICE_LIST_ALLOW_EXACT_V6 (1u << 11)
#define SLUICE_CLASS_PORTS (1u << 4)     /* the set has rules without sources: port_classes is read */
#define SLUICE_CLASS_PREFIX_V4 (1u << 5) /* the set has rules with IPv4 sources: class_v4 is read */
#define SLUICE_CLASS_PREFIX_V6 (1u << 6)
#define SLUICE_CLASS_DEFAULT_BYTES (1u << 7) /* the default class has a byte budget (classes[set][0]) */
#define SLUICE_CLASS_ANY (SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4 | SLUICE_CLASS_PREFIX_V6 | SLUICE_CLASS_DEFAULT_BYTES)
#define SLUICE_POLICY_SET (1u << 31)     /* which of the two policy sets is in force */
#define SLUICE_POLICY_SETS 2
#define SLUICE_POLICY_SET_OF(flags) ((flags) >> 31)

/* The value of an allow or deny entry: who put it there. The data plane
 * reads only the key. A reload reads the value: an entry the policy file put
 * there is replaced by the new file's, one added at run time (sluicectl
 * allow|deny add) is kept, after a daemon restart on adopted pins too. An
 * entry written before the origin was recorded holds 1: added at run time,
 * so kept, as every entry then was. */
#define SLUICE_LIST_AT_RUN_TIME 1
#define SLUICE_LIST_FROM_FILE 2

/* LPM trie keys for the allow/deny lists and the class prefixes, in network
 * byte order. The first data byte is the policy set (0 or 1), so one trie
 * holds both sets: prefixlen is 8 + the source prefix length, a lookup asks
 * 8 + 32 (or 8 + 128) bits. Each list and class trie holds up to
 * SLUICE_LIST_MAX_ENTRIES prefixes per set (max_entries is twice that). */
struct sluice_lpm_v4 {
	__u32 prefixlen;
	__u8 set;
	__u8 addr[4];
	__u8 _pad[3];
};

struct sluice_lpm_v6 {
	__u32 prefixlen;
	__u8 set;
	__u8 addr[16];
	__u8 _pad[3];
};
#define SLUICE_LPM_SET_BITS 8

/* Hash keys of a list's whole addresses (a /32 or a /128), in network
 * byte order, the policy set beside them: an exact-match lookup costs the
 * same at every size of the list, where a trie's walk grows with it (with
 * 10,000 IPv4 /32s, a listed source's lookup took 7x the one-entry trie's;
 * the hash's, the same as that). Address first and word-aligned: a key the
 * program builds with two stores (a key in the trie's layout, with the set
 * first, cost the hash lookup 5 ns more). A deny entry is in the trie or
 * here, never both; prefixlen is implied. */
struct sluice_exact_v4 {
	__u8 addr[4];
	__u32 set;
};

struct sluice_exact_v6 {
	__u8 addr[16];
	__u32 set;
};

/*
 * Policy classes (docs/policy.md; ctl/lib/logic/class_tables compiles a
 * policy into these). A class has an id, 0..SLUICE_CLASSES_MAX-1, kept by name
 * across reloads so that its buckets keep their tokens; id 0 is the default
 * class. A frame's class decides its budgets and the key of its buckets: the
 * source masked to the class's prefixes, hashed with the class folded into
 * the SipHash key (source_key.h), so buckets are keyed by (class, aggregated
 * source) in the one slot table.
 *
 * The default class (id 0) always takes its packet and standing budgets from
 * config and its prefixes from settings, so that a host without a policy runs
 * the code it ran before classes; its record is read only for a byte budget
 * (SLUICE_CLASS_DEFAULT_BYTES).
 */
#define SLUICE_CLASSES_MAX 64
#define SLUICE_CLASS_DEFAULT 0
#define SLUICE_CLASS_NAME_MAX 32 /* [a-z0-9_-]{1,32} (base/limits check_class_name) */
#define SLUICE_CLASS_NAME_BYTES 40

enum sluice_class_action {
	SLUICE_CLASS_LIMIT = 0,  /* held to its budgets */
	SLUICE_CLASS_EXEMPT = 1, /* counted (exempt), never limited */
	SLUICE_CLASS_DENY = 2,   /* dropped (drop_class) */
};

/* Byte budgets: a frame of L bytes costs (L x byte_cost_fp) >> 16 ns of the
 * byte bucket's refill, byte_cost_fp = round((1e9 << 16) / byte rate). The
 * byte bucket is a slot pair of its own in the slot table (source_key.h's
 * sluice_byte_slots_of); it is never ramped while recovering. */
#define SLUICE_BYTE_COST_SHIFT 16
#define SLUICE_BYTE_RATE_MAX 12500000000ull /* bytes/s: 100 Gbit/s */
#define SLUICE_BYTE_BURST_MIN 1514ull       /* one full-size Ethernet frame */
#define SLUICE_BYTE_BURST_MAX 1000000000ull

/* One class: an element of the "classes" array, index set x SLUICE_CLASSES_MAX + id. */
struct sluice_class {
	__u64 cost_ns;          /* packets: 1e9 / rate */
	__u64 burst;            /* packets */
	__u64 byte_cost_fp;     /* 0: no byte budget */
	__u64 byte_burst_ns;    /* byte burst x 1e9 / byte rate: the byte bucket's capacity in ns */
	__u64 standing_cost_ns; /* the standing bucket of a source with standing; 0: config's */
	__u64 standing_burst;
	__u32 action;           /* enum sluice_class_action */
	__u32 v4_prefix;        /* 0..32: sources of the class share a bucket per prefix */
	__u32 v6_prefix;        /* 0..128 */
	__u32 _pad;
	/* control-plane bookkeeping, not read by the program */
	__u64 rate_pps;
	__u64 byte_rate;        /* bytes/s as asked (0: none) */
	__u64 byte_burst;       /* bytes as asked */
	__u64 standing_rate_pps;
	char name[SLUICE_CLASS_NAME_BYTES]; /* NUL-padded; "" for a free id: a restarted daemon, sluicectl
	                                     * class list and stats read the names from here */
};

/*
 * What a rule can match besides the source: a frame's kind and, per kind,
 * its "port" (the destination port; for SLUICE_L4_IP the IP protocol number).
 * A non-first fragment carries no L4 header: it is SLUICE_L4_IP with its
 * protocol (6, 17), so it matches a tcp or udp rule without ports and never a
 * port rule. parse.h's sluice_parse_l4 gives both.
 */
#define SLUICE_L4_TCP 0     /* TCP, not a SYN without ACK; by destination port */
#define SLUICE_L4_TCP_SYN 1 /* TCP SYN without ACK: a connection's first frame */
#define SLUICE_L4_UDP 2     /* by destination port */
#define SLUICE_L4_IP 3      /* anything else (ICMP 1, ICMPv6 58, ...), and fragments: by IP protocol */
#define SLUICE_L4_KINDS 4

/* Rules without sources, compiled: every (kind, port) to its class id (0:
 * no rule, the default class). An element of "port_classes" holds 64 ports;
 * index (set x SLUICE_L4_KINDS + kind) x SLUICE_PORT_BLOCKS + (port >> 6). */
#define SLUICE_PORTS_PER_BLOCK 64
#define SLUICE_PORT_BLOCKS (65536 / SLUICE_PORTS_PER_BLOCK)
struct sluice_port_block {
	__u8 class_of[SLUICE_PORTS_PER_BLOCK];
};

/* Rules with sources, compiled: the value of a class_v4/class_v6 entry. The
 * entry of the longest rule prefix containing a source carries every rule
 * whose sources contain that prefix, in precedence order, as matches; the
 * first whose kinds and range hold the frame gives its class. None matching:
 * the port_classes answer. (class_match.h) */
#define SLUICE_CLASS_MATCHES 8
struct sluice_class_match {
	__u16 lo, hi;   /* inclusive: destination ports, or IP protocols for SLUICE_L4_IP */
	__u8 kinds;     /* bit (1 << SLUICE_L4_*) per kind matched */
	__u8 class_id;
	__u8 _pad[2];
};

struct sluice_class_matches {
	__u32 count; /* 1..SLUICE_CLASS_MATCHES */
	__u32 _pad;
	struct sluice_class_match m[SLUICE_CLASS_MATCHES];
};

/* Per-class counters ("class_counters", per CPU, struct sluice_counter),
 * key class id x SLUICE_OUTCOMES + outcome: written for every IP frame while
 * the set in force has any SLUICE_CLASS_* flag (then the default class's row
 * counts its frames too), never without a policy. Ids are stable by name, so
 * a reload keeps a class's counts. */
#define SLUICE_CLASS_COUNTER_KEYS (SLUICE_CLASSES_MAX * SLUICE_OUTCOMES)

/*
 * Load-time settings, fixed for the life of a loaded program. They live in the
 * program's read-only data (const volatile globals) and the daemon pins that map
 * as "settings" so a restarted daemon or sluicectl can read the hash key and
 * the policy the pins were made under.
 */
struct sluice_settings {
	__u64 hash_key[2];   /* SipHash key, from getrandom() */
	__u32 layout_version;/* SLUICE_LAYOUT_VERSION at load */
	__u32 slot_mask;     /* slots - 1 */
	__u32 v4_prefix;     /* 0..32 */
	__u32 v6_prefix;     /* 0..128 */
	__u32 dry_run;       /* 1: count would-drops, pass everything */
	__u32 one_choice;    /* 1: one slot per source (benchmarks only) */
	__u32 sample_every;  /* 0: off; else a power of two: 1 in this many drops is sampled */
	__u32 standing_set_mask;    /* standing sets - 1 */
	__u32 standing_lapse_ticks; /* an entry lapses this many ticks (2^30 ns) after it was stamped */
	/* The host's ephemeral port range (net.ipv4.ip_local_port_range at load):
	 * a UDP socket bound to a port in it is a client's, so its peers earn
	 * standing; one bound elsewhere is a server's, whose replies never do. */
	__u32 ephemeral_lo;
	__u32 ephemeral_hi;
	/* Observed standing (opt-in): a source admitted by its buckets while
	 * serving in this many distinct ticks (2^30 ns) earns standing; 0: off,
	 * and the observed map has one set. */
	__u32 observe_periods;
	__u32 observe_set_mask; /* observed sets - 1 (standing_set_mask when on, 0 when off) */
	__u32 penalty_set_mask; /* standing_penalty sets - 1 */
	/* The data plane's clock (jiffies_clock.h): ns a jiffy, TICK_NSEC,
	 * clock_getres(CLOCK_MONOTONIC_COARSE) at load (ctl/lib/bpf's
	 * dataplane_clock, the one place that reads it). */
	__u32 clock_tick_ns;
	/* Always 0: the key of a one-element array's element, read from here
	 * where a frame's path cannot spare the stack for it (maps.bpf.h). */
	__u32 zero_key;
};

/*
 * Sampled drops, for `sluicectl top` ("who is flooding me") and the upstream
 * signature rule (docs/upstream.md). The program sends 1 in
 * settings.sample_every of the frames it drops, a random gap apart (the gap
 * drawn once a sample, sample.bpf.h's sampled_drop), with the source as the frame carried it (the
 * daemon masks it to the configured prefix) to the drop_samples ring buffer,
 * without a wakeup: the daemon drains it once per control period. A full ring
 * loses samples (the daemon is behind or not running), never frames. No
 * per-source state is kept in the kernel; the daemon keeps a bounded
 * heavy-hitters summary (ctl/lib/logic/heavy_hitters.h).
 *
 * The signature fields (dst, proto, dport, tcp_flags, len) are read from the
 * frame again only once a sample is taken (sample.bpf.h, sluice_sample), so
 * the drop path pays nothing for them. They are what an RFC 8955 FlowSpec
 * rule matches on: a field the frame does not have is 0 (dport and
 * tcp_flags of a non-TCP/UDP frame or a later fragment; tcp_flags of UDP;
 * every one of them but len for a frame whose headers are cut short).
 */
struct sluice_drop_sample {
	__u64 w[2];     /* the source address as struct sluice_source holds it (parse.h) */
	__u64 dst[2];   /* the destination address, in the same form */
	__u8 family;    /* 4 or 6 */
	__u8 outcome;   /* SLUICE_DROP_RATE, SLUICE_DROP_SHED or SLUICE_DROP_DENY */
	__u8 proto;     /* the IP protocol (IPv6: past the extension headers parse.h walks) */
	__u8 tcp_flags; /* TCP's flags byte (header byte 13: CWR..FIN), 0 if not TCP */
	__u16 dport;    /* TCP or UDP destination port, host order; 0 otherwise */
	__u16 len;      /* the frame's length as XDP saw it (data_end - data, capped at 65535) */
	__u16 ip_len;   /* the IP packet's length from its header (IPv4 total length, IPv6 payload
			 * length + 40): what FlowSpec's packet-length matches (RFC 8955 type 10),
			 * without L2 header, VLAN tags or Ethernet padding */
	__u8 _pad[6];
};

/* 9362 records of 56 bytes (the ring's 8-byte header + the 48-byte sample):
 * more than one period holds at 1 in 1024 of 8 Mpps of drops (7813). */
#define SLUICE_SAMPLE_RING_BYTES (512u * 1024)
#define SLUICE_SAMPLE_EVERY_DEFAULT 1024u
#define SLUICE_SAMPLE_EVERY_MAX (1u << 24)

/*
 * Capture (`sluicectl capture`, bpf/capture.h, docs/architecture.md
 * "Capture"): while the daemon runs a capture for a client, the program
 * copies the first snaplen bytes of the frames whose final outcome is in
 * outcome_mask, 1 in sample_every of them per CPU, with a
 * struct sluice_capture_record in front, to the capture_events perf event
 * array (bpf_perf_event_output with the XDP context: the kernel copies the
 * frame straight into the reader's per-CPU buffer).
 *
 * struct sluice_capture is the one element of the "capture" map, a global
 * of its own data section (.data.capture), so that the program's whole
 * cost without a capture is one load of outcome_mask and a branch.
 * outcome_mask 0: off. The daemon renews lease_ns (bpf_ktime_get_ns) while
 * it serves the capture; a frame that finds it past turns the capture off
 * itself, so a daemon killed with SIGKILL cannot leave it on (and the perf
 * array's entries go with the daemon's file: nothing is copied meanwhile).
 */
struct sluice_capture {
	__u32 outcome_mask;  /* bit (1 << outcome) per outcome copied; 0: no capture */
	__u32 sample_every;  /* 1..SLUICE_CAPTURE_SAMPLE_EVERY_MAX: 1 in this many matching frames, per CPU */
	__u32 snaplen;       /* SLUICE_CAPTURE_SNAPLEN_MIN..SLUICE_CAPTURE_SNAPLEN_MAX bytes copied at most */
	__u32 _pad;
	__u64 lease_ns;      /* bpf_ktime_get_ns() past which the capture is off */
	__u64 generation;    /* bumped by the daemon on every start: capture_stats restart from 0 */
};

/* Per CPU (the "capture_stats" map, one element): the program's own count of
 * what it did for the capture of generation `generation`. */
struct sluice_capture_stats {
	__u64 generation; /* the capture these count for; another one resets them */
	__u64 matched;    /* frames whose outcome was in the mask */
	__u64 copied;     /* sampled and written to the perf buffer */
	__u64 lost;       /* sampled, the perf buffer full (the reader behind) or gone */
};

/* What comes before the frame's bytes in one perf sample. */
struct sluice_capture_record {
	__u64 time_ns;   /* bpf_ktime_get_ns() (CLOCK_MONOTONIC); the daemon adds the wall clock's offset */
	__u32 wire_len;  /* the frame's length */
	__u32 cap_len;   /* bytes that follow: min(wire_len, snaplen) */
	__u16 outcome;   /* enum sluice_outcome */
	__u16 cpu;
	__u32 _pad;
};

#define SLUICE_CAPTURE_SNAPLEN_MIN 14u     /* an Ethernet header */
#define SLUICE_CAPTURE_SNAPLEN_MAX 2048u   /* a full 1500-byte-MTU frame with two VLAN tags */
#define SLUICE_CAPTURE_SNAPLEN_DEFAULT 128u
#define SLUICE_CAPTURE_SAMPLE_EVERY_MAX (1u << 24)
/* Outcomes the capture call never sees: non_ip frames return before it,
 * would_drop is an overlay counted after it (its frame is captured under
 * the drop reason). */
#define SLUICE_CAPTURE_NEVER ((1u << SLUICE_NON_IP) | (1u << SLUICE_WOULD_DROP))

/*
 * Standing: the sources this host has a relationship with that the kernel
 * verified (bpf/standing.h has the math). A fixed table of sets, a power of two
 * of them fixed at load, indexed by the same keyed hash as the buckets; each
 * set holds SLUICE_STANDING_WAYS entries of one u64:
 *   bits 63..32  fingerprint: the hash's high half, never 0 (0: empty)
 *   bits 31..0   stamp: when the source was last seen, in ticks of 2^30 ns
 *                (about 1.07 s) of the biased clock, wrapping after 146 years
 * One word per entry, so a reader never sees half a write, and the ways of a
 * set are one cache line, so a lookup reads one line; the matched way's
 * standing bucket and record are in the next lines. The default, 2^16 sets
 * (524,288 entries, 20 MiB), keeps 10^5 sources with standing losing
 * 0.0024% of their entries to full sets and 2x10^5 losing 0.19% (Poisson
 * occupancy, 8 ways).
 */
#define SLUICE_STANDING_WAYS 8
#define SLUICE_STANDING_SOURCE_WORDS 16 /* 2 x SLUICE_STANDING_WAYS: a way's source, 16 bytes */
#define SLUICE_STANDING_TICK_SHIFT 30
#define SLUICE_STANDING_SETS_MIN (1u << 4)
#define SLUICE_STANDING_SETS_MAX (1u << 22)
#define SLUICE_STANDING_SETS_DEFAULT (1u << 16)
/* Lapse: an entry stays live this long after its last grant or refresh,
 * in seconds (converted to ticks at load, rounded up). */
#define SLUICE_STANDING_LAPSE_MIN_S 1u
#define SLUICE_STANDING_LAPSE_MAX_S (7u * 24 * 3600)
#define SLUICE_STANDING_LAPSE_DEFAULT_S 3600u
/* Seconds to ticks, rounded up: a lapse never ends before the time asked. */
#define SLUICE_STANDING_TICKS_OF(s)                                                                \
	((__u32)(((__u64)(s) * SLUICE_NSEC_PER_SEC + (1ull << SLUICE_STANDING_TICK_SHIFT) - 1) >>     \
		 SLUICE_STANDING_TICK_SHIFT))
/* Linux's default net.ipv4.ip_local_port_range, for when it cannot be read. */
#define SLUICE_EPHEMERAL_LO_DEFAULT 32768u
#define SLUICE_EPHEMERAL_HI_DEFAULT 60999u
/* Observed standing: distinct ticks a source must be admitted in (0: off). */
#define SLUICE_OBSERVE_PERIODS_MAX 255u

/*
 * Why a source has standing: the feeder that first granted it. One row per
 * line (bpf/sluice_abi.py parses them); the names are `sluicectl standing`'s.
 */
#define SLUICE_STANDING_REASON_TABLE(X) \
	X(SLUICE_BY_ACCEPTED,  1, "accepted")  /* a TCP peer completed the handshake to a local listener */ \
	X(SLUICE_BY_CONNECTED, 2, "connected") /* the host opened a TCP connection to it */ \
	X(SLUICE_BY_UDP,       3, "udp")       /* a UDP client socket of the host connected or sent to it */ \
	X(SLUICE_BY_EXISTING,  4, "existing")  /* the peer of a connection that existed when sluiced started */ \
	X(SLUICE_BY_OBSERVED,  5, "observed")  /* admitted in observe_periods distinct ticks while serving */ \
	X(SLUICE_BY_COOKIE,    6, "cookie")    /* its ACK carried a valid SYN cookie the program sent it */

#define SLUICE_STANDING_REASON_ENUMERATOR(sym, value, name) sym = value,
enum sluice_standing_reason {
	SLUICE_STANDING_REASON_TABLE(SLUICE_STANDING_REASON_ENUMERATOR)
	SLUICE_STANDING_REASONS, /* values are 1..SLUICE_STANDING_REASONS-1; 0: unknown */
};
#undef SLUICE_STANDING_REASON_ENUMERATOR

/*
 * One set of the standing table (one map value, 336 bytes):
 *   way[w]       fingerprint | stamp, as above; the only word a lookup reads
 *                until it matches
 *   empty_at[w]  way w's standing bucket, struct sluice_slot's form (0: full),
 *                reset to full when a grant gives the way to a new source
 *   record[w]    bits 31..28 the reason (enum sluice_standing_reason),
 *                bits 27..0 the tick of the first grant, modulo 2^28 (about
 *                9 years): "since when" for `sluicectl standing`
 *   seen[w]      frames of way w's source that reached its standing bucket
 *                (admitted or not) or the closed valve, wrapping: the
 *                daemon's deltas are its demand for the fair share and its
 *                test of responsiveness
 *   source[w]    the granted source, masked as it was hashed (IPv4 in the
 *                first word's low 4 bytes, network order; IPv6 16 bytes):
 *                how the daemon names a source it revokes or lists
 *   port[w]      0: the standing holds for every frame of the source; else
 *                (a UDP grant, the peer a local client chose) only for UDP
 *                from this source port (host order): a DNS server's answers
 *                pass, not everything else from its address
 */
struct sluice_standing_set {
	__u64 way[SLUICE_STANDING_WAYS];
	__u64 empty_at[SLUICE_STANDING_WAYS];
	__u32 record[SLUICE_STANDING_WAYS];
	__u32 seen[SLUICE_STANDING_WAYS];
	__u64 source[SLUICE_STANDING_SOURCE_WORDS]; /* way w: words 2w and 2w + 1 */
	__u16 port[SLUICE_STANDING_WAYS];
};

/*
 * Revoked standing (a source that kept sending far over its share, or the
 * operator's `sluicectl standing revoke`): one set per 8 standing sets
 * (settings.penalty_set_mask), indexed by the same hash; each entry one u64,
 * written by the daemon only:
 *   bits 63..32  fingerprint, as in the standing table (0: empty)
 *   bits 31..8   the tick its penalty ends, modulo 2^24 (194 days; a penalty
 *                is at most 7 days, so "ended" is right across the wrap)
 *   bits 7..0    revocations so far (the penalty doubles with each)
 * A grant (any feeder, a cookie) of a source whose penalty runs is refused.
 * source[] keeps way w's source (words 2w and 2w + 1, as the standing set's
 * source[]): the program never reads it; the daemon carries the penalty to
 * its place under a new hash key with it (ctl/lib/bpf/rekey.cpp).
 */
#define SLUICE_PENALTY_TICK_MASK 0xffffffu
#define SLUICE_PENALTY_SETS_DIVISOR 8u
struct sluice_penalty_set {
	__u64 way[SLUICE_STANDING_WAYS];
	__u64 source[SLUICE_STANDING_SOURCE_WORDS];
};

/*
 * The per-prefix quota (docs/architecture.md, "Standing buys a share"): the
 * prefix_count map, one __u32 per way of the standing table, indexed by the
 * keyed hash of a source's /24 (IPv4) or /48 (IPv6), sluice_quota_bit().
 * Bits 15..0 count the prefix's entries, bits 31..16 those of them a
 * handshake proved. The program adds a new source at its grant (so a quota
 * holds at once, whatever the rate of grants), and refuses a new source
 * whose proof is weaker than a handshake once the prefix holds
 * config.prefix_quota entries, and a new handshake once it holds that many
 * handshakes (weak grants never keep out a handshake: the daemon's sweep
 * evicts them for it). Nothing in the program takes an entry away: the
 * daemon recounts the table every sweep and writes the counts whole.
 */
#define SLUICE_QUOTA_COUNT_MASK 0xffffu
#define SLUICE_QUOTA_HANDSHAKE_SHIFT 16
/* The largest quota: a prefix's entries reach at most twice its quota (a
 * quota of weak grants, then one of handshakes), plus a grant per CPU that
 * raced past the check, and must stay within bits 15..0. */
#define SLUICE_PREFIX_QUOTA_MAX 32000u

/* One grant budget per local user (uid & (slots - 1)): the UDP feeders'
 * grants are the only ones a user can make at will, so they are the ones
 * bounded per prover. */
#define SLUICE_GRANT_QUOTA_SLOTS 4096u
/* grant_quota's entries: [0, SLOTS) the users' rate buckets (grant_cost_ns,
 * grant_burst), [SLOTS, 2 x SLOTS) their totals (grant_total_cost_ns,
 * grant_max). */
#define SLUICE_GRANT_QUOTA_ENTRIES (2 * SLUICE_GRANT_QUOTA_SLOTS)

/* The host's own addresses (the daemon's network namespace, every
 * interface), as the standing table keeps a source (16 bytes, IPv4 as
 * ::ffff:a.b.c.d), unmasked: a feeder never grants one of them. Written by
 * the daemon at start and with every listener rescan. */
#define SLUICE_OWN_ADDRS_MAX 1024u
struct sluice_addr16 {
	__u64 w[2];
};

/*
 * Observed standing's candidates (settings.observe_periods > 0), one set per
 * standing set, indexed alike; each entry one u64:
 *   bits 63..32  fingerprint, as in the standing table (0: empty)
 *   bits 31..8   the last tick the source was admitted in, modulo 2^24
 *   bits 7..0    distinct ticks it was admitted in so far
 * A candidate reaching observe_periods is granted standing (SLUICE_BY_OBSERVED)
 * and its entry emptied. Candidates not seen for the lapse time are reused.
 */
struct sluice_observed_set {
	__u64 way[SLUICE_STANDING_WAYS];
};

/* Pin names under <pin-dir>/<ifname>/ */
#define SLUICE_PIN_LINK "link"
#define SLUICE_PIN_SLOTS "slots"
#define SLUICE_PIN_CONFIG "config"
#define SLUICE_PIN_COUNTERS "counters"
#define SLUICE_PIN_SETTINGS "settings"
#define SLUICE_PIN_ALLOW_V4 "allow_v4"
#define SLUICE_PIN_ALLOW_V6 "allow_v6"
#define SLUICE_PIN_DENY_V4 "deny_v4"
#define SLUICE_PIN_DENY_V6 "deny_v6"
#define SLUICE_PIN_DENY_EXACT_V4 "deny_exact_v4"
#define SLUICE_PIN_DENY_EXACT_V6 "deny_exact_v6"
#define SLUICE_PIN_ALLOW_EXACT_V4 "allow_exact_v4"
#define SLUICE_PIN_ALLOW_EXACT_V6 "allow_exact_v6"
#define SLUICE_PIN_DROP_SAMPLES "drop_samples"
#define SLUICE_PIN_STANDING "standing"
#define SLUICE_PIN_NEWCOMERS "newcomers"
#define SLUICE_PIN_OBSERVED "observed"
#define SLUICE_PIN_CLASSES "classes"
#define SLUICE_PIN_CLASS_V4 "class_v4"
#define SLUICE_PIN_CLASS_V6 "class_v6"
#define SLUICE_PIN_PORT_CLASSES "port_classes"
#define SLUICE_PIN_CLASS_COUNTERS "class_counters"
#define SLUICE_PIN_COOKIE_BUDGET "cookie_budget"
#define SLUICE_PIN_LISTEN_PORTS "listen_ports"
#define SLUICE_PIN_CAPTURE "capture"
#define SLUICE_PIN_CAPTURE_EVENTS "capture_events"
#define SLUICE_PIN_CAPTURE_STATS "capture_stats"
#define SLUICE_PIN_STANDING_PENALTY "standing_penalty"
#define SLUICE_PIN_GRANT_QUOTA "grant_quota"
#define SLUICE_PIN_OWN_ADDRS "own_addrs"
#define SLUICE_PIN_PREFIX_COUNT "prefix_count"
#define SLUICE_PIN_COOKIE_DEST "cookie_dest"
#define SLUICE_PIN_COOKIE_SYNS "cookie_syns"
/* The standing feeders' bpf_links on the cgroup v2 root. */
#define SLUICE_PIN_SOCKOPS_LINK "sockops_link"
#define SLUICE_PIN_CONNECT4_LINK "connect4_link"
#define SLUICE_PIN_CONNECT6_LINK "connect6_link"
#define SLUICE_PIN_SENDMSG4_LINK "sendmsg4_link"
#define SLUICE_PIN_SENDMSG6_LINK "sendmsg6_link"
/* Instead of "link" when the program runs under libxdp's dispatcher
 * (sluiced --multiprog): the program itself; libxdp holds its link. */
#define SLUICE_PIN_MULTIPROG "multiprog_prog"

#endif /* SLUICE_ABI_H */
