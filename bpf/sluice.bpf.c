// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice.bpf.c - the XDP program: parse -> lists -> class -> two slots -> verdict.
 *
 * The way of a frame:
 *   parse.h        Ethernet (+ up to 2 VLAN tags) -> IPv4/IPv6 source, or
 *                  non-IP (passed), or malformed (dropped)
 *   policy_flags   read once: the policy set in force (lists, classes) and
 *                  what it holds
 *   deny list      only when the config says the family's list has entries
 *   class          only under a policy (a SLUICE_CLASS_* flag; in
 *                  sluice_judge_policy, but port rules alone read a plain
 *                  header's class inline, port_class): the class prefix entry
 *                  of the source matched on (kind, port) from parse.h's
 *                  sluice_parse_l4, else the port table, else the default
 *                  class (class_match.h); deny -> drop_class, exempt ->
 *                  exempt, in every state
 *   source_key.h   mask to the prefix, keyed SipHash: two slot indices, and
 *                  the standing set and fingerprint (standing.h). A class
 *                  other than the default: its prefixes, the key with its id
 *                  folded in, its budgets; standing by the plain hash
 *   serving, recovering:
 *     cookies      (config.cookie_mode always only) a TCP frame of a source
 *                  without standing takes the cookie path first, as while
 *                  shedding (below); what it does not take goes on
 *     bucket.h     admit when the fuller slot of the pair has a token; both
 *                  pay (recovering: at the ramped cost, admission_ppm, but a
 *                  source with standing at its whole cost) -> passed. Serving,
 *                  only a refused frame looks up standing: a source with
 *                  standing then draws on its standing bucket (its way's
 *                  empty_at) -> standing; else drop_rate. So a source with
 *                  standing has rate + standing-rate in every state, and the
 *                  ramp is the others'.
 *   shedding:      allowlisted sources pass; then standing is looked up:
 *     standing     the valve closed -> drop_valve; else slot pair (unramped),
 *                  then standing bucket -> standing, or drop_rate
 *     none         the valve closed -> drop_shed; else, cookies in force
 *                  (config.cookie_mode), a TCP SYN to a listener is answered
 *                  with a SYN cookie and the ACK bringing one back proved
 *                  (sluice_cookie: cookie_sent, XDP_TX; cookie_proved and
 *                  standing; drop_cookie, drop_cookie_budget,
 *                  drop_cookie_unfit); anything else: the newcomer budget
 *                  (one bucket per CPU, read before any slot, so a shed frame
 *                  pays no CAS): empty -> drop_shed; else the slot pair, and
 *                  the budget pays only when it admits (one heavy newcomer
 *                  cannot spend the whole budget) -> newcomer, or drop_rate
 *   observed       (settings.observe_periods, opt-in) a frame passed while
 *                  serving counts its source's distinct ticks; at
 *                  observe_periods the source is granted standing (observed)
 *   byte budget    (a class's byte_cost_fp) once the packet budget admitted:
 *                  a second slot pair (sluice_byte_hash) pays the frame's
 *                  length -> or drop_bytes
 *   counters       one per-CPU counter per outcome, packets and bytes: every
 *                  frame under exactly one (would_drop overlays, see sluice_xdp);
 *                  under a policy also its class's (class_counters)
 *
 * Work the configuration does not need costs nothing: the lists are looked up
 * only when the daemon has marked them non-empty in config.policy_flags (one LPM
 * lookup costs more than the whole bucket update), the allowlist only while
 * shedding, the standing table only while shedding or for a frame its slot
 * pair refused, the observed map only when observed standing is on (the
 * verifier folds it away otherwise), the class maps and the frame's L4 only
 * under a policy that has rules, and the clock is read only on the bucket and
 * standing paths.
 *
 * The same object carries the standing table's feeders (see "Standing" in
 * docs/architecture.md): a sock_ops program granting the peer of every TCP
 * connection that completed its handshake (reason accepted, or connected for
 * one the host opened), and cgroup connect/sendmsg programs granting the
 * peers the host chose to talk to (connected for TCP, udp for UDP). The
 * daemon attaches them with bpf_links on the cgroup v2 root; they share
 * `settings` (hash key, prefixes) and the `standing` map with the XDP
 * program. A grant records why and since when (record[w]) for a new source;
 * a refresh keeps both, and the standing bucket.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice_abi.h"
#include "bucket.h"
#include "capture.h"
#include "class_match.h"
#include "cookie.h"
#include "parse.h"
#include "source_key.h"
#include "standing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* For libxdp's multiprog dispatcher (sluiced --multiprog; xdp_helpers.h's
 * XDP_RUN_CONFIG, spelled out): run at priority 20, after static filters such
 * as xdp-filter (10) and before programs at libxdp's default (50); a frame
 * sluice passes goes on to the next program, one it drops ends there. BTF
 * only: libbpf skips the section, the bpf_link path never reads it. */
struct {
	__uint(priority, 20);
	__uint(XDP_PASS, 1);
} _sluice_xdp SEC(".xdp_run_config");

/* The clock: coarse by default (see judge()); the fine clock is a build
 * variant that exists only so bench.sh can show what it would cost. */
#ifdef SLUICE_FINE_CLOCK
#define SLUICE_CLOCK() bpf_ktime_get_ns()
#else
#define SLUICE_CLOCK() bpf_ktime_get_coarse_ns()
#endif

/* Cut points for bench.sh's cost breakdown only (scripts/bench.sh builds one
 * object per define; the default build defines none of them, and then none of
 * this exists). Each variant stops the frame at that point with XDP_DROP and
 * counts nothing; SLUICE_BENCH_KEEP makes the work before the cut observable
 * so that the compiler cannot remove it. Stages, in program order; a path
 * passes some of them (scripts/bench/fig1_cost.py, PATH_STAGES):
 *   PARSE     Ethernet/VLAN/IP parse
 *   HASH      + config lookup, breaker/list checks, prefix mask, SipHash (and,
 *             serving, the slot indices)
 *   LOOKUP    + the two slot lookups (serving)
 *   CLOCK     + the clock read (serving)
 *   BUCKET    + the two-choice bucket update (serving)
 *   STANDING  + the standing lookup (shedding: with the clock read before it;
 *             serving: a frame its slot pair refused)
 *   NEWCOMER  + the newcomer budget (shedding, no standing)
 *   VERDICT   + the rest of the judgement (the drop sampling's countdown, the
 *             deny list): the outcome, not yet counted */
#if defined(SLUICE_BENCH_STOP_AFTER_PARSE) || defined(SLUICE_BENCH_STOP_AFTER_HASH) ||             \
	defined(SLUICE_BENCH_STOP_AFTER_LOOKUP) || defined(SLUICE_BENCH_STOP_AFTER_CLOCK) ||       \
	defined(SLUICE_BENCH_STOP_AFTER_BUCKET) || defined(SLUICE_BENCH_STOP_AFTER_STANDING) ||    \
	defined(SLUICE_BENCH_STOP_AFTER_NEWCOMER) || defined(SLUICE_BENCH_STOP_AFTER_VERDICT)
#define SLUICE_BENCH_CUT 1
#define SLUICE_BENCH_KEEP(x) asm volatile("" : : "r"(x))
/* judge() returns this to sluice_xdp, which returns XDP_DROP at once. */
#define SLUICE_BENCH_STOPPED 0xff
#endif

/* Load-time settings (read-only once loaded; the verifier folds the branches
 * that depend on them, so a non-dry-run program carries no dry-run code). */
const volatile struct sluice_settings settings = {
	.layout_version = SLUICE_LAYOUT_VERSION,
	.slot_mask = SLUICE_SLOTS_DEFAULT - 1,
	.v4_prefix = 32,
	.v6_prefix = 64,
	.sample_every = SLUICE_SAMPLE_EVERY_DEFAULT,
	.standing_set_mask = SLUICE_STANDING_SETS_DEFAULT - 1,
	.standing_lapse_ticks = SLUICE_STANDING_TICKS_OF(SLUICE_STANDING_LAPSE_DEFAULT_S),
	.ephemeral_lo = SLUICE_EPHEMERAL_LO_DEFAULT,
	.ephemeral_hi = SLUICE_EPHEMERAL_HI_DEFAULT,
};

/* max_entries is replaced at load by the configured table size. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_SLOTS_DEFAULT);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_OUTCOMES);
	__type(key, __u32);
	__type(value, struct sluice_counter);
} counters SEC(".maps");

/* The lists and the class prefixes: one trie per family each, holding both
 * policy sets (the key's first data byte is the set). */
#define SLUICE_LPM_MAP(name, keytype, valuetype)                                   \
	struct {                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                               \
		__uint(max_entries, SLUICE_POLICY_SETS * SLUICE_LIST_MAX_ENTRIES); \
		__uint(map_flags, BPF_F_NO_PREALLOC);                              \
		__type(key, keytype);                                              \
		__type(value, valuetype);                                          \
	} name SEC(".maps")

SLUICE_LPM_MAP(allow_v4, struct sluice_lpm_v4, __u8);
SLUICE_LPM_MAP(allow_v6, struct sluice_lpm_v6, __u8);
SLUICE_LPM_MAP(deny_v4, struct sluice_lpm_v4, __u8);
SLUICE_LPM_MAP(deny_v6, struct sluice_lpm_v6, __u8);
SLUICE_LPM_MAP(class_v4, struct sluice_lpm_v4, struct sluice_class_matches);
SLUICE_LPM_MAP(class_v6, struct sluice_lpm_v6, struct sluice_class_matches);

/* The policy classes (sluice_abi.h, struct sluice_class): index
 * set x SLUICE_CLASSES_MAX + id (class_match.h's sluice_class_index). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_SETS * SLUICE_CLASSES_MAX);
	__type(key, __u32);
	__type(value, struct sluice_class);
} classes SEC(".maps");

/* Rules without sources, compiled: (set, kind, port) -> class id
 * (class_match.h's sluice_port_block_index). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_SETS * SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS);
	__type(key, __u32);
	__type(value, struct sluice_port_block);
} port_classes SEC(".maps");

/* Per-class counters: class id x SLUICE_OUTCOMES + outcome, written only
 * while the set in force has a SLUICE_CLASS_* flag. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_CLASS_COUNTER_KEYS);
	__type(key, __u32);
	__type(value, struct sluice_counter);
} class_counters SEC(".maps");

/* The standing table (sluice_abi.h, standing.h); max_entries is replaced at
 * load by the configured number of sets. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_STANDING_SETS_DEFAULT);
	__type(key, __u32);
	__type(value, struct sluice_standing_set);
} standing SEC(".maps");

/* The newcomer budget while shedding: one bucket per CPU (no atomics; cost
 * and burst in config are per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} newcomers SEC(".maps");

/* The cookie budget: the SYN-ACKs the program may send, one bucket per CPU
 * like the newcomer budget (cost and burst in config are per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} cookie_budget SEC(".maps");

/* TCP ports that have had a listener (sluice_abi.h, "The listen_ports map"). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_LISTEN_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} listen_ports SEC(".maps");

/* Has TCP port `port` (host order) had a listener? */
static __always_inline int port_listened(__u32 port)
{
	__u32 word = sluice_listen_port_word(port);
	const __u64 *bits = bpf_map_lookup_elem(&listen_ports, &word);

	return bits && (*bits & sluice_listen_port_bit(port));
}

/* The cookie path's scratch, one per CPU: the SYN's headers as the kernel's
 * cookie helpers read them, the reply cookie.h builds, and every other
 * value of the path that would be on the stack. Off the stack: under
 * sluice_xdp and sluice_judge_policy (448 of the 512 bytes) sluice_cookie
 * has 64 left. */
struct cookie_scratch {
	__u8 ip[40];
	__u8 th[SLUICE_TCP_HDR_MAX];
	__u8 reply[SLUICE_SYNACK_MAX];
	struct sluice_syn_options opts;
	struct sluice_cookie_params params;
	struct bpf_sock_tuple tuple;
	struct sluice_source src;
	struct sluice_l4 l4;
	__u32 tcp_len; /* the option walk's (syn_option_step) */
	__u32 off;
	/* what sluice_cookie keeps across its helper calls: here, not spilled */
	__u64 hash, now;
	__u32 l3_off, ip_len, is_v6, ack;
	__u32 frame_len; /* the SYN's */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cookie_scratch);
} cookie_scratch SEC(".maps");

/* Observed standing's candidates (standing.h); max_entries is replaced at
 * load: the standing sets when observed standing is on, else 1. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_observed_set);
} observed SEC(".maps");

/* Sampled drops for `sluicectl top` (sluice_abi.h, struct sluice_drop_sample). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SLUICE_SAMPLE_RING_BYTES);
} drop_samples SEC(".maps");

static __always_inline void count(__u32 outcome, __u64 bytes)
{
	struct sluice_counter *c = bpf_map_lookup_elem(&counters, &outcome);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* Drop sampling's countdown, one per CPU: the drops this CPU lets go by
 * before its next sample. Not state (never pinned): a new load starts it
 * at 0, a sample at the first drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sample_countdown SEC(".maps");

/*
 * One drop sample to the ring: the source (as the caller has it: the frame's
 * or the masked one), the family and the outcome from the caller; the
 * signature (sluice_abi.h, struct sluice_drop_sample) read here from ctx
 * again, with parse.h's helper-free parse. A global function, called only
 * once a sample is taken (about 1 in settings.sample_every drops): the drop
 * path keeps nothing of the headers it did not need for its verdict, and
 * pays for this parse only in the sample's own cost. fo is family << 8 |
 * outcome (five arguments at most).
 */
__noinline int sluice_sample(struct xdp_md *ctx, __u64 w0, __u64 w1, __u32 fo)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	struct sluice_drop_sample *s = bpf_ringbuf_reserve(&drop_samples, sizeof(*s), 0);

	if (!s)
		return 0; /* ring full: the daemon is behind or down; the sample is lost */
	__u64 len = end - data;

	s->w[0] = w0;
	s->w[1] = w1;
	s->dst[0] = 0;
	s->dst[1] = 0;
	s->family = fo >> 8;
	s->outcome = fo & 0xff;
	s->proto = 0;
	s->tcp_flags = 0;
	s->dport = 0;
	s->len = len > 0xffff ? 0xffff : len;
	s->ip_len = 0;

	struct sluice_source src;
	const __u8 *l3 = data, *l4 = 0;
	__u32 proto = 0;
	int kind = sluice_parse_at(data, end, &src, &l3);

	/* A frame dropped for being cut short carries what could be read. */
	if ((kind == SLUICE_PARSE_IPV4 || kind == SLUICE_PARSE_IPV6) &&
	    !sluice_find_l4(l3, end, kind == SLUICE_PARSE_IPV6, &proto, &l4)) {
		if (kind == SLUICE_PARSE_IPV4) {
			if (l3 + 20 <= end) {
				s->dst[0] = SLUICE_LOAD(__u32, l3 + 16);
				s->ip_len = sluice_be16_at(l3 + 2);
			}
		} else if (l3 + 40 <= end) {
			s->dst[0] = SLUICE_LOAD(__u64, l3 + 24);
			s->dst[1] = SLUICE_LOAD(__u64, l3 + 32);
			s->ip_len = sluice_be16_at(l3 + 4) + 40;
		}
		s->proto = proto;
		if (l4 && proto == SLUICE_IPPROTO_TCP && l4 + 20 <= end) {
			s->dport = sluice_be16_at(l4 + 2);
			s->tcp_flags = l4[13];
		} else if (l4 && proto == SLUICE_IPPROTO_UDP && l4 + 8 <= end) {
			s->dport = sluice_be16_at(l4 + 2);
		}
	}
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	return 0;
}

/* A drop verdict, sampled: 1 in settings.sample_every of them (N) go to the
 * ring (sluice_sample), without a wakeup (the daemon drains it each period).
 * judge() calls this only on its drop returns, so the pass path pays
 * nothing. The gap to the next sample is drawn when a sample is taken,
 * uniform on 1..2N-1 (mean N), so a drop pays a decrement and the draw is
 * paid once a sample: a bpf_get_prandom_u32() a drop cost 4 ns a drop
 * (figure 1, issue 19), more than the drop path's margin to the pass path.
 * Random gaps, not every Nth drop: a sender cannot time its frames to fall
 * between samples. Sampling off (sample_every 0) leaves a load and a test.
 * ctx is live on every path that drops anyway (sluice_xdp counts the frame's
 * length from it after the verdict), so passing it here costs no work. */
static __always_inline __u32 sampled_drop(struct xdp_md *ctx, const struct sluice_source *src, int is_v6,
					  __u32 outcome)
{
	__u32 zero = 0;

	if (!settings.sample_every)
		return outcome;
	__u32 *left = bpf_map_lookup_elem(&sample_countdown, &zero);

	if (!left)
		return outcome; /* cannot happen: a one-element array */
	if (*left) {
		*left -= 1;
		return outcome;
	}
	*left = bpf_get_prandom_u32() % (2 * settings.sample_every - 1);
	sluice_sample(ctx, src->w[0], src->w[1], (is_v6 ? 6 : 4) << 8 | outcome);
	return outcome;
}

/* The source's entry in policy set `set` of the v4 or v6 LPM trie (a list,
 * or the class prefixes), NULL if none: the whole key, set byte and address,
 * is asked. */
static __always_inline void *lpm_lookup(void *v4_map, void *v6_map, const struct sluice_source *src,
					int is_v6, __u32 set)
{
	if (is_v6) {
		struct sluice_lpm_v6 k = { .prefixlen = SLUICE_LPM_SET_BITS + 128, .set = set };

		__builtin_memcpy(k.addr, src->w, 16);
		return bpf_map_lookup_elem(v6_map, &k);
	}
	struct sluice_lpm_v4 k4 = { .prefixlen = SLUICE_LPM_SET_BITS + 32, .set = set };

	__builtin_memcpy(k4.addr, src->w, 4);
	return bpf_map_lookup_elem(v4_map, &k4);
}

/* Is the source in the v4 or v6 list of policy set `set`? */
static __always_inline int listed(void *v4_map, void *v6_map, const struct sluice_source *src,
				  int is_v6, __u32 set)
{
	return lpm_lookup(v4_map, v6_map, src, is_v6, set) != NULL;
}

/* The masked source's keyed hash: the one SipHash a frame (or a grant) pays,
 * for its slots and its standing alike. Masks src in place. */
static __always_inline __u64 source_hash(struct sluice_source *src, int is_v6)
{
	sluice_mask_source(src, is_v6, &settings);

	__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] };
	return sluice_source_hash(key, src, is_v6);
}

/* The standing set of the source of this hash, and in *way the way that
 * holds it live; NULL if it has no standing. A live entry older than an
 * eighth of the lapse time is stamped again (by compare-and-swap: an entry
 * another CPU replaced meanwhile is left alone), so a source that keeps
 * sending keeps its standing. */
static __always_inline struct sluice_standing_set *standing_of(__u64 hash, __u64 now, __u32 *way)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);

	if (!set)
		return NULL; /* cannot happen: standing_set_mask < max_entries */
	__u32 stamp = sluice_standing_stamp(now);
	__u32 fp = sluice_standing_fingerprint(hash);
	int w = sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks);

	if (w < 0)
		return NULL;
	*way = w & (SLUICE_STANDING_WAYS - 1);
	__u64 *e = &set->way[*way];
	__u64 old = *e;

	if (sluice_standing_needs_refresh(old, stamp, settings.standing_lapse_ticks))
		__sync_val_compare_and_swap(e, old, sluice_standing_entry(fp, stamp));
	return set;
}

/* Grant the source of this hash standing for `reason`, stamped now. */
static __always_inline void grant_hash(__u64 hash, __u64 now, __u32 reason)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);

	if (!set)
		return;
	sluice_standing_grant(set, sluice_standing_fingerprint(hash), sluice_standing_stamp(now),
			      settings.standing_lapse_ticks, reason);
}

/* A grant of observed standing, a global function of its own for the same
 * reason as sluice_observe() below. */
__noinline int sluice_grant_observed(__u64 hash, __u64 now)
{
	grant_hash(hash, now, SLUICE_BY_OBSERVED);
	return 1;
}

/* Observed standing: a frame its slot pair passed while serving counts its
 * source's tick, once a tick; a source without standing that reaches
 * observe_periods distinct ticks is granted it. The standing table is read
 * only for a tick not counted yet, and not refreshed (serving traffic does
 * not keep standing alive; only grants and shedding do).
 * A global function, so that the verifier checks it once on its own: inlined
 * into judge(), its 8-way loops multiply the states of every path before it
 * past the verifier's limit. The verifier drops the call (and the
 * function's work) when observed standing is off. */
__noinline int sluice_observe(__u64 hash, __u64 now)
{
	__u32 idx = sluice_standing_set_of(hash, settings.observe_set_mask);
	struct sluice_observed_set *o = bpf_map_lookup_elem(&observed, &idx);

	if (!o)
		return 0;
	__u32 stamp = sluice_standing_stamp(now);
	__u32 fp = sluice_standing_fingerprint(hash);

	if (sluice_observed_seen_now(o, fp, stamp))
		return 0;
	__u32 sidx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &sidx);

	if (!set || sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks) >= 0)
		return 0; /* has standing: nothing to earn */
	if (!sluice_observed_count(o, fp, stamp, settings.standing_lapse_ticks, settings.observe_periods))
		return 0;
	return sluice_grant_observed(hash, now);
}

/*
 * SYN cookies (docs/architecture.md, "SYN cookies"): a TCP frame of a source
 * without standing, while cookies are in force (cookie_mode; the caller
 * checked the mode, the allowlist, the valve, and, unless check_standing asks
 * for it here, standing). Returns an outcome, or SLUICE_OUTCOMES: not the
 * cookie path's frame, on to the newcomer budget (or the buckets) as before.
 *   SYN (no ACK, RST or FIN) to a listener (bpf_skc_lookup_tcp finds one in
 *     this namespace): the cookie budget pays, the kernel makes the cookie
 *     with the listener's own secret (bpf_tcp_gen_syncookie; it also marks
 *     the listener, so the stack accepts the ACK), cookie.h builds the
 *     SYN-ACK in place of the SYN -> cookie_sent (XDP_TX). Budget spent ->
 *     drop_cookie_budget. No listener, or the kernel will not make a cookie
 *     (net.ipv4.tcp_syncookies is not 2, the accept queue is full): on.
 *   ACK (no SYN or RST) to a listener: bpf_tcp_check_syncookie -> valid:
 *     the source is granted standing (cookie) and the ACK passed to the
 *     stack, which checks the same cookie and makes the connection ->
 *     cookie_proved; not valid -> drop_cookie. To a connection the host has
 *     (or no socket): on.
 *   TCP the reply cannot be built from (IPv4 options or a fragment, IPv6
 *     extension headers, a cut TCP header) -> drop_cookie_unfit: never
 *     passed unproved.
 * A global function, verified and compiled once on its own: it finds the
 * frame again from ctx (parse.h, no helper). It may move the frame's tail:
 * the caller's packet pointers are stale after it.
 */
#define SLUICE_COOKIE_GO_ON SLUICE_OUTCOMES

/* The SYN's TCP header length as kept in the scratch, in the bounds the
 * verifier must see at each helper that reads it (20..60; checked before). */
static __always_inline __u32 scratch_tcp_len(const struct cookie_scratch *s)
{
	__u32 len = s->tcp_len;

	if (len < 20)
		len = 20;
	if (len > SLUICE_TCP_HDR_MAX)
		len = SLUICE_TCP_HDR_MAX;
	return len;
}

/* bpf_loop's walk of the SYN's options (cookie.h, one option a call): a
 * plain loop of 40 with a branch per option kind is past the verifier's
 * million instructions. Its state is in the scratch, not on the stack. */
static long syn_option_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct cookie_scratch *s = bpf_map_lookup_elem(&cookie_scratch, &zero);

	return s ? sluice_syn_option_at(s->th, s->tcp_len, &s->off, &s->opts) : 1;
}

__noinline __u32 sluice_cookie(struct xdp_md *ctx, __u64 hash, __u64 now, __u32 check_standing)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	__u32 zero = 0, ip_len, w = 0;
	struct cookie_scratch *s = bpf_map_lookup_elem(&cookie_scratch, &zero);
	const __u8 *l3 = data;
	int unfit = 0;

	if (!s)
		return SLUICE_COOKIE_GO_ON; /* cannot happen: a one-element array */
	s->hash = hash;
	s->now = now;
	s->frame_len = (__u32)(end - data);
	int kind = sluice_parse_at(data, end, &s->src, &l3);
	int is_v6 = kind == SLUICE_PARSE_IPV6;

	if (kind != SLUICE_PARSE_IPV4 && !is_v6)
		return SLUICE_COOKIE_GO_ON;
	if (!is_v6) {
		if (l3 + 20 > end || l3[9] != SLUICE_IPPROTO_TCP)
			return SLUICE_COOKIE_GO_ON;
		/* options (IHL > 5), or a fragment (MF, or an offset) */
		unfit = l3[0] != 0x45 || (sluice_be16_at(l3 + 6) & 0x3fff);
		ip_len = 20;
	} else {
		if (l3 + 40 > end)
			return SLUICE_COOKIE_GO_ON;
		if (l3[6] != SLUICE_IPPROTO_TCP) {
			if (!sluice_ipv6_ext(l3[6]) || sluice_parse_l4(l3, end, 1, &s->l4))
				return SLUICE_COOKIE_GO_ON;
			/* TCP behind extension headers, or a fragment of it */
			if (s->l4.kind != SLUICE_L4_TCP && s->l4.kind != SLUICE_L4_TCP_SYN &&
			    !(s->l4.kind == SLUICE_L4_IP && s->l4.port == SLUICE_IPPROTO_TCP))
				return SLUICE_COOKIE_GO_ON;
			unfit = 1;
		}
		ip_len = 40;
	}
	if (check_standing && standing_of(hash, now, &w))
		return SLUICE_COOKIE_GO_ON;
	if (unfit)
		return SLUICE_DROP_COOKIE_UNFIT;

	const __u8 *th = l3 + ip_len;

	if (th + 20 > end)
		return SLUICE_DROP_COOKIE_UNFIT;
	__u8 fl = th[13];
	int syn = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST | SLUICE_TCP_FLAG_FIN)) ==
		  SLUICE_TCP_FLAG_SYN;
	int ack = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST)) == SLUICE_TCP_FLAG_ACK;

	if (!syn && !ack)
		return SLUICE_COOKIE_GO_ON;
	__u32 tcp_len = (__u32)(th[12] >> 4) * 4;

	if (tcp_len < 20 || (long)(th - data) + tcp_len > (long)(end - data))
		return SLUICE_DROP_COOKIE_UNFIT;
	/* No listener has been on the port: no socket to find (figure 1: the
	 * lookup is most of the cost of a SYN flood's frame to a closed port).
	 * After the unfit checks, which hold whatever the port. */
	if (!port_listened(sluice_be16_at(th + 2)))
		return SLUICE_COOKIE_GO_ON;

	struct bpf_sock_tuple *t = &s->tuple;
	__u32 tuple_len;

	__builtin_memset(t, 0, sizeof(*t));
	if (!is_v6) {
		t->ipv4.saddr = SLUICE_LOAD(__u32, l3 + 12);
		t->ipv4.daddr = SLUICE_LOAD(__u32, l3 + 16);
		t->ipv4.sport = SLUICE_LOAD(__u16, th);
		t->ipv4.dport = SLUICE_LOAD(__u16, th + 2);
		tuple_len = sizeof(t->ipv4);
	} else {
		__builtin_memcpy(t->ipv6.saddr, l3 + 8, 16);
		__builtin_memcpy(t->ipv6.daddr, l3 + 24, 16);
		t->ipv6.sport = SLUICE_LOAD(__u16, th);
		t->ipv6.dport = SLUICE_LOAD(__u16, th + 2);
		tuple_len = sizeof(t->ipv6);
	}
	s->l3_off = (__u32)(l3 - data) & 0xff;
	s->ip_len = ip_len;
	s->is_v6 = is_v6;
	s->ack = ack;
	s->tcp_len = tcp_len & 0x3c;
	struct bpf_sock *sk = bpf_skc_lookup_tcp(ctx, t, tuple_len, BPF_F_CURRENT_NETNS, 0);

	if (!sk)
		return SLUICE_COOKIE_GO_ON;
	const struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (sk->state != BPF_TCP_LISTEN || !cfg) {
		bpf_sk_release(sk);
		return SLUICE_COOKIE_GO_ON;
	}
	if (bpf_xdp_load_bytes(ctx, s->l3_off, s->ip, s->is_v6 ? 40 : 20) ||
	    bpf_xdp_load_bytes(ctx, s->l3_off + s->ip_len, s->th, scratch_tcp_len(s))) {
		bpf_sk_release(sk);
		return SLUICE_DROP_COOKIE_UNFIT; /* cannot happen: both were checked whole */
	}
	if (s->ack) {
		long r = bpf_tcp_check_syncookie(sk, s->ip, (s->is_v6 ? 40 : 20), (struct tcphdr *)s->th, scratch_tcp_len(s));

		bpf_sk_release(sk);
		if (r)
			return SLUICE_DROP_COOKIE;
		grant_hash(s->hash, s->now, SLUICE_BY_COOKIE);
		return SLUICE_COOKIE_PROVED;
	}

	/* A SYN: the budget's token is taken only once the kernel made the
	 * cookie (one CPU's bucket, one frame at a time on it: the token seen
	 * is still there to take). */
	struct sluice_slot *b = bpf_map_lookup_elem(&cookie_budget, &zero);
	__u64 paid = b ? sluice_take1(b->empty_at, s->now, cfg->cookie_cost_ns, cfg->cookie_burst * cfg->cookie_cost_ns)
		       : 0;

	if (!paid) {
		bpf_sk_release(sk);
		return SLUICE_DROP_COOKIE_BUDGET;
	}
	__s64 cookie = bpf_tcp_gen_syncookie(sk, s->ip, (s->is_v6 ? 40 : 20), (struct tcphdr *)s->th, scratch_tcp_len(s));

	bpf_sk_release(sk);
	if (cookie < 0)
		return SLUICE_COOKIE_GO_ON;
	b->empty_at = paid;

	s->params.mss = s->is_v6 ? cfg->cookie_mss6 : cfg->cookie_mss4;
	s->params.wscale = cfg->cookie_wscale;
	s->params.flags = cfg->cookie_flags;
	s->off = 20;
	sluice_syn_options_clear(&s->opts);
	bpf_loop(SLUICE_TCP_OPTIONS_MAX, syn_option_step, NULL, 0);
	__u32 tsval = sluice_cookie_tsval((__u32)((s->now - SLUICE_TIME_BIAS) / 1000000), &s->opts, &s->params);
	__u32 len = sluice_synack(s->ip, s->th, s->is_v6, (__u32)cookie, tsval, &s->opts, &s->params, s->reply);
	int delta = (int)(s->l3_off + len) - (int)s->frame_len;

	if (bpf_xdp_adjust_tail(ctx, delta))
		return SLUICE_DROP_COOKIE_UNFIT; /* no room to grow the frame into */
	__u8 *d = (__u8 *)(long)ctx->data;
	__u8 *e = (__u8 *)(long)ctx->data_end;

	if (d + 12 > e)
		return SLUICE_DROP_COOKIE_UNFIT;
	/* Ethernet: back where it came from (VLAN tags stay as they are) */
	__u32 dst_hi = SLUICE_LOAD(__u32, d), src_hi = SLUICE_LOAD(__u32, d + 6);
	__u16 dst_lo = SLUICE_LOAD(__u16, d + 4), src_lo = SLUICE_LOAD(__u16, d + 10);

	*(__u32 *)d = src_hi;
	*(__u16 *)(d + 4) = src_lo;
	*(__u32 *)(d + 6) = dst_hi;
	*(__u16 *)(d + 10) = dst_lo;
	if (bpf_xdp_store_bytes(ctx, s->l3_off, s->reply, len & 0x7f))
		return SLUICE_DROP_COOKIE_UNFIT;
	return SLUICE_COOKIE_SENT;
}

/* The newcomer budget: this CPU's bucket (NULL cannot happen: a one-element
 * array). */
static __always_inline struct sluice_slot *newcomer_bucket(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&newcomers, &zero);
}

/* The slot pair of the source of this hash; 0 if it cannot be looked up
 * (cannot happen: slot_mask < max_entries). */
static __always_inline int slot_pair(__u64 hash, struct sluice_slot **a, struct sluice_slot **b)
{
	struct sluice_slot_pair idx = sluice_slots_of(hash, settings.slot_mask, settings.one_choice);

	*a = bpf_map_lookup_elem(&slots, &idx.a);
	*b = bpf_map_lookup_elem(&slots, &idx.b);
	return *a && *b;
}

/* Admit one frame from the slot pair of this hash at cost_ns a token. */
static __always_inline int pair_admit(__u64 hash, __u64 now, __u64 cost_ns, __u64 burst)
{
	struct sluice_slot *a, *b;

	return slot_pair(hash, &a, &b) && sluice_admit2(a, b, now, cost_ns, burst * cost_ns);
}

/*
 * What a frame is judged with: its class's budgets, or config's for the
 * default class, and the hash of its buckets. A frame of a class other than
 * the default hashes its buckets with the class's prefixes and key, and its
 * standing with the plain key and settings' prefixes (the feeders' hash);
 * that second hash is made only when standing is looked up (standing_hash()).
 */
struct budget {
	__u64 cost_ns, burst;                   /* the packet budget, unramped */
	__u64 standing_cost_ns, standing_burst; /* a source with standing */
	__u64 byte_cost_fp, byte_burst_ns;      /* 0: no byte budget */
	__u64 hash;                             /* the buckets' */
	__u64 standing_hash;                    /* standing's, once known */
	int standing_known;                     /* the default class: standing_hash is hash */
	__u32 state;
	int *observe;                           /* non-NULL: observed standing's count is left to the
						 * caller (*observe = 1), see sluice_judge_policy() */
	struct xdp_md *ctx;                     /* the frame, for the cookie path */
	__u32 cookie_way;                       /* SLUICE_COOKIE_HERE, _DEFER or _SKIP */
};

/* Where a frame that may take the cookie path takes it. Without a policy,
 * here: shed() calls sluice_cookie. Under one, sluice_judge_policy cannot
 * call it (its frame and sluice_xdp's leave sluice_cookie too little of the
 * 512-byte stack), so the first judgement stops there (defer: the frame
 * counts nothing, SLUICE_COOKIE_DEFERRED | its class comes back), judge()
 * runs the cookie path, and a frame it does not take is judged again with
 * SLUICE_JUDGE_NO_COOKIE in its flags (skip). */
#define SLUICE_COOKIE_HERE 0
#define SLUICE_COOKIE_DEFER 1
#define SLUICE_COOKIE_SKIP 2
#define SLUICE_COOKIE_DEFERRED 0x400 /* sluice_judge_policy's: run the cookie path, class id in the low bits */
#define SLUICE_JUDGE_NO_COOKIE (1u << 30) /* in flags, sluice_judge_policy's second call (no policy flag uses it) */

/* A drop outcome of the cookie path goes to the drop samples like any drop. */
static __always_inline __u32 cookie_outcome(struct xdp_md *ctx, __u32 outcome, const struct sluice_source *src,
					    int is_v6)
{
	if (outcome == SLUICE_COOKIE_SENT || outcome == SLUICE_COOKIE_PROVED)
		return outcome;
	return sampled_drop(ctx, src, is_v6, outcome);
}

/* The plain hash of a source (settings' prefixes, the plain key): a global
 * function, so that its SipHash is one copy however many places need it. */
__noinline __u64 sluice_plain_hash(__u64 w0, __u64 w1, __u32 is_v6)
{
	struct sluice_source src = { .w = { w0, w1 } };

	return source_hash(&src, is_v6);
}

static __always_inline __u64 standing_hash(struct budget *bg, const struct sluice_source *src, int is_v6)
{
	if (!bg->standing_known) {
		bg->standing_hash = sluice_plain_hash(src->w[0], src->w[1], is_v6);
		bg->standing_known = 1;
	}
	return bg->standing_hash;
}

/* Admit from the standing bucket of way w (never ramped). */
static __always_inline int standing_admit(const struct budget *bg, struct sluice_standing_set *set, __u32 w,
					  __u64 now)
{
	return sluice_admit1(&set->empty_at[w & (SLUICE_STANDING_WAYS - 1)], now, bg->standing_cost_ns,
			     bg->standing_burst * bg->standing_cost_ns);
}

/* Shedding, past the allowlist: see "The way of a frame" above. */
static __always_inline __u32 shed(const struct sluice_config *cfg, struct budget *bg, const struct sluice_source *src,
				  const struct sluice_source *masked, int is_v6, __u64 now)
{
	__u32 w = 0;
	struct sluice_standing_set *set = standing_of(standing_hash(bg, src, is_v6), now, &w);

#ifdef SLUICE_BENCH_STOP_AFTER_STANDING
	SLUICE_BENCH_KEEP(set);
	return SLUICE_BENCH_STOPPED;
#endif
	if (!set) {
		if (cfg->valve_closed)
			return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_SHED);
		if (cfg->cookie_mode != SLUICE_COOKIES_OFF && !settings.dry_run && bg->cookie_way != SLUICE_COOKIE_SKIP) {
			if (bg->cookie_way == SLUICE_COOKIE_DEFER)
				return SLUICE_COOKIE_DEFERRED;
			__u32 r = sluice_cookie(bg->ctx, bg->standing_hash, now, 0);

			if (r != SLUICE_COOKIE_GO_ON)
				return cookie_outcome(bg->ctx, r, src, is_v6);
		}
		/* The budget's token is taken only once the slot pair admits
		 * too, so a newcomer over its own rate spends none of it. No
		 * other frame runs on this CPU in between (the bucket is this
		 * CPU's, and XDP runs one frame at a time on it), so the token
		 * seen is still there to take. */
		struct sluice_slot *n = newcomer_bucket();
		__u64 paid = n ? sluice_take1(n->empty_at, now, cfg->newcomer_cost_ns,
					      cfg->newcomer_burst * cfg->newcomer_cost_ns)
			       : 0;

#ifdef SLUICE_BENCH_STOP_AFTER_NEWCOMER
		SLUICE_BENCH_KEEP(paid);
		return SLUICE_BENCH_STOPPED;
#endif
		if (!paid)
			return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_SHED);
		if (pair_admit(bg->hash, now, bg->cost_ns, bg->burst)) {
			n->empty_at = paid;
			return SLUICE_NEWCOMER;
		}
		return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
	}
	if (cfg->valve_closed)
		return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_VALVE);
	if (pair_admit(bg->hash, now, bg->cost_ns, bg->burst) || standing_admit(bg, set, w, now))
		return SLUICE_STANDING;
	return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
}

/* The packet budget of a frame, in every breaker state: its outcome, and in
 * *now the clock it was judged at. */
static __always_inline __u32 limit(const struct sluice_config *cfg, struct budget *bg,
				   const struct sluice_source *src, const struct sluice_source *masked, int is_v6,
				   __u64 *now)
{
	if (bg->state == SLUICE_SHEDDING) {
#ifdef SLUICE_BENCH_STOP_AFTER_HASH
		SLUICE_BENCH_KEEP(bg->hash);
		return SLUICE_BENCH_STOPPED;
#endif
		*now = SLUICE_CLOCK() + SLUICE_TIME_BIAS;
		return shed(cfg, bg, src, masked, is_v6, *now);
	}
	/* Cookies always: a SYN (or the ACK of a cookie) of a source without
	 * standing takes the cookie path in every state; anything else goes on
	 * to the buckets. */
	if (cfg->cookie_mode == SLUICE_COOKIES_ALWAYS && !settings.dry_run && bg->cookie_way != SLUICE_COOKIE_SKIP) {
		if (bg->cookie_way == SLUICE_COOKIE_DEFER)
			return SLUICE_COOKIE_DEFERRED;
		*now = SLUICE_CLOCK() + SLUICE_TIME_BIAS;
		__u32 r = sluice_cookie(bg->ctx, standing_hash(bg, src, is_v6), *now, 1);

		if (r != SLUICE_COOKIE_GO_ON)
			return cookie_outcome(bg->ctx, r, src, is_v6);
	}

	struct sluice_slot_pair idx = sluice_slots_of(bg->hash, settings.slot_mask, settings.one_choice);
#ifdef SLUICE_BENCH_STOP_AFTER_HASH
	SLUICE_BENCH_KEEP(idx.a);
	SLUICE_BENCH_KEEP(idx.b);
	return SLUICE_BENCH_STOPPED;
#endif
	struct sluice_slot *a = bpf_map_lookup_elem(&slots, &idx.a);
	struct sluice_slot *b = bpf_map_lookup_elem(&slots, &idx.b);

	if (!a || !b)
		return SLUICE_DROP_RATE; /* cannot happen: slot_mask < max_entries */
#ifdef SLUICE_BENCH_STOP_AFTER_LOOKUP
	SLUICE_BENCH_KEEP(a);
	SLUICE_BENCH_KEEP(b);
	return SLUICE_BENCH_STOPPED;
#endif

	__u64 cost = sluice_effective_cost(bg->cost_ns, bg->state, cfg->admission_ppm);
	/* The coarse clock (CLOCK_MONOTONIC_COARSE): about a quarter of the
	 * cost of bpf_ktime_get_ns here, at jiffy resolution (4 ms at HZ=250).
	 * The credit is carried exactly from one reading to the next, so the
	 * rate is exact over time in this clock. Against a precise clock it
	 * lags by a few ms that vary from tick to tick (seen: 4-16 ms on this
	 * VM), so any one interval is off by at most that many ms of refill,
	 * and the error never accumulates. */
	*now = SLUICE_CLOCK() + SLUICE_TIME_BIAS;

#ifdef SLUICE_BENCH_STOP_AFTER_CLOCK
	SLUICE_BENCH_KEEP(a);
	SLUICE_BENCH_KEEP(b);
	SLUICE_BENCH_KEEP(*now);
	SLUICE_BENCH_KEEP(cost);
	return SLUICE_BENCH_STOPPED;
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_BUCKET
	SLUICE_BENCH_KEEP(sluice_admit2(a, b, *now, cost, bg->burst * cost));
	return SLUICE_BENCH_STOPPED;
#endif
	/* Recovering with the ramp in force, standing is looked up first: a
	 * source with standing is judged at its whole rate. (Tried ramped
	 * first, a source that had been idle would pay the ramped cost, up to
	 * 1e6 / SLUICE_PPM_MIN tokens, for each frame its credit covered.) */
	struct sluice_standing_set *set = NULL;
	__u32 w = 0;
	int looked = cost != bg->cost_ns;

	if (looked) {
		set = standing_of(standing_hash(bg, src, is_v6), *now, &w);
		if (set)
			cost = bg->cost_ns;
	}
	if (sluice_admit2(a, b, *now, cost, bg->burst * cost)) {
		if (settings.observe_periods && bg->state == SLUICE_SERVING) {
			if (bg->observe)
				*bg->observe = 1;
			else
				sluice_observe(standing_hash(bg, src, is_v6), *now);
		}
		return SLUICE_PASSED;
	}
	/* Refused by its slot pair: only now, in serving, is standing looked up. */
	if (!looked)
		set = standing_of(standing_hash(bg, src, is_v6), *now, &w);
#ifdef SLUICE_BENCH_STOP_AFTER_STANDING
	SLUICE_BENCH_KEEP(set);
	return SLUICE_BENCH_STOPPED;
#endif
	if (set && standing_admit(bg, set, w, *now))
		return SLUICE_STANDING;
	return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
}

/* The byte budget, after the packet budget admitted a frame of `bytes`: its
 * own slot pair (sluice_byte_hash), (bytes x byte_cost_fp) >> 16 ns of refill
 * a frame, never ramped. A global function: it runs only for a class with a
 * byte budget, and inlined its second admit2 would double the states of
 * every admitting path. Returns 1 to admit. */
__noinline int sluice_bytes_admit(__u64 hash, __u64 now, __u64 bytes, __u64 byte_cost_fp, __u64 byte_burst_ns)
{
	struct sluice_slot *a, *b;

	return slot_pair(sluice_byte_hash(hash), &a, &b) &&
	       sluice_admit2(a, b, now, (bytes * byte_cost_fp) >> SLUICE_BYTE_COST_SHIFT, byte_burst_ns);
}

/*
 * A frame's class in policy set `set` of flags (sluice_abi.h, "the frame's
 * way"): the class prefix entry of its source, matched on (kind, port)
 * (class_match.h); no entry or no match, the port table; else the default.
 * l4 is kind << 16 | port. A global function, verified once on its own:
 * its match loop would multiply every path's states after it.
 */
__noinline __u32 sluice_classify(__u32 flags, __u32 l4, __u64 w0, __u64 w1, __u32 is_v6)
{
	__u32 set = SLUICE_POLICY_SET_OF(flags);
	__u32 kind = l4 >> 16, port = l4 & 0xffff;
	__u32 id = SLUICE_CLASS_NO_MATCH;

	if (flags & (is_v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4)) {
		struct sluice_source src = { .w = { w0, w1 } };
		const struct sluice_class_matches *m = lpm_lookup(&class_v4, &class_v6, &src, is_v6, set);

		if (m)
			id = sluice_match_class(m, kind, port);
	}
	if (id == SLUICE_CLASS_NO_MATCH) {
		id = SLUICE_CLASS_DEFAULT;
		if (flags & SLUICE_CLASS_PORTS) {
			__u32 idx = sluice_port_block_index(set, kind, port);
			const struct sluice_port_block *b = bpf_map_lookup_elem(&port_classes, &idx);

			if (b)
				id = sluice_port_block_class(b, port);
		}
	}
	/* One id for the record, the counters and the key alike. */
	return id & (SLUICE_CLASSES_MAX - 1);
}

/* Before the buckets: shedding, the allowlist; a config never written, the
 * verdicts without buckets. SLUICE_OUTCOMES: on to the buckets. */
static __always_inline __u32 gate(struct xdp_md *ctx, const struct sluice_config *cfg, __u32 flags,
				  const struct sluice_source *src, int is_v6)
{
	__u32 allow_bit = is_v6 ? SLUICE_LIST_ALLOW_V6 : SLUICE_LIST_ALLOW_V4;

	if (cfg->breaker_state == SLUICE_SHEDDING) {
		if ((flags & allow_bit) && listed(&allow_v4, &allow_v6, src, is_v6, SLUICE_POLICY_SET_OF(flags)))
			return SLUICE_ALLOWLISTED;
		if (cfg->cost_ns == 0)
			return sampled_drop(ctx, src, is_v6, SLUICE_DROP_SHED); /* never configured */
	} else if (cfg->cost_ns == 0) {
		return SLUICE_PASSED; /* never configured: the loader writes config before attach */
	}
	return SLUICE_OUTCOMES;
}

/*
 * The buckets of a frame of class `id` whose record is rec: the default
 * class (id 0) with config's budgets, settings' prefixes and the plain key,
 * and a byte budget only from its record (rec NULL: none); any other with
 * its record's. Inlined twice: without a policy judge() calls it with rec
 * NULL and id 0, so that the compiler folds it to the code of the default
 * class alone (figure 1: no class costs nothing).
 */
static __always_inline __u32 judge_buckets(struct xdp_md *ctx, const struct sluice_config *cfg, __u32 flags,
					   const struct sluice_source *src, int is_v6, __u64 bytes,
					   const struct sluice_class *rec, __u32 id, int *observe, __u32 cookie_way)
{
	__u32 outcome = gate(ctx, cfg, flags, src, is_v6);

	if (outcome != SLUICE_OUTCOMES)
		return outcome;

	/* The shed sample carries the source as the frame did; the rate
	 * sample the masked one (the daemon masks both alike). */
	struct sluice_source masked = *src;
	struct budget bg = { .state = cfg->breaker_state, .observe = observe, .ctx = ctx, .cookie_way = cookie_way };

	if (id == SLUICE_CLASS_DEFAULT || !rec) {
		bg.hash = source_hash(&masked, is_v6);
		bg.standing_hash = bg.hash;
		bg.standing_known = 1;
		bg.cost_ns = cfg->cost_ns;
		bg.burst = cfg->burst;
		bg.standing_cost_ns = cfg->standing_cost_ns;
		bg.standing_burst = cfg->standing_burst;
		if (rec) {
			bg.byte_cost_fp = rec->byte_cost_fp;
			bg.byte_burst_ns = rec->byte_burst_ns;
		}
	} else {
		__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] }, ckey[2];

		sluice_mask_prefixes(&masked, is_v6, rec->v4_prefix, rec->v6_prefix);
		sluice_class_key(key, id, ckey);
		bg.hash = sluice_source_hash(ckey, &masked, is_v6);
		bg.cost_ns = rec->cost_ns;
		bg.burst = rec->burst;
		if (rec->standing_cost_ns) {
			bg.standing_cost_ns = rec->standing_cost_ns;
			bg.standing_burst = rec->standing_burst;
		} else {
			bg.standing_cost_ns = cfg->standing_cost_ns;
			bg.standing_burst = cfg->standing_burst;
		}
		bg.byte_cost_fp = rec->byte_cost_fp;
		bg.byte_burst_ns = rec->byte_burst_ns;
	}

	__u64 now = 0;

	outcome = limit(cfg, &bg, src, &masked, is_v6, &now);
#ifdef SLUICE_BENCH_CUT
	if (outcome == SLUICE_BENCH_STOPPED)
		return outcome;
#endif
	/* Admitted by its packet budget: the byte budget has its say (the
	 * packet's token stays spent when it refuses, as with two chained
	 * nftables limits). */
	if (bg.byte_cost_fp && (outcome == SLUICE_PASSED || outcome == SLUICE_STANDING || outcome == SLUICE_NEWCOMER) &&
	    !sluice_bytes_admit(bg.hash, now, bytes, bg.byte_cost_fp, bg.byte_burst_ns))
		return sampled_drop(ctx, &masked, is_v6, SLUICE_DROP_BYTES);
	return outcome;
}

static __always_inline void count_class(__u32 class_id, __u32 outcome, __u64 bytes)
{
	__u32 key = class_id * SLUICE_OUTCOMES + outcome;
	struct sluice_counter *c = bpf_map_lookup_elem(&class_counters, &key);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* Is this outcome's verdict XDP_PASS? */
static __always_inline int passes(__u32 outcome)
{
	return outcome == SLUICE_PASSED || outcome == SLUICE_ALLOWLISTED || outcome == SLUICE_STANDING ||
	       outcome == SLUICE_NEWCOMER || outcome == SLUICE_EXEMPT || outcome == SLUICE_COOKIE_PROVED;
}

/* The deny list of the set in force. */
static __always_inline int denied(__u32 flags, const struct sluice_source *src, int is_v6)
{
	return (flags & (is_v6 ? SLUICE_LIST_DENY_V6 : SLUICE_LIST_DENY_V4)) &&
	       listed(&deny_v4, &deny_v6, src, is_v6, SLUICE_POLICY_SET_OF(flags));
}

/*
 * The verdict of an IP frame under a policy (a SLUICE_CLASS_* flag set in
 * `flags`, read once by the caller), as an outcome: the deny list, its
 * class, the class's action, its buckets; and its class's counter (the
 * default class's when it has none, or none yet: listed, or malformed past
 * L3), so that every IP frame is counted under one class.
 *
 * A global function, verified on its own and compiled on its own: inlined
 * into sluice_xdp, the class path's registers and stack cost the path
 * without a policy several ns a frame (measured), though it never runs
 * there. So it finds the frame again from ctx (parse.h once more, no
 * helper) and config (an inlined array lookup); the flags are the caller's,
 * and so is port_id: the class judge()'s port_class already read from the
 * port table (a plain header under port rules only), or SLUICE_CLASS_NO_MATCH
 * to find it here from L4 (sluice_parse_l4, sluice_classify).
 * Observed standing's count of a frame it passed is left to the caller
 * (SLUICE_OBSERVE_DEFERRED): called from here, sluice_observe and its grant
 * would stack four frames past the verifier's 512 bytes.
 */
#define SLUICE_OBSERVE_DEFERRED 0x100 /* sluice_judge_policy's: observed standing counts this frame */

__noinline __u32 sluice_judge_policy(struct xdp_md *ctx, __u32 flags, __u32 port_id)
{
	const void *data = (const void *)(long)ctx->data;
	const void *data_end = (const void *)(long)ctx->data_end;
	__u64 bytes = data_end - data;
	struct sluice_source src;
	const __u8 *l3 = data;
	__u32 zero = 0, outcome;
	int kind = sluice_parse_at(data, data_end, &src, &l3);
	int is_v6 = kind == SLUICE_PARSE_IPV6;
	int observe = 0;

	if (kind != SLUICE_PARSE_IPV4 && kind != SLUICE_PARSE_IPV6)
		return SLUICE_MALFORMED; /* cannot happen: the caller parsed it so */
	const struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg)
		return SLUICE_PASSED; /* cannot happen: a one-element array */

	const struct sluice_class *rec = NULL;
	__u32 pset = SLUICE_POLICY_SET_OF(flags);
	__u32 id = SLUICE_CLASS_DEFAULT;

	if (denied(flags, &src, is_v6)) {
		outcome = sampled_drop(ctx, &src, is_v6, SLUICE_DROP_DENY);
		goto counted;
	}
	/* The class: found already, or L4 parsed only for rules that need it. */
	if (port_id != SLUICE_CLASS_NO_MATCH) {
		id = port_id & (SLUICE_CLASSES_MAX - 1);
	} else if (flags & (SLUICE_CLASS_PORTS | (is_v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4))) {
		struct sluice_l4 l4;

		if (sluice_parse_l4(l3, data_end, is_v6, &l4)) {
			outcome = SLUICE_MALFORMED;
			goto counted;
		}
		id = sluice_classify(flags, l4.kind << 16 | (l4.port & 0xffff), src.w[0], src.w[1], is_v6);
	}
	if (id != SLUICE_CLASS_DEFAULT || (flags & SLUICE_CLASS_DEFAULT_BYTES)) {
		__u32 idx = sluice_class_index(pset, id);

		rec = bpf_map_lookup_elem(&classes, &idx);
	}
	/* A limit class without a packet budget is a record never written:
	 * its frames are the default class's. (Exempt and deny records carry
	 * only their action: logic/class_tables writes no budget for them.) */
	if (id != SLUICE_CLASS_DEFAULT && (!rec || (rec->action == SLUICE_CLASS_LIMIT && rec->cost_ns == 0)))
		id = SLUICE_CLASS_DEFAULT;
	if (id != SLUICE_CLASS_DEFAULT && rec && rec->action == SLUICE_CLASS_DENY)
		outcome = sampled_drop(ctx, &src, is_v6, SLUICE_DROP_CLASS);
	else if (id != SLUICE_CLASS_DEFAULT && rec && rec->action == SLUICE_CLASS_EXEMPT)
		outcome = SLUICE_EXEMPT;
	else /* one copy for every class: the default's record only for its byte budget */
		outcome = judge_buckets(ctx, cfg, flags, &src, is_v6, bytes,
					id != SLUICE_CLASS_DEFAULT || (flags & SLUICE_CLASS_DEFAULT_BYTES) ? rec : NULL, id,
					&observe,
					(flags & SLUICE_JUDGE_NO_COOKIE) ? SLUICE_COOKIE_SKIP : SLUICE_COOKIE_DEFER);
	if (outcome == SLUICE_COOKIE_DEFERRED)
		return SLUICE_COOKIE_DEFERRED | id; /* counted by judge(), or by the second call */
counted:
	count_class(id, outcome, bytes);
	if (settings.dry_run && !passes(outcome))
		count_class(id, SLUICE_WOULD_DROP, bytes);
	return outcome | (observe ? SLUICE_OBSERVE_DEFERRED : 0);
}

/*
 * Port rules only (issue 12: at most +3 ns), the common frame's class, read
 * here: only an Ethernet frame without VLAN tags carrying IPv4 without
 * options and not a fragment, or IPv6 without extension headers, and TCP or
 * UDP whole (parse.h's sluice_parse_transport, the (kind, port) that
 * sluice_parse_l4 finds for it too); its port_classes entry (an array: the
 * lookup is inlined). Anything else is SLUICE_CLASS_NO_MATCH, and
 * sluice_judge_policy finds its class the whole way (sluice_parse_l4,
 * sluice_classify). Read again from ctx, not from sluice_parse_at's l3: a
 * register kept live for it would cost the path without a policy.
 */
static __always_inline __u32 port_class(struct xdp_md *ctx, __u32 flags, int is_v6)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	const __u8 *ip = data + 14, *l4;
	struct sluice_l4 t;
	__u32 proto;

	if (!is_v6) {
		l4 = ip + 20;
		/* 0x45: version 4, IHL 5 (no options); the ethertype as loaded
		 * little-endian (08 00) */
		if (l4 > end || SLUICE_LOAD(__u16, data + 12) != 0x0008 || ip[0] != 0x45 ||
		    sluice_ipv4_later_fragment(ip))
			return SLUICE_CLASS_NO_MATCH;
		proto = ip[9];
	} else {
		l4 = ip + 40;
		if (l4 > end || SLUICE_LOAD(__u16, data + 12) != 0xdd86)
			return SLUICE_CLASS_NO_MATCH;
		proto = ip[6];
	}
	/* SLUICE_L4_IP here is ICMP and the like, or (IPv6) an extension header */
	if (sluice_parse_transport(l4, end, proto, &t) || t.kind == SLUICE_L4_IP)
		return SLUICE_CLASS_NO_MATCH;
	__u32 idx = sluice_port_block_index(SLUICE_POLICY_SET_OF(flags), t.kind, t.port);
	const struct sluice_port_block *b = bpf_map_lookup_elem(&port_classes, &idx);

	return b ? sluice_port_block_class(b, t.port) & (SLUICE_CLASSES_MAX - 1) : SLUICE_CLASS_NO_MATCH;
}

/* judge()'s: count this frame under class 0 too (sluice_xdp does). */
#define SLUICE_COUNT_DEFAULT_CLASS 0x200

/* The verdict of an IP frame from `src`, as an outcome, under policy_flags
 * `flags`; SLUICE_COUNT_DEFAULT_CLASS or'd in for a frame of the default
 * class judged here under a policy (port rules only). */
static __always_inline __u32 judge(struct xdp_md *ctx, const struct sluice_config *cfg, __u32 flags,
				   struct sluice_source *src, int is_v6)
{
	__u32 counted = 0;

	if (flags & SLUICE_CLASS_ANY) {
		/* Neither port rules nor this family's prefix rules: the
		 * default class, as sluice_judge_policy would find it. */
		__u32 id = SLUICE_CLASS_DEFAULT;

		if (flags & (SLUICE_CLASS_DEFAULT_BYTES | (is_v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4)))
			id = SLUICE_CLASS_NO_MATCH;
		else if (flags & SLUICE_CLASS_PORTS)
			id = port_class(ctx, flags, is_v6);
		if (id != SLUICE_CLASS_DEFAULT) {
			__u32 r = sluice_judge_policy(ctx, flags, id);

			if (r & SLUICE_COOKIE_DEFERRED) {
				__u32 c = sluice_cookie(ctx, sluice_plain_hash(src->w[0], src->w[1], is_v6),
							SLUICE_CLOCK() + SLUICE_TIME_BIAS,
							cfg->breaker_state != SLUICE_SHEDDING);

				if (c != SLUICE_COOKIE_GO_ON) {
					count_class(r & (SLUICE_CLASSES_MAX - 1), c,
						    (long)ctx->data_end - (long)ctx->data);
					return cookie_outcome(ctx, c, src, is_v6);
				}
				r = sluice_judge_policy(ctx, flags | SLUICE_JUDGE_NO_COOKIE, id);
			}

			/* (A second SipHash, the plain one, only with observed standing on.) */
			if (settings.observe_periods && (r & SLUICE_OBSERVE_DEFERRED))
				sluice_observe(sluice_plain_hash(src->w[0], src->w[1], is_v6),
					       SLUICE_CLOCK() + SLUICE_TIME_BIAS);
			return r & (SLUICE_OBSERVE_DEFERRED - 1);
		}
		counted = SLUICE_COUNT_DEFAULT_CLASS;
	}
	if (denied(flags, src, is_v6))
		return sampled_drop(ctx, src, is_v6, SLUICE_DROP_DENY) | counted;
	return judge_buckets(ctx, cfg, flags, src, is_v6, 0, NULL, SLUICE_CLASS_DEFAULT, NULL, SLUICE_COOKIE_HERE) |
	       counted;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 bytes = data_end - data;
	struct sluice_source src;
	__u32 zero = 0, outcome;
	int kind = sluice_parse(data, data_end, &src);

#ifdef SLUICE_BENCH_STOP_AFTER_PARSE
	SLUICE_BENCH_KEEP(kind);
	SLUICE_BENCH_KEEP(src.w[0]);
	SLUICE_BENCH_KEEP(src.w[1]);
	return XDP_DROP;
#endif
	if (kind == SLUICE_PARSE_NON_IP) {
		count(SLUICE_NON_IP, bytes);
		return XDP_PASS;
	}
	if (kind == SLUICE_PARSE_MALFORMED) {
		outcome = SLUICE_MALFORMED;
	} else {
		struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);

		if (!cfg)
			return XDP_PASS; /* cannot happen: a one-element array */
		/* Read once: the policy set and its flags together. */
		__u32 flags = *(volatile __u32 *)&cfg->policy_flags;

		outcome = judge(ctx, cfg, flags, &src, kind == SLUICE_PARSE_IPV6);
#ifdef SLUICE_BENCH_CUT
		if (outcome == SLUICE_BENCH_STOPPED)
			return XDP_DROP;
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_VERDICT
		SLUICE_BENCH_KEEP(outcome);
		return XDP_DROP;
#endif
	}
	/* The length again from ctx, not kept from the start: ctx is live
	 * here anyway (for sluice_judge_policy), and one register fewer keeps
	 * the parsed source out of the stack on the path without a policy. */
	asm volatile("" : "+r"(ctx));
	bytes = (long)ctx->data_end - (long)ctx->data;
	__u32 class0 = outcome & SLUICE_COUNT_DEFAULT_CLASS;

	outcome &= ~SLUICE_COUNT_DEFAULT_CLASS;
	count(outcome, bytes);
	sluice_capture(ctx, outcome); /* capture.h: a load and a branch unless a capture runs */
	if (class0)
		count_class(SLUICE_CLASS_DEFAULT, outcome, bytes);
	if (passes(outcome))
		return XDP_PASS;
	if (outcome == SLUICE_COOKIE_SENT)
		return XDP_TX; /* the SYN-ACK sluice_cookie wrote in the SYN's place */
	if (settings.dry_run) {
		/* WOULD_DROP overlays the reason counted above: frames seen =
		 * the sum of every outcome but this one. */
		count(SLUICE_WOULD_DROP, bytes);
		if (class0)
			count_class(SLUICE_CLASS_DEFAULT, SLUICE_WOULD_DROP, bytes);
		return XDP_PASS;
	}
	return XDP_DROP;
}

/* ---- The standing table's feeders ---- */

/* Grant the peer `src` standing for `reason`, stamped now. */
static __always_inline void grant(struct sluice_source *src, int is_v6, __u32 reason)
{
	grant_hash(source_hash(src, is_v6), SLUICE_CLOCK() + SLUICE_TIME_BIAS, reason);
}

static __always_inline void grant_v4(__u32 addr, __u32 reason)
{
	struct sluice_source src = { .w = { addr, 0 } };

	grant(&src, 0, reason);
}

/* An IPv6 peer as four network-order words; a v4-mapped one (::ffff:a.b.c.d,
 * a dual-stack socket's IPv4 peer) is granted as the IPv4 address its frames
 * carry. */
static __always_inline void grant_v6(__u32 a0, __u32 a1, __u32 a2, __u32 a3, __u32 reason)
{
	if (a0 == 0 && a1 == 0 && a2 == bpf_htonl(0x0000ffff)) {
		grant_v4(a3, reason);
		return;
	}
	__u32 a[4] = { a0, a1, a2, a3 };
	struct sluice_source src;

	__builtin_memcpy(src.w, a, sizeof(a));
	grant(&src, 1, reason);
}

/* A TCP connection reached ESTABLISHED: passive, a peer completed the
 * handshake to a local listener (it answered our SYN-ACK, so its address is
 * real); active, a connection the host opened. Nothing a spoofed packet makes
 * the host send (SYN-ACK, RST) reaches either callback. And a socket began
 * to listen (inet_listen): its port goes into listen_ports. These three
 * callbacks run without any BPF_SOCK_OPS_*_CB_FLAGS, so the program sets none. */
SEC("sockops")
int sluice_sockops(struct bpf_sock_ops *skops)
{
	if (skops->op == BPF_SOCK_OPS_TCP_LISTEN_CB) {
		/* listen(): the cookie path may look this port up from now on.
		 * (Every namespace's listeners reach this feeder: a port set for
		 * another namespace costs only a lookup that finds nothing.) */
		__u32 port = skops->local_port; /* host order */
		__u32 word = sluice_listen_port_word(port);
		__u64 *bits = bpf_map_lookup_elem(&listen_ports, &word);

		if (bits)
			__sync_fetch_and_or(bits, sluice_listen_port_bit(port));
		return 1;
	}
	if (skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB && skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	__u32 reason = skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB ? SLUICE_BY_ACCEPTED : SLUICE_BY_CONNECTED;

	if (skops->family == 2 /* AF_INET */)
		grant_v4(skops->remote_ip4, reason);
	else if (skops->family == 10 /* AF_INET6 */)
		grant_v6(skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2], skops->remote_ip6[3], reason);
	return 1;
}

/* Is this UDP socket a client's? Bound to a port of the ephemeral range (the
 * kernel's autobind) or not bound yet (connect() before bind: the kernel binds
 * it from that range next). A socket bound to any other port is a server's:
 * its replies go to whoever sent it a query, spoofed or not, and never grant. */
static __always_inline int udp_client_socket(struct bpf_sock_addr *ctx, int unbound_ok)
{
	struct bpf_sock *sk = ctx->sk;

	if (!sk)
		return 0;
	__u32 port = sk->src_port; /* host order */
	if (port == 0)
		return unbound_ok;
	return port >= settings.ephemeral_lo && port <= settings.ephemeral_hi;
}

/* connect(): TCP, the host chose the peer (granted before the handshake, so
 * that the peer's SYN-ACK is not shed); UDP, a client socket's peer. The
 * reason granted, 0 for none. */
static __always_inline __u32 connect_grants(struct bpf_sock_addr *ctx)
{
	if (ctx->type == 1 /* SOCK_STREAM */)
		return SLUICE_BY_CONNECTED;
	return ctx->type == 2 /* SOCK_DGRAM */ && udp_client_socket(ctx, 1) ? SLUICE_BY_UDP : 0;
}

SEC("cgroup/connect4")
int sluice_connect4(struct bpf_sock_addr *ctx)
{
	__u32 reason = connect_grants(ctx);

	if (reason)
		grant_v4(ctx->user_ip4, reason);
	return 1; /* never blocks */
}

SEC("cgroup/connect6")
int sluice_connect6(struct bpf_sock_addr *ctx)
{
	__u32 reason = connect_grants(ctx);

	if (reason)
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], reason);
	return 1;
}

/* sendmsg() on an unconnected UDP socket (sendto): granted only from a client
 * socket, see udp_client_socket(). By now the socket is bound (inet_sendmsg
 * autobinds before this hook runs). */
SEC("cgroup/sendmsg4")
int sluice_sendmsg4(struct bpf_sock_addr *ctx)
{
	if (udp_client_socket(ctx, 0))
		grant_v4(ctx->user_ip4, SLUICE_BY_UDP);
	return 1;
}

SEC("cgroup/sendmsg6")
int sluice_sendmsg6(struct bpf_sock_addr *ctx)
{
	if (udp_client_socket(ctx, 0))
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], SLUICE_BY_UDP);
	return 1;
}
