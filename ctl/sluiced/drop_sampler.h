// drop_sampler.h - "who is flooding me": the daemon's side of the data
// plane's drop sampling (sluice_abi.h, struct sluice_drop_sample).
//
// Once per control period the daemon drains the drop_samples ring buffer (at
// most one ring's worth of records: bounded work per period, whatever the
// flood), masks each sampled source to the configured prefix and feeds a
// Space-Saving summary (ctl/lib/logic/heavy_hitters.h) of fixed capacity. Summaries
// cover windows of --top-window seconds: `top` reports the last complete
// window (or the current one until the first completes), with dropped pps
// estimated as samples x sample_every / window seconds. Each window also
// tallies the samples' signature (destination, protocol, destination port,
// TCP flags, IP length; logic/upstream.h, SignatureTally: fixed-size tables,
// no allocation a sample), which the upstream announcer turns into the
// flood's FlowSpec rule. Memory is fixed when the interface is set up: two
// summaries, two tallies and the ring's mapping.
#pragma once

#include "logic/heavy_hitters.h"
#include "logic/upstream.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <cstdint>
#include <memory>

struct ring_buffer;

namespace sluice {

// The windows alone, apart from the ring (so tests drive them with a fake
// clock): samples go to the current window; at a period's end roll() makes
// it the last complete one once window_s has passed. `top` reads the last
// complete window, or the current one until one completes.
class SampleWindows {
public:
	struct Window {
		const SpaceSaving *summary;
		double seconds;  // how long it collected
		bool complete;   // false: the current window, still filling
		const SignatureTally *signature; // the same samples' signature tally
	};

	// seed keys the summaries' hash tables.
	SampleWindows(size_t capacity, double window_s, double now_s, uint64_t seed);

	void add(const HitterKey &key) { current_.add(key); }
	void add_signature(const SignatureSample &s) { sig_current_.add(s); }
	void roll(double now_s);
	Window window(double now_s) const;
	size_t capacity() const { return current_.capacity(); }
	double window_s() const { return window_s_; }

private:
	SpaceSaving current_, last_;
	SignatureTally sig_current_, sig_last_;
	double window_s_;
	double window_start_s_;
	double last_seconds_ = 0;
	bool have_last_ = false;
};

class DropSampler {
public:
	using Window = SampleWindows::Window;

	// ring_fd: the drop_samples map. Samples already in the ring (made while
	// no daemon ran) are discarded.
	static Result<std::unique_ptr<DropSampler>> open(int ring_fd, const sluice_settings &settings,
							  size_t capacity, double window_s, double now_s);
	~DropSampler();
	DropSampler(const DropSampler &) = delete;
	DropSampler &operator=(const DropSampler &) = delete;

	// Drain the ring into the current window; roll the window when it is due.
	void tick(double now_s);
	Window window(double now_s) const;
	uint32_t sample_every() const { return settings_.sample_every; }
	size_t capacity() const { return windows_.capacity(); }
	double window_s() const { return windows_.window_s(); }
	// Records drained and left for the next period because the budget ran
	// out (since start), for the log and tests.
	uint64_t drained() const { return drained_; }
	uint64_t budget_stops() const { return budget_stops_; }

private:
	DropSampler(const sluice_settings &s, size_t capacity, double window_s, double now_s);
	static int on_sample(void *ctx, void *data, size_t size);
	void drain(bool keep);

	sluice_settings settings_;
	ring_buffer *rb_ = nullptr;
	SampleWindows windows_;
	bool keep_ = true;   // false while discarding stale samples
	uint64_t budget_ = 0, left_ = 0;
	uint64_t drained_ = 0, budget_stops_ = 0;
};

} // namespace sluice
