// local_sockets.h - what the daemon's network namespace holds in sockets,
// from NETLINK_SOCK_DIAG (inet_diag; it answers for the daemon's namespace
// only).
//
// established_peers: the peers of the connections that exist when the daemon
// starts, so that standing does not forget them across a restart or a first
// start during an attack (the feeders, bpf/feeders.bpf.h, see only connections
// made after they are attached). What counts, as for the feeders: every
// ESTABLISHED TCP socket (a completed handshake, either way), and every
// connected UDP socket bound to a port of the ephemeral range (a client's; a
// server's per-client socket on its well-known port does not), with the
// peer's port: its grant holds for that port's UDP alone, as the UDP
// feeders' do.
//
// listening_tcp_ports: the local ports of the TCP sockets in LISTEN, for the
// program's listen_ports map (the cookie path looks a socket up only on
// those; the sockops feeder adds the ports of later listen() calls).
#pragma once

#include "base/address.h"
#include "base/port_span.h"
#include "base/result.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sluice {

struct EstablishedPeers {
	std::vector<Address> tcp;                        // each once
	std::vector<std::pair<Address, uint16_t>> udp;   // (peer, its port), each once
};

// v4-mapped IPv6 peers as IPv4.
Result<EstablishedPeers> established_peers(PortSpan ephemeral);

// Each port once, ascending, IPv4 and IPv6 listeners together.
Result<std::vector<uint16_t>> listening_tcp_ports();

// The addresses of this network namespace's interfaces (IPv6 link-local
// ones left out), of `only` alone when given; empty when getifaddrs fails.
std::vector<Address> interface_addresses(const std::string *only = nullptr);

} // namespace sluice
