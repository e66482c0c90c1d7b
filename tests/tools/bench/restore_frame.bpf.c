// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * restore_frame.bpf.c - a benchmark-only wrapper: puts the frame held in
 * `frame` (written by sluice-bench) back into the buffer, its length and
 * every byte, then tail-calls the program under test (slot 0 of `target`).
 * BPF_PROG_TEST_RUN with repeat N runs it N times on one buffer without
 * resetting it, so a program that rewrites the frame in place (the SYN
 * cookie path turns the SYN into its SYN-ACK and returns XDP_TX) would see
 * its own reply from the second repetition on; behind this wrapper every
 * repetition sees the frame as it came. Its own cost is measured by
 * tail-calling xdp_drop, and figure 10 subtracts it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define RESTORE_MAX 128

struct restore_frame {
	__u32 len; /* 1 .. RESTORE_MAX */
	__u8 bytes[RESTORE_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct restore_frame);
} frame SEC(".maps");

SEC("xdp")
int restore_frame(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct restore_frame *f = bpf_map_lookup_elem(&frame, &zero);

	if (!f)
		return XDP_ABORTED;
	__u32 len = f->len;
	if (len < 1 || len > RESTORE_MAX)
		return XDP_ABORTED;
	int have = (int)(ctx->data_end - ctx->data);
	if (have != (int)len && bpf_xdp_adjust_tail(ctx, (int)len - have))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, f->bytes, len))
		return XDP_ABORTED;
	bpf_tail_call(ctx, &target, 0);
	return XDP_ABORTED; /* no program in the slot */
}
