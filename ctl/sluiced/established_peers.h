// established_peers.h - the peers of the connections that exist when the
// daemon starts, from NETLINK_SOCK_DIAG (inet_diag), so that standing does not
// forget them across a restart or a first start during an attack. The feeders
// (sluice.bpf.c) see only connections made after they are attached.
//
// What counts, as for the feeders: every ESTABLISHED TCP socket (a completed
// handshake, either way), and every connected UDP socket bound to a port of
// the ephemeral range (a client's; a server's per-client socket on its
// well-known port does not). sock_diag answers for the daemon's network
// namespace only.
#pragma once

#include "base/address.h"
#include "base/port_span.h"
#include "base/result.h"

#include <cstdint>
#include <vector>

namespace sluice {

// Each peer once, v4-mapped IPv6 peers as IPv4.
Result<std::vector<Address>> established_peers(PortSpan ephemeral);

} // namespace sluice
