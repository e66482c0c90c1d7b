// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The floor every per-packet cost is measured against: a program that drops
 * every frame and does nothing else. Used by the bpf cost test and bench.sh. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_drop_all(struct xdp_md *ctx)
{
	return XDP_DROP;
}
