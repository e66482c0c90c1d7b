#include "bpf/capture_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sluice {

namespace {

Status write_control(int fd, const sluice_capture &c)
{
	uint32_t zero = 0;
	if (bpf_map_update_elem(fd, &zero, &c, BPF_ANY) != 0)
		return fail(ErrorKind::system, "writing the capture control word", errno);
	return {};
}

} // namespace

Result<sluice_capture> CaptureControl::read() const
{
	uint32_t zero = 0;
	sluice_capture c{};
	if (bpf_map_lookup_elem(fds_.control, &zero, &c) != 0)
		return fail(ErrorKind::system, "reading the capture control word", errno);
	return c;
}

Status CaptureControl::start(uint32_t outcome_mask, uint32_t sample_every, uint32_t snaplen, uint64_t lease_ns,
			     uint64_t generation) const
{
	sluice_capture c{};
	c.sample_every = sample_every;
	c.snaplen = snaplen;
	c.lease_ns = lease_ns;
	c.generation = generation;
	if (auto ok = write_control(fds_.control, c); !ok)
		return ok;
	c.outcome_mask = outcome_mask;
	return write_control(fds_.control, c);
}

Status CaptureControl::renew(uint64_t lease_ns) const
{
	auto c = read();
	if (!c)
		return std::unexpected(c.error());
	if (c->outcome_mask == 0)
		return {}; // turned off already (by the program, past its lease): stays off
	c->lease_ns = lease_ns;
	return write_control(fds_.control, *c);
}

Status CaptureControl::stop() const
{
	auto c = read();
	if (!c)
		return std::unexpected(c.error());
	c->outcome_mask = 0;
	return write_control(fds_.control, *c);
}

Result<CaptureCounts> CaptureControl::counts(uint64_t generation) const
{
	int cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		return fail(ErrorKind::system, "counting the possible CPUs", -cpus);
	std::vector<sluice_capture_stats> per_cpu(static_cast<size_t>(cpus));
	uint32_t zero = 0;
	if (bpf_map_lookup_elem(fds_.stats, &zero, per_cpu.data()) != 0)
		return fail(ErrorKind::system, "reading the capture's counts", errno);
	CaptureCounts total;
	for (const auto &s : per_cpu)
		if (s.generation == generation) {
			total.matched += s.matched;
			total.copied += s.copied;
			total.lost += s.lost;
		}
	return total;
}

Result<std::unique_ptr<CaptureReader>> CaptureReader::open(int events_fd, size_t pages_per_cpu, OnFrame on_frame)
{
	std::unique_ptr<CaptureReader> r(new CaptureReader());
	bpf_map_info info{};
	uint32_t len = sizeof(info);
	if (int err = bpf_obj_get_info_by_fd(events_fd, &info, &len); err)
		return fail(ErrorKind::system, "reading the capture_events map's id", -err);
	// A file of our own: the entries perf_buffer__new writes belong to it.
	int fd = bpf_map_get_fd_by_id(info.id);
	if (fd < 0)
		return fail(ErrorKind::system, "opening the capture_events map", errno);
	r->events_.reset(fd);
	r->on_frame_ = std::move(on_frame);
	r->pb_ = perf_buffer__new(fd, pages_per_cpu, &CaptureReader::on_sample, &CaptureReader::on_lost, r.get(),
				  nullptr);
	if (!r->pb_) {
		int err = errno;
		return fail(ErrorKind::system, "opening the capture's perf buffers (" + std::to_string(pages_per_cpu) +
							 " pages per CPU)", err);
	}
	return r;
}

CaptureReader::~CaptureReader()
{
	if (pb_)
		perf_buffer__free(pb_);
}

int CaptureReader::poll_fd() const
{
	return perf_buffer__epoll_fd(pb_);
}

Status CaptureReader::consume()
{
	int err = perf_buffer__consume(pb_);
	if (err < 0)
		return fail(ErrorKind::system, "reading the capture's perf buffers", -err);
	return {};
}

void CaptureReader::on_sample(void *ctx, int, void *data, uint32_t size)
{
	auto *r = static_cast<CaptureReader *>(ctx);
	sluice_capture_record rec;
	if (size < sizeof(rec)) {
		r->malformed_++;
		return;
	}
	std::memcpy(&rec, data, sizeof(rec));
	if (rec.cap_len > SLUICE_CAPTURE_SNAPLEN_MAX || sizeof(rec) + rec.cap_len > size || rec.cap_len > rec.wire_len) {
		r->malformed_++;
		return;
	}
	r->on_frame_(rec, static_cast<const uint8_t *>(data) + sizeof(rec));
}

void CaptureReader::on_lost(void *ctx, int, unsigned long long count)
{
	static_cast<CaptureReader *>(ctx)->lost_ += count;
}

} // namespace sluice
