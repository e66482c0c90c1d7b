// attachment.h - a loaded program and how it is attached to its interface.
//
// Two ways, one interface, so the Dataplane never asks which:
//   link_attachment    a bpf_link of our own, pinned as SLUICE_PIN_LINK;
//   libxdp_attachment  (sluiced --multiprog) an extension of libxdp's
//                      multiprog dispatcher, beside the interface's other
//                      programs; libxdp pins the dispatcher and its links under
//                      <bpffs>/xdp/ ($LIBXDP_BPFFS or /sys/fs/bpf) and
//                      replaces them whenever a program joins or leaves, so
//                      the program itself is pinned, as SLUICE_PIN_MULTIPROG.
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/attach_mode.h"
#include "bpf/pin_layout.h"

#include <cstdint>
#include <memory>
#include <string>

struct sluice_bpf;

namespace sluice {

class Attachment {
public:
	virtual ~Attachment() = default;

	// Attach to ifindex; returns the mode in force. native fails naming
	// --mode skb when the driver has no native XDP; automatic falls back to
	// skb and says so through the returned mode. Attaching again (the
	// interface came back) attaches the same program. An attachment that
	// loads the program itself (libxdp, the first time) fills `maps` and
	// `feeders` from it.
	virtual Result<AttachMode> attach(int ifindex, AttachMode mode, MapFds &maps, FeederFds &feeders) = 0;
	// Pin the attachment under dir (after the maps: its pin means a complete set).
	virtual Status pin(const std::string &dir) const = 0;
	// Take the program off its interface. The pins are the caller's.
	virtual Status detach() = 0;
	// The ifindex the program is attached to now (0: its interface went away).
	virtual Result<uint32_t> ifindex() const = 0;
	// Put `prog` in place of the program in force, atomically: every frame
	// runs the one or the other (bpf_link_update). Refused with libxdp,
	// whose dispatcher holds the links.
	virtual Status replace_program(UniqueFd prog) = 0;
	// The program (-1 while libxdp has not loaded it yet).
	virtual int prog_fd() const = 0;
	Result<uint32_t> prog_id() const;
	virtual bool multiprog() const = 0;
};

// A fresh program (loaded, not attached) to attach with a bpf_link.
std::unique_ptr<Attachment> link_attachment(UniqueFd prog);
// The link pinned under dir, and its program. `fix` ends every refusal.
Result<std::unique_ptr<Attachment>> adopt_link_attachment(const std::string &dir, const std::string &fix);

// An opened skeleton for libxdp to load on the first attach.
std::unique_ptr<Attachment> libxdp_attachment(std::shared_ptr<sluice_bpf> opened);
// The program pinned under dir, in the dispatcher of the interface the
// directory is named after. `fix` ends every refusal.
Result<std::unique_ptr<Attachment>> adopt_libxdp_attachment(const std::string &dir, const std::string &fix);

} // namespace sluice
