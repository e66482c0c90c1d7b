// SPDX-License-Identifier: GPL-2.0-only
/* netrx_clock.bpf.c - bench.sh's receive-side CPU clock: the time every CPU
 * spends in the NET_RX softirq (where veth's NAPI poll, XDP, the backlog,
 * netfilter and the IP stack run), summed per CPU from the softirq_entry and
 * softirq_exit tracepoints (raw tracepoints: no tracefs needed). Exact where /proc/stat's softirq column
 * is tick-sampled (this kernel has no IRQ time accounting). Loaded and read
 * by `sluice-bench netrx`; never part of sluice. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define NET_RX_SOFTIRQ 3

/* Per CPU: [0] when the current NET_RX softirq began (0: none), [1] total ns,
 * [2] how many NET_RX softirqs ran. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} netrx SEC(".maps");

/* args[0]: the softirq's vector number. */
SEC("raw_tp/softirq_entry")
int netrx_entry(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 k = 0;
	__u64 *start;

	if (ctx->args[0] != NET_RX_SOFTIRQ)
		return 0;
	start = bpf_map_lookup_elem(&netrx, &k);
	if (start)
		*start = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/softirq_exit")
int netrx_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 k0 = 0, k1 = 1, k2 = 2;
	__u64 *start, *total, *count;

	if (ctx->args[0] != NET_RX_SOFTIRQ)
		return 0;
	start = bpf_map_lookup_elem(&netrx, &k0);
	total = bpf_map_lookup_elem(&netrx, &k1);
	count = bpf_map_lookup_elem(&netrx, &k2);
	if (!start || !total || !count || !*start)
		return 0;
	*total += bpf_ktime_get_ns() - *start;
	*count += 1;
	*start = 0;
	return 0;
}
