// capture_maps.h - the data plane's capture seen from C++ (bpf/capture.h):
// the control word (struct sluice_capture, the "capture" map's one
// element), the program's per-CPU counts, and the reader of the perf event
// array the frames come through.
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <cstdint>
#include <functional>
#include <memory>

struct perf_buffer; // libbpf

namespace sluice {

struct CaptureMapFds {
	int control, events, stats;
};

struct CaptureCounts {
	uint64_t matched = 0, copied = 0, lost = 0;
};

class CaptureControl {
public:
	explicit CaptureControl(CaptureMapFds fds) : fds_(fds) {}
	Result<sluice_capture> read() const;
	// Turn a capture on: everything but the mask written first, then the
	// mask, so that no frame sees the mask with the last capture's lease.
	Status start(uint32_t outcome_mask, uint32_t sample_every, uint32_t snaplen, uint64_t lease_ns,
		     uint64_t generation) const;
	Status renew(uint64_t lease_ns) const; // the lease only
	Status stop() const;                   // mask 0, the rest kept
	// The program's counts for the capture of `generation`, all CPUs.
	Result<CaptureCounts> counts(uint64_t generation) const;

private:
	CaptureMapFds fds_;
};

// The frames: a libbpf perf buffer on capture_events, through a file of its
// own (the array's entries go when it is closed: a clean end, an exit or a
// SIGKILL alike). poll_fd() is readable when a CPU's buffer has data.
class CaptureReader {
public:
	// record, then cap_len bytes of the frame
	using OnFrame = std::function<void(const sluice_capture_record &, const uint8_t *bytes)>;
	static Result<std::unique_ptr<CaptureReader>> open(int events_fd, size_t pages_per_cpu, OnFrame on_frame);
	~CaptureReader();
	int poll_fd() const;
	Status consume();
	uint64_t lost_records() const { return lost_; } // PERF_RECORD_LOST counts, for the log
	uint64_t malformed() const { return malformed_; }

private:
	CaptureReader() = default;
	static void on_sample(void *ctx, int cpu, void *data, uint32_t size);
	static void on_lost(void *ctx, int cpu, unsigned long long count);
	UniqueFd events_; // our own file of the perf event array
	perf_buffer *pb_ = nullptr;
	OnFrame on_frame_;
	uint64_t lost_ = 0, malformed_ = 0;
};

} // namespace sluice
