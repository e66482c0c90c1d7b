// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Passes every frame. scripts/testbed-selfcheck.sh attaches it (native) to the
 * testbed's veth-host to check that frames an XDP program passes still reach
 * the host's sockets with nothing attached to the veth peer; benchmarks can
 * use it as the "XDP present, does nothing" floor. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_pass_all(struct xdp_md *ctx)
{
	return XDP_PASS;
}
