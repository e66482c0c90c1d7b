#include "sluiced/metrics_server.h"

#include "base/clock.h"
#include "base/log.h"

#include <httplib.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <pthread.h>
#include <sys/socket.h>

namespace sluice {

namespace {

// Workers for scrapes: a few, so a handful of slow scrapers cannot take
// them all for long (each is bounded by the read/write timeouts).
constexpr size_t kWorkers = 4;
constexpr time_t kTimeoutS = 2;

} // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const ListenAddress &addr, double stale_after_s)
{
	std::unique_ptr<MetricsServer> m(new MetricsServer());
	m->stale_after_s_ = stale_after_s;
	m->http_ = std::make_unique<httplib::Server>();
	auto &http = *m->http_;
	http.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
	http.set_read_timeout(kTimeoutS, 0);
	http.set_write_timeout(kTimeoutS, 0);
	http.set_keep_alive_timeout(kTimeoutS);
	http.set_keep_alive_max_count(10);
	http.set_payload_max_length(4096); // GET only: no body worth reading
	// httplib's default sets SO_REUSEPORT as well, which lets a second
	// sluiced bind the same port and take half the scrapes unnoticed. Only
	// SO_REUSEADDR (a restart while old connections sit in TIME_WAIT).
	http.set_socket_options([](socket_t sock) {
		int yes = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
	});
	MetricsServer *self = m.get();
	http.Get("/metrics", [self](const httplib::Request &, httplib::Response &res) {
		res.set_content(self->metrics(), "text/plain; version=0.0.4; charset=utf-8");
	});
	http.Get("/healthz", [self](const httplib::Request &, httplib::Response &res) {
		auto [code, body] = self->healthz(monotonic_seconds());
		res.status = code;
		res.set_content(body, "text/plain; charset=utf-8");
	});
	http.Get("/", [](const httplib::Request &, httplib::Response &res) {
		res.set_content("sluiced: /metrics (Prometheus), /healthz\n", "text/plain; charset=utf-8");
	});

	errno = 0;
	int port = addr.port;
	if (addr.port == 0)
		port = http.bind_to_any_port(addr.host);
	else if (!http.bind_to_port(addr.host, addr.port))
		port = -1;
	if (port <= 0) {
		int err = errno ? errno : EADDRNOTAVAIL;
		return fail(ErrorKind::system,
			    "--metrics-listen " + addr.str() + ": cannot listen (is the port taken, or the address not on this host?)",
			    err);
	}
	m->port_ = static_cast<uint16_t>(port);

	// The thread and its workers block every signal: SIGTERM and SIGINT must
	// reach the control loop's signalfd, and a signal is only queued there
	// when no thread takes it.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	m->thread_ = std::thread([self] {
		self->http_->listen_after_bind();
		self->done_ = true;
	});
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	log_info("metrics: serving /metrics and /healthz on http://" + ListenAddress{addr.host, m->port_}.str());
	return m;
}

MetricsServer::~MetricsServer()
{
	if (!thread_.joinable())
		return;
	// httplib's stop() does nothing before the thread is in its accept loop:
	// wait for that (or for the thread to have failed out of it) first.
	for (int i = 0; i < 5000 && !http_->is_running() && !done_; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	http_->stop();
	thread_.join();
}

void MetricsServer::publish(MetricsSnapshot snapshot)
{
	auto next = std::make_shared<const MetricsSnapshot>(std::move(snapshot));
	std::lock_guard lock(mu_);
	snapshot_.swap(next);
	// the previous snapshot is freed outside the lock (next's destructor),
	// or by the last scrape still rendering it
}

std::shared_ptr<const MetricsSnapshot> MetricsServer::latest() const
{
	std::lock_guard lock(mu_);
	return snapshot_;
}

std::string MetricsServer::metrics() const
{
	auto s = latest();
	return s ? render_metrics(*s) : render_metrics(MetricsSnapshot{});
}

std::pair<int, std::string> MetricsServer::healthz(double now_mono_s) const
{
	auto s = latest();
	if (!s)
		return {503, "starting: the control loop has not published yet\n"};
	double age = now_mono_s - s->tick_mono_s;
	char buf[160];
	if (loop_healthy(now_mono_s, s->tick_mono_s, stale_after_s_)) {
		std::snprintf(buf, sizeof(buf), "ok: last control tick %.1f s ago\n", age < 0 ? 0.0 : age);
		return {200, buf};
	}
	std::snprintf(buf, sizeof(buf), "stale: last control tick %.1f s ago (limit %.1f s)\n", age, stale_after_s_);
	return {503, buf};
}

} // namespace sluice
