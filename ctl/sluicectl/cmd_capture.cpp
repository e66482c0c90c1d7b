// cmd_capture.cpp - `capture IFACE -w FILE|- [EXPRESSION]`: the frames sluice
// drops (or passes, --passed) on an interface, written to a file tcpdump and
// Wireshark read (docs/architecture.md, "Capture").
//
// sluicectl makes a pipe and passes its write end with the request; sluiced
// turns the data plane's capture on and writes each frame it copies, the
// counts now and then, and why it ends, to the pipe (capture/stream.h).
// sluicectl tests each frame against the filter expression (libpcap) and
// writes the ones that match, until --count, --duration, Ctrl-C (SIGINT,
// SIGTERM), or sluiced's end. Closing the pipe is what ends the capture on
// sluiced's side: sluicectl killed ends it too. The file is sluicectl's,
// opened with the caller's rights: sluiced never writes a path it is given.
#include "base/limits.h"
#include "capture/file_format.h"
#include "capture/filter.h"
#include "capture/stream.h"
#include "logic/outcomes.h"
#include "sluicectl/client.h"
#include "sluicectl/command.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluicectl {

void capture_options(po::options_description &options)
{
	options.add_options()
		("write,w", po::value<std::string>()->value_name("FILE"), "write the frames to FILE, or to stdout with '-' (required)")
		("pcap", po::bool_switch(), "classic pcap (nanosecond timestamps) instead of pcapng; it has no outcome comments")
		("outcome", po::value<std::string>()->value_name("LIST"),
		 "the outcomes to capture, comma-separated names (default: every drop outcome and malformed)")
		("passed", po::bool_switch(), "also the frames passed (every admitted outcome)")
		("count,c", po::value<std::string>()->value_name("N"), "stop after N frames written")
		("duration", po::value<std::string>()->value_name("SEC"), "stop after SEC seconds")
		("snaplen,s", po::value<std::string>()->value_name("N"),
		 ("bytes of each frame copied (" + std::to_string(SLUICE_CAPTURE_SNAPLEN_MIN) + ".." +
		  std::to_string(SLUICE_CAPTURE_SNAPLEN_MAX) + ", default " + std::to_string(SLUICE_CAPTURE_SNAPLEN_DEFAULT) + ")").c_str())
		("sample-every", po::value<std::string>()->value_name("N"),
		 "copy 1 in N of the frames asked for, per CPU (default 1: all)")
		("force", po::bool_switch(), "overwrite FILE if it exists (a regular file; never through a symbolic link)")
		("file-mode", po::value<std::string>()->value_name("MODE"),
		 "the mode FILE is created with, octal, at most 0666 (default 0600: the frames are other people's traffic)");
}

namespace {

using sluice::capture::FileFormat;

// The file or stdout. A new file is created with `mode` exactly (the
// payloads of whoever was dropped are not everyone's to read); an existing
// one is refused unless `force`, and then only a regular file, truncated
// once the capture starts; a symbolic link is never followed (a path in a
// shared directory could point anywhere the caller may write). A file it
// created is removed again if the capture never starts.
class Output {
public:
	static Result<Output> open(const std::string &path, bool force, mode_t mode)
	{
		Output o;
		o.path_ = path;
		if (path == "-") {
			o.fd_ = STDOUT_FILENO;
			o.name_ = "stdout";
			return o;
		}
		o.name_ = path;
		const auto refused = [&](const std::string &why, int err) {
			return sluice::fail(sluice::ErrorKind::refused, "cannot write " + path + ": " + why, err);
		};
		int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		o.created_ = fd >= 0;
		if (fd < 0 && errno == EEXIST) {
			struct stat lst {};
			if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
				return refused("a symbolic link (never followed; name the file itself)", ELOOP);
			if (::lstat(path.c_str(), &lst) == 0 && S_ISDIR(lst.st_mode))
				return refused("a directory", EISDIR);
			if (!force)
				return refused("it exists; give --force to overwrite it", EEXIST);
			fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return refused(errno == ELOOP ? std::string("a symbolic link (never followed)") : std::strerror(errno),
				       errno);
		struct stat st {};
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			::close(fd);
			return refused("not a regular file", EINVAL);
		}
		// the mode asked, whatever the umask
		if (o.created_ && ::fchmod(fd, mode) != 0) {
			int err = errno;
			::close(fd);
			::unlink(path.c_str());
			return refused(std::string("setting its mode: ") + std::strerror(err), err);
		}
		o.fd_ = fd;
		return o;
	}
	Output() = default;
	Output(Output &&o) noexcept { *this = std::move(o); }
	Output &operator=(Output &&o) noexcept
	{
		std::swap(fd_, o.fd_);
		path_ = o.path_;
		name_ = o.name_;
		created_ = o.created_;
		o.created_ = false;
		return *this;
	}
	~Output()
	{
		if (fd_ > STDOUT_FILENO)
			::close(fd_);
	}
	// The capture did not start: leave no file behind that was not there.
	void abandon()
	{
		if (created_)
			::unlink(path_.c_str());
		created_ = false;
	}
	Status begin()
	{
		if (fd_ != STDOUT_FILENO) {
			struct stat st {};
			if (fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd_, 0) != 0)
				return failed("truncating");
		}
		return {};
	}
	void add(const std::string &bytes) { buf_ += bytes; }
	bool wants_flush() const { return buf_.size() >= 65536; }
	Status flush()
	{
		size_t off = 0;
		while (off < buf_.size()) {
			ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				buf_.erase(0, off);
				return failed("writing");
			}
			off += static_cast<size_t>(n);
		}
		buf_.clear();
		return {};
	}
	Status close()
	{
		if (auto ok = flush(); !ok)
			return ok;
		if (fd_ > STDOUT_FILENO) {
			int fd = fd_;
			fd_ = -1;
			if (::close(fd) != 0)
				return failed("closing");
		}
		return {};
	}
	const std::string &name() const { return name_; }
	bool reader_gone() const { return epipe_; }

private:
	Status failed(const char *what)
	{
		int err = errno;
		if (err == EPIPE)
			epipe_ = true;
		return sluice::fail(sluice::ErrorKind::system, std::string(what) + " " + name_ + ": " + std::strerror(err),
				    err);
	}
	int fd_ = -1;
	std::string path_, name_;
	std::string buf_;
	bool created_ = false, epipe_ = false;
};

Result<uint32_t> outcome_mask(const Invocation &inv)
{
	uint32_t mask = sluice::capture_dropped_mask();
	if (auto list = inv.option("outcome")) {
		mask = 0;
		size_t start = 0;
		std::string_view text = *list;
		while (start <= text.size()) {
			size_t comma = text.find(',', start);
			auto name = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
			auto o = sluice::outcome_named(name);
			if (!o) {
				std::string known;
				for (uint32_t i = 0; i < SLUICE_OUTCOMES; i++)
					if (!(SLUICE_CAPTURE_NEVER & (1u << i)))
						known += (known.empty() ? "" : ", ") + std::string(sluice::kOutcomeNames[i]);
				return std::unexpected(inv.usage_error("--outcome: no outcome is named '" + std::string(name) +
								       "' (outcomes: " + known + ")"));
			}
			mask |= 1u << *o;
			if (comma == std::string_view::npos)
				break;
			start = comma + 1;
		}
	}
	if (inv.flag("passed"))
		mask |= sluice::capture_admitted_mask();
	if (auto ok = sluice::named("--outcome", sluice::check_capture_outcomes(mask)); !ok)
		return std::unexpected(ok.error());
	return mask;
}

struct Summary {
	uint64_t written = 0, filtered = 0, received = 0;
	sluice::capture::StreamStats stats{};
	std::string ended; // why it stopped
};

void print_summary(Context &ctx, std::ostream &to, const std::string &iface, const Output &out, FileFormat format,
		   const Summary &s)
{
	if (ctx.json) {
		to << json{{"iface", iface},
			   {"file", out.name()},
			   {"format", format == FileFormat::pcap ? "pcap" : "pcapng"},
			   {"written", s.written},
			   {"filtered", s.filtered},
			   {"received", s.received},
			   {"matched", s.stats.matched},
			   {"copied", s.stats.copied},
			   {"lost_ring", s.stats.lost_ring},
			   {"lost_pipe", s.stats.lost_pipe},
			   {"ended", s.ended}}
			      .dump()
		   << '\n';
		return;
	}
	to << iface << ": " << s.written << (s.written == 1 ? " frame" : " frames") << " written to " << out.name()
	   << ", " << s.filtered << " filtered out, " << s.stats.lost_ring << " lost in the ring, " << s.stats.lost_pipe
	   << " lost at the pipe (the data plane matched " << s.stats.matched << ", copied " << s.stats.copied << "); "
	   << s.ended << '\n';
}

} // namespace

Status do_capture(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	auto path = inv.option("write");
	if (!path)
		return std::unexpected(inv.usage_error("missing -w FILE (or -w - for stdout)"));
	std::string expression;
	for (size_t i = 1; i < inv.args.size(); i++)
		expression += (i > 1 ? " " : "") + inv.args[i];

	int64_t snaplen = SLUICE_CAPTURE_SNAPLEN_DEFAULT, every = 1, count = 0;
	double duration = 0;
	if (auto t = inv.option("snaplen")) {
		auto n = parse_integer(*t, "--snaplen");
		if (!n)
			return std::unexpected(n.error());
		if (auto ok = sluice::named("--snaplen", sluice::check_capture_snaplen(*n)); !ok)
			return ok;
		snaplen = *n;
	}
	if (auto t = inv.option("sample-every")) {
		auto n = parse_integer(*t, "--sample-every");
		if (!n)
			return std::unexpected(n.error());
		if (auto ok = sluice::named("--sample-every", sluice::check_capture_sample_every(*n)); !ok)
			return ok;
		every = *n;
	}
	if (auto t = inv.option("count")) {
		auto n = parse_integer(*t, "--count");
		if (!n)
			return std::unexpected(n.error());
		if (auto ok = sluice::named("--count", sluice::check_capture_count(*n)); !ok)
			return ok;
		count = *n;
	}
	if (auto t = inv.option("duration")) {
		auto s = parse_seconds(*t, "--duration");
		if (!s)
			return std::unexpected(s.error());
		if (auto ok = sluice::named("--duration", sluice::check_capture_duration_s(*s)); !ok)
			return ok;
		duration = *s;
	}
	auto mask = outcome_mask(inv);
	if (!mask)
		return std::unexpected(mask.error());
	std::optional<sluice::capture::Filter> filter;
	if (!expression.empty()) {
		auto f = sluice::capture::Filter::compile(expression, static_cast<uint32_t>(snaplen));
		if (!f)
			return std::unexpected(f.error());
		filter.emplace(std::move(*f));
	}
	const FileFormat format = inv.flag("pcap") ? FileFormat::pcap : FileFormat::pcapng;
	std::ostream &report = *path == "-" ? ctx.err : (ctx.json ? ctx.out : ctx.err);

	mode_t file_mode = 0600;
	if (auto t = inv.option("file-mode")) {
		unsigned long m = 0;
		size_t used = 0;
		bool octal = !t->empty() && t->size() <= 4 && t->find_first_not_of("01234567") == std::string::npos;
		if (octal)
			m = std::stoul(*t, &used, 8);
		if (!octal || (m & ~0666ul))
			return std::unexpected(inv.usage_error("--file-mode " + *t +
							       ": an octal mode of read and write bits, at most 0666"));
		file_mode = mode_t(m);
	}
	auto out = Output::open(*path, inv.flag("force"), file_mode);
	if (!out)
		return std::unexpected(out.error());

	// Ctrl-C and SIGTERM end the capture cleanly, read through a signalfd.
	sigset_t mask_signals, old_signals;
	sigemptyset(&mask_signals);
	sigaddset(&mask_signals, SIGINT);
	sigaddset(&mask_signals, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask_signals, &old_signals);
	struct Restore {
		sigset_t old;
		~Restore() { sigprocmask(SIG_SETMASK, &old, nullptr); }
	} restore{old_signals};
	sluice::UniqueFd sfd(signalfd(-1, &mask_signals, SFD_CLOEXEC | SFD_NONBLOCK));
	auto old_pipe = signal(SIGPIPE, SIG_IGN);
	struct RestorePipe {
		sighandler_t old;
		~RestorePipe() { signal(SIGPIPE, old); }
	} restore_pipe{old_pipe};

	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		out->abandon();
		return sluice::fail(sluice::ErrorKind::system, std::string("pipe: ") + std::strerror(errno), errno);
	}
	sluice::UniqueFd rd(p[0]), wr(p[1]);
	(void)fcntl(wr.get(), F_SETPIPE_SZ, static_cast<int>(sluice::kCapturePipeBytes));

	std::vector<std::string> names;
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		if (*mask & (1u << o))
			names.emplace_back(sluice::kOutcomeNames[o]);
	json args = {{"iface", *iface}, {"outcomes", names}, {"snaplen", snaplen}, {"sample_every", every},
		     {"from_fd", true}};
	// sluiced holds to them too: the frames (when no filter drops any here)
	// and the time
	if (count > 0 && !filter)
		args["count"] = count;
	if (duration > 0)
		args["duration_ms"] = std::max<int64_t>(1, static_cast<int64_t>(duration * 1000));
	json request = request_for(sluice::Command::capture, args);
	Client client(ctx.socket);
	auto reply = client.call(request, wr.get());
	wr.reset(); // sluiced holds the only write end now: its exit is our EOF
	if (!reply) {
		out->abandon();
		return std::unexpected(reply.error());
	}
	if (auto ok = out->begin(); !ok)
		return ok;
	out->add(sluice::capture::file_header(format, *iface, static_cast<uint32_t>(snaplen)));
	if (auto ok = out->flush(); !ok)
		return ok;
	// On stderr always (with -j too): the data may be on stdout, and a
	// caller waits for this line to know the capture runs.
	ctx.err << *iface << ": capturing " << reply->value("outcomes", std::string()) << ", snaplen " << snaplen
		       << (every > 1 ? ", 1 in " + std::to_string(every) + " per CPU" : std::string())
		       << (filter ? ", filter '" + expression + "'" : std::string()) << " to " << out->name()
		<< "; Ctrl-C stops\n"
		<< std::flush;

	using clock = std::chrono::steady_clock;
	const auto deadline = duration > 0 ? std::optional(clock::now() + std::chrono::duration_cast<clock::duration>(
									     std::chrono::duration<double>(duration)))
					   : std::nullopt;
	sluice::capture::StreamReader stream;
	Summary s;
	std::optional<Error> failure;
	bool done = false, daemon_ended = false, daemon_vanished = false;
	char buf[65536];
	// The lease: renewed every kCaptureRenewS on the request's connection;
	// sluiced ends a capture whose client stops renewing it.
	const auto renew_every = std::chrono::duration_cast<clock::duration>(
		std::chrono::duration<double>(sluice::kCaptureRenewS));
	auto renew_at = clock::now() + renew_every;
	const json renewal = request_for(sluice::Command::capture_renew, {{"iface", *iface}});
	while (!done) {
		if (clock::now() >= renew_at) {
			(void)client.call(renewal); // refused or gone: the pipe says why it ends
			renew_at = clock::now() + renew_every;
		}
		auto to_renew = std::chrono::duration_cast<std::chrono::milliseconds>(renew_at - clock::now()).count();
		int timeout = static_cast<int>(std::clamp<long long>(to_renew, 0, 1000));
		if (deadline) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - clock::now()).count();
			if (left <= 0) {
				s.ended = "--duration " + *inv.option("duration") + " s reached";
				break;
			}
			timeout = static_cast<int>(std::min<long long>(left, timeout));
		}
		pollfd fds[2] = {{rd.get(), POLLIN, 0}, {sfd.get(), POLLIN, 0}};
		int n = ::poll(fds, 2, timeout);
		if (n < 0 && errno != EINTR) {
			failure = Error{sluice::ErrorKind::system, errno, std::string("poll: ") + std::strerror(errno)};
			break;
		}
		if (fds[1].revents & POLLIN) {
			signalfd_siginfo si{};
			(void)!::read(sfd.get(), &si, sizeof(si));
			s.ended = si.ssi_signo == SIGINT ? "interrupted" : "terminated";
			break;
		}
		if (!(fds[0].revents & (POLLIN | POLLHUP)))
			continue;
		ssize_t got = ::read(rd.get(), buf, sizeof(buf));
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			failure = Error{sluice::ErrorKind::system, errno, std::string("reading from sluiced: ") + std::strerror(errno)};
			break;
		}
		if (got == 0) {
			daemon_vanished = true;
			break;
		}
		stream.append(buf, static_cast<size_t>(got));
		std::string error;
		while (auto m = stream.next(error)) {
			if (m->type == sluice::capture::MessageType::stats) {
				s.stats = m->stats;
				continue;
			}
			if (m->type == sluice::capture::MessageType::end) {
				s.ended = "sluiced ended the capture: " + m->bytes;
				daemon_ended = true;
				done = true;
				break;
			}
			s.received++;
			if (filter && !filter->matches(m->bytes, m->frame.wire_len)) {
				s.filtered++;
				continue;
			}
			std::string comment = "sluice: " +
					      std::string(m->frame.outcome < SLUICE_OUTCOMES
								  ? sluice::kOutcomeNames[m->frame.outcome]
								  : std::string_view("unknown")) +
					      " (cpu " + std::to_string(m->frame.cpu) + ")";
			out->add(sluice::capture::file_record(format, m->frame.time_ns, m->frame.wire_len, m->bytes, comment));
			s.written++;
			if (count && s.written >= static_cast<uint64_t>(count)) {
				s.ended = "--count " + std::to_string(count) + " reached";
				done = true;
				break;
			}
		}
		if (!error.empty()) {
			failure = Error{sluice::ErrorKind::system, 0, "the stream from sluiced is malformed: " + error};
			break;
		}
		if (auto ok = out->flush(); !ok) {
			failure = ok.error();
			break;
		}
	}
	rd.reset(); // sluiced sees the pipe closed and turns the capture off
	if (auto ok = out->close(); !ok && !failure)
		failure = ok.error();
	if (failure && out->reader_gone()) {
		// -w - into a pipe whose reader stopped (| head): a stop, not a failure
		s.ended = "the reader of " + out->name() + " went away";
		failure.reset();
	}
	if (daemon_vanished && s.ended.empty())
		s.ended = "sluiced went away without ending the capture (it exited or was killed)";
	if (failure)
		s.ended = "failed: " + failure->message;
	else if (s.ended.empty())
		s.ended = "stopped";
	print_summary(ctx, report, *iface, *out, format, s);
	if (failure)
		return std::unexpected(*failure);
	if (daemon_vanished)
		return sluice::fail(sluice::ErrorKind::system, *iface + ": " + s.ended);
	if (daemon_ended)
		return sluice::fail(sluice::ErrorKind::refused, *iface + ": " + s.ended);
	return {};
}

} // namespace sluicectl
