/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * feeders.bpf.h - the standing table's feeders: what the sock_ops and cgroup
 * sock_addr programs that sluice.bpf.c lists do (see "Standing" in
 * docs/architecture.md).
 */
#ifndef SLUICE_FEEDERS_BPF_H
#define SLUICE_FEEDERS_BPF_H

/* Grant the peer `src` standing for `reason`, stamped now. */
static __always_inline void grant(struct sluice_source *src, int is_v6, __u32 reason)
{
	grant_hash(source_hash(src, is_v6), SLUICE_CLOCK() + SLUICE_TIME_BIAS, reason);
}

static __always_inline void grant_v4(__u32 addr, __u32 reason)
{
	struct sluice_source src = { .w = { addr, 0 } };

	grant(&src, 0, reason);
}

/* An IPv6 peer as four network-order words; a v4-mapped one (::ffff:a.b.c.d,
 * a dual-stack socket's IPv4 peer) is granted as the IPv4 address its frames
 * carry. */
static __always_inline void grant_v6(__u32 a0, __u32 a1, __u32 a2, __u32 a3, __u32 reason)
{
	if (a0 == 0 && a1 == 0 && a2 == bpf_htonl(0x0000ffff)) {
		grant_v4(a3, reason);
		return;
	}
	__u32 a[4] = { a0, a1, a2, a3 };
	struct sluice_source src;

	__builtin_memcpy(src.w, a, sizeof(a));
	grant(&src, 1, reason);
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

	if (skops->family == 2 /* AF_INET */)
		grant_v4(skops->remote_ip4, reason);
	else if (skops->family == 10 /* AF_INET6 */)
		grant_v6(skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2], skops->remote_ip6[3], reason);
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

/* connect(): TCP, the host chose the peer (granted before the handshake, so
 * that the peer's SYN-ACK is not shed); UDP, a client socket's peer. The
 * reason granted, 0 for none. */
static __always_inline __u32 connect_grants(struct bpf_sock_addr *ctx)
{
	if (ctx->type == 1 /* SOCK_STREAM */)
		return SLUICE_BY_CONNECTED;
	return ctx->type == 2 /* SOCK_DGRAM */ && udp_client_socket(ctx, 1) ? SLUICE_BY_UDP : 0;
}

static __always_inline int feed_connect4(struct bpf_sock_addr *ctx)
{
	__u32 reason = connect_grants(ctx);

	if (reason)
		grant_v4(ctx->user_ip4, reason);
	return 1; /* never blocks */
}

static __always_inline int feed_connect6(struct bpf_sock_addr *ctx)
{
	__u32 reason = connect_grants(ctx);

	if (reason)
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], reason);
	return 1;
}

/* sendmsg() on an unconnected UDP socket (sendto): granted only from a client
 * socket, see udp_client_socket(). By now the socket is bound (inet_sendmsg
 * autobinds before this hook runs). */
static __always_inline int feed_sendmsg4(struct bpf_sock_addr *ctx)
{
	if (udp_client_socket(ctx, 0))
		grant_v4(ctx->user_ip4, SLUICE_BY_UDP);
	return 1;
}

static __always_inline int feed_sendmsg6(struct bpf_sock_addr *ctx)
{
	if (udp_client_socket(ctx, 0))
		grant_v6(ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3], SLUICE_BY_UDP);
	return 1;
}

#endif /* SLUICE_FEEDERS_BPF_H */
