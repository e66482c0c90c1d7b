#include "sluiced/capture_session.h"

#include "base/clock.h"
#include "base/limits.h"
#include "base/log.h"
#include "logic/outcomes.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice {

namespace {

uint64_t lease_from_now()
{
	return monotonic_ns() + static_cast<uint64_t>(kCaptureLeaseS * 1e9);
}

std::string utc_now()
{
	time_t t = time(nullptr);
	tm tm{};
	gmtime_r(&t, &tm);
	char buf[32];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

} // namespace

Result<std::unique_ptr<CaptureSession>> CaptureSession::start(const std::string &iface, CaptureMapFds maps,
							      std::shared_ptr<UniqueFd> pipe, const CaptureAsk &ask,
							      const Request::Peer &peer)
{
	if (!pipe || !*pipe)
		return invalid("capture needs the write end of a pipe passed with the request (\"from_fd\": true)");
	struct stat st {};
	if (fstat(pipe->get(), &st) != 0)
		return fail(ErrorKind::system, "capture: the descriptor passed", errno);
	int flags = fcntl(pipe->get(), F_GETFL);
	if (!S_ISFIFO(st.st_mode) || flags < 0 || (flags & O_ACCMODE) != O_WRONLY)
		return invalid("capture: the descriptor passed is not the write end of a pipe");
	// sluicectl's own write end is closed once the request is sent;
	// O_NONBLOCK on the shared description only changes ours.
	if (fcntl(pipe->get(), F_SETFL, flags | O_NONBLOCK) != 0)
		return fail(ErrorKind::system, "capture: making the pipe non-blocking", errno);
	(void)fcntl(pipe->get(), F_SETPIPE_SZ, static_cast<int>(kCapturePipeBytes)); // a smaller pipe still works

	std::unique_ptr<CaptureSession> s(new CaptureSession(iface, maps));
	s->pipe_ = std::move(pipe);
	s->ask_ = ask;
	s->peer_ = peer;
	auto now = s->control_.read();
	if (!now)
		return std::unexpected(now.error());
	s->generation_ = now->generation + 1;
	s->realtime_offset_ns_ = static_cast<int64_t>(realtime_ns()) - static_cast<int64_t>(monotonic_ns());
	CaptureSession *self = s.get();
	auto reader = CaptureReader::open(maps.events, kCaptureBufferPagesPerCpu,
					  [self](const sluice_capture_record &r, const uint8_t *bytes) {
						  // the frames asked for are passed on: no more
						  if (self->ask_.max_frames && self->written_ >= self->ask_.max_frames)
							  return;
						  capture::FrameHeader h{};
						  h.time_ns = static_cast<uint64_t>(static_cast<int64_t>(r.time_ns) +
										    self->realtime_offset_ns_);
						  h.wire_len = r.wire_len;
						  h.cap_len = r.cap_len;
						  h.outcome = r.outcome;
						  h.cpu = r.cpu;
						  if (self->write_message(capture::encode_frame(h, bytes)))
							  self->written_++;
						  else
							  self->lost_pipe_++;
					  });
	if (!reader)
		return std::unexpected(reader.error());
	s->reader_ = std::move(*reader);
	if (auto ok = s->control_.start(ask.outcome_mask, ask.sample_every, ask.snaplen, lease_from_now(),
					s->generation_);
	    !ok)
		return std::unexpected(ok.error());
	s->started_mono_s_ = s->renewed_mono_s_ = s->client_renewed_mono_s_ = monotonic_seconds();
	s->started_at_ = utc_now();
	log_info(iface + ": capture started by " + s->holder() + ", snaplen " + std::to_string(ask.snaplen) +
		 ", 1 in " + std::to_string(ask.sample_every));
	return s;
}

CaptureSession::~CaptureSession()
{
	finish("sluiced ended the capture");
}

std::string CaptureSession::holder() const
{
	return "uid " + std::to_string(peer_.uid) + " pid " + std::to_string(peer_.pid) + " since " + started_at_ +
	       " (outcomes " + outcome_list(ask_.outcome_mask) + ")";
}

void CaptureSession::poll_fds(std::vector<pollfd> &fds) const
{
	if (reader_)
		fds.push_back({reader_->poll_fd(), POLLIN, 0});
	if (pipe_ && *pipe_)
		fds.push_back({pipe_->get(), 0, 0}); // POLLERR: the reader closed its end
}

bool CaptureSession::write_message(const std::string &m)
{
	if (reader_gone_)
		return false;
	ssize_t n = ::write(pipe_->get(), m.data(), m.size());
	if (n == static_cast<ssize_t>(m.size()))
		return true;
	if (n < 0 && errno == EPIPE)
		reader_gone_ = true;
	return false; // EAGAIN: the pipe is full (a message is written whole or not at all)
}

void CaptureSession::send_stats(bool force, double now_mono_s)
{
	if (!force && now_mono_s - stats_mono_s_ < kCaptureStatsEveryS)
		return;
	auto c = control_.counts(generation_);
	if (!c)
		return;
	capture::StreamStats s{c->matched, c->copied, c->lost, lost_pipe_};
	if (!force && std::memcmp(&s, &sent_, sizeof(s)) == 0)
		return;
	if (write_message(capture::encode_stats(s))) {
		sent_ = s;
		stats_mono_s_ = now_mono_s;
	}
}

bool CaptureSession::serve(double now_mono_s)
{
	if (finished_)
		return false;
	if (auto ok = reader_->consume(); !ok)
		log_warn(iface_ + ": capture: " + ok.error().describe());
	if (!reader_gone_) {
		pollfd p{pipe_->get(), 0, 0};
		if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
			reader_gone_ = true;
	}
	if (reader_gone_) {
		finish("the reader closed the pipe");
		return false;
	}
	// Ended here, whatever the client does: a client that speaks the
	// protocol itself holds the interface's one capture no longer than it
	// renews, and no longer or larger than it asked.
	if (now_mono_s - client_renewed_mono_s_ > kCaptureLeaseS) {
		end("its client stopped renewing the lease (" + std::to_string(int(kCaptureLeaseS)) + " s)");
		return false;
	}
	if (ask_.max_frames && written_ >= ask_.max_frames) {
		end("the " + std::to_string(ask_.max_frames) + " frames asked were passed on");
		return false;
	}
	// (a second past the client's own deadline: it ends its capture first)
	if (ask_.max_duration_s > 0 && now_mono_s - started_mono_s_ >= ask_.max_duration_s + kCaptureRenewS) {
		end("the " + std::to_string(ask_.max_duration_s) + " s asked have passed");
		return false;
	}
	if (now_mono_s - renewed_mono_s_ >= kCaptureRenewS) {
		(void)control_.renew(lease_from_now());
		renewed_mono_s_ = now_mono_s;
	}
	send_stats(false, now_mono_s);
	return true;
}

bool CaptureSession::renew(const Request::Peer &peer, double now_mono_s)
{
	if (peer.uid != peer_.uid || peer.pid != peer_.pid)
		return false;
	client_renewed_mono_s_ = now_mono_s;
	return true;
}

void CaptureSession::end(const std::string &why)
{
	if (finished_)
		return;
	(void)reader_->consume();
	(void)control_.stop();
	send_stats(true, monotonic_seconds());
	(void)write_message(capture::encode_end(why));
	finish(why);
}

void CaptureSession::finish(const std::string &why)
{
	if (finished_)
		return;
	finished_ = true;
	(void)control_.stop();
	auto c = control_.counts(generation_);
	reader_.reset(); // the perf array's entries go with our file
	pipe_.reset();
	log_info(iface_ + ": capture by uid " + std::to_string(peer_.uid) + " pid " + std::to_string(peer_.pid) +
		 " ended (" + why + ") after " + std::to_string(static_cast<int64_t>(monotonic_seconds() - started_mono_s_)) +
		 " s: " + (c ? std::to_string(c->matched) + " frames matched, " + std::to_string(c->copied) + " copied, " +
				      std::to_string(c->lost) + " lost in the kernel buffer, "
				    : std::string()) +
		 std::to_string(written_) + " passed on, " + std::to_string(lost_pipe_) + " lost at the pipe");
}

} // namespace sluice
