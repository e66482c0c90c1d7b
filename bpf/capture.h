/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * capture.h - `sluicectl capture` in the data plane: the frames of the
 * outcomes asked for, copied to the daemon while it runs a capture
 * (sluice_abi.h, struct sluice_capture; docs/architecture.md "Capture").
 *
 * sluice.bpf.c calls sluice_capture() once, where a frame's final outcome
 * is counted. Without a capture that call is one load of outcome_mask (a
 * global of its own section: the verifier turns it into a load at a fixed
 * address, no helper call, no lookup) and a branch that is never taken;
 * everything else is in capture_copy(), a function of its own (a BPF call),
 * so that the inlined fast path keeps its registers.
 *
 * The frame is copied the way xdpcap does it: bpf_perf_event_output() with
 * the XDP context and the length in the flags' upper half, so the kernel
 * copies the bytes from the frame into the reader's per-CPU buffer itself,
 * behind the record; no scratch buffer, no bpf_xdp_load_bytes(). A perf
 * event array's entries belong to the file they were written through: the
 * daemon's, closed when it exits or is killed, so nothing is copied after.
 */
#ifndef SLUICE_CAPTURE_H
#define SLUICE_CAPTURE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice_abi.h"

/* The daemon writes it through the "capture" pin (the section's map). */
struct sluice_capture capture SEC(".data.capture") = { .outcome_mask = 0 };

/* One entry per possible CPU (libbpf sizes a perf event array of 0 entries
 * so), filled by the daemon's perf buffer while a capture runs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} capture_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_capture_stats);
} capture_stats SEC(".maps");

/* A frame whose outcome is in the mask: count it, take 1 in sample_every
 * (per CPU, the first included), copy it. Past the lease the capture is
 * turned off here: the daemon that asked for it is gone. */
static __attribute__((noinline)) int capture_copy(struct xdp_md *ctx, __u32 outcome)
{
	__u32 zero = 0;
	struct sluice_capture_stats *st = bpf_map_lookup_elem(&capture_stats, &zero);

	if (!st)
		return 0;
	__u64 now = bpf_ktime_get_ns();

	if (now > capture.lease_ns) {
		capture.outcome_mask = 0;
		return 0;
	}
	__u64 generation = capture.generation;

	if (st->generation != generation) {
		st->generation = generation;
		st->matched = 0;
		st->copied = 0;
		st->lost = 0;
	}
	__u64 seen = st->matched++;
	__u32 every = capture.sample_every;

	if (every > 1 && seen % every)
		return 0;
	__u64 len = (__u64)((long)ctx->data_end - (long)ctx->data);
	__u64 snaplen = capture.snaplen;

	if (snaplen > SLUICE_CAPTURE_SNAPLEN_MAX)
		snaplen = SLUICE_CAPTURE_SNAPLEN_MAX;
	__u64 cap = len < snaplen ? len : snaplen;
	struct sluice_capture_record rec = {
		.time_ns = now,
		.wire_len = (__u32)len,
		.cap_len = (__u32)cap,
		.outcome = (__u16)outcome,
		.cpu = (__u16)bpf_get_smp_processor_id(),
	};

	if (bpf_perf_event_output(ctx, &capture_events, BPF_F_CURRENT_CPU | (cap << 32), &rec, sizeof(rec)))
		st->lost++;
	else
		st->copied++;
	return 0;
}

static __always_inline void sluice_capture(struct xdp_md *ctx, __u32 outcome)
{
	__u32 mask = *(volatile __u32 *)&capture.outcome_mask;

	if (__builtin_expect(mask != 0, 0) && (mask & (1u << outcome)))
		capture_copy(ctx, outcome);
}

#endif /* SLUICE_CAPTURE_H */
