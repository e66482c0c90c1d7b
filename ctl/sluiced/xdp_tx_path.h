// xdp_tx_path.h - what rtnetlink says of where an interface's XDP_TX frames
// go (logic/cookies.h, XdpTxLink; xdp_tx_verdict decides from it): the
// interface's kind and the mode its XDP program runs in, and for a veth its
// peer and whether that runs an XDP program in native mode.
//
// The peer is found by the veth's IFLA_LINK (its ifindex) and
// IFLA_LINK_NETNSID (its namespace, when not ours), and read with one more
// RTM_GETLINK carrying IFLA_TARGET_NETNSID: the kernel answers for the
// peer's namespace without this process entering it (setns would need an
// fd of that namespace, which a netnsid does not give). bpf_xdp_query
// cannot: it asks in the caller's namespace only; ethtool's peer_ifindex
// gives the index without the namespace. Two small requests a period.
#pragma once

#include "base/result.h"
#include "logic/cookies.h"

#include <cstdint>

namespace sluice {

// An error: the interface itself could not be read (a veth's peer that
// cannot be read is XdpTxLink::peer_error).
Result<XdpTxLink> read_xdp_tx_link(const std::string &iface, uint32_t ifindex);

} // namespace sluice
