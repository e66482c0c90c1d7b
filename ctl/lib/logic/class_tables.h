// class_tables.h - a Policy (logic/classes.h) compiled into the tables the
// data plane reads (bpf/sluice_abi.h: classes, port_classes, class_v4,
// class_v6), and the same lookup the program makes (bpf/class_match.h) run
// over them on the host. Pure: no kernel, no files. bpf/policy_tables writes
// what this returns into one policy set of the maps.
//
// Class ids are kept by name across reloads (assign_class_ids), so the
// buckets of a class whose limits did not change keep their tokens: its
// frames hash to the same slots.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"
#include "logic/classes.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sluice {

// Which class name holds which id; "" is a free id. ids[0] is "default".
struct ClassIds {
	std::array<std::string, SLUICE_CLASSES_MAX> names{};
	bool operator==(const ClassIds &) const = default;
};

// Ids for p's classes: a name in `previous` keeps its id, a new name takes
// the lowest free one (a name `previous` had and p has not frees its id).
ClassIds assign_class_ids(const Policy &p, const ClassIds &previous);

struct CompiledPolicy {
	ClassIds ids;
	std::array<uint8_t, SLUICE_CLASSES_MAX> id_of_class{}; // Policy::classes index -> id
	std::array<sluice_class, SLUICE_CLASSES_MAX> classes{}; // by id (free ids zeroed)
	// SLUICE_L4_KINDS x SLUICE_PORT_BLOCKS blocks, kind-major (one set's
	// part of port_classes); all zero (every frame the default class) when
	// the policy has no rule without sources.
	std::vector<sluice_port_block> ports;
	// One entry per distinct rule source prefix of each family, sorted by
	// address, then length (a prefix after every prefix containing it).
	std::vector<std::pair<Cidr, sluice_class_matches>> prefixes_v4, prefixes_v6;
	// SLUICE_CLASS_* (not the list bits, not the set bit).
	uint32_t class_flags = 0;
};

// Compile p with ids kept from `previous`. check_policy's error when p
// breaks an invariant; refused, "too_many_matches: ..." naming the prefix and
// its rules, when one prefix entry would need more than SLUICE_CLASS_MATCHES
// matches (after leaving out matches an earlier one covers and merging
// neighbours of one class). Exempt and deny classes' records carry their
// action and no budget; a class without a standing budget has 0 there
// (config's applies). The byte bucket's capacity is rounded up, so a frame of
// byte-burst bytes always fits a full bucket.
Result<CompiledPolicy> compile_policy(const Policy &p, const ClassIds &previous);

// The class id the data plane gives a frame under these tables: the prefix
// entry of the longest containing prefix (class_match.h), else the port
// table. (The deny list is not part of the tables.) Tests check it against
// explain(); sluicectl explain shows both.
uint32_t classify(const CompiledPolicy &c, const Frame &frame);
// The same, by the (kind, port) the program parses (sluice_abi.h SLUICE_L4_*):
// what a Frame cannot say, such as a non-first fragment (SLUICE_L4_IP with
// protocol 6 or 17).
uint32_t classify_l4(const CompiledPolicy &c, const Address &source, uint32_t kind, uint32_t port);

// A frame's (kind, port) as class_match.h takes them (sluice_abi.h SLUICE_L4_*):
// tcp -> TCP by port, tcp_syn -> TCP_SYN by port, udp -> UDP by port,
// icmp -> IP 1, icmpv6 -> IP 58, any -> IP with `ip_protocol`.
std::pair<uint32_t, uint32_t> l4_key(const Frame &frame, uint32_t ip_protocol = 0);

} // namespace sluice
