// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Sends every frame back where it came from (XDP_TX), unchanged: figure 10's
 * measure of what XDP_TX itself costs on the testbed's veth (the frame handed
 * to the peer's ring and its NAPI poll), beside XDP_DROP's. Benchmark only. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_tx_all(struct xdp_md *ctx)
{
	return XDP_TX;
}
