#include "sluiced/drop_sampler.h"

#include "bpf/source_key.h"

#include <bpf/libbpf.h>

#include <cstring>
#include <sys/random.h>

namespace sluice {

namespace {

uint64_t random_seed()
{
	uint64_t seed = 0;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0x5eed5eed5eed5eedull; // the table then still works, merely unkeyed
	return seed;
}

// The ring's records are 8-byte aligned: a header and the sample.
constexpr uint64_t kRecordBytes = 8 + ((sizeof(sluice_drop_sample) + 7) & ~size_t(7));

} // namespace

SampleWindows::SampleWindows(size_t capacity, double window_s, double now_s, uint64_t seed)
	: current_(capacity, seed), last_(capacity, seed ^ 0x9e3779b97f4a7c15ull), window_s_(window_s),
	  window_start_s_(now_s)
{
}

void SampleWindows::roll(double now_s)
{
	if (now_s - window_start_s_ >= window_s_ - 1e-6) {
		std::swap(current_, last_);
		current_.clear();
		sig_last_ = sig_current_;
		sig_current_.clear();
		last_seconds_ = now_s - window_start_s_;
		window_start_s_ = now_s;
		have_last_ = true;
	}
}

SampleWindows::Window SampleWindows::window(double now_s) const
{
	if (have_last_)
		return {&last_, last_seconds_, true, &sig_last_};
	return {&current_, now_s - window_start_s_, false, &sig_current_};
}

DropSampler::DropSampler(const sluice_settings &s, size_t capacity, double window_s, double now_s)
	: settings_(s), windows_(capacity, window_s, now_s, random_seed()),
	  budget_(SLUICE_SAMPLE_RING_BYTES / kRecordBytes)
{
}

DropSampler::~DropSampler()
{
	ring_buffer__free(rb_);
}

Result<std::unique_ptr<DropSampler>> DropSampler::open(int ring_fd, const sluice_settings &settings, size_t capacity,
							double window_s, double now_s)
{
	std::unique_ptr<DropSampler> d(new DropSampler(settings, capacity, window_s, now_s));
	d->rb_ = ring_buffer__new(ring_fd, &DropSampler::on_sample, d.get(), nullptr);
	if (!d->rb_)
		return fail_errno("mapping the drop_samples ring buffer");
	d->drain(false);
	d->drained_ = 0;
	return d;
}

int DropSampler::on_sample(void *ctx, void *data, size_t size)
{
	auto *self = static_cast<DropSampler *>(ctx);
	if (self->keep_ && size >= sizeof(sluice_drop_sample)) {
		sluice_drop_sample s;
		std::memcpy(&s, data, sizeof(s));
		sluice_source src{{s.w[0], s.w[1]}};
		bool v6 = s.family == 6;
		sluice_mask_source(&src, v6, &self->settings_);
		Cidr c;
		c.addr.family = v6 ? Family::v6 : Family::v4;
		std::memcpy(c.addr.bytes.data(), src.w, v6 ? 16 : 4);
		c.prefix = v6 ? self->settings_.v6_prefix : self->settings_.v4_prefix;
		self->windows_.add(cidr_key(c));
		SignatureSample sig;
		sig.dst.family = c.addr.family;
		std::memcpy(sig.dst.bytes.data(), s.dst, v6 ? 16 : 4);
		sig.proto = s.proto;
		sig.dport = s.dport;
		sig.tcp_flags = s.tcp_flags;
		sig.length = s.ip_len;
		self->windows_.add_signature(sig);
	}
	self->drained_++;
	// Bounded work per period: stop after one ring's worth (this record is
	// consumed; the rest waits for the next period).
	return --self->left_ == 0 ? -1 : 0;
}

void DropSampler::drain(bool keep)
{
	keep_ = keep;
	left_ = budget_;
	int n = ring_buffer__consume(rb_);
	if (n < 0 && left_ == 0)
		budget_stops_++;
	keep_ = true;
}

void DropSampler::tick(double now_s)
{
	drain(true);
	windows_.roll(now_s);
}

DropSampler::Window DropSampler::window(double now_s) const
{
	return windows_.window(now_s);
}

} // namespace sluice
