// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * clock_probe.bpf.c - the kernel's jiffies_64 for the host. User space has no
 * call that reads jiffies, and the data plane's clock is made of them
 * (jiffies_clock.h): ctl/lib/clock runs this program with BPF_PROG_TEST_RUN,
 * never attached, and reads the jiffies it wrote over its frame's first 8
 * bytes. A reading in between two of the host's brackets every reading the
 * XDP program makes in between, exactly.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int sluice_clock_probe(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (data + sizeof(__u64) > end)
		return XDP_ABORTED;
	*(__u64 *)data = bpf_jiffies64();
	return XDP_PASS;
}
