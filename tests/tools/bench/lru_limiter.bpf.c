// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * lru_limiter.bpf.c - a benchmark baseline, not part of sluice: the per-source
 * XDP rate limiter as it is commonly written by hand. One token bucket per
 * source in a BPF_MAP_TYPE_LRU_HASH (IPv4 keyed by the address, IPv6 by its
 * /64, or by the whole address with v6_prefix 128), created on a source's first frame and updated in place. The update is
 * a read-modify-write without atomics or a lock: the kernel refuses
 * bpf_spin_lock in LRU maps, so such programs race when one source's frames
 * arrive on two CPUs (figure 4 measures what that costs in accuracy).
 *
 * Parsing is what such programs do: Ethernet then IPv4 or IPv6, no VLAN tags,
 * no fragment or option handling; anything else passes.
 *
 * Clock: the coarse clock by default; -DLRU_FINE_CLOCK uses bpf_ktime_get_ns,
 * as many of them do.
 *
 * The limits are in .rodata (rate_pps, burst); the defaults admit every frame
 * of figure 1's steady source, which is the pass path sluice is measured on.
 * The table holds LRU_ENTRIES sources: a flood of more distinct sources than
 * that evicts and re-creates buckets (figure 1's new-source rows, figure 3).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef LRU_ENTRIES
#define LRU_ENTRIES 32768
#endif

#ifdef LRU_FINE_CLOCK
#define LRU_CLOCK() bpf_ktime_get_ns()
#else
#define LRU_CLOCK() bpf_ktime_get_coarse_ns()
#endif

const volatile __u64 rate_pps = 100000000; /* tokens per second */
const volatile __u64 burst = 1000000;      /* bucket capacity */
const volatile __u64 v6_prefix = 64;       /* 64 or 128 */

struct key_v6 {
	__u64 hi, lo;
};

struct bucket {
	__u64 tokens;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LRU_ENTRIES);
	__type(key, __u32);
	__type(value, struct bucket);
} buckets_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LRU_ENTRIES);
	__type(key, struct key_v6);
	__type(value, struct bucket);
} buckets_v6 SEC(".maps");

/* Frames passed [0] and dropped [1] by the limit, per CPU (figure 4 reads
 * them; such programs usually keep a counter like this). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline int counted(int verdict)
{
	__u32 k = verdict == XDP_PASS ? 0 : 1;
	__u64 *c = bpf_map_lookup_elem(&stats, &k);

	if (c)
		(*c)++;
	return verdict;
}

static __always_inline int limit(void *map, const void *key)
{
	__u64 now = LRU_CLOCK();
	struct bucket *b = bpf_map_lookup_elem(map, key);

	if (!b) {
		struct bucket fresh = { .tokens = burst - 1, .last_ns = now };

		bpf_map_update_elem(map, key, &fresh, BPF_ANY);
		return XDP_PASS;
	}
	__u64 refill = (now - b->last_ns) * rate_pps / 1000000000ull;

	if (refill) {
		b->tokens = b->tokens + refill > burst ? burst : b->tokens + refill;
		b->last_ns = now;
	}
	if (b->tokens == 0)
		return XDP_DROP;
	b->tokens--;
	return XDP_PASS;
}

SEC("xdp")
int lru_limiter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return XDP_PASS;
		__u32 key = ip->saddr;
		return counted(limit(&buckets_v4, &key));
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		struct key_v6 key;

		__builtin_memcpy(&key, &ip6->saddr, sizeof(key));
		if (v6_prefix != 128)
			key.lo = 0; /* the /64 */
		return counted(limit(&buckets_v6, &key));
	}
	return XDP_PASS;
}
