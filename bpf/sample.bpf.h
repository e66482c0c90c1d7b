/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sample.bpf.h - the drop samples for `sluicectl top` and the upstream
 * signature: 1 in settings.sample_every drops, at random gaps, to a ring.
 */
#ifndef SLUICE_SAMPLE_BPF_H
#define SLUICE_SAMPLE_BPF_H

/*
 * One drop sample to the ring: the source (as the caller has it: the frame's
 * or the masked one), the family and the outcome from the caller; the
 * signature (sluice_abi.h, struct sluice_drop_sample) read here from ctx
 * again, with parse.h's helper-free parse. A global function, called only
 * once a sample is taken (about 1 in settings.sample_every drops): the drop
 * path keeps nothing of the headers it did not need for its verdict, and
 * pays for this parse only in the sample's own cost. fo is family << 8 |
 * outcome (five arguments at most).
 */
__noinline int sluice_sample(struct xdp_md *ctx, __u64 w0, __u64 w1, __u32 fo)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	struct sluice_drop_sample *s = bpf_ringbuf_reserve(&drop_samples, sizeof(*s), 0);

	if (!s)
		return 0; /* ring full: the daemon is behind or down; the sample is lost */
	__u64 len = end - data;

	s->w[0] = w0;
	s->w[1] = w1;
	s->dst[0] = 0;
	s->dst[1] = 0;
	s->family = fo >> 8;
	s->outcome = fo & 0xff;
	s->proto = 0;
	s->tcp_flags = 0;
	s->dport = 0;
	s->len = len > 0xffff ? 0xffff : len;
	s->ip_len = 0;

	struct sluice_source src;
	const __u8 *l3 = data, *l4 = 0;
	__u32 proto = 0;
	int kind = sluice_parse_at(data, end, &src, &l3);

	/* A frame dropped for being cut short carries what could be read. */
	if ((kind == SLUICE_PARSE_IPV4 || kind == SLUICE_PARSE_IPV6) &&
	    !sluice_find_l4(l3, end, kind == SLUICE_PARSE_IPV6, &proto, &l4)) {
		if (kind == SLUICE_PARSE_IPV4) {
			if (l3 + 20 <= end) {
				s->dst[0] = SLUICE_LOAD(__u32, l3 + 16);
				s->ip_len = sluice_be16_at(l3 + 2);
			}
		} else if (l3 + 40 <= end) {
			s->dst[0] = SLUICE_LOAD(__u64, l3 + 24);
			s->dst[1] = SLUICE_LOAD(__u64, l3 + 32);
			s->ip_len = sluice_be16_at(l3 + 4) + 40;
		}
		s->proto = proto;
		if (l4 && proto == SLUICE_IPPROTO_TCP && l4 + 20 <= end) {
			s->dport = sluice_be16_at(l4 + 2);
			s->tcp_flags = l4[13];
		} else if (l4 && proto == SLUICE_IPPROTO_UDP && l4 + 8 <= end) {
			s->dport = sluice_be16_at(l4 + 2);
		}
	}
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	return 0;
}

/* A drop verdict, sampled: 1 in settings.sample_every of them (N) go to the
 * ring (sluice_sample), without a wakeup (the daemon drains it each period).
 * judge() calls this only on its drop returns, so the pass path pays
 * nothing. The gap to the next sample is drawn when a sample is taken,
 * uniform on 1..2N-1 (mean N), so a drop pays a decrement and the draw is
 * paid once a sample: a bpf_get_prandom_u32() a drop cost 4 ns a drop
 * (figure 1, issue 19), more than the drop path's margin to the pass path.
 * Random gaps, not every Nth drop: a sender cannot time its frames to fall
 * between samples. Sampling off (sample_every 0) leaves a load and a test.
 * ctx is live on every path that drops anyway (sluice_xdp counts the frame's
 * length from it after the verdict), so passing it here costs no work. */
static __always_inline __u32 sampled_drop(struct xdp_md *ctx, const struct sluice_source *src, int is_v6,
					  __u32 outcome)
{
	__u32 zero = 0;

	if (!settings.sample_every)
		return outcome;
	__u32 *left = bpf_map_lookup_elem(&sample_countdown, &zero);

	if (!left)
		return outcome; /* cannot happen: a one-element array */
	if (*left) {
		*left -= 1;
		return outcome;
	}
	*left = bpf_get_prandom_u32() % (2 * settings.sample_every - 1);
	sluice_sample(ctx, src->w[0], src->w[1], (is_v6 ? 6 : 4) << 8 | outcome);
	return outcome;
}

#endif /* SLUICE_SAMPLE_BPF_H */
