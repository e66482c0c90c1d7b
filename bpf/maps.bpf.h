/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * maps.bpf.h - the program's state: the load-time settings, every map (their
 * value types are sluice_abi.h's, shared with the daemon), and the outcome
 * counters' writers.
 */
#ifndef SLUICE_MAPS_BPF_H
#define SLUICE_MAPS_BPF_H

/* Load-time settings (read-only once loaded; the verifier folds the branches
 * that depend on them, so a non-dry-run program carries no dry-run code).
 * settings.zero_key is the config's key for sluice_xdp and
 * sluice_judge_policy: those two and the lease's sluice_pair_admit together
 * are at the verifier's 512 bytes of stack, and with a key kept in either
 * frame the clock's arithmetic (jiffies_clock.h) took them past it. The verifier
 * knows read-only data, so the lookup is the same inlined one. */
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

/* A list's whole addresses, both sets (sluice_abi.h, struct
 * sluice_exact_v4): as bounded as the tries, allocated per entry as they
 * are. */
#define SLUICE_EXACT_MAP(name, keytype)                                            \
	struct {                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                   \
		__uint(max_entries, SLUICE_POLICY_SETS * SLUICE_LIST_MAX_ENTRIES); \
		__uint(map_flags, BPF_F_NO_PREALLOC);                              \
		__type(key, keytype);                                              \
		__type(value, __u8);                                               \
	} name SEC(".maps")

SLUICE_EXACT_MAP(deny_exact_v4, struct sluice_exact_v4);
SLUICE_EXACT_MAP(deny_exact_v6, struct sluice_exact_v6);
SLUICE_EXACT_MAP(allow_exact_v4, struct sluice_exact_v4);
SLUICE_EXACT_MAP(allow_exact_v6, struct sluice_exact_v6);
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

/* Revoked standing (sluice_abi.h, struct sluice_penalty_set): written by
 * the daemon, read by a grant; max_entries is replaced at load (the standing
 * sets / SLUICE_PENALTY_SETS_DIVISOR). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_STANDING_SETS_DEFAULT / SLUICE_PENALTY_SETS_DIVISOR);
	__type(key, __u32);
	__type(value, struct sluice_penalty_set);
} standing_penalty SEC(".maps");

/* The per-prefix quota (sluice_abi.h): a count per standing way's bit,
 * added to by a grant of a new source, recounted by the daemon;
 * max_entries is replaced at load (the standing sets x ways). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_STANDING_SETS_DEFAULT * SLUICE_STANDING_WAYS);
	__type(key, __u32);
	__type(value, __u32);
} prefix_count SEC(".maps");

/* The UDP feeders' grant budget, two buckets per local user (uid &
 * (SLUICE_GRANT_QUOTA_SLOTS - 1)): its rate, and its total (sluice_abi.h,
 * SLUICE_GRANT_QUOTA_ENTRIES), shared by the CPUs (compare-and-swap). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_GRANT_QUOTA_ENTRIES);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} grant_quota SEC(".maps");

/* The host's own addresses (sluice_abi.h, SLUICE_OWN_ADDRS_MAX): a feeder
 * grants none of them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_OWN_ADDRS_MAX);
	__type(key, struct sluice_addr16);
	__type(value, __u8);
} own_addrs SEC(".maps");

/* The newcomer budget while shedding: one bucket per CPU (no atomics; cost
 * and burst in config are per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} newcomers SEC(".maps");

/* Leases (bucket.h): each CPU's tokens taken from a slot pair in a batch
 * once that pair's swaps were contended, a direct-mapped cache by the pair's
 * first slot. Not state: never pinned, made anew with each load (what a lease
 * held then is lost: under-admitted, never over). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_LEASE_ENTRIES);
	__type(key, __u32);
	__type(value, struct sluice_lease);
} leases SEC(".maps");

/* The cookie budget: the SYN-ACKs the program may send, one bucket per CPU
 * like the newcomer budget (cost and burst in config are per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} cookie_budget SEC(".maps");

/* The per-destination SYN-ACK bound (sluice_abi.h, SLUICE_COOKIE_DEST_SLOTS):
 * a bucket per slot of the SYN's source network, shared by the CPUs
 * (compare-and-swap, bucket.h's sluice_admit1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_COOKIE_DEST_SLOTS);
	__type(key, __u32);
	__type(value, struct sluice_slot);
} cookie_dest SEC(".maps");

/* The cookie path's SYN stamps (sluice_abi.h, SLUICE_COOKIE_SYN_SLOTS): a
 * byte per slot, eight a word (an array's values take 8 bytes each
 * whatever their size), written by plain byte stores (CPUs that race write
 * the same or the next tick; a neighbour's byte is not touched). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_COOKIE_SYN_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} cookie_syns SEC(".maps");

/* TCP ports that have had a listener (sluice_abi.h, "The listen_ports map"). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_LISTEN_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} listen_ports SEC(".maps");

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
	__u32 dest_slot; /* the SYN's cookie_dest slot (sluice_dest_slot) */
	__u64 kept[2];   /* a proved source as its standing record keeps it */
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

/* Drop sampling's countdown, one per CPU: the drops this CPU lets go by
 * before its next sample. Not state (never pinned): a new load starts it
 * at 0, a sample at the first drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sample_countdown SEC(".maps");

static __always_inline void count(__u32 outcome, __u64 bytes)
{
	struct sluice_counter *c = bpf_map_lookup_elem(&counters, &outcome);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
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
	       outcome == SLUICE_NEWCOMER || outcome == SLUICE_EXEMPT || outcome == SLUICE_COOKIE_PROVED ||
	       outcome == SLUICE_REPLY;
}

#endif /* SLUICE_MAPS_BPF_H */
