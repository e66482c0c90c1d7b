// cookies.h - what SYN cookies from XDP need of the host's TCP settings, and
// what they may offer under them (docs/architecture.md, "SYN cookies"). Pure:
// the daemon reads the settings (base/sysctl.h) and writes what this decides
// (config's cookie fields, the two sysctls it arms).
//
//   net.ipv4.tcp_syncookies = 2  the kernel makes a cookie for the program
//                                (bpf_tcp_gen_syncookie) only then, or while
//                                the listener's SYN queue is full; 1 (the
//                                default) is what it restores
//   net.ipv4.tcp_timestamps = 2  timestamps without a per-connection offset:
//                                the program cannot compute the offset the
//                                stack subtracts from the ACK's echo, so the
//                                window scale and SACK it keeps there decode
//                                only at 2. At 0 (the operator turned
//                                timestamps off) it stays 0, and the SYN-ACK
//                                offers MSS alone.
//   net.ipv4.tcp_sack, tcp_window_scaling  read, never changed: the SYN-ACK
//                                offers what the stack will honour.
#pragma once

#include "bpf/sluice_abi.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

inline constexpr const char *kSysctlSyncookies = "net.ipv4.tcp_syncookies";
inline constexpr const char *kSysctlTimestamps = "net.ipv4.tcp_timestamps";
inline constexpr const char *kSysctlSack = "net.ipv4.tcp_sack";
inline constexpr const char *kSysctlWindowScaling = "net.ipv4.tcp_window_scaling";
inline constexpr const char *kSysctlTcpRmem = "net.ipv4.tcp_rmem";
inline constexpr const char *kSysctlRmemMax = "net.core.rmem_max";

struct TcpSettings {
	int64_t syncookies = 1;
	int64_t timestamps = 1;
	int64_t sack = 1;
	int64_t window_scaling = 1;
	int64_t tcp_rmem_max = 6291456; // net.ipv4.tcp_rmem's third value
	int64_t rmem_max = 212992;      // net.core.rmem_max
};

struct SysctlChange {
	std::string name;
	int64_t from = 0;
	int64_t to = 0;
};

// What arming changes: tcp_syncookies to 2 unless it is 2; tcp_timestamps
// from 1 to 2 (0 and 2 stay).
std::vector<SysctlChange> cookie_arming(const TcpSettings &now);

// SLUICE_COOKIE_TS | _SACK | _WSCALE under these settings (after arming).
uint32_t cookie_flags_for(const TcpSettings &s);

// The window scale the stack gives a connection a cookie makes
// (tcp_select_initial_window: the larger of tcp_rmem's max and rmem_max,
// ilog2 of it less 15, within 0..14). A listener with SO_RCVBUF set small
// gets a smaller one from the stack: docs/architecture.md says what that
// costs.
uint32_t cookie_wscale_for(const TcpSettings &s);

// Our MSS on an interface of this MTU: the MTU less the IP and TCP headers
// (40 for IPv4, 60 for IPv6), at least 536 (RFC 1122's default) and at most
// 65495.
uint16_t cookie_mss_for(uint32_t mtu, bool v6);

// Where the SYN-ACKs the program sends back with XDP_TX go
// (docs/architecture.md, "Cookies only where their replies can leave"), as
// rtnetlink tells it (sluiced/xdp_tx_path reads it). A veth whose program runs in native mode hands an XDP_TX'd frame to its peer's
// XDP ring, which only a peer running an XDP program of its own in native
// mode drains: without one the frame is dropped (the peer's rx_dropped), and
// with GRO alone it stays in the ring. In skb (generic) mode XDP_TX goes out
// through the device's own transmit, which reaches any peer. Any other
// device is taken to deliver: a NIC's driver sends XDP_TX itself.
struct XdpTxLink {
	std::string iface;
	std::string kind;  // IFLA_INFO_KIND ("veth", "bond", ...); "" for a device without one (a NIC)
	bool skb_mode = false; // the interface's XDP program runs in skb (generic) mode only
	struct Peer {
		uint32_t ifindex = 0;           // 0: the veth has no peer now
		std::optional<int32_t> netnsid; // none: in the interface's own namespace
		std::string name;               // "" when not read
		bool native_xdp = false;        // an XDP program runs on it in native (driver) mode
	};
	std::optional<Peer> peer; // a veth's, when it could be read
	std::string peer_error;   // a veth's peer that could not be read: why
};

struct XdpTxVerdict {
	bool delivers = true;
	std::string why; // how the SYN-ACKs leave, or what stops them
	std::string fix; // when they cannot leave: what the operator does about it
};

XdpTxVerdict xdp_tx_verdict(const XdpTxLink &link);

// The mode written into config.cookie_mode: the one asked (--cookies) where
// the SYN-ACKs can leave; off where they cannot (a SYN without standing
// then draws on the newcomer budget, as with --cookies off, instead of
// being answered into a void).
sluice_cookie_mode cookie_mode_in_force(sluice_cookie_mode asked, const XdpTxVerdict &v);

// Whether the program's cookie path takes the SYNs and ACKs of sources
// without standing under config.cookie_mode `mode`: in mode always, and in
// mode shedding while the breaker sheds.
bool cookie_path_in_force(uint32_t mode, bool shedding);

} // namespace sluice
