/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * feeders.bpf.h - the standing table's feeders: what the sock_ops and cgroup
 * sock_addr programs that sluice.bpf.c lists do (see "Standing" and
 * docs/security.md's trust model). A grant is made only for what was
 * proved: a TCP handshake that completed (either way), or a UDP client
 * socket's peer within its user's grant budget; never an address that
 * cannot be a remote peer (loopback, unspecified, multicast, broadcast, the
 * connection's own local address).
 */
#ifndef SLUICE_FEEDERS_BPF_H
#define SLUICE_FEEDERS_BPF_H

/* Grant the peer `src` standing for `reason`, stamped now (sluice_grant:
 * never while its penalty runs, never a new source of a prefix at its quota,
 * never over a stronger proof); a UDP grant for its peer `port` alone (host
 * order; 0: every frame, a handshake's). */
static __always_inline void grant(const struct sluice_source *src, int is_v6, __u32 reason, __u32 port)
{
	struct sluice_source masked = *src;
	struct sluice_addr16 own;
	__u64 kept[2];

	/* one of the host's own addresses: frames from it on the wire are forged */
	sluice_standing_source(src->w[0], src->w[1], is_v6, own.w);
	if (bpf_map_lookup_elem(&own_addrs, &own))
		return;
	kept_source(src, is_v6, kept);
	sluice_grant(source_hash(&masked, is_v6), SLUICE_NOW(), kept[0], kept[1],
		     sluice_grant_ask(reason, port));
}

/* Can an IPv4 address (network order) be a remote peer? Not 0/8
 * (unspecified, "this network"), 127/8 (loopback), 224/4 (multicast) or
 * 240/4 (reserved, with the broadcast address). */
static __always_inline int v4_peer(__u32 addr)
{
	return sluice_v4_peer(bpf_ntohl(addr) >> 24);
}

static __always_inline void grant_v4(__u32 addr, __u32 reason, __u32 port)
{
	struct sluice_source src = { .w = { addr, 0 } };

	if (v4_peer(addr))
		grant(&src, 0, reason, port);
}

/* An IPv6 peer as four network-order words; a v4-mapped one (::ffff:a.b.c.d,
 * a dual-stack socket's IPv4 peer) is granted as the IPv4 address its frames
 * carry. Never :: or ::1, nor multicast (ff00::/8). */
static __always_inline void grant_v6(__u32 a0, __u32 a1, __u32 a2, __u32 a3, __u32 reason, __u32 port)
{
	if (a0 == 0 && a1 == 0 && a2 == bpf_htonl(0x0000ffff)) {
		grant_v4(a3, reason, port);
		return;
	}
	if (!sluice_v6_peer(bpf_ntohl(a0), (a1 | a2) == 0, bpf_ntohl(a3)))
		return;
	__u32 a[4] = { a0, a1, a2, a3 };
	struct sluice_source src;

	__builtin_memcpy(src.w, a, sizeof(a));
	grant(&src, 1, reason, port);
}

/* A TCP connection reached ESTABLISHED: passive, a peer completed the
 * handshake to a local listener (it answered our SYN-ACK, so its address is
 * real); active, a connection the host opened. Nothing a spoofed packet makes
 * the host send (SYN-ACK, RST) reaches either callback. And a socket began
 * to listen (inet_listen): its port goes into listen_ports. These three
 * callbacks run without any BPF_SOCK_OPS_*_CB_FLAGS, so the program sets none. */
static __always_inline int feed_sockops(struct bpf_sock_ops *skops)
{
	if (skops->op == BPF_SOCK_OPS_TCP_LISTEN_CB) {
		/* listen(): the cookie path may look this port up from now on.
		 * (Every namespace's listeners reach this feeder: a port set for
		 * another namespace costs only a lookup that finds nothing.) */
		__u32 port = skops->local_port; /* host order */
		__u32 word = sluice_listen_port_word(port);
		__u64 *bits = bpf_map_lookup_elem(&listen_ports, &word);

		if (bits)
			__sync_fetch_and_or(bits, sluice_listen_port_bit(port));
		return 1;
	}
	if (skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB && skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	__u32 reason = skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB ? SLUICE_BY_ACCEPTED : SLUICE_BY_CONNECTED;

	/* A connection to one of the host's own addresses has that address at
	 * both ends: frames from it on the wire are forged, never granted. */
	if (skops->family == 2 /* AF_INET */) {
		if (skops->remote_ip4 != skops->local_ip4)
			grant_v4(skops->remote_ip4, reason, 0);
	} else if (skops->family == 10 /* AF_INET6 */) {
		if ((skops->remote_ip6[0] ^ skops->local_ip6[0]) | (skops->remote_ip6[1] ^ skops->local_ip6[1]) |
		    (skops->remote_ip6[2] ^ skops->local_ip6[2]) | (skops->remote_ip6[3] ^ skops->local_ip6[3]))
			grant_v6(skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2],
				 skops->remote_ip6[3], reason, 0);
	}
	return 1;
}

/* Is this UDP socket a client's? Bound to a port of the ephemeral range (the
 * kernel's autobind) or not bound yet (connect() before bind: the kernel binds
 * it from that range next). A socket bound to any other port is a server's:
 * its replies go to whoever sent it a query, spoofed or not, and never grant. */
static __always_inline int udp_client_socket(struct bpf_sock_addr *ctx, int unbound_ok)
{
	struct bpf_sock *sk = ctx->sk;

	if (!sk)
		return 0;
	__u32 port = sk->src_port; /* host order */
	if (port == 0)
		return unbound_ok;
	return port >= settings.ephemeral_lo && port <= settings.ephemeral_hi;
}

/* The UDP feeders' grant budget: a token of each of the calling user's
 * buckets (grant_quota, by uid), so one local user grants at most
 * grant_burst entries at once and 1e9 / grant_cost_ns a second, and at most
 * grant_max a lapse time (its total; 0 cost: no such bound); 0 grant cost:
 * no UDP grants. The rate's token goes first: a burst the rate refuses
 * spends nothing of the total. */
static __always_inline int udp_grant_budget(void)
{
	__u32 zero = 0;
	const struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg || !cfg->grant_cost_ns)
		return 0;
	__u32 idx = (__u32)bpf_get_current_uid_gid() & (SLUICE_GRANT_QUOTA_SLOTS - 1);
	__u32 total_idx = idx + SLUICE_GRANT_QUOTA_SLOTS;
	struct sluice_slot *b = bpf_map_lookup_elem(&grant_quota, &idx);
	struct sluice_slot *t = bpf_map_lookup_elem(&grant_quota, &total_idx);
	__u64 now = SLUICE_NOW();

	if (!b || !t || !sluice_admit1(&b->empty_at, now, cfg->grant_cost_ns, cfg->grant_burst * cfg->grant_cost_ns))
		return 0;
	return !cfg->grant_total_cost_ns ||
	       sluice_admit1(&t->empty_at, now, cfg->grant_total_cost_ns, cfg->grant_max * cfg->grant_total_cost_ns);
}

/* The peer port a UDP call names (host order; user_port holds it in
 * network order). A grant is bound to it: the client asked that port, so
 * only that port's replies are the answers it waits for. Port 0 names no
 * peer, and grants nothing. */
static __always_inline __u32 udp_peer_port(const struct bpf_sock_addr *ctx)
{
	return bpf_ntohs((__u16)ctx->user_port);
}

/* connect(): a UDP client socket's peer, within its user's budget. A TCP
 * connect() grants nothing: its peer earns standing when the handshake
 * completes (sockops, active), and the SYN-ACK before that is admitted
 * because a local socket sent the SYN it answers (cookie_path.bpf.h). */
static __always_inline int udp_connect_grants(struct bpf_sock_addr *ctx)
{
	return ctx->type == 2 /* SOCK_DGRAM */ && udp_peer_port(ctx) && udp_client_socket(ctx, 1) &&
	       udp_grant_budget();
}

static __always_inline int feed_connect4(struct bpf_sock_addr *ctx)
{
	if (v4_peer(ctx->user_ip4) && udp_connect_grants(ctx))
		grant_v4(ctx->user_ip4, SLUICE_BY_UDP, udp_peer_port(ctx));
	return 1; /* never blocks */
}

static __always_inline int feed_connect6(struct bpf_sock_addr *ctx)
{
	if (udp_connect_grants(ctx))
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], SLUICE_BY_UDP,
			 udp_peer_port(ctx));
	return 1;
}

/* sendmsg() on an unconnected UDP socket (sendto): granted only from a client
 * socket, see udp_client_socket(). By now the socket is bound (inet_sendmsg
 * autobinds before this hook runs). */
static __always_inline int feed_sendmsg4(struct bpf_sock_addr *ctx)
{
	if (v4_peer(ctx->user_ip4) && udp_peer_port(ctx) && udp_client_socket(ctx, 0) && udp_grant_budget())
		grant_v4(ctx->user_ip4, SLUICE_BY_UDP, udp_peer_port(ctx));
	return 1;
}

static __always_inline int feed_sendmsg6(struct bpf_sock_addr *ctx)
{
	if (udp_peer_port(ctx) && udp_client_socket(ctx, 0) && udp_grant_budget())
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], SLUICE_BY_UDP,
			 udp_peer_port(ctx));
	return 1;
}

#endif /* SLUICE_FEEDERS_BPF_H */
