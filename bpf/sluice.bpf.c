// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice.bpf.c - the XDP program: parse -> lists -> class -> two slots -> verdict.
 *
 * This file holds the entry points and the order of the checks (judge,
 * sluice_xdp); each path is a header of its own, included below in the order
 * the paths depend on one another: maps.bpf.h (settings, maps, counters),
 * sample.bpf.h, lists.bpf.h, standing_path.bpf.h, cookie_path.bpf.h,
 * buckets_path.bpf.h, policy_path.bpf.h, feeders.bpf.h; bench.bpf.h has the
 * bench-only variants. (The order also keeps each global function where the
 * one-file program had it: the default object's instructions are the same.)
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
 *                  drop_cookie_reflect,
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
#include "jiffies_clock.h"
#include "parse.h"
#include "source_key.h"
#include "standing.h"
#include "bench.bpf.h"
#include "maps.bpf.h"
#include "sample.bpf.h"
#include "lists.bpf.h"
#include "standing_path.bpf.h"
#include "cookie_path.bpf.h"
#include "buckets_path.bpf.h"
#include "policy_path.bpf.h"
#include "feeders.bpf.h"

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
							SLUICE_NOW(),
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
					       SLUICE_NOW(), src->w[0], src->w[1], is_v6);
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
	__u32 outcome;
	int kind = sluice_parse(data, data_end, &src);

	SLUICE_BENCH_CUT_POINT(PARSE, XDP_DROP, kind, src.w[0], src.w[1]);
	if (kind == SLUICE_PARSE_NON_IP) {
		count(SLUICE_NON_IP, bytes);
		return XDP_PASS;
	}
	if (kind == SLUICE_PARSE_MALFORMED) {
		outcome = SLUICE_MALFORMED;
	} else {
		struct sluice_config *cfg = bpf_map_lookup_elem(&config, (const void *)&settings.zero_key);

		if (!cfg)
			return XDP_PASS; /* cannot happen: a one-element array */
		/* Read once: the policy set and its flags together. */
		__u32 flags = *(volatile __u32 *)&cfg->policy_flags;

		outcome = judge(ctx, cfg, flags, &src, kind == SLUICE_PARSE_IPV6);
		if (SLUICE_BENCH_WAS_STOPPED(outcome))
			return XDP_DROP;
		SLUICE_BENCH_CUT_POINT(VERDICT, XDP_DROP, outcome);
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

/* The standing table's feeders (feeders.bpf.h), attached by the daemon with
 * bpf_links on a cgroup; each never blocks the call it watches. */
SEC("sockops")
int sluice_sockops(struct bpf_sock_ops *skops)
{
	return feed_sockops(skops);
}

SEC("cgroup/connect4")
int sluice_connect4(struct bpf_sock_addr *ctx)
{
	return feed_connect4(ctx);
}

SEC("cgroup/connect6")
int sluice_connect6(struct bpf_sock_addr *ctx)
{
	return feed_connect6(ctx);
}

SEC("cgroup/sendmsg4")
int sluice_sendmsg4(struct bpf_sock_addr *ctx)
{
	return feed_sendmsg4(ctx);
}

SEC("cgroup/sendmsg6")
int sluice_sendmsg6(struct bpf_sock_addr *ctx)
{
	return feed_sendmsg6(ctx);
}
