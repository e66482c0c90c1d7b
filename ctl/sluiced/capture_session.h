// capture_session.h - one `sluicectl capture` as sluiced serves it
// (docs/architecture.md, "Capture"): the data plane's capture turned on for
// the outcomes asked, the frames read from the perf buffers and written to
// the pipe sluicectl passed with the request, the lease renewed, the counts
// sent along; until the pipe's reader goes away, the interface goes, or
// sluiced exits. One per interface at a time: the data plane has one
// control word per program.
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/capture_maps.h"
#include "capture/stream.h"
#include "ipc/protocol.h"

#include <memory>
#include <poll.h>
#include <string>
#include <vector>

namespace sluice {

struct CaptureAsk {
	uint32_t outcome_mask = 0;
	uint32_t sample_every = 1;
	uint32_t snaplen = SLUICE_CAPTURE_SNAPLEN_DEFAULT;
	uint64_t max_frames = 0;   // frames passed on at most (0: no bound)
	double max_duration_s = 0; // seconds at most (0: no bound)
};

class CaptureSession {
public:
	// Turn the capture on; `pipe` is the write end sluicectl passed.
	static Result<std::unique_ptr<CaptureSession>> start(const std::string &iface, CaptureMapFds maps,
							      std::shared_ptr<UniqueFd> pipe, const CaptureAsk &ask,
							      const Request::Peer &peer);
	~CaptureSession(); // turns the capture off (end() first says why)

	void poll_fds(std::vector<pollfd> &fds) const; // the perf buffers' epoll fd, the pipe
	// After poll: read the frames, pass them on, renew the data plane's
	// lease while the client renews its own, send the counts now and then.
	// False once the capture is over: the reader went, its client stopped
	// renewing for kCaptureLeaseS, or the frames or the time asked were
	// reached.
	bool serve(double now_mono_s);
	// The client's renewal (capture_renew): true if `peer` is the process
	// that started the capture.
	bool renew(const Request::Peer &peer, double now_mono_s);
	// Tell sluicectl why it ends (best effort) and turn it off.
	void end(const std::string &why);

	const std::string &iface() const { return iface_; }
	std::string holder() const; // "uid 0 pid 123, since 2026-...: drop_rate,..."

private:
	CaptureSession(const std::string &iface, CaptureMapFds maps) : iface_(iface), control_(maps), maps_(maps) {}
	void send_stats(bool force, double now_mono_s);
	bool write_message(const std::string &m); // false: the pipe was full (or gone)
	void finish(const std::string &why);

	std::string iface_;
	CaptureControl control_;
	CaptureMapFds maps_;
	std::shared_ptr<UniqueFd> pipe_;
	std::unique_ptr<CaptureReader> reader_;
	CaptureAsk ask_;
	Request::Peer peer_;
	uint64_t generation_ = 0;
	int64_t realtime_offset_ns_ = 0; // CLOCK_REALTIME - CLOCK_MONOTONIC at start
	double started_mono_s_ = 0, renewed_mono_s_ = 0, stats_mono_s_ = 0, client_renewed_mono_s_ = 0;
	std::string started_at_;
	capture::StreamStats sent_{};
	uint64_t written_ = 0, lost_pipe_ = 0;
	bool reader_gone_ = false, finished_ = false;
};

} // namespace sluice
