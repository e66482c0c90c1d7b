// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * new_source.bpf.c - a benchmark-only wrapper: rewrites the frame's source
 * address from a per-CPU counter, then tail-calls the program under test
 * (slot 0 of `target`, set by sluice-bench). BPF_PROG_TEST_RUN with repeat N
 * runs it N times on one buffer, so every repetition carries the next
 * source: the path of a spoofed flood, a new source on every frame, applied
 * identically to every limiter. Its own cost is measured by tail-calling
 * xdp_drop (figure 1 subtracts nothing; it shows that row beside the others).
 *
 * Sources: IPv4 counts through 198.18.0.0/15 (131,072 addresses), IPv6
 * through the /64s of 2001:2::/48 (65,536), the benchmarking ranges; more
 * than the LRU baseline's 32,768 entries, so that baseline evicts on every
 * frame, and fresh slots for sluice. The IPv4 checksum is not fixed up: no
 * limiter under test reads it. Frames that are neither pass unchanged.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} next_source SEC(".maps");

SEC("xdp")
int new_source(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0;
	__u32 *n = bpf_map_lookup_elem(&next_source, &zero);

	if (!n || (void *)(eth + 1) > data_end)
		return XDP_PASS;
	__u32 i = (*n)++;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return XDP_PASS;
		ip->saddr = bpf_htonl(0xc6120000u | (i & 0x1ffffu)); /* 198.18.0.0/15 */
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		ip6->saddr.in6_u.u6_addr16[3] = bpf_htons((__u16)i); /* 2001:2:0:XXXX::/64 */
	}
	bpf_tail_call(ctx, &target, 0);
	return XDP_PASS; /* no program in the slot */
}
